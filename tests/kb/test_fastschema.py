"""engine.kb.fastschema: the compiled predicate answers exactly what jsonschema answers (issue 24:
schema checks were most of a cold ``check``). Compared on every shipped record of every kind, on
every measurement row, and on thousands of spoilt copies (seeded), plus the corners of the
keywords (bool is not a number, 1.0 is an integer, '$' before a newline, oneOf's "exactly one")."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from engine.core.paths import shipped_root
from engine.kb import schema
from engine.kb.fastschema import Unsupported, compile_schema
from engine.kb.yamlio import plain

KINDS = sorted(p.stem for p in (Path(schema.__file__).parent / "schemas").glob("*.json"))
SPOILS = 12  # spoilt copies of each record


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """(kind, record) of every record the loaders schema-check in the shipped root, read afresh."""
    import os

    from engine.core import cache
    from engine.domain import measurements
    from engine.kb.knowledge import Knowledge
    from engine.trees.records import load

    seen: list[tuple[str, object]] = []
    real = schema.validate

    def recording(kind, raw, display, rid):
        seen.append((kind, plain(raw)))
        return real(kind, raw, display, rid)

    old = os.environ.get("AIINFRA_CACHE_DIR")
    os.environ["AIINFRA_CACHE_DIR"] = str(tmp_path_factory.mktemp("fresh-cache"))  # nothing replayed: every record is checked
    schema.validate = recording
    try:
        Knowledge.load(shipped_root(), strict=False)
        load(shipped_root())
        measurements.load(shipped_root())
    finally:
        schema.validate = real
        os.environ["AIINFRA_CACHE_DIR"] = old if old is not None else ""
        if old is None:
            del os.environ["AIINFRA_CACHE_DIR"]
        cache._state.clear()
    return seen


def test_every_shipped_schema_compiles():
    for kind in KINDS:
        assert schema.is_valid(kind) is not None, kind


def test_every_kind_is_seen(records):
    assert {k for k, _ in records} == set(KINDS)


def test_the_shipped_records_agree(records):
    assert len(records) > 300
    for kind, raw in records:
        assert schema.is_valid(kind)(raw) == schema.validator(kind).is_valid(raw), (kind, str(raw)[:200])


def test_spoilt_records_agree(records):
    rng = random.Random(24)
    compared = refused = 0
    for kind, raw in records:
        fast, slow = schema.is_valid(kind), schema.validator(kind).is_valid
        big = len(json.dumps(raw, default=repr)) > 20_000  # a measurement table: its rows are spoilt in test_measurement_rows_agree
        for _ in range(2 if big else SPOILS):
            bad = _spoil(copy.deepcopy(raw), rng)
            expected = slow(bad)
            assert fast(bad) == expected, (kind, json.dumps(bad, default=repr)[:300])
            compared += 1
            refused += not expected
    assert compared > 3000 and refused > compared // 4  # the spoils do spoil


def test_measurement_rows_agree():
    from engine.domain import measurements

    fast, slow = measurements._row_is_valid(), measurements._row_validator().is_valid
    assert fast is not None
    rng = random.Random(7)
    rows = 0
    for path in sorted((Path(shipped_root()) / "knowledge" / "measurements").glob("*.yaml"))[:40]:
        from engine.kb.yamlio import load_yaml

        data, _ = load_yaml(path, path.name)
        defaults = plain(data.get("defaults") or {})
        for raw in data["records"][:20]:
            row = measurements.merge(defaults, plain(raw))
            assert fast(row) == slow(row)
            for _ in range(4):
                bad = _spoil(copy.deepcopy(row), rng)
                assert fast(bad) == slow(bad), json.dumps(bad, default=repr)[:300]
            rows += 1
    assert rows > 100


@pytest.mark.parametrize("schema_, instance, valid", [
    ({"type": "number"}, True, False),
    ({"type": "integer"}, 3.0, True),
    ({"type": "integer"}, 3.5, False),
    ({"minimum": 1}, "text", True),
    ({"minimum": 1}, 0.5, False),
    ({"exclusiveMinimum": 0}, 0, False),
    ({"enum": [1, "a"]}, True, False),
    ({"enum": [1, "a"]}, 1.0, True),
    ({"const": False}, 0, False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, ["a", "a"], False),
    ({"pattern": "^[a-z]+$"}, "abc\n", True),  # Python's '$', as jsonschema's own pattern keyword
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 2, False),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 2, True),
    ({"not": {"required": ["values"]}}, {"values": []}, False),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}}, {"a": 1}, False),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"required": ["c"]}}, {"c": 1}, True),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    ({"propertyNames": {"pattern": "^x"}}, {"y": 1}, False),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}, {"next": {"next": 3}}, False),
])
def test_keyword_corners(schema_, instance, valid):
    from jsonschema import Draft202012Validator

    assert Draft202012Validator(schema_).is_valid(instance) == valid
    assert compile_schema(schema_)(instance) == valid


def test_the_project_pattern_refuses_a_trailing_newline():
    assert schema.is_valid("formula")({"id": "F1\n"}) is False


@pytest.mark.parametrize("schema_", [{"format": "email"}, {"patternProperties": {"^a": {}}}, {"prefixItems": [{}]},
                                     {"$ref": "other.json#/x"}, {"properties": {"a": {"$id": "x"}}}])
def test_a_keyword_it_does_not_compile_is_refused(schema_):
    with pytest.raises(Unsupported):
        compile_schema(schema_)


# ---------------------------------------------------------------------------- spoiling


_ODD = [None, True, False, 0, -1, 1.5, float("nan"), "", "x", "x\n", "Bytes", [], {}, [1, "a"], {"k": 1}, 10**30, 3.0]


def _spoil(value, rng: random.Random):
    """One random change somewhere in ``value`` (a record as plain dicts and lists)."""
    path = []
    node = value
    while isinstance(node, dict | list) and node and rng.random() < 0.75:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
    if not path:
        return _change(value, rng) if not isinstance(value, dict) else _change_mapping(value, rng)
    parent, key = path[-1]
    if isinstance(parent, dict) and rng.random() < 0.3:
        _change_mapping(parent, rng)
        return value
    parent[key] = _change(parent[key], rng)
    return value


def _change_mapping(mapping: dict, rng: random.Random):
    what = rng.random()
    if what < 0.4 and mapping:
        del mapping[rng.choice(list(mapping))]
    elif what < 0.7:
        mapping[rng.choice(["unknown_field", "notes", "values", "variants", "expr", "selector", "when"])] = rng.choice(_ODD)
    elif mapping:
        key = rng.choice(list(mapping))
        mapping[key] = _change(mapping[key], rng)
    return mapping


def _change(node, rng: random.Random):
    what = rng.random()
    if isinstance(node, str) and what < 0.4:
        return rng.choice([node + "\n", node.upper(), "", "!" + node, node + " x", node[:1]])
    if isinstance(node, bool) and what < 0.4:
        return int(node)
    if isinstance(node, int | float) and what < 0.4:
        return rng.choice([-node, node + 0.5, 0, str(node), float(node), -1e-9])
    if isinstance(node, list) and what < 0.4:
        return rng.choice([[], node + node[:1], node[:-1], [None], {"k": node}])
    return rng.choice(_ODD)
