"""engine.numeric.compiled: the cached formula module, its key, its rebuilds, and its light imports.

Every test points AIINFRA_CACHE_DIR at its own tmp folder (and the temporary folder inside
tmp_path too, to show it is never used), so the cache starts empty and nothing outside
tmp_path is read or written. The trust rules of the cache itself are in test_cache.py.
Expected values are hand arithmetic on tests/fixtures/roots/good/formulas/f.yaml:
F1 = 2 * layers * kv_heads * head_dim * kv_bytes, kv_bytes defaulting to 2 (BF16).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.core.errors import KnowledgeError
from engine.numeric import compiled
from engine.numeric.evaluate import evaluate

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
GOOD = ROOTS / "good"
QWEN3_8B = {"layers": 36, "kv_heads": 8, "head_dim": 128}  # Qwen/Qwen3-8B config.json
HEAVY = ("sympy", "networkx", "yaml", "jsonschema")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(folder))
    # the old fallback was <tempdir>/aiinfra-cache: keep the temporary folder inside tmp_path too
    fallback = tmp_path / "tmp"
    fallback.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(fallback))
    for name in [n for n in sys.modules if n.startswith("_aiinfra_formulas_")]:
        monkeypatch.delitem(sys.modules, name)  # as in a fresh interpreter
    return folder


def modules_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("formulas_*")) if folder.is_dir() else []


def copy_of_good(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(GOOD, root)
    return root


def kv_bytes_per_token(module, **given) -> float:
    result = evaluate(module.FORMULAS["F1"], module, {**QWEN3_8B, **given})
    return result.outputs["kv_bytes_per_token"].value


# ------------------------------------------------------------------ the cache folder


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path / "a"))
    assert compiled.cache_dir() == str(tmp_path / "a")
    monkeypatch.delenv("AIINFRA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compiled.cache_dir() == os.path.join(str(tmp_path / "xdg"), "aiinfra")


def test_load_writes_one_code_file_private_to_the_user(cache):
    module = compiled.load(GOOD)
    key = compiled.content_hash(GOOD)
    assert modules_in(cache) == [compiled._code_name(key)]
    assert (cache / compiled._code_name(key)).stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o700
    assert not list((cache.parent / "tmp").iterdir())  # nothing in the shared temporary folder
    assert sorted(module.FORMULAS) == ["F1"]
    # 2 * 36 * 8 * 128 * 2 = 147456 B per token (Qwen3-8B, BF16 cache)
    assert kv_bytes_per_token(module) == 147456


def test_a_second_load_reuses_the_module(cache, monkeypatch):
    first = compiled.load(GOOD)
    path = cache / modules_in(cache)[0]
    stamp = path.stat().st_mtime_ns

    def no_rebuild(root):
        raise AssertionError("the cached module should have been reused")

    monkeypatch.setattr(compiled, "build_source", no_rebuild)
    assert compiled.load(GOOD) is first
    # a fresh interpreter would not have the module in sys.modules: it imports the cached file
    name = f"_aiinfra_formulas_{compiled.content_hash(GOOD)}"
    monkeypatch.delitem(sys.modules, name)
    again = compiled.load(GOOD)
    assert again is not first
    assert kv_bytes_per_token(again) == 147456  # 2 * 36 * 8 * 128 * 2
    assert modules_in(cache) == [path.name]
    assert path.stat().st_mtime_ns == stamp


# ------------------------------------------------------------------ the key


def test_the_key_is_the_same_for_a_str_or_a_path():
    assert compiled.content_hash(str(GOOD)) == compiled.content_hash(GOOD)


def test_the_key_does_not_depend_on_where_the_root_is(tmp_path):
    # same formula files, byte for byte, under the same relative paths
    assert compiled.content_hash(copy_of_good(tmp_path)) == compiled.content_hash(GOOD)


def test_only_yaml_files_under_formulas_count(tmp_path):
    root = copy_of_good(tmp_path)
    key = compiled.content_hash(root)
    (root / "formulas" / "README.md").write_text("notes\n", encoding="utf-8")
    (root / "knowledge" / "more.yaml").write_text("concepts: []\n", encoding="utf-8")
    assert compiled.content_hash(root) == key
    (root / "formulas" / "sub").mkdir()
    (root / "formulas" / "sub" / "g.yaml").write_text("[]\n", encoding="utf-8")
    assert compiled.content_hash(root) != key


def test_editing_a_formula_changes_the_key_and_rebuilds(cache, tmp_path):
    root = copy_of_good(tmp_path)
    before = compiled.content_hash(root)
    old = compiled.load(root)
    f = root / "formulas" / "f.yaml"
    f.write_text(f.read_text(encoding="utf-8").replace("default: 2,", "default: 1,"), encoding="utf-8")
    after = compiled.content_hash(root)
    assert after != before
    new = compiled.load(root)
    assert new is not old
    assert modules_in(cache) == sorted([compiled._code_name(before), compiled._code_name(after)])
    # 2 * 36 * 8 * 128 * 2 = 147456 before; with the default kv_bytes 1: 2 * 36 * 8 * 128 * 1 = 73728
    assert kv_bytes_per_token(old) == 147456
    assert kv_bytes_per_token(new) == 73728


# ------------------------------------------------------------------ problems


UNKNOWN_UNIT = (
    "formulas/f.yaml:10 F1 symbols.kv_bytes.unit: 'Bytes' is not a known unit (expected B, bit, FLOP, FLOPS, s, min, h, d, "
    "yr, tokens, requests, W, J, Wh, USD, CNY, gCO2e, GPU, %, 1, with prefixes k M G T P, Ki Mi Gi Ti, or m u n on times)"
)


def test_a_root_whose_formulas_have_a_problem_raises(cache):
    with pytest.raises(KnowledgeError) as info:
        compiled.load(ROOTS / "unknown_unit")
    assert info.value.report() == UNKNOWN_UNIT + "\n1 problem found"
    # the module is kept with F1 left out (#24): a strict load refuses it again, a lenient one has no F1
    assert modules_in(cache) == [compiled._code_name(compiled.content_hash(ROOTS / "unknown_unit"))]
    assert compiled.load(ROOTS / "unknown_unit", strict=False).FORMULAS == {}
    with pytest.raises(KnowledgeError) as again:
        compiled.load(ROOTS / "unknown_unit")
    assert again.value.report() == info.value.report()


def test_two_producers_of_one_symbol_raise(cache):
    with pytest.raises(KnowledgeError) as info:
        compiled.load(ROOTS / "two_producers")
    assert info.value.report() == (
        "formulas/f.yaml:16 FX1 output.symbol: 'kv_bytes_per_token' is also produced by F1; "
        "one symbol has one producer (make them variants of one formula)\n1 problem found"
    )


def test_problems_outside_the_formulas_do_not_stop_compilation(cache):
    # float_section has a schema problem in knowledge/book.yaml only; its formula file is good's
    module = compiled.load(ROOTS / "float_section")
    assert kv_bytes_per_token(module) == 147456  # 2 * 36 * 8 * 128 * 2


def test_a_missing_root_raises(cache, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(KnowledgeError) as info:
        compiled.load(missing)
    assert info.value.report() == f"{missing}: is not a folder (expected a knowledge root with formulas/ and knowledge/)\n1 problem found"


def test_a_missing_root_raises_even_when_an_empty_root_is_cached(cache, tmp_path):
    empty = tmp_path / "empty"
    (empty / "knowledge").mkdir(parents=True)
    assert compiled.load(empty).FORMULAS == {}
    with pytest.raises(KnowledgeError):
        compiled.load(tmp_path / "nowhere")


# ------------------------------------------------------------------ the light path

PROBE = """
import json, sys
from engine.numeric import compiled
from engine.numeric.evaluate import evaluate
module = compiled.load(sys.argv[1])
result = evaluate(module.FORMULAS["F1"], module, {"layers": 36, "kv_heads": 8, "head_dim": 128})
print(json.dumps({"value": result.outputs["kv_bytes_per_token"].value,
                  "heavy": sorted(m for m in sys.argv[2:] if m in sys.modules)}))
