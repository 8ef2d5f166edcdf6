"""JSON Schema (Draft 2020-12) checks of raw YAML records, one schema per record kind.

Every error becomes a :class:`~engine.core.errors.Problem` placed at ``file:line:col`` of the
offending value, with the record id and the field path (``symbols.kv_bytes.unit``).
"""

from __future__ import annotations

import json
import re
from functools import cache

from engine.core.errors import Problem
from engine.kb.yamlio import mark_at, plain


@cache
def schema_of(kind: str) -> dict:
    """The JSON Schema of record kind ``kind`` (``engine/kb/schemas/<kind>.json``)."""
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas", f"{kind}.json"), encoding="utf-8") as fh:
        return json.load(fh)


@cache
def validator(kind: str):
    from jsonschema import Draft202012Validator, validators

    # the shipped schemas are checked against the metaschema by tests/kb/test_schemas_valid.py, not on
    # every run: checking all 14 costs about half a second of a cold check
    strict = validators.extend(Draft202012Validator, {"pattern": _pattern_to_end})
    return strict(schema_of(kind))


@cache
def is_valid(kind: str):
    """``validator(kind).is_valid`` as one compiled predicate (engine.kb.fastschema): a valid record
    is answered without jsonschema; None when the schema uses a keyword it does not compile."""
    from engine.kb.fastschema import Unsupported, compile_schema

    try:
        return compile_schema(schema_of(kind), lambda p: _end_anchored(p).search)
    except Unsupported:
        return None


def _pattern_to_end(validator, pattern: str, instance, schema):
    """The ``pattern`` keyword, with a final ``$`` meaning the end of the string.

    Python's ``$`` also matches before a trailing newline, so ``"x\n"`` would pass
    ``^[A-Za-z_][A-Za-z0-9_]*$`` and reach the generated module as a symbol name.
    """
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _end_anchored(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def _end_anchored(pattern: str) -> re.Pattern:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def field_path(path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def validate(kind: str, raw: object, display: str, record_id: str) -> list[Problem]:
    fast = is_valid(kind)
    if fast is not None and fast(raw):  # exact: jsonschema would find nothing either
        return []
    problems = []
    for error in validator(kind).iter_errors(raw):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {})
            extra = [k for k in error.instance if k not in known]
            mark = mark_at(raw, path + extra[:1])  # the line of the first unknown key
        else:
            mark = mark_at(raw, path)
        place = f"{display}:{mark[0]}:{mark[1]}" if mark else display
        problems.append(Problem(place, record_id, field_path(path), _message(error)))
    return problems


def message(error) -> str:
    """One sentence for a jsonschema error, in the project's words (what ``validate`` reports)."""
    return _message(error)


def _message(error) -> str:
    validator_name = error.validator
    instance = error.instance
    if validator_name == "type" and error.validator_value == "string" and isinstance(instance, int | float) and not isinstance(instance, bool):
        return f"expected a string, got the number {instance!r} (quote ids and section numbers: \"4.10\" is not 4.1)"
    if validator_name == "type":
        expected = error.validator_value if isinstance(error.validator_value, str) else " or ".join(error.validator_value)
        return f"expected {expected}, got {_typename(instance)} {_short(instance)}"
    if validator_name == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required field {missing!r}"
    if validator_name == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field(s)")
    if validator_name == "enum":
        return f"{_short(instance)} is not one of {', '.join(map(str, error.validator_value))}"
    if validator_name == "pattern":
        return f"{_short(instance)} does not match the expected form {error.validator_value}"
    if validator_name == "oneOf" and isinstance(instance, dict) and "expr" in instance and "variants" in instance:
        return "give either expr or variants with a selector, not both"
    if validator_name == "oneOf" and isinstance(instance, dict) and "expr" in instance and "selector" in instance:
        return "a selector picks among variants; with a single expr, drop the selector"
    if validator_name == "oneOf" and isinstance(instance, dict) and "variants" in instance:
        return "variants need a selector (the categorical symbol that picks one)"
    if validator_name == "oneOf" and isinstance(instance, dict) and "id" in instance:
        return "needs either expr, or variants with a selector"
    if validator_name == "not" and isinstance(instance, dict) and "values" in instance:
        return "values are only for a categorical domain"
    return error.message


def _typename(value: object) -> str:
    """Plain YAML/JSON type names (the loader's MarkedDict is a dict, MarkedList a list)."""
    for kind, name in ((bool, "boolean"), (dict, "dict"), (list, "list"), (str, "str"), (int, "int"), (float, "float")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _short(value: object) -> str:
    text = repr(plain(value))
    return text if len(text) <= 60 else text[:57] + "..."



def read_records(files, kind: str, what: str, reader=None) -> tuple[list[tuple[str, object]], list[Problem]]:
    """One record per YAML file: each ``(path, display)`` read with the duplicate-key loader and
    checked against schema ``kind``. Returns the valid ``(display, marked mapping)`` pairs in file
    order and every problem (``what`` names the record in "expected one ... record"). ``reader``
    (an ``engine.kb.loadcache.FileCache``) answers unchanged files from the cache."""
    if reader is not None:
        load_yaml, check = reader.load_yaml, reader.validate
    else:
        from engine.kb.yamlio import load_yaml

        check = validate

    good: list[tuple[str, object]] = []
    problems: list[Problem] = []
    for path, display in files:
        data, found = load_yaml(path, display)
        problems += found
        if found:
            continue
        if data is None:  # an empty file would drop its record without a word
            problems.append(Problem(f"{display}:1", "", "", f"is empty (expected one {what} record)"))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(display, "", "", f"expected one {what} record (a mapping)"))
            continue
        found = check(kind, data, display, str(data.get("id", getattr(path, "stem", ""))))
        problems += found
        if not found:
            good.append((display, data))
    return good, problems
