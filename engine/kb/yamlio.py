"""YAML reading that refuses duplicate keys and remembers where every value came from.

Mappings become :class:`MarkedDict` and sequences :class:`MarkedList`; both know the
line and column of each of their entries, so a schema error deep inside a record can be
reported as ``file:line:col``. Uses libyaml's CSafeLoader when available.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from engine.core.errors import Problem
from engine.core.fileread import MAX_FILE_BYTES, FileRefused, read_regular

TYPE_CHECKING = False  # typing costs about 4 ms to import; only type checkers need it

if TYPE_CHECKING:
    import yaml

MAX_BYTES = MAX_FILE_BYTES  # 4 MiB
MAX_NODES = 500_000  # after alias expansion; the largest shipped file has under 5,000
MAX_DEPTH = 64  # the deepest shipped file nests 7 levels
MAX_RECORDS = 10_000  # records in one list; the longest shipped list has 43
MAX_INT_BITS = 1024  # a whole number past 2^1024 is larger than any float a formula could use

class MarkedDict(dict):
    __slots__ = ("line", "col", "key_marks")

    def mark_of(self, key: object) -> tuple[int, int]:
        return self.key_marks.get(key, (self.line, self.col))


class MarkedList(list):
    __slots__ = ("line", "col", "item_marks")

    def mark_of(self, index: int) -> tuple[int, int]:
        if 0 <= index < len(self.item_marks):
            return self.item_marks[index]
        return (self.line, self.col)


class DuplicateKey(Exception):
    def __init__(self, key: object, line: int, col: int, first_line: int):
        self.key, self.line, self.col, self.first_line = key, line, col, first_line
        super().__init__(f"duplicate key {key!r} (first defined on line {first_line})")


class UnhashableKey(Exception):
    def __init__(self, line: int, col: int):
        self.line, self.col = line, col
        super().__init__("a mapping key must be a plain value, not a list or a mapping")


class LongNumber(Exception):
    def __init__(self, line: int, col: int):
        self.line, self.col = line, col
        super().__init__(f"holds a whole number past 2^{MAX_INT_BITS}, larger than any float a formula could use")


def _construct_int(loader, node: yaml.ScalarNode) -> int:
    try:
        value = loader.construct_yaml_int(node)
    except ValueError:  # past Python's 4,300-digit limit for int(text)
        value = None
    if value is None or value.bit_length() > MAX_INT_BITS:
        raise LongNumber(node.start_mark.line + 1, node.start_mark.column + 1)
    return value


def _construct_mapping(loader, node: yaml.MappingNode, deep: bool = False) -> MarkedDict:
    # flatten_mapping puts the pairs merged in by ``<<:`` first; the mapping's own keys
    # follow and may override them, as YAML allows. Only an own key given twice is refused.
    own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)
    merged_count = len(node.value) - own
    result = MarkedDict()
    result.line, result.col = node.start_mark.line + 1, node.start_mark.column + 1
    result.key_marks = {}
    key_lines: dict[object, int] = {}
    for index, (key_node, value_node) in enumerate(node.value):
        key = _child(loader, key_node)
        line, col = key_node.start_mark.line + 1, key_node.start_mark.column + 1
        try:
            hash(key)
        except TypeError:
            raise UnhashableKey(line, col) from None
        if index >= merged_count and key in key_lines:
            raise DuplicateKey(key, line, col, key_lines[key])
        if index >= merged_count:
            key_lines[key] = line
        result.key_marks[key] = (value_node.start_mark.line + 1, value_node.start_mark.column + 1)
        result[key] = _child(loader, value_node)
    return result


_STR = "tag:yaml.org,2002:str"


def _child(loader, node):
    """``loader.construct_object(node, deep=True)``; a plain string (most values) directly, as
    PyYAML's str constructor gives it (the node's own text), without its bookkeeping."""
    if node.tag == _STR and type(node.value) is str:  # a scalar node
        return node.value
    return loader.construct_object(node, deep=True)


def _construct_sequence(loader, node: yaml.SequenceNode, deep: bool = False) -> MarkedList:
    result = MarkedList([_child(loader, child) for child in node.value])
    result.line, result.col = node.start_mark.line + 1, node.start_mark.column + 1
    result.item_marks = [(c.start_mark.line + 1, c.start_mark.column + 1) for c in node.value]
    return result


@cache
def _loader_class():
    """The YAML loader class, built on first use so that importing this module does not import PyYAML."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    resolved: dict = {}  # (value, implicit) -> tag of a plain or quoted scalar: keys and units repeat on every record

    class _Loader(base):  # type: ignore[misc]
        def resolve(self, kind, value, implicit, _scalar=yaml.ScalarNode, _get=resolved.get, _alone=not base.yaml_path_resolvers):
            # a scalar's tag depends on its text and how it was written alone (the safe loader has no path resolvers)
            if kind is _scalar and _alone:
                tag = _get((value, implicit))
                if tag is not None:
                    return tag
                tag = base.resolve(self, kind, value, implicit)
                if len(value) <= 64:  # names, units, numbers: what repeats (long text rarely does)
                    if len(resolved) > 50_000:
                        resolved.clear()
                    resolved[(value, implicit)] = tag
                return tag
            return base.resolve(self, kind, value, implicit)

    # YAML 1.2 reads 1e3 and 1.5e7 as floats; PyYAML (YAML 1.1) would keep them as strings.
    _Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
    _Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)
    return _Loader


