"""The compiled formula module: numeric evaluation without sympy or the YAML stack.

Every formula variant becomes a plain Python function (math only) and a NumPy twin;
metadata the numeric side needs (symbols, units, domains, defaults, and per-input
monotonicity worked out once by SymPy) becomes literal dicts. The module is written to a
the user's private cache (engine.core.cache) as a digest-checked code object, named by a hash of
the formula files and of this generator, and rebuilt whenever either changes.

Cache folder: ``$AIINFRA_CACHE_DIR``, else ``$XDG_CACHE_HOME/aiinfra``, else
``~/.cache/aiinfra`` (created 0700); never a shared temporary folder. When it is not
private or not writable the module is built in memory for this run.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib
from time import monotonic as _monotonic

import engine

GENERATOR_VERSION = "5"  # 2: orderings (given, mono_given); 3: scaling shapes; 4: REFUSED (formulas left out); 5: default variant


def cache_dir() -> str:
    """The configured cache folder (see engine.core.cache for which files in it are trusted)."""
    from engine.core import cache

    return cache.location()


_OWN = ("engine/numeric/compiled.py", "engine/numeric/directions.py", "engine/core/cache.py", "engine/core/codegen.py", "engine/core/expr.py", "engine/core/units.py", "engine/core/symbolic.py", "engine/kb/formulas.py", "engine/kb/records.py")


def content_hash(root) -> str:
    """Key of the compiled formula module: the formula files and this generator's sources."""
    return files_key(root, ("formulas",), _OWN, GENERATOR_VERSION)


def files_key(root, folders, own_files, salt: str = "") -> str:
    """CRC-32 and Adler-32 over the YAML files of ``folders`` under ``root`` (path and bytes)
    and over the engine's own ``own_files`` (by name, so the key does not depend on where
    the root lives).

    zlib, not hashlib: the key only names a cache entry, and OpenSSL's start-up would
    cost more than the whole evaluation.

    Reading every file costs a command more than the rest of its start (the formulas alone
    are ~0.9 MB): a key is also kept in the private cache with the files' stat signatures
    (inode, size, modification and change time), as git's index keeps them, and given back
    while every signature is the same and every file was older than RACY_NS when it was
    kept (a write changes the change time, which no one can set back; a file written in
    the same clock tick as the key was kept is never trusted). Anything else reads the files.
    """
    crc, adler = zlib.crc32(salt.encode()), zlib.adler32(salt.encode())
    here = os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__)))  # own files are named engine/...
    files = [(own, os.path.join(here, own)) for own in own_files]
    for folder in folders:
        base = os.path.join(os.fspath(root), folder)
        for dirpath, dirnames, filenames in sorted(os.walk(base)):
            dirnames.sort()
            files += [(None, os.path.join(dirpath, n)) for n in sorted(filenames) if n.endswith(".yaml")]
    named = [(own if own is not None else os.path.relpath(path, os.fspath(root)), path) for own, path in files]
    signature = tuple(_signature(path) for _, path in named)
    memo = (salt, tuple(named))
    seen = _KEYS.get(memo)
    if seen is not None and None not in signature and seen[0] == signature:
        return seen[1]
    kept = _kept_key(memo, signature)
    if kept is not None:
        _KEYS[memo] = (signature, kept)
        return kept
    for name, path in named:
        data = name.encode() + b"\0" + _content(path) + b"\0"
        crc, adler = zlib.crc32(data, crc), zlib.adler32(data, adler)
    key = f"{crc:08x}{adler:08x}{len(files):04x}"
    _KEYS[memo] = (signature, key)
    _keep_key(memo, signature, key)
    return key


def _kept_name(memo: tuple) -> str:
    text = "\0".join([memo[0], *(f"{name}\0{path}" for name, path in memo[1])]).encode("utf-8", "surrogateescape")
    return f"keys_{zlib.crc32(text):08x}{zlib.adler32(text):08x}.json"


