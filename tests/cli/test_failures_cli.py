"""``aiinfra failures list|show``. Numbers asserted are Llama 3 Table 5 (arXiv 2407.21783, section
3.3.4) or hand arithmetic shown on the line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ftroot(tmp_path_factory):
    root = tmp_path_factory.mktemp("ft-root")
    shutil.copytree(ROOT / "knowledge" / "failure_taxonomies", root / "knowledge" / "failure_taxonomies")
    shutil.copytree(ROOT / "formulas", root / "formulas")
    return ["--root", str(root)]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_list(capsys, ftroot):
    code, out, _ = run([*ftroot, "failures", "list"], capsys)
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("llama3-405b"))
    assert "466" in line and "419" in line and "16384" in line
    assert "3.093" in line                                   # 54 d x 24 h / 419 = 3.0931 h


def test_show_text(capsys, ftroot):
    code, out, _ = run([*ftroot, "failures", "show", "llama3-405b"], capsys)
    assert code == 0
    faulty = next(row for row in out.splitlines() if row.startswith("Faulty GPU"))
    # printed 30.1, 148 / 419 = 35.3%, 1296 h / 148 = 8.76 h, 31524.324 s x 16384 / (365 x 86400) = 16.38 years
    assert faulty.split()[-4:] == ["30.1", "35.3", "8.76", "16.38"]
    hbm = next(row for row in out.splitlines() if row.startswith("GPU HBM3 Memory"))
    assert hbm.split()[-4:] == ["17.2", "17.2", "18.00", "33.67"]   # 1296 / 72 = 18 h; 64800 x 16384 / 31536000 = 33.67 y
    assert "row 'Faulty GPU': printed 30.1% but 148 / 419 = 35.3%" in out


def test_show_json(capsys, ftroot):
    code, out, _ = run([*ftroot, "failures", "show", "ft:llama3-405b", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    rows = {f["name"]: f for f in data["figures"]}
    assert rows["Software Bug"]["mtbf_s"] == pytest.approx(86400)     # 54 x 86400 / 54
    assert rows["Faulty GPU"]["share"] == pytest.approx(148 / 419)
    assert data["share_notes"] == ["row 'Faulty GPU': printed 30.1% but 148 / 419 = 35.3%"]


def test_show_md(capsys, ftroot):
    code, out, _ = run([*ftroot, "failures", "show", "llama3-405b", "--format", "md"], capsys)
    assert code == 0 and out.startswith("# ft:llama3-405b")


@pytest.mark.parametrize("argv, field", [(["failures", "show", "llama2"], "ID"), (["failures", "show", "sys:x"], "ID"),
                                         (["failures", "show", "llama3-405b", "--format", "csv"], "--format")])
def test_bad_input_exits_2(capsys, ftroot, argv, field):
    code, out, err = run([*ftroot, *argv], capsys)
    assert code == 2
    assert err.count("\n") == 1 and field in err