def load_yaml(path: Path, display: str) -> tuple[object, list[Problem]]:
    """Read one YAML file; return (data, problems). ``display`` is the path shown in messages.

    Bounded for files from anywhere: a regular file of at most MAX_BYTES, whose aliases
    expand to at most MAX_NODES nodes, nested at most MAX_DEPTH deep, with at most
    MAX_RECORDS records in its top-level list (or in each list of its top-level mapping).
    """
    try:
        text = read_regular(path, MAX_BYTES).decode("utf-8")
    except FileRefused as exc:
        return None, [Problem(display, "", "", exc.reason)]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Problem(display, "", "", f"cannot be read ({exc.__class__.__name__}: {exc})")]
    if "\x00" in text:
        return None, [Problem(display, "", "", "contains a NUL byte")]
    try:
        return _load_bounded(text), []
    except TooLarge as exc:
        return None, [Problem(f"{display}:{exc.line}" if exc.line else display, "", "", str(exc))]
    except DuplicateKey as exc:
        return None, [Problem(f"{display}:{exc.line}:{exc.col}", "", str(exc.key), str(exc))]
    except (UnhashableKey, LongNumber) as exc:
        return None, [Problem(f"{display}:{exc.line}:{exc.col}", "", "", str(exc))]
    except RecursionError:
        return None, [Problem(display, "", "", "is not valid YAML (nested too deeply)")]
    except Exception as exc:  # yaml.YAMLError (PyYAML is imported only when a file is read)
        if not _is_yaml_error(exc):
            raise
        mark = getattr(exc, "problem_mark", None)
        place = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
        reason = getattr(exc, "problem", None) or str(exc)
        if "depth" in reason:  # newer libyaml caps nesting itself; older builds recurse
            return None, [Problem(display, "", "", "is not valid YAML (nested too deeply)")]
        return None, [Problem(place, "", "", f"is not valid YAML ({reason})")]


class TooLarge(Exception):
    """A YAML document past one of the caps; ``line`` is 0 when the whole file is meant."""

    def __init__(self, message: str, line: int = 0):
        self.line = line
        super().__init__(message)


def _load_bounded(text: str) -> object:
    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _is_yaml_error(exc: Exception) -> bool:
    import yaml

    return isinstance(exc, yaml.YAMLError)


def _check_size(root) -> None:
    """Refuse a document whose aliases expand past MAX_NODES, that refers to itself, is nested
    past MAX_DEPTH or holds more than MAX_RECORDS records. Each collection is counted once
    however many aliases point at it, so a 'billion laughs' file costs its size; the depth cap
    bounds the recursion."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    import yaml

    def walk(node: yaml.Node, depth: int) -> int:
        value = node.value
        if isinstance(value, str):  # a scalar
            return 1
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        line = node.start_mark.line + 1
        if key in open_nodes:
            raise TooLarge("an alias refers to a node that contains it (a recursive document)", line)
        if depth > MAX_DEPTH:
            raise TooLarge(f"is nested more than {MAX_DEPTH} levels deep", line)
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            for k, v in value:
                total += walk(k, depth + 1) + walk(v, depth + 1)
        else:
            for child in value:
                total += walk(child, depth + 1)
        open_nodes.discard(key)
        if total > MAX_NODES:
            raise TooLarge(f"expands to more than {MAX_NODES:,} nodes through its aliases (&anchor / *alias), the most read from one file")
        sizes[key] = total
        return total

    walk(root, 1)
    _check_records(root)


def _check_records(root) -> None:
    import yaml

    lists = [root] if isinstance(root, yaml.SequenceNode) else [v for _, v in _pairs(root) if isinstance(v, yaml.SequenceNode)]
    for node in lists:
        if len(node.value) > MAX_RECORDS:
            raise TooLarge(f"holds {len(node.value)} records in one list, more than {MAX_RECORDS}", node.start_mark.line + 1)


def _pairs(node) -> list:
    import yaml

    return node.value if isinstance(node, yaml.MappingNode) else []


def mark_at(data: object, path: list[object]) -> tuple[int, int] | None:
    """Line and column of the value at ``path`` inside ``data`` (the deepest one known)."""
    best: tuple[int, int] | None = None
    node = data
    for step in path:
        if isinstance(node, MarkedDict) and step in node:
            best = node.mark_of(step)
            node = node[step]
        elif isinstance(node, MarkedList) and isinstance(step, int) and 0 <= step < len(node):
            best = node.mark_of(step)
            node = node[step]
        else:
            break
    if best is None and isinstance(data, MarkedDict | MarkedList):
        best = (data.line, data.col)
    return best


def plain(value):
    """Marked YAML containers as plain dicts and lists (for records kept after loading)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