"""


def probe(cache_folder: Path, tmp: Path) -> dict:
    # TMPDIR too: the shared temporary folder must play no part
    env = {**os.environ, "AIINFRA_CACHE_DIR": str(cache_folder), "TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(GOOD), *HEAVY], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_warm_cache_evaluates_without_the_heavy_modules(cache, tmp_path):
    compiled.load(GOOD)  # warm the cache in this process
    out = probe(cache, tmp_path / "tmp")
    assert out == {"value": 147456, "heavy": []}  # 2 * 36 * 8 * 128 * 2; none of sympy, networkx, yaml, jsonschema


def test_the_probe_sees_the_heavy_modules_on_a_cold_cache(tmp_path):
    # the control for the test above: building the module does load the YAML and SymPy stack (not
    # jsonschema since issue 24: valid records are answered by engine.kb.fastschema)
    (tmp_path / "tmp").mkdir()
    out = probe(tmp_path / "cold", tmp_path / "tmp")
    assert out["value"] == 147456  # 2 * 36 * 8 * 128 * 2
    assert out["heavy"] == sorted(set(HEAVY) - {"jsonschema"})


def test_files_key_sees_a_same_size_edit_in_the_same_process(tmp_path):
    """The key is memoised per process by the files' stat; an edit that keeps the size changes it."""
    root = copy_of_good(tmp_path)
    first = compiled.files_key(root, ("formulas",), ())
    assert compiled.files_key(root, ("formulas",), ()) == first
    path = next((root / "formulas").rglob("*.yaml"))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("a", "b", 1) if "a" in text else text + "#", encoding="utf-8")
    assert compiled.files_key(root, ("formulas",), ()) != first


