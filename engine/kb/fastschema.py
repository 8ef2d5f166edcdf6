"""A JSON Schema (Draft 2020-12) schema compiled to one Python predicate: is this instance valid?

jsonschema walks a record keyword by keyword through its reference resolver; that is most of a
cold ``aiinfra check`` (some 4,000 records and measurement rows) and importing it costs about
0.1 s more. :func:`compile_schema` turns the keywords our schemas use into nested closures that
answer exactly what ``jsonschema.Draft202012Validator(schema).is_valid(instance)`` answers, so a
valid record needs no jsonschema at all; :mod:`engine.kb.schema` asks jsonschema for the errors
of a record this predicate refuses (it never words an error itself).

Exactness is the contract (tests/kb/test_fastschema.py compares both on every shipped record and
on thousands of spoilt ones). A schema using a keyword not handled here raises
:class:`Unsupported` when compiled, and its records are checked by jsonschema alone. Equality for
``enum``, ``const`` and ``uniqueItems`` is jsonschema's own (``1 != true``, ``1 == 1.0``): strings
are compared here, anything else through ``jsonschema._utils``.
"""

from __future__ import annotations

import numbers
import re

# keywords that assert nothing (annotations); "$defs" is read through "$ref"
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "deprecated",
                          "readOnly", "writeOnly"})


class Unsupported(Exception):
    """The schema uses a keyword (or a form of one) this module does not compile."""


def _search(pattern: str):
    return re.compile(pattern).search


def compile_schema(schema, pattern=_search):
    """The predicate of ``schema`` (a dict or a bool). ``pattern(p)`` gives the ``search`` of
    pattern ``p``: the default is Python's ``re`` as jsonschema uses it; engine.kb.schema passes
    its stricter end anchor, as its validator does."""
    return _Compiler(schema, pattern).compile(schema)


