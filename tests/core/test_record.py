"""engine.core.record behaves as the standard library's dataclasses does for the features the
project's records use; the reference is ``dataclasses`` itself, run side by side."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from engine.core import record


def _classes(mod):
    @mod.dataclass(frozen=True, slots=True)
    class Point:
        x: float
        label: str = "p"
        tags: tuple = ()

    @mod.dataclass
    class Bag:
        items: list = mod.field(default_factory=list)
        count: int = 0

    @mod.dataclass(frozen=True)
    class Base:
        a: int

    @mod.dataclass(frozen=True)
    class Child(Base):
        b: int = 2

        def total(self) -> int:
            return self.a + self.b

    return Point, Bag, Base, Child


OURS, THEIRS = _classes(record), _classes(dataclasses)


@record.dataclass(frozen=True, slots=True)
class Saved:  # module level, so pickle can find it by name
    x: float
    tags: tuple = ()


@record.dataclass(frozen=True)
class SavedPlain:
    a: int
    b: int = 2


def test_construction_repr_and_equality_match_dataclasses():
    for (P, B, _, C), mod in ((OURS, record), (THEIRS, dataclasses)):
        p = P(1.5, tags=("a",))
        assert repr(p) == "_classes.<locals>.Point(x=1.5, label='p', tags=('a',))"
        assert p == P(1.5, "p", ("a",)) and p != P(2.0, tags=("a",))
        assert hash(p) == hash(P(1.5, tags=("a",)))
        assert mod.replace(p, label="q") == P(1.5, "q", ("a",))
        assert [f.name for f in mod.fields(p)] == ["x", "label", "tags"] and mod.is_dataclass(p)
        b1, b2 = B(), B()
        b1.items.append(1)
        assert b2.items == [] and b1 != b2 and B.__hash__ is None  # a fresh list each, unhashable when mutable
        c = C(1)
        assert (c.a, c.b, c.total(), c) == (1, 2, 3, C(1, 2)) and [f.name for f in mod.fields(C)] == ["a", "b"]


def test_frozen_records_refuse_assignment_and_pickle_round_trip():
    P, _, _, C = OURS
    p = P(1.0)
    with pytest.raises(AttributeError):
        p.x = 2.0
    with pytest.raises(AttributeError):
        C(1).b = 3
    assert pickle.loads(pickle.dumps(Saved(1.0, ("a",)))) == Saved(1.0, ("a",))
    assert pickle.loads(pickle.dumps(SavedPlain(4, 5))) == SavedPlain(4, 5)
    assert P.__slots__ == ("x", "label", "tags") and not hasattr(p, "__dict__")


def test_missing_and_unknown_fields_are_type_errors_as_in_dataclasses():
    for P, *_ in (OURS, THEIRS):
        with pytest.raises(TypeError):
            P()
    with pytest.raises(TypeError):
        record.replace(OURS[0](1.0), nope=1)
    with pytest.raises(TypeError):
        @record.dataclass
        class Bad:
            a: int = 1
            b: int