def test_a_kept_key_is_given_back_without_reading_the_files(cache, tmp_path, monkeypatch):
    """Issue 24: the key is kept in the private cache with the files' stat signatures; a later process
    (the in-process memo cleared) gets it back from a stat alone."""
    root = copy_of_good(tmp_path)
    monkeypatch.setattr(compiled, "RACY_NS", 0)  # the copies count as settled at once
    first = compiled.files_key(root, ("formulas",), ("engine/numeric/compiled.py",))
    assert list(cache.glob("keys_*.json"))
    compiled._KEYS.clear()
    monkeypatch.setattr(compiled, "_content", lambda path: (_ for _ in ()).throw(AssertionError(f"read {path}")))
    assert compiled.files_key(root, ("formulas",), ("engine/numeric/compiled.py",)) == first


def test_a_kept_key_is_not_trusted_after_an_edit_that_keeps_size_and_mtime(cache, tmp_path, monkeypatch):
    root = copy_of_good(tmp_path)
    monkeypatch.setattr(compiled, "RACY_NS", 0)
    first = compiled.files_key(root, ("formulas",), ())
    compiled._KEYS.clear()
    path = next((root / "formulas").rglob("*.yaml"))
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("a", "b", 1) if "a" in text else text[:-1] + "#", encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and modification time as before: the change time tells
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert compiled.files_key(root, ("formulas",), ()) != first


def test_a_key_over_files_written_just_now_is_not_kept(cache, tmp_path):
    root = copy_of_good(tmp_path)  # written now: within RACY_NS, a second write in the same tick would not show
    compiled.files_key(root, ("formulas",), ())
    assert not list(cache.glob("keys_*.json"))


def test_cached_conditions_answer_as_the_parsed_ones(cache):
    """compile_conditions (one generated module, cached) gives condition_function's answers for every
    failure boundary of the shipped calculators, at points on both sides of each threshold."""
    import itertools

    from engine.numeric import calc_conditions
    from engine.numeric.calculators import Graph, load_records

    root = Path(__file__).resolve().parents[2]
    module = compiled.load(root)
    graph = Graph(module)
    texts = sorted({fb["when"] for rec in load_records(root).values() for fb in rec.get("failure_boundaries", [])})
    assert len(texts) >= 10
    calc_conditions._CONDITIONS.clear()
    fast = calc_conditions.compile_conditions(texts, graph.units)
    for text in texts:
        used, fn = calc_conditions.condition_function(text, graph.units)
        assert fast[text][0] == used
        for values in itertools.islice(itertools.product((0.25, 0.5, 1.0, 3.0, 1e9), repeat=len(used)), 200):
            assert bool(fast[text][1](*values)) == bool(fn(*values)), (text, values)


def test_generated_source_is_the_same_serial_and_forked(monkeypatch):
    """Code generation over forked workers (AIINFRA_JOBS) gives the serial run's module, byte for byte."""
    from engine.kb.knowledge import Knowledge

    k = Knowledge.load(Path(__file__).resolve().parents[2], strict=False)
    some = [f for f in k.formulas if f.id in {"F2", "F4", "F8", "FX50", "FX60", "FX114", "FX133", "FX134", "FX151", "FX606", "FX702", "FX750"}]
    assert len(some) == 12
    monkeypatch.setenv("AIINFRA_JOBS", "1")
    serial = compiled.generate(some)
    monkeypatch.setenv("AIINFRA_JOBS", "2")
    assert compiled.generate(some) == serial
