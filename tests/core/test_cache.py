"""engine.core.cache: the cache is code, so only the user's own, intact files are ever run.

Each test plants a code file under the exact name the loader would read, whose code writes
a marker file when run; the test then checks the marker is absent and the module came from
the source the loader was given (``VALUE = 1``). Keys are unique per test, so the
interpreter's module table never answers for the cache.
"""

from __future__ import annotations

import json
import marshal
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from engine.core import cache
from engine.numeric import compiled

REPO = Path(__file__).resolve().parents[2]
GOOD = Path(__file__).parent.parent / "fixtures" / "roots" / "good"
OTHER_UID = 54321


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(path))
    monkeypatch.setattr(cache, "_state", {})
    monkeypatch.setattr(cache, "repaired", [])
    return path


def key() -> str:
    return "t" + uuid.uuid4().hex[:16]


def hostile(marker: Path) -> bytes:
    code = compile(f"open({str(marker)!r}, 'w').write('ran')\nVALUE = 666\n", "<planted>", "exec")
    return marshal.dumps(code)


def plant(folder: Path, name: str, payload: bytes, digest_of: bytes | None = None) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(cache.MAGIC + cache._digest(payload if digest_of is None else digest_of) + b"\n" + payload)
    path.chmod(0o600)
    return path


def load(k: str):
    return compiled.module(k, lambda: "VALUE = 1\n")


def test_an_intact_file_of_the_user_is_used(folder, tmp_path):
    k, marker = key(), tmp_path / "ran"
    plant(folder, compiled._code_name(k), hostile(marker))
    # the control for the tests below: a planted file that passes every rule does run
    assert load(k).VALUE == 666 and marker.exists()


def test_a_file_owned_by_another_user_is_not_run(folder, tmp_path, monkeypatch):
    k, marker = key(), tmp_path / "ran"
    path = plant(folder, compiled._code_name(k), hostile(marker))
    if os.getuid() == 0:
        os.chown(path, OTHER_UID, OTHER_UID)  # really another owner
    else:
        monkeypatch.setattr(cache, "_uid", lambda: os.getuid() + 1)  # we look like someone else
        monkeypatch.setattr(cache, "_state", {str(folder): str(folder)})
    assert load(k).VALUE == 1
    assert not marker.exists()


@pytest.mark.parametrize("bits", [stat.S_IWGRP, stat.S_IWOTH])
def test_a_file_writable_by_others_is_not_run(folder, tmp_path, bits):
    k, marker = key(), tmp_path / "ran"
    path = plant(folder, compiled._code_name(k), hostile(marker))
    path.chmod(0o600 | bits)
    assert load(k).VALUE == 1
    assert not marker.exists()


def test_a_symlink_is_not_followed(folder, tmp_path):
    k, marker = key(), tmp_path / "ran"
    elsewhere = plant(tmp_path / "elsewhere", "x.code", hostile(marker))
    folder.mkdir(mode=0o700)
    (folder / compiled._code_name(k)).symlink_to(elsewhere)
    assert load(k).VALUE == 1
    assert not marker.exists()


def test_a_shared_folder_is_never_read_and_the_run_goes_on_uncached(folder, tmp_path, capsys):
    k, marker = key(), tmp_path / "ran"
    plant(folder, compiled._code_name(k), hostile(marker))
    folder.chmod(0o777)  # like /tmp without its owner being us alone
    assert load(k).VALUE == 1
    assert not marker.exists()
    assert "is not a folder owned by you and closed to others; running uncached" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == [compiled._code_name(k)]  # nothing written there


def test_the_shared_temporary_folder_is_never_read(folder, tmp_path, monkeypatch):
    # the old loader looked in <tempdir>/aiinfra-cache under a predictable name on a miss
    import tempfile

    k, marker = key(), tmp_path / "ran"
    shared = tmp_path / "tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    for name in (compiled._code_name(k), f"formulas_{k}.py"):
        plant(shared / "aiinfra-cache", name, hostile(marker))
    assert load(k).VALUE == 1
    assert not marker.exists()


