"""aiinfra engine: one-source formulas and knowledge for AI-infrastructure estimates.

Nothing is loaded at import time. Build a :class:`engine.kb.knowledge.Knowledge` with
``Knowledge.load(root)`` and pass it explicitly.
"""

__version__ = "0.1.0"