class _Compiler:
    def __init__(self, root, pattern):
        self.root, self.pattern = root, pattern
        self.refs: dict[str, list] = {}  # pointer -> [predicate], filled once compiled (a schema may refer to itself)

    def compile(self, schema):
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise Unsupported(f"a schema is a mapping or a boolean, not {type(schema).__name__}")
        checks = []
        for key, value in schema.items():
            if key in _ANNOTATIONS:
                if key == "$id" and schema is not self.root:
                    raise Unsupported("$id below the root changes how $ref resolves")
                continue
            make = _KEYWORDS.get(key)
            if make is None:
                raise Unsupported(f"keyword {key!r}")
            checks.append(make(self, value, schema))
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        checks = tuple(checks)
        return lambda x: all(c(x) for c in checks)

    def ref(self, pointer: str):
        if not pointer.startswith("#"):
            raise Unsupported(f"$ref {pointer!r} outside the schema")
        cell = self.refs.get(pointer)
        if cell is None:
            cell = self.refs[pointer] = []
            target = self.root
            for part in [p for p in pointer[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                if not isinstance(target, dict) or part not in target:
                    raise Unsupported(f"$ref {pointer!r} does not resolve")
                target = target[part]
            cell.append(self.compile(target))
        return lambda x: cell[0](x)


def _always(x) -> bool:
    return True


def _never(x) -> bool:
    return False


# ---------------------------------------------------------------------------- types (jsonschema's type checker)


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _is_integer(x) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


_TYPES = {
    "string": lambda x: isinstance(x, str),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": _is_integer,
}


def _type(c, value, schema):
    names = [value] if isinstance(value, str) else list(value)
    if not names or any(n not in _TYPES for n in names):
        raise Unsupported(f"type {value!r}")
    tests = tuple(_TYPES[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


# ---------------------------------------------------------------------------- equality (jsonschema's)


def _equal(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    from jsonschema._utils import equal

    return equal(a, b)


def _enum(c, value, schema):
    if not isinstance(value, list):
        raise Unsupported("enum is not a list")
    strings = frozenset(v for v in value if isinstance(v, str))
    others = tuple(v for v in value if not isinstance(v, str))
    return lambda x: x in strings if isinstance(x, str) else any(_equal(v, x) for v in others)


def _const(c, value, schema):
    return lambda x: _equal(value, x)


def _unique(c, value, schema):
    if not value:
        return _always

    def check(x) -> bool:
        if not isinstance(x, list):
            return True
        if all(isinstance(i, str) for i in x):
            return len(set(x)) == len(x)
        from jsonschema._utils import uniq

        return uniq(x)

    return check


# ---------------------------------------------------------------------------- numbers, strings, arrays, objects


def _bound(op):
    def make(c, value, schema):
        if not _is_number(value):
            raise Unsupported(f"bound {value!r}")
        return lambda x: not _is_number(x) or op(x, value)

    return make


def _length(test):
    def make(c, value, schema):
        if not isinstance(value, int) or isinstance(value, bool):
            raise Unsupported(f"length {value!r}")
        return test(value)

    return make


def _pattern(c, value, schema):
    search = c.pattern(value)
    return lambda x: not isinstance(x, str) or search(x) is not None


def _items(c, value, schema):
    if "prefixItems" in schema:
        raise Unsupported("prefixItems")
    sub = c.compile(value)
    return lambda x: not isinstance(x, list) or all(sub(i) for i in x)


def _properties(c, value, schema):
    subs = tuple((name, c.compile(sub)) for name, sub in value.items())
    return lambda x: not isinstance(x, dict) or all(sub(x[name]) for name, sub in subs if name in x)


def _additional(c, value, schema):
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    known = frozenset(schema.get("properties", {}))
    if value is True:
        return _always
    if value is False:
        return lambda x: not isinstance(x, dict) or all(k in known for k in x)
    sub = c.compile(value)
    return lambda x: not isinstance(x, dict) or all(sub(v) for k, v in x.items() if k not in known)


def _required(c, value, schema):
    names = tuple(value)
    return lambda x: not isinstance(x, dict) or all(n in x for n in names)


def _property_names(c, value, schema):
    sub = c.compile(value)
    return lambda x: not isinstance(x, dict) or all(sub(k) for k in x)


def _dependent_required(c, value, schema):
    pairs = tuple((name, tuple(deps)) for name, deps in value.items())
    return lambda x: not isinstance(x, dict) or all(all(d in x for d in deps) for name, deps in pairs if name in x)


def _min_properties(c, value, schema):
    return lambda x: not isinstance(x, dict) or len(x) >= value


# ---------------------------------------------------------------------------- combinations


def _one_of(c, value, schema):
    subs = tuple(c.compile(s) for s in value)
    return lambda x: sum(1 for s in subs if s(x)) == 1


def _any_of(c, value, schema):
    subs = tuple(c.compile(s) for s in value)
    return lambda x: any(s(x) for s in subs)


def _all_of(c, value, schema):
    subs = tuple(c.compile(s) for s in value)
    return lambda x: all(s(x) for s in subs)


def _not(c, value, schema):
    sub = c.compile(value)
    return lambda x: not sub(x)


def _if(c, value, schema):
    test = c.compile(value)
    then = c.compile(schema["then"]) if "then" in schema else _always
    other = c.compile(schema["else"]) if "else" in schema else _always
    return lambda x: then(x) if test(x) else other(x)


def _ref(c, value, schema):
    if not isinstance(value, str):
        raise Unsupported("$ref is not a string")
    return c.ref(value)


_KEYWORDS = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "uniqueItems": _unique,
    "minimum": _bound(lambda x, v: not x < v),  # jsonschema's comparisons, word for word (NaN passes them all)
    "maximum": _bound(lambda x, v: not x > v),
    "exclusiveMinimum": _bound(lambda x, v: not x <= v),
    "exclusiveMaximum": _bound(lambda x, v: not x >= v),
    "minLength": _length(lambda n: lambda x: not isinstance(x, str) or len(x) >= n),
    "maxLength": _length(lambda n: lambda x: not isinstance(x, str) or len(x) <= n),
    "minItems": _length(lambda n: lambda x: not isinstance(x, list) or len(x) >= n),
    "maxItems": _length(lambda n: lambda x: not isinstance(x, list) or len(x) <= n),
    "pattern": _pattern,
    "items": _items,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "minProperties": _min_properties,
    "oneOf": _one_of,
    "anyOf": _any_of,
    "allOf": _all_of,
    "not": _not,
    "if": _if,
    "then": lambda c, value, schema: _always,  # read by "if"
    "else": lambda c, value, schema: _always,
    "$ref": _ref,
}
