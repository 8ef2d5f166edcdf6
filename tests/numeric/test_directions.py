"""engine.numeric.directions: the SymPy part of compiling each formula, shipped and cached per
formula content (issue 24: a cold ``check`` spent half its time proving monotonicity).

Every test points AIINFRA_CACHE_DIR at its own tmp folder, so the private cache starts empty.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.record import replace
from engine.kb.knowledge import Knowledge
from engine.numeric import directions

REPO = Path(__file__).resolve().parent.parent.parent
GOOD = REPO / "tests" / "fixtures" / "roots" / "good"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def shipped_formulas():
    return {f.id: f for f in Knowledge.load(REPO, strict=False).formulas}


def test_the_shipped_table_covers_every_shipped_formula(shipped_formulas):
    table = directions.shipped()
    stale = sorted(fid for fid, f in shipped_formulas.items() if directions.key(f) not in table)
    assert not stale, (f"engine/numeric/directions.json lacks {len(stale)} formula(s) ({', '.join(stale[:8])}); "
                       "refresh it: .venv/bin/python -m engine.numeric.directions --write")


@pytest.mark.parametrize("fid", ["F8", "F13", "F15"])
def test_a_shipped_part_is_what_sympy_proves(shipped_formulas, fid):
    f = shipped_formulas[fid]
    assert directions.shipped()[directions.key(f)] == directions.part(f)


def test_the_key_follows_what_decides_the_part(shipped_formulas):
    f = shipped_formulas["F15"]
    assert directions.key(f) == directions.key(replace(f, place="elsewhere.yaml:1"))  # where it is written does not matter
    edited = replace(f, variants=(replace(f.variants[0], expr=f.variants[0].expr + " + 1"),) + tuple(f.variants[1:]))
    assert directions.key(edited) != directions.key(f)
    assert directions.key(replace(f, ordered=(("dp_size", "tp_size"),))) != directions.key(f)


def test_a_formula_missing_from_the_table_is_proven_once_then_read_from_the_cache(cache, monkeypatch):
    formulas = list(Knowledge.load(GOOD, strict=False).formulas)
    monkeypatch.setattr(directions, "_SHIPPED", [{}])
    first = directions.parts(formulas)
    files = sorted(p.name for p in cache.glob("directions_*.json"))
    assert len(files) == len({directions.key(f) for f in formulas}) > 0

    def refuse(f):
        raise AssertionError("proven again instead of read from the cache")

    monkeypatch.setattr(directions, "part", refuse)
    assert directions.parts(formulas) == first


def test_a_part_sympy_gave_up_on_is_not_cached(cache, monkeypatch):
    from engine.core import symbolic

    formulas = list(Knowledge.load(GOOD, strict=False).formulas)[:1]
    monkeypatch.setattr(directions, "_SHIPPED", [{}])

    def out_of_time(f):
        symbolic.timeouts[0] += 1
        return [[{}, [], {}, None]]

    monkeypatch.setattr(directions, "part", out_of_time)
    directions.parts(formulas)
    assert not list(cache.glob("directions_*.json"))


def test_a_cold_compile_of_the_shipped_formulas_never_imports_sympy(tmp_path):
    probe = ("import sys; from engine.numeric import compiled; m = compiled.load(sys.argv[1]); "
             "print(len(m.FORMULAS), 'sympy' in sys.modules)")
    env = dict(os.environ, AIINFRA_CACHE_DIR=str(tmp_path / "empty"), AIINFRA_JOBS="1")
    out = subprocess.run([sys.executable, "-c", probe, str(REPO)], env=env, capture_output=True, text=True, check=True, cwd=REPO)
    count, imported = out.stdout.split()
    assert int(count) > 200 and imported == "False", out.stderr
