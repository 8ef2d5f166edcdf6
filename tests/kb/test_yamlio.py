"""engine.kb.yamlio: duplicate keys refused, every value's line:col kept, YAML 1.2 floats."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.kb.yamlio import MarkedDict, MarkedList, load_yaml, mark_at


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


def test_a_scalar_types_the_same_however_often_its_text_recurs(tmp_path):
    """The loader keeps a scalar's resolved tag by its text and quoting (issue 24: most of the YAML
    time); plain and quoted forms of one text, and every repetition, still read as they should."""
    text = "".join(f"- {{a: 1e3, b: '1e3', c: 42, d: \"42\", e: yes, f: 'yes', g: null, h: '~', i: ~, j: 0x10, k: 1_000, 1: x}}\n" for _ in range(3))
    for _ in range(2):  # the second file is read with every tag already kept
        data, found = load(tmp_path, text)
        assert found == []
        for row in data:
            assert row == {"a": 1000.0, "b": "1e3", "c": 42, "d": "42", "e": True, "f": "yes", "g": None, "h": "~", "i": None, "j": 16,
                           "k": 1000, 1: "x"}
            assert [type(v) for v in row.values()] == [float, str, int, str, bool, str, type(None), str, type(None), int, int, str]


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


# ------------------------------------------------------------------ hostile files (issue 16)
def _load_in_thread(path: Path, display: str, timeout: float = 10.0):
    """load_yaml in a daemon thread; a hang fails the test instead of blocking the run."""
    import threading

    box: list = []
    worker = threading.Thread(target=lambda: box.append(load_yaml(path, display)), daemon=True)
    worker.start()
    worker.join(timeout)
    return box[0] if box else None


def test_billion_laughs_is_refused_in_under_a_second(tmp_path):
    import time

    # ten levels of nine aliases each: 9**10 = 3,486,784,401 'lol' leaves once expanded
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 11)]
    start = time.perf_counter()
    found = problems(tmp_path, "\n".join(lines) + "\n")
    assert time.perf_counter() - start < 1.0
    assert found == ["f.yaml: expands to more than 500,000 nodes through its aliases (&anchor / *alias), the most read from one file"]


def test_aliases_that_stay_under_the_cap_still_load(tmp_path):
    data, found = load(tmp_path, "base: &b {x: 1}\nuse: *b\n")
    assert found == [] and data == {"base": {"x": 1}, "use": {"x": 1}}


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    assert problems(tmp_path, "&a [*a]\n") == ["f.yaml:1: an alias refers to a node that contains it (a recursive document)"]


def test_nesting_past_64_levels_is_refused_and_64_loads(tmp_path):
    # the outermost list is level 1, so 64 brackets nest 64 levels and 65 nest 65
    data, found = load(tmp_path, "[" * 64 + "]" * 64)
    assert found == [] and data is not None
    assert problems(tmp_path, "[" * 65 + "]" * 65) == ["f.yaml:1: is nested more than 64 levels deep"]


def test_more_than_10000_records_in_one_list_are_refused(tmp_path):
    data, found = load(tmp_path, "- 1\n" * 10_000)
    assert found == [] and len(data) == 10_000
    assert problems(tmp_path, "- 1\n" * 10_001) == ["f.yaml:1: holds 10001 records in one list, more than 10000"]
    assert problems(tmp_path, "formulas:\n" + "  - 1\n" * 10_001) == ["f.yaml:2: holds 10001 records in one list, more than 10000"]


def test_a_file_over_4_mib_is_refused_and_4_mib_loads(tmp_path):
    mib4 = 4 * 1024 * 1024
    body = "a: 1\n#"  # 6 bytes, then a comment filling the rest
    data, found = load(tmp_path, body + "x" * (mib4 - len(body) - 1) + "\n")
    assert found == [] and data == {"a": 1}
    assert problems(tmp_path, body + "x" * (mib4 - len(body)) + "\n") == ["f.yaml: is larger than 4 MiB, the most read from one file"]


def test_a_fifo_is_refused_without_hanging(tmp_path):
    import os

    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    result = _load_in_thread(fifo, "f.yaml")
    if result is None:  # unblock the reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert result is not None, "load_yaml blocked on a FIFO"
    data, found = result
    assert data is None and [str(p) for p in found] == ["f.yaml: is a FIFO, not a regular file"]


def test_dev_zero_is_refused(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    result = _load_in_thread(Path("/dev/zero"), "zero.yaml")
    assert result is not None, "load_yaml kept reading /dev/zero"
    assert result[0] is None and [str(p) for p in result[1]] == ["zero.yaml: is a character device, not a regular file"]


def test_a_folder_is_refused(tmp_path):
    data, found = load_yaml(tmp_path, "dir.yaml")
    assert data is None and [str(p) for p in found] == ["dir.yaml: is a folder, not a regular file"]


def test_a_whole_number_past_4300_digits_is_a_problem_not_a_valueerror(tmp_path):
    # column 4: after 'b: '
    message = "holds a whole number past 2^1024, larger than any float a formula could use"
    assert problems(tmp_path, "a: 1\nb: " + "9" * 5000 + "\n") == [f"f.yaml:2:4: {message}"]
    assert problems(tmp_path, "examples:\n  - set: {params: " + "9" * 5000 + "}\n") == [f"f.yaml:2:19: {message}"]


def test_whole_numbers_are_capped_at_2_to_the_1024(tmp_path):
    # 0x1 followed by 256 hex zeros is 16**256 = 2**1024; 256 hex f's are 2**1024 - 1
    data, found = load(tmp_path, "a: 0x" + "f" * 256 + "\n")
    assert found == [] and data == {"a": 2**1024 - 1}
    assert problems(tmp_path, "a: 0x1" + "0" * 256 + "\n") == [
        "f.yaml:1:4: holds a whole number past 2^1024, larger than any float a formula could use"]
