"""``aiinfra calc ID --solve INPUT --where ...``: formats, equality with the Python API, bad input (exit 2, one line)."""

from __future__ import annotations

import json

import pytest

from engine import api
from engine.cli.main import main

TRAIN = ["calc", "training-duration", "--model", "llama-3.1-405b", "--device", "h100-sxm", "--set", "train_tokens=15.6T",
         "--set", "n_gpus=16384", "--solve", "mfu", "--where", "train_wall_time <= 54d"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_equals_the_api(capsys):
    code, out, _ = run(TRAIN + ["--format", "json"], capsys)
    assert code == 0
    sol = api.calculator("training-duration").solve("mfu", "train_wall_time <= 54d", model="llama-3.1-405b", device="h100-sxm",
                                                    train_tokens="15.6T", n_gpus=16384)
    assert json.loads(out) == json.loads(json.dumps(sol.to_json()))
    # 6 x 405,853,388,800 x 15.6e12 / (16,384 x 989.4e12 x 0.9 x 0.99 x 54 x 86,400) = 0.56373 (tests/numeric/test_calc_solve.py)
    assert json.loads(out)["value"] == pytest.approx(0.5637258806, rel=1e-9)


def test_text_and_markdown(capsys):
    code, out, _ = run(TRAIN, capsys)
    assert code == 0
    assert "closed form (SymPy)" in out
    assert "answer: the smallest mfu is 0.563725881, bound by train_wall_time <= 54d" in out
    code, out, _ = run(TRAIN + ["--format", "md"], capsys)
    assert code == 0 and out.startswith("## calc:training-duration · solve mfu") and "$$" in out


def test_the_full_parser_takes_the_same_options(capsys):
    # --format before the verb goes through argparse, not the fast path
    code, out, _ = run(["--format", "json"] + TRAIN, capsys)
    assert code == 0 and json.loads(out)["solve"] == "mfu"
    code, out, _ = run(["calc", "training-duration", "--help"], capsys)
    assert code == 0 and "--solve INPUT" in out and "--where" in out


def test_numeric_flag_brackets(capsys):
    code, out, _ = run(TRAIN + ["--numeric", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["method"] == "numeric" and data["conditions"][0]["bracket"]


@pytest.mark.parametrize(("extra", "expected"), [
    (["--where", "train_wall_time < 3"], "--where: 'train_wall_time < 3' is not 'OUTPUT >= V'"),
    (["--where", "train_wall_time <= 3kg"], "--where: train_wall_time: "),
    (["--csv-nothing"], None),
])
def test_bad_input_is_one_line_exit_2(extra, expected, capsys):
    code, out, err = run(TRAIN + extra, capsys)
    assert code == 2 and out == ""
    if expected is not None:
        assert err.count("\n") == 1 and expected in err


def test_where_without_solve_and_solve_with_sweep_are_refused(capsys):
    code, _, err = run(["calc", "training-duration", "--where", "train_wall_time <= 54d"], capsys)
    assert code == 2 and "--where: states a condition for --solve" in err
    code, _, err = run(TRAIN + ["--sweep", "n_gpus=1..2"], capsys)
    assert code == 2 and "--sweep: does not go with --solve" in err
