"""The docs site, generated from the same YAML the CLI reads (issue 7).

Plain functions produce every page as Markdown text (``generate.generate(root)``); the mkdocs
hooks in ``hooks.py`` hand them to mkdocs-material, which ``build.build`` runs strictly. Pages:
``formula_pages`` (Appendix B and one page per formula), ``calculator_pages``, ``trees`` (decision
trees, once ``engine.trees.walk`` exists), ``arch_pages`` (reference architectures, once
``engine.domain.archs`` and its records exist), ``book_pages`` (books and chapters), ``knowledge_pages``
(reading paths, concepts, hardware and models) and ``source_pages`` (the YAML files, the
"edit this page" target). ``jsgen`` prints the forms' JavaScript from the SymPy expressions;
``forms`` describes the form fields; ``assets`` brings KaTeX and Mermaid from npm. Nothing here
runs at import time, and nothing generated is written into the repository.
"""
