"""Typed, frozen records: what a YAML record becomes after its schema check.

Records can be built in tests without any file. They hold ids as strings (graph nodes
are the same strings); parsing of expressions and units happens in the builders
(``engine.kb.formulas``, ``engine.kb.knowledge``), which collect every problem.
"""

from __future__ import annotations

from engine.core.record import dataclass
from engine.core.units import Quantity, Unit

TYPE_CHECKING = False  # the expression parser (and ast) is not needed to hold a parsed tree
if TYPE_CHECKING:
    from engine.core.expr import Node


@dataclass(frozen=True, slots=True)
class SymbolSpec:
    name: str
    desc: str
    domain: str  # positive | nonnegative | positive_integer | nonnegative_integer | fraction | positive_fraction | fraction_below_one | ge_one | ge_two_integer | real | categorical
    unit_text: str = "1"
    unit: Unit | None = None  # None for categorical symbols
    values: tuple[str, ...] = ()
    default: Quantity | str | None = None
    default_source: str = ""

    @property
    def categorical(self) -> bool:
        return self.domain == "categorical"


@dataclass(frozen=True, slots=True)
class OutputSpec:
    symbol: str
    desc: str
    unit_text: str
    unit: Unit
    per: str = ""  # a count unit the expression is normalised to ("token")


@dataclass(frozen=True, slots=True)
class Variant:
    key: str  # selector value; "" for a formula with one expression
    expr: str
    tree: Node
    name: str = ""
    assumptions: tuple[str, ...] = ()
    notes: str = ""

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(sorted(self.tree.symbols()))


@dataclass(frozen=True, slots=True)
class Example:
    set: dict[str, float | str]
    expect: float
    source: str
    rel_tol: float = 1e-6
    note: str = ""


@dataclass(frozen=True, slots=True)
class Formula:
    id: str
    name: str
    section: str  # "B.2.3"
    defined_in: str  # "infra:6.2"
    output: OutputSpec
    symbols: dict[str, SymbolSpec]
    variants: tuple[Variant, ...]
    examples: tuple[Example, ...]
    place: str = ""
    name_zh: str = ""
    selector: str = ""
    also_in: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    metric: str = ""
    notes: str = ""
    sources: tuple[str, ...] = ()
    # (a, b) for each "a > b" the formula is meant for (engine.core.symbolic uses them to sign
    # factors such as a - b; a range is composed from them only where it keeps a above b)
    ordered: tuple[tuple[str, str], ...] = ()

    def variant(self, key: str = "") -> Variant:
        for v in self.variants:
            if v.key == key:
                return v
        raise KeyError(key)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every input symbol any variant uses, plus the selector."""
        names = {s for v in self.variants for s in v.tree.symbols()}
        if self.selector:
            names.add(self.selector)
        return tuple(n for n in self.symbols if n in names)


@dataclass(frozen=True, slots=True)
class Book:
    id: str
    title: str
    title_zh: str
    source: str
    author: str = ""
    version: str = ""
    parts: tuple[dict, ...] = ()
    notes: str = ""
    place: str = ""
    pinned_version: str = ""
    decisions: tuple[dict, ...] = ()


@dataclass(frozen=True, slots=True)
class Section:
    id: str
    chapter: str
    title: str
    title_zh: str = ""
    defines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    notes: str = ""
    place: str = ""
    extends: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Chapter:
    id: str
    book: str  # "book:infra"
    number: int
    title: str
    title_zh: str
    sections: tuple[Section, ...] = ()
    depends_on: tuple[str, ...] = ()
    depends_source: str = ""
    key_question: str = ""
    key_question_zh: str = ""
    deliverables: tuple[str, ...] = ()
    notes: str = ""
    source: str = ""
    place: str = ""
    part: int | None = None
    track: str = ""
    skeleton: dict | None = None
    no_tree: str = ""  # why the chapter has no selection tree of its own (issue 30)


@dataclass(frozen=True, slots=True)
class Concept:
    id: str
    name: str
    name_zh: str
    summary: str = ""
    source: str = ""
    place: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    to: str  # a chapter or section id; "" for a placeholder step
    revisit: bool = False
    note: str = ""
    placeholder: str = ""  # a step the book leaves open (对应领域章)
    condition: str = ""  # when to take it ("when capacity questions come up")


@dataclass(frozen=True, slots=True)
class ReadingPath:
    id: str
    title: str
    title_zh: str
    steps: tuple[Step, ...]
    audience: str = ""
    source: str = ""
    place: str = ""
    kind: str = "goal"  # goal | problem | role
    book: str = "book:infra"


@dataclass(frozen=True, slots=True)
class WordGroup:
    """Words ``path for`` reads as one (``use: same``: folded onto the first) or as no goal at all
    (``use: ignore``: stop words), from knowledge/goal_words.yaml (engine.reading.words)."""

    id: str
    use: str  # same | ignore
    words: tuple[str, ...]
    why: str = ""
    place: str = ""


@dataclass(frozen=True, slots=True)
class Action:
    id: str
    word: str
    word_zh: str
    targets: tuple[str, ...]
    note: str = ""
    source: str = ""
    place: str = ""
