"""Near misses for what a user typed: a case-insensitive match and a "did you mean" hint.

Used by every look-up that names the known ids (devices, models, formulas, calculators, trees)
and by the command-line parser for verbs, subcommands and options. Standard library only, so
the fast CLI paths can use it.
"""

from __future__ import annotations


def match(text: str, names) -> str | None:
    """The name equal to ``text`` ignoring case (and surrounding spaces), or None."""
    folded = text.strip().casefold()
    return next((name for name in names if name.casefold() == folded), None)


def close(text: str, names, n: int = 3) -> list[str]:
    """Up to ``n`` names that look like ``text`` (difflib ratio >= 0.6, compared without case)."""
    by_fold = {name.casefold(): name for name in names}
    import difflib  # imported only when a name is not found
    return [by_fold[m] for m in difflib.get_close_matches(text.strip().casefold(), list(by_fold), n=n)]


def did_you_mean(text: str, names, n: int = 3) -> str:
    """``"did you mean h100-sxm? "`` (or ``a or b``) when something is close, else ``""``."""
    found = close(text, names, n)
    return f"did you mean {' or '.join(found)}? " if found else ""


def known(text: str, names, none: str = "none") -> str:
    """The inside of the parentheses after an unknown id: ``did you mean X? known: a, b``."""
    names = list(names)
    return f"{did_you_mean(text, names)}known: {', '.join(names) or none}"
