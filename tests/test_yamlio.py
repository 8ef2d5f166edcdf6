"""engine.yamlio: duplicate keys refused, every value's line:col kept, YAML 1.2 floats."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.yamlio import MarkedDict, MarkedList, load_yaml, mark_at


def load(tmp_path: Path, text: str, name: str = "f.yaml"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return load_yaml(path, name)


def problems(tmp_path: Path, text: str) -> list[str]:
    data, found = load(tmp_path, text)
    assert data is None, "a file with problems gives no data"
    return [str(p) for p in found]


# ------------------------------------------------------------------------------ duplicate keys


def test_duplicate_top_level_key(tmp_path):
    text = "a: 1\nb: 2\na: 3\n"
    # the second 'a' is on line 3, column 1; the first on line 1
    assert problems(tmp_path, text) == ["f.yaml:3:1 a: duplicate key 'a' (first defined on line 1)"]


def test_duplicate_nested_key(tmp_path):
    text = "outer:\n  a: 1\n  b: 2\n  a: 3\n"
    # the second 'a' is on line 4, indented 2 -> column 3; the first 'a' is on line 2
    assert problems(tmp_path, text) == ["f.yaml:4:3 a: duplicate key 'a' (first defined on line 2)"]


def test_duplicate_key_inside_a_list_item(tmp_path):
    text = "- id: F1\n  name: x\n  name: y\n"
    # '  name: y' is line 3; its key starts at column 3
    assert problems(tmp_path, text) == ["f.yaml:3:3 name: duplicate key 'name' (first defined on line 2)"]


def test_duplicate_numeric_key(tmp_path):
    text = "1: a\n1: b\n"
    assert problems(tmp_path, text) == ["f.yaml:2:1 1: duplicate key 1 (first defined on line 1)"]


# ------------------------------------------------------------------------------------- marks


NESTED = """\
id: F8
output:
  symbol: kv
  unit: B
symbols:
  layers:
    domain: positive_integer
examples:
  - set: {layers: 36, kv: 2}
    expect: 147456
  - set:
      layers: 28