def _kept_key(memo: tuple, signature: tuple) -> str | None:
    """The key kept for these files (``files_key``), when every file is as it was and was settled then."""
    if None in signature:
        return None
    from engine.core import cache

    kept = cache.read_json(_kept_name(memo))
    try:
        at, key = kept["at"], kept["key"]
        same = kept["signature"] == [list(s) for s in signature]
    except (TypeError, KeyError):
        return None
    if not same or not isinstance(key, str) or not isinstance(at, int) or any(max(s[2], s[3]) >= at - RACY_NS for s in signature):
        return None
    return key


def _keep_key(memo: tuple, signature: tuple, key: str) -> None:
    import time

    now = time.time_ns()
    if None in signature or any(max(s[2], s[3]) >= now - RACY_NS for s in signature):
        return  # a file written just now may be written again within its timestamp's tick: read it next time
    from engine.core import cache

    if cache.write_json(_kept_name(memo), {"at": now, "key": key, "signature": [list(s) for s in signature]}):
        cache.prune("keys_", ".json", keep=64)


_KEYS: dict[tuple, tuple] = {}  # (salt, files) -> (their stat signatures, key) computed by this process


def _signature(path: str) -> tuple | None:
    """Inode, size, modification and change time (ns) of a regular file; None otherwise (read it)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if stat.S_ISREG(st.st_mode) else None


_SEEN: dict[str, tuple[tuple, bytes]] = {}  # path -> (stat signature, bytes) read by this process


def _content(path: str) -> bytes:
    """A file's bytes for the key. A FIFO, a device or an oversized file counts as its refusal
    (the loader reports it as a problem), so computing the key never blocks or reads without end.

    A regular file already read by this process is not read again while its inode, size and
    modification time (nanoseconds) and change time are the same: one command computes several
    keys over the same files (arch show runs six calculators), and a long-lived API process
    re-keys on every call."""
    from engine.core.fileread import MAX_FILE_BYTES, FileRefused, read_regular

    sig = _signature(path)
    seen = _SEEN.get(path)
    if seen is not None and sig is not None and seen[0] == sig:
        return seen[1]
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except FileRefused as exc:
        return exc.reason.encode()
    if sig is not None:
        _SEEN[path] = (sig, data)
    return data


def load(root, strict: bool = True):
    """The compiled module for ``root``: from the private cache when intact, built on a miss.

    Raises KnowledgeError when the formula files have problems. With ``strict=False`` a module whose
    refused formulas were left out (``REFUSED``, see ``build_source``) is returned: a command that runs
    one calculator or tree refuses only those that need a refused formula (``refused_problems``).
    """
    return _strictly(module(_checked_key(root), lambda: _source(root)), strict)


def refused_problems(mod) -> list:
    """The problems of the formulas ``mod`` was compiled without (an empty list when none was refused)."""
    from engine.core.errors import Problem

    return sorted(Problem(*p) for meta in getattr(mod, "REFUSED", {}).values() for p in meta["problems"])


def _strictly(mod, strict: bool):
    if strict and getattr(mod, "REFUSED", None):
        from engine.core.errors import KnowledgeError

        raise KnowledgeError(refused_problems(mod))
    return mod


# ---------------------------------------------------------------------- in-process memo
#
# ``load`` re-reads and checksums every formula file: right for a command, which runs once,
# but about 40x one evaluation for a caller (the Python API) that evaluates in a loop.
# ``memoised`` keeps the module per root and re-checks freshness at most every
# FRESH_INTERVAL seconds, by a stat of the formula files (one stat costs about 9 us here, so
# stat-ing 14 files on every call would cost more than the evaluation); when a stat
# changes, or a file is newer than RACY_NS (a second edit in the same timestamp tick would
# leave the stat unchanged), the content key decides. The engine's own sources are not
# stat-ed: the code that generates the module in this process is the code already imported.

FRESH_INTERVAL = 0.01  # s between freshness checks of one root
RACY_NS = 2_000_000_000  # a file modified this recently is judged by content, not by its stat
_MEMO: dict[str, list] = {}  # absolute root -> [stamp, racy, key, module, checked_at]


def load_having(root, needed, what: str, where: str):
    """The compiled formulas of ``root``, or of the shipped knowledge when ``root`` has no formulas/ folder; an
    InputError on --root when they lack any of ``needed`` (``what`` those formulas are, ``where`` their file)."""
    from engine.core.errors import InputError
    from engine.core.paths import shipped_root

    use = root if os.path.isdir(os.path.join(root, "formulas")) else shipped_root()
    module = load(use)
    missing = [f for f in needed if f not in module.FORMULAS]
    if missing:
        raise InputError("--root", f"{use} lacks the {what} {', '.join(missing)} ({where})")
    return module


def memoised(root, strict: bool = True):
    """``load(root, strict)``, kept in this process: an edit of a formula file is seen by the
    first call that starts FRESH_INTERVAL after it; ``forget()`` makes the next call check."""
    path = root if type(root) is str else os.fspath(root)
    path = path if os.path.isabs(path) else os.path.abspath(path)
    hit = _MEMO.get(path)
    now = _monotonic()
    if hit is not None and (now - hit[4] < FRESH_INTERVAL or _still_fresh(path, hit, now)):
        return _strictly(hit[3], strict)
    stamp, racy = _stamp(path)  # before the key: an edit in between shows at the next check
    key = _checked_key(path)
    mod = module(key, lambda: _source(path))
    _MEMO[path] = [stamp, racy, key, mod, now]
    return _strictly(mod, strict)


def forget(root=None) -> None:
    """Drop the memo of ``root`` (of every root when None): the next ``memoised`` call checks."""
    if root is None:
        _MEMO.clear()
    else:
        path = os.fspath(root)
        _MEMO.pop(path if os.path.isabs(path) else os.path.abspath(path), None)


def _still_fresh(path: str, hit: list, now: float) -> bool:
    stamp, racy = _stamp(path)
    if stamp == hit[0] and not hit[1]:
        hit[4] = now
        return True
    if not os.path.isdir(path) or content_hash(path) != hit[2]:
        return False
    hit[0], hit[1], hit[4] = stamp, racy, now
    return True


def _stamp(path: str) -> tuple[tuple, bool]:
    """(name, size, mtime, ctime, inode) of every YAML file under formulas/, and whether any
    of them is newer than RACY_NS."""
    import time

    found: list[tuple] = []
    _scan(os.path.join(path, "formulas"), found)
    newest = max((max(entry[2], entry[3]) for entry in found), default=0)
    return tuple(found), newest > time.time_ns() - RACY_NS


def _scan(base: str, found: list) -> None:
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        found.append((base, None, 0, 0, 0))
        return
    for e in entries:
        if e.is_dir():
            _scan(e.path, found)
        elif e.name.endswith(".yaml"):
            try:
                st = e.stat()
            except OSError:
                found.append((e.path, None, 0, 0, 0))
                continue
            found.append((e.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))


def _checked_key(path) -> str:
    if not os.path.isdir(path):
        from engine.core.errors import KnowledgeError, Problem

        raise KnowledgeError([Problem(os.fspath(path), "", "", "is not a folder (expected a knowledge root with formulas/ and knowledge/)")])
    return content_hash(path)


def _source(path) -> str:
    from pathlib import Path

    return build_source(Path(path))


_REFUSED: dict[str, list] = {}  # key -> the problems its source was refused for (keys name file contents: an edit is a new key)


def module(key: str, make_source):
    """The generated module named by ``key``: its code object read from the private cache
    (digest-checked, see engine.core.cache), else ``make_source()`` compiled and cached.

    The code is only ever produced here, from source that engine.core.codegen generated from
    whitelisted expression trees; a cache file that is not the user's own, or whose content
    does not match its digest, is never run.
    """
    name = f"_aiinfra_formulas_{key}"
    if name in sys.modules:
        return sys.modules[name]
    if key in _REFUSED:  # the same files were refused in this process: the same problems, without loading the root again
        from engine.core.errors import KnowledgeError

        raise KnowledgeError(_REFUSED[key])
    code = _cached_code(key)
    if code is None:
        from engine.core.errors import KnowledgeError
        from engine.core.progress import note

        note("building formula cache...")
        try:
            source = make_source()
        except KnowledgeError as exc:
            _REFUSED[key] = list(exc.problems)
            raise
        code = compile(source, f"<aiinfra compiled {key}>", "exec")
        _store_code(key, code)
    import types

    mod = types.ModuleType(name)
    exec(code, mod.__dict__)  # code compiled by this process or digest-checked from the user's private cache
    sys.modules[name] = mod
    return mod


def _code_name(key: str) -> str:
    # marshal is per version; condition modules (key conditions_...) are named apart from the formula modules,
    # so pruning one kind never evicts the other (#24: concurrent cold runs evicted the formula module)
    return f"{_code_kind(key)}{key.removeprefix(CONDITIONS)}_{sys.implementation.cache_tag}_{sys.hexversion:x}.code"


CONDITIONS = "conditions_"


def _code_kind(key: str) -> str:
    """The file-name prefix of a generated module: ``conditions_`` for the condition modules, else ``formulas_``."""
    return CONDITIONS if key.startswith(CONDITIONS) else "formulas_"


def _cached_code(key: str):
    import marshal

    from engine.core import cache

    name = _code_name(key)
    payload = cache.read(name)
    if payload is None:
        return None
    try:
        return marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        cache.discard(name)
        return None


def _store_code(key: str, code) -> None:
    import marshal

    from engine.core import cache

    if cache.write(_code_name(key), marshal.dumps(code)):
        cache.prune(_code_kind(key), ".code", keep=32)


# ---------------------------------------------------------------------- generation


def build_source(root) -> str:
    """Load the formulas of ``root`` and generate the module's source text.

    A formula refused on its own (its expression, a symbol, its schema: it did not load, and its
    output symbol is known and no other formula produces it) is left out and listed in the module's
    ``REFUSED`` (id -> output symbol and problems), so one cached module serves both the strict
    ``load`` (which raises them) and the commands that run one calculator or tree (#24). Any other
    problem of the formula files (a file that does not read, a rule over several formulas) refuses
    the whole module: KnowledgeError.
    """
    from engine.kb.knowledge import Knowledge

    knowledge = Knowledge.load(root, strict=False)
    formula_problems = [p for p in knowledge.problems if p.place.startswith("formulas/") or p.place == str(root)]
    refused = _left_out(root, knowledge.formulas, formula_problems) if formula_problems else {}
    if refused is None:
        from engine.core.errors import KnowledgeError

        raise KnowledgeError(formula_problems)
    return generate(knowledge.formulas, refused)


def _left_out(root, formulas, problems) -> dict | None:
    """{id: {"symbol", "symbols", "problems"}} when every one of ``problems`` belongs to a formula that did not load
    and whose output symbol (read from its record) no loaded formula produces; None otherwise. ``symbols``: the
    names its record declares (a symbol only it declares means nothing to a tree or calculator without it)."""
    import os.path

    from engine.kb.yamlio import load_yaml

    loaded = {f.id for f in formulas}
    produced = {f.output.symbol for f in formulas}
    by_id: dict[str, list] = {}
    files: set[str] = set()
    for p in problems:
        if not p.place.startswith("formulas/") or not p.id or p.id in loaded or p.id.startswith("["):
            return None
        by_id.setdefault(p.id, []).append(p)
        files.add(p.place.split(":", 1)[0])
    symbols: dict[str, set] = {fid: set() for fid in by_id}
    declared: dict[str, set] = {fid: set() for fid in by_id}
    for display in sorted(files):
        data, trouble = load_yaml(os.path.join(os.fspath(root), display), display)
        if trouble or not isinstance(data, list):
            return None
        for raw in data:
            fid = str(raw.get("id")) if isinstance(raw, dict) else None
            if fid in symbols:
                output = raw.get("output")
                symbol = output.get("symbol") if isinstance(output, dict) else None
                symbols[fid].add(symbol if isinstance(symbol, str) else None)
                names = raw.get("symbols")
                if isinstance(names, dict):
                    declared[fid].update(n for n in names if isinstance(n, str) and n.isidentifier())
    out = {}
    for fid, found in symbols.items():
        symbol = found.pop() if len(found) == 1 else None
        if not isinstance(symbol, str) or not symbol.isidentifier() or symbol in produced:
            return None
        out[fid] = {"symbol": symbol, "symbols": sorted(declared[fid]), "problems": [list(p) for p in by_id[fid]]}
    return out


def generate(formulas, refused: dict | None = None) -> str:
    from engine.core import codegen

    formulas = list(formulas)
    symbolic_parts = _symbolic_parts(formulas)
    lines = ['"""Generated by engine.numeric.compiled from the formula YAML files. Do not edit."""', "", codegen.PRELUDE, ""]
    table: dict[str, dict] = {}
    for f, directions in zip(formulas, symbolic_parts, strict=True):
        numeric = {n: s for n, s in f.symbols.items() if not s.categorical}
        variants = {}
        for index, variant in enumerate(f.variants):
            fn = f"f_{f.id}_{index}"
            used = variant.tree.symbols()
            inputs = [n for n in numeric if n in used]  # declared order
            names = {n: f"v_{n}" for n in inputs}
            args = ", ".join(names[n] for n in inputs)
            body = []
            for n in inputs:
                scale = numeric[n].unit.scale
                if scale != 1.0:
                    body.append(f"    {names[n]} = {names[n]} * {scale!r}")
            out_scale = f.output.unit.scale
            for flavour, suffix in (("math", ""), ("numpy", "_np")):
                expr = codegen.to_python(variant.tree, names, numpy=flavour == "numpy")
                tail = f" / {out_scale!r}" if out_scale != 1.0 else ""
                head = ["    import numpy as _np"] if flavour == "numpy" else []
                lines += [f"def {fn}{suffix}({args}):", *head, *body, f"    return {expr}{tail}", ""]
            mono, given, mono_given, shape = directions[index]
            variants[variant.key] = {
                "inputs": list(inputs),
                "expr": variant.expr,
                "fn": fn,
                "np": fn + "_np",
                "mono": mono,
                "given": given,
                "mono_given": mono_given,
                "shape": shape,
                "name": variant.name,
                "assumptions": list(variant.assumptions),
            }
        table[f.id] = {
            "id": f.id,
            "name": f.name,
            "name_zh": f.name_zh,
            "section": f.section,
            "defined_in": f.defined_in,
            "output": {"symbol": f.output.symbol, "unit": f.output.unit_text, "desc": f.output.desc, "per": f.output.per},
            "symbols": {n: _symbol_meta(s) for n, s in f.symbols.items() if n in f.inputs},
            "selector": f.selector,
            "variants": variants,
            "assumptions": list(f.assumptions),
            "metric": f.metric,
        }
    # repr, not pprint.pformat: the same literal (repr of every value, in order), 20x faster to write (0.3 s of a cold build)
    if refused:  # FORMULAS[a refused id] is that formula's broken record (exit 1 at its file:line), not a KeyError
        lines += [_REFUSED_TABLE, "FORMULAS = _Formulas(" + repr(table) + ")"]
    else:
        lines.append("FORMULAS = " + repr(table))
    lines.append(_DEFAULT_VARIANT)
    lines.append("REFUSED = " + repr(dict(refused or {})))  # formulas left out: id -> {"symbol", "problems"} (build_source)
    return "\n".join(lines) + "\n"


# A call that names no variant (key '') of a formula with a selector gets the variant of the selector's default, as an
# input it does not give takes its default: a formula that gains a selector keeps answering its callers as before
# (engine.plan's FX132 calls, when FX132 took expert_reads). Iteration and `in` see the named variants only.
_DEFAULT_VARIANT = '''
class _Variants(dict):
    __slots__ = ("default",)

    def __missing__(self, key):
        if key == "" and self.default in self:
            return self[self.default]
        raise KeyError(key)


def _with_default_variant(meta):
    spec = meta["symbols"].get(meta["selector"]) or {}
    variants = _Variants(meta["variants"])
    variants.default = spec.get("default")
    meta["variants"] = variants


for _meta in FORMULAS.values():
    if _meta["selector"]:
        _with_default_variant(_meta)
'''


_REFUSED_TABLE = '''
class _Formulas(dict):
    __slots__ = ()

    def __missing__(self, fid):
        if fid in REFUSED:
            from engine.core.errors import KnowledgeError, Problem

            raise KnowledgeError(sorted(Problem(*p) for p in REFUSED[fid]["problems"]))
        raise KeyError(fid)
'''


def refused_error(mod, fid: str):
    """The broken record formula ``fid`` is when ``mod`` was compiled without it (KnowledgeError), else None."""
    meta = getattr(mod, "REFUSED", {}).get(fid)
    if meta is None:
        return None
    from engine.core.errors import KnowledgeError, Problem

    return KnowledgeError(sorted(Problem(*p) for p in meta["problems"]))


def _symbolic_parts(formulas: list) -> list[list]:
    """Per formula, per variant: (directions, orderings, directions under the orderings, scaling
    shape), the SymPy work of code generation, cached per formula by engine.numeric.directions
    (shipped table, private cache, else SymPy over forked workers: the same answers in the
    formulas' order, so the generated module is identical to a serial run's)."""
    from engine.numeric import directions

    return directions.parts(formulas)


def _symbol_meta(s) -> dict:
    default = s.default
    if default is not None and not isinstance(default, str):
        default = [default.value, default.low, default.high]
    return {
        "desc": s.desc,
        "unit": s.unit_text,
        "domain": s.domain,
        "values": list(s.values),
        "default": default,
        "default_source": s.default_source,
    }


def for_knowledge(k):
    """The module the other commands would load for ``k.root`` (same key, same digest-checked
    cache entry), generated from the formulas already loaded; ``from_formulas`` when the
    root's formula files have problems (then no command would load it)."""
    root = getattr(k, "root", None)
    bad = [p for p in k.problems if p.place.startswith("formulas/") or p.place == str(root)]
    if root is None or bad or not os.path.isdir(root):  # a formula refused on its own is named in REFUSED (build_source)
        return from_formulas(k.formulas, _left_out(root, k.formulas, bad) if bad and root is not None and os.path.isdir(root) else None)
    return module(content_hash(root), lambda: generate(k.formulas))


def from_formulas(formulas, refused: dict | None = None):
    """A compiled module for already-loaded formulas (used by ``check``), cached by source hash; ``refused``: the
    formulas left out (``build_source``)."""
    source = generate(formulas, refused)
    key = f"s{zlib.crc32(source.encode()):08x}{zlib.adler32(source.encode()):08x}"
    return module(key, lambda: source)


# ---------------------------------------------------------------------- JSON side caches


def json_cached(name: str, key: str, build):
    """``build()``'s JSON-able result, cached as ``<name>_<key>.json`` in the private cache.

    Used for what the fast CLI paths would otherwise read through PyYAML and jsonschema
    (calculator records, preset tables). Only data is stored, never code; a file that is
    not intact is discarded and rebuilt, one that cannot be written is skipped.
    """
    from engine.core import cache

    file = f"{name}_{key}.json"
    value = cache.read_json(file)
    if value is not None:
        return value
    value = build()
    if cache.write_json(file, value):
        cache.prune(f"{name}_", ".json", keep=64)
    return value