def test_content_that_does_not_match_its_digest_is_discarded_and_rebuilt(folder, tmp_path):
    k, marker = key(), tmp_path / "ran"
    name = compiled._code_name(k)
    plant(folder, name, hostile(marker), digest_of=marshal.dumps(compile("VALUE = 1\n", "x", "exec")))
    assert load(k).VALUE == 1
    assert not marker.exists()
    assert cache.repaired == [name]
    assert cache.read(name) is not None  # rebuilt in place, intact


@pytest.mark.parametrize("content", [b"", b"garbage", cache.MAGIC + b"0" * 40, b"\x00" * 100])
def test_a_corrupt_file_repairs_itself(folder, content):
    k = key()
    folder.mkdir(mode=0o700)
    (folder / compiled._code_name(k)).write_bytes(content)
    (folder / compiled._code_name(k)).chmod(0o600)
    assert load(k).VALUE == 1
    assert cache.read(compiled._code_name(k)) is not None


def test_a_wrong_shape_payload_with_a_good_digest_repairs_itself(folder):
    k = key()
    plant(folder, compiled._code_name(k), b"not marshal data")
    assert load(k).VALUE == 1


def test_a_cache_folder_that_cannot_be_created_runs_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(cache, "_state", {})
    assert load(key()).VALUE == 1


def test_a_new_folder_is_private(folder):
    assert cache.write("probe.json", b"{}")
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "probe.json").stat().st_mode & 0o777 == 0o600


def test_json_caches_hold_no_code(folder):
    # the calculator records once carried generated Python (failure_boundaries[]._source) run by exec
    from engine.numeric.calculators import cached_records

    records = cached_records(REPO)
    assert records
    files = list(folder.glob("calculators_*.json"))
    assert len(files) == 1
    text = files[0].read_bytes().partition(b"\n")[2].decode()
    assert "_source" not in text and "def _cond" not in text
    assert json.loads(text) == records


def test_an_edited_json_cache_is_discarded(folder):
    from engine.numeric.calculators import cached_records

    first = cached_records(REPO)
    path = next(folder.glob("calculators_*.json"))
    head, _, body = path.read_bytes().partition(b"\n")
    path.write_bytes(head + b"\n" + body.replace(b"kv-concurrency", b"kv-tampered"))
    assert cached_records(REPO) == first


def run(args: list[str], cache_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AIINFRA_CACHE_DIR": str(cache_dir)}
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_an_edited_compiled_module_does_not_change_the_numbers(tmp_path):
    # issue 16: an edited cache made F8 give 7x while `aiinfra check` still said ok
    F8 = ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=36", "--set", "kv_heads=8",
          "--set", "head_dim=128", "--set", "kv_bytes=2", "--format", "json"]
    folder = tmp_path / "cache"
    first = run(F8, folder)
    assert first.returncode == 0, first.stderr
    (path,) = folder.glob("formulas_*.code")
    code = marshal.loads(path.read_bytes().partition(b"\n")[2])
    ns: dict = {}
    exec(code, ns)
    fn = ns["FORMULAS"]["F8"]["variants"]["gqa"]["fn"]
    edit = f"import marshal\nexec(marshal.loads({marshal.dumps(code)!r}))\n_real = {fn}\ndef {fn}(*a):\n    return 7 * _real(*a)\n"
    head = path.read_bytes().partition(b"\n")[0]
    path.write_bytes(head + b"\n" + marshal.dumps(compile(edit, "<edit>", "exec")))  # an edit that keeps the header
    second = run(F8, folder)
    assert second.returncode == 0, second.stderr
    # 2 * 36 * 8 * 128 * 2 = 147456 B per token (Qwen3-8B config.json, BF16)
    assert json.loads(second.stdout)["outputs"]["kv_bytes_per_token"]["value"] == 147456