"""


def test_marks_of_nested_values(tmp_path):
    data, found = load(tmp_path, NESTED)
    assert found == []
    assert isinstance(data, MarkedDict)
    # 'id: F8': value F8 on line 1, after 'id: ' -> column 5
    assert mark_at(data, ["id"]) == (1, 5)
    # '  unit: B' is line 4: B after 2 spaces + 'unit: ' (6 chars) -> column 9
    assert mark_at(data, ["output", "unit"]) == (4, 9)
    # '    domain: positive_integer' is line 7: 4 spaces + 'domain: ' (8 chars) -> column 13
    assert mark_at(data, ["symbols", "layers", "domain"]) == (7, 13)
    # '  - set: {layers: 36, kv: 2}' is line 9; the first list item's mapping starts at
    # 'set', after 2 spaces + '- ' -> column 5
    assert mark_at(data, ["examples", 0]) == (9, 5)
    # in '  - set: {layers: 36, kv: 2}' the 36 follows '  - set: {layers: ' (18 chars) -> column 19
    assert mark_at(data, ["examples", 0, "set", "layers"]) == (9, 19)
    # ... and 2 follows '  - set: {layers: 36, kv: ' (26 chars) -> column 27
    assert mark_at(data, ["examples", 0, "set", "kv"]) == (9, 27)
    # '    expect: 147456' is line 10: 4 spaces + 'expect: ' (8 chars) -> column 13
    assert mark_at(data, ["examples", 0, "expect"]) == (10, 13)
    # '      layers: 28' is line 12: 6 spaces + 'layers: ' (8 chars) -> column 15
    assert mark_at(data, ["examples", 1, "set", "layers"]) == (12, 15)


def test_mark_at_stops_at_the_deepest_known_value(tmp_path):
    data, _ = load(tmp_path, NESTED)
    # 'missing' is not under output: the deepest known is output's own value, which starts
    # on line 3 ('  symbol: kv') at column 3
    assert mark_at(data, ["output", "missing"]) == (3, 3)
    assert mark_at(data, ["examples", 7]) == (9, 3)  # the list itself: line 9, '  - ' -> column 3
    assert mark_at(data, []) == (1, 1)
    assert mark_at(data, ["nope"]) == (1, 1)
    assert mark_at({"plain": "dict"}, ["plain"]) is None


def test_marked_containers_know_their_own_place(tmp_path):
    data, _ = load(tmp_path, NESTED)
    examples = data["examples"]
    assert isinstance(examples, MarkedList)
    assert (examples.line, examples.col) == (9, 3)
    assert examples.mark_of(1) == (11, 5)  # '  - set:' on line 11: 'set' at column 5
    assert examples.mark_of(99) == (9, 3)
    assert data.mark_of("not-there") == (1, 1)


def test_loaded_data_compares_as_plain_python(tmp_path):
    data, _ = load(tmp_path, NESTED)
    assert data["examples"][0] == {"set": {"layers": 36, "kv": 2}, "expect": 147456}
    assert data["output"] == {"symbol": "kv", "unit": "B"}


# ----------------------------------------------------------------------------------- scalars


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        ("1e3", 1000.0),  # YAML 1.2: 1e3 is a float (PyYAML's YAML 1.1 keeps it a string)
        ("1.5e7", 15000000.0),
        ("-2E-3", -0.002),
        ("+1e3", 1000.0),
        ("7.5e+9", 7.5e9),
        ("1.0", 1.0),
        ("4.10", 4.1),  # unquoted, YAML reads a float: why section numbers are quoted
        ('"4.10"', "4.10"),
        ("'4.10'", "4.10"),
        ('"1e3"', "1e3"),
        ("1.2.3", "1.2.3"),
        ("1e", "1e"),
        ("e3", "e3"),
        ("42", 42),
        ("true", True),
    ],
)
def test_scalars(tmp_path, scalar, expected):
    data, found = load(tmp_path, f"v: {scalar}\n")
    assert found == []
    assert data["v"] == expected
    assert type(data["v"]) is type(expected)


def test_the_yaml12_float_rule_does_not_leak_into_pyyaml():
    """The loader adds its resolver to its own class, not to yaml.SafeLoader."""
    assert yaml.safe_load("v: 1e3") == {"v": "1e3"}


# -------------------------------------------------------------------------------- bad files


def test_nul_byte_is_refused(tmp_path):
    assert problems(tmp_path, "a: 1\nb: \x00\n") == ["f.yaml: contains a NUL byte"]


def test_invalid_yaml_names_the_place(tmp_path):
    found = problems(tmp_path, "a: [1, 2\n")
    reasons = {
        "did not find expected ',' or ']'",  # libyaml
        "expected ',' or ']', but got '<stream end>'",  # pure-Python PyYAML
    }
    # the flow sequence is still open at the end of the file: line 2, column 1
    assert found in [[f"f.yaml:2:1: is not valid YAML ({reason})"] for reason in reasons]


def test_deeply_nested_yaml_is_refused(tmp_path):
    assert problems(tmp_path, "[" * 5000 + "]" * 5000) == ["f.yaml: is not valid YAML (nested too deeply)"]


def test_missing_file(tmp_path):
    path = tmp_path / "missing.yaml"
    data, found = load_yaml(path, "missing.yaml")
    assert data is None
    assert [str(p) for p in found] == [
        f"missing.yaml: cannot be read (FileNotFoundError: [Errno 2] No such file or directory: '{path}')"
    ]


def test_invalid_utf8(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_bytes(b"a: \xff\n")
    data, found = load_yaml(path, "f.yaml")
    assert data is None
    # byte 0xff sits at offset 3, after 'a: '
    assert [str(p) for p in found] == [
        "f.yaml: cannot be read (UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 3: invalid start byte)"
    ]


# ------------------------------------------------------------------------- known engine bugs


def test_duplicate_key_with_a_block_value_names_the_first_keys_line(tmp_path):
    text = "a:\n  x: 1\nb: 2\na: 3\n"
    # the first 'a' key is on line 1 (its block value starts on line 2); the second on line 4
    assert problems(tmp_path, text) == ["f.yaml:4:1 a: duplicate key 'a' (first defined on line 1)"]


def test_merge_key_override_is_not_a_duplicate(tmp_path):
    data, found = load(tmp_path, "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")
    assert found == []
    assert data["d"] == {"x": 3, "y": 2}


def test_unhashable_key_is_not_called_a_duplicate(tmp_path):
    found = problems(tmp_path, "? [a, b]\n: 1\n")
    assert len(found) == 1
    assert "duplicate" not in found[0] and "line 0" not in found[0], found[0]
