"""A goal typed in English as content words, for ``path for``: lower case, punctuation out, a
light stem (costs -> cost, reducing -> reduc), stop words dropped and synonyms folded onto one
word, both from ``knowledge/goal_words.yaml`` (``Knowledge.goal_words``). "reduce GPU cost" and
"Bring costs down" then share reduce and cost.

The stem is deliberately small (a plural, -ing, -ed, a final e): the same rule runs on both
sides, so it only has to give one form to the forms a reader and a title use.
"""

from __future__ import annotations

import re

from engine.core.record import dataclass

_WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """``costs`` -> ``cost``, ``reducing``/``reduced``/``reduce`` -> ``reduc``, ``cutting`` -> ``cut``."""
    w = word
    if len(w) > 3 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if w[-1] == w[-2] and w[-1] not in "aeiouylsz":  # cutting -> cutt -> cut
                w = w[:-1]
            break
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


@dataclass(frozen=True)
class Vocabulary:
    same: dict  # stem -> the stem of its group's first word
    ignore: frozenset  # stems of the stop words

    @classmethod
    def of(cls, groups) -> Vocabulary:
        """From WordGroup records (``Knowledge.goal_words.values()``)."""
        same, ignore = {}, set()
        for g in groups:
            stems = [stem(w) for w in g.words]
            if g.use == "ignore":
                ignore.update(stems)
            else:
                same.update((s, stems[0]) for s in stems)
        return cls(same, frozenset(ignore))

    def content(self, text: str) -> dict[str, str]:
        """{word as compared: the first word of ``text`` that gave it}, stop words left out, in order."""
        out: dict[str, str] = {}
        for word in _WORD.findall(text.casefold()):
            s = stem(word)
            if s not in self.ignore:
                out.setdefault(self.same.get(s, s), word)
        return out

    def shared(self, query: str, title: str) -> list[str]:
        """The words of ``query``, as typed (lower case), that ``title`` also holds."""
        held = self.content(title)
        return [word for key, word in self.content(query).items() if key in held]
