"""Reading a Hugging Face ``config.json`` that someone else wrote, with bounded work.

JSON itself lets a key repeat (the last one silently wins), nest without limit and hold
integers of any length; a config.json does none of these honestly. ``parse_config`` refuses
each with one line naming the key, and ``check_values`` bounds a config given as a dict:
nesting, and whole numbers up to 2^53, the largest range in which every integer is exact
in the floating-point arithmetic the parameter count uses.
"""

from __future__ import annotations

import json

from engine.core.errors import InputError

MAX_BYTES = 4 * 1024 * 1024  # Hugging Face config.json files are a few KiB
MAX_DEPTH = 32  # text_config > rope_scaling > ... nests 3 or 4 levels in real configs
EXACT = 2**53  # 9007199254740992
_DIGITS = 20  # longer integer literals are past EXACT; never handed to int() (4,300-digit limit)


class _Huge:
    """An integer literal too long to convert; kept as its digit count until a key can be named."""

    __slots__ = ("digits",)

    def __init__(self, text: str):
        self.digits = len(text.lstrip("-"))


def _int(text: str) -> int | _Huge:
    return int(text) if len(text) <= _DIGITS else _Huge(text)


class _Repeated(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Repeated(key)
        out[key] = value
    return out


def parse_config(raw: bytes, path: str) -> dict:
    """The JSON object in ``raw`` (the bytes of ``path``), checked by :func:`check_values`."""
    data = parse_json(raw, path, "CONFIG_JSON")
    if not isinstance(data, dict):
        raise InputError("CONFIG_JSON", f"{path!r} holds a JSON {type(data).__name__}, expected an object")
    check_values(data, f"{path!r}")
    return data


def parse_json(raw: bytes, path: str, field: str) -> object:
    """Any JSON value in ``raw``, with duplicate keys, deep nesting and 4,300-digit numbers refused under ``field``."""
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique, parse_int=_int)
    except _Repeated as exc:
        if field == "CONFIG_JSON":  # a config's key is the field a user looks for
            raise InputError(exc.key, f"is given twice in {path!r} (expected each key once)") from None
        raise InputError(field, f"{path!r} gives the key {exc.key!r} twice (expected each key once)") from None
    except RecursionError:
        raise InputError(field, f"{path!r} is nested too deeply (expected at most {MAX_DEPTH} levels)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(field, f"{path!r} is not JSON ({exc})") from None
    if field != "CONFIG_JSON":
        check_values({"value": data}, f"{path!r}", field)
    return data


def read_bytes(path: str, field: str, what: str = "a JSON file") -> bytes:
    """The bytes of the regular file at ``path`` (at most MAX_BYTES); bad input is named by ``field``."""
    from engine.core.fileread import FileRefused, read_regular

    try:
        return read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        raise InputError(field, f"{path!r} does not exist (expected {what})") from None
    except FileRefused as exc:
        raise InputError(field, f"{path!r} {exc.reason}") from None
    except OSError as exc:
        raise InputError(field, f"{path!r} cannot be read ({exc.strerror or exc})") from None


def read_json(path: str, field: str, what: str = "a JSON file") -> object:
    """The JSON in the file at ``path``, read by :func:`read_bytes` and parsed by :func:`parse_json`."""
    return parse_json(read_bytes(path, field, what), path, field)


def check_values(config: dict, where: str = "config.json", field: str = "") -> None:
    """Refuse nesting past MAX_DEPTH and whole numbers past 2^53, naming the key (iterative)."""
    stack: list[tuple[str, object, int]] = [(key, value, 2) for key, value in reversed(config.items())]
    while stack:
        name, value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise InputError(field or "CONFIG_JSON", f"{where} is nested more than {MAX_DEPTH} levels deep")
            items = value.items() if isinstance(value, dict) else ((f"[{i}]", v) for i, v in enumerate(value))
            inner = [(f"{name}.{k}" if isinstance(value, dict) else f"{name}{k}", v, depth + 1) for k, v in items]
            stack.extend(reversed(inner))
        elif isinstance(value, _Huge):
            raise InputError(field or name, f"{name + ' ' if field else ''}is a {value.digits}-digit number, past 2^53 = {EXACT} (expected a whole number up to 2^53)")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > EXACT:
            raise InputError(field or name, f"{name + ' = ' if field else ''}{_show(value)} is past 2^53 = {EXACT}, where counts are no longer exact (expected a whole number up to 2^53)")


def _show(value: int) -> str:
    return str(value) if value.bit_length() <= 256 else f"a {value.bit_length()}-bit number"
