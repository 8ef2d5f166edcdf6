"""``aiinfra scaling list|fit|optimum|band|lifecycle``. Numbers asserted are published (cited on the
line) or hand arithmetic from the published constants written in the test."""

from __future__ import annotations

import csv
import io
import json

import pytest

from engine.cli.main import main

GOPHER = 5.76e23  # Hoffmann et al. 2022 Table 3, the Gopher budget
REFIT = dict(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)  # Besiroglu et al. 2024 (arXiv:2404.10102)


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def frontier(c: float, E, A, B, alpha, beta) -> tuple[float, float]:
    g = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    return g * (c / 6) ** (beta / (alpha + beta)), (c / 6) ** (alpha / (alpha + beta)) / g


def test_list(capsys):
    code, out, _ = run(["scaling", "list", "--format", "json"], capsys)
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    assert rows["besiroglu2024"]["points"] == 245 and rows["hoffmann2022"]["fit"] == "yes"


def test_optimum_json_is_the_closed_form(capsys):
    code, out, _ = run(["scaling", "optimum", "--compute", "5.76e23", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    n, d = frontier(GOPHER, **REFIT)                        # 7.22487e10 parameters, 1.32874e12 tokens
    assert data["plan"]["params"] == pytest.approx(n, rel=1e-9) and data["plan"]["tokens"] == pytest.approx(d, rel=1e-9)
    assert data["plan"]["tokens_per_param"] == pytest.approx(d / n, rel=1e-9)
    assert data["law"]["id"] == "sl:besiroglu2024" and data["law"]["loss_data_coeff"] == 2085.43


def test_optimum_with_the_papers_rounded_constants(capsys):
    code, out, _ = run(["scaling", "optimum", "--compute", "5.76e23FLOP", "--law", "hoffmann2022", "--format", "csv"], capsys)
    assert code == 0
    row = next(csv.DictReader(io.StringIO(out)))
    n, d = frontier(GOPHER, 1.69, 406.4, 410.7, 0.34, 0.28)     # 3.21899e10 and 2.98231e12 (92.6 tokens per parameter)
    assert float(row["params"]) == pytest.approx(n, rel=1e-9) and float(row["tokens"]) == pytest.approx(d, rel=1e-9)
    assert n == pytest.approx(3.21899e10, rel=1e-5)


def test_optimum_text_and_md(capsys):
    code, out, _ = run(["scaling", "optimum", "--compute", "5.76e23"], capsys)
    assert code == 0 and "7.225e10" in out and "1.329e12" in out and "FX431" in out
    code, out, _ = run(["scaling", "optimum", "--compute", "5.76e23", "--format", "md"], capsys)
    assert code == 0 and out.startswith("# Compute-optimal") and "| compute-optimal |" in out


def test_band_json(capsys):
    code, out, _ = run(["scaling", "band", "--params", "7e9", "--overhead", "10%", "--format", "json"], capsys)
    assert code == 0
    band = json.loads(out)["band"]
    # the middle row: N = 7e9 on D = C/(6N), C = 6 (N/G)^((alpha+beta)/beta) (Hoffmann et al. section 3.3 inverted)
    a, b = REFIT["alpha"], REFIT["beta"]
    g = (a * REFIT["A"] / (b * REFIT["B"])) ** (1 / (a + b))
    assert band["optimal"]["tokens"] == pytest.approx((7e9 / g) ** ((a + b) / b) / 7e9, rel=1e-9)
    assert band["under"]["tokens"] < band["optimal"]["tokens"] < band["over"]["tokens"]
    assert band["fraction_over"] < 1 < band["fraction_under"]
    assert band["min_fraction"] == pytest.approx((1 + a / b) ** (-1 / a), rel=1e-12)   # FX438


def test_lifecycle_reference_and_compare(capsys):
    # Sardana et al. 2023 Figure 1's scenario: 13B with 2T tokens of inference demand, against a 7B at the same loss
    code, out, _ = run(["scaling", "lifecycle", "--params", "13e9", "--tokens", "260e9", "--inference-tokens", "2T",
                        "--compare", "7e9", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    plans = {p["label"]: p for p in data["plans"]}
    E, A, B, alpha, beta = REFIT.values()
    target = E + A / 13e9 ** alpha + B / 260e9 ** beta
    assert data["target_loss"] == pytest.approx(target, rel=1e-12)
    assert plans["reference"]["total_flops"] == pytest.approx(6 * 13e9 * 260e9 + 2 * 13e9 * 2e12, rel=1e-9)  # 7.228e22
    d7 = (B / (target - E - A / 7e9 ** alpha)) ** (1 / beta)
    assert plans["7e+09 parameters"]["total_flops"] == pytest.approx(6 * 7e9 * d7 + 2 * 7e9 * 2e12, rel=1e-9)
    assert plans["lifecycle-optimal"]["total_flops"] <= plans["7e+09 parameters"]["total_flops"]
    assert plans["Chinchilla-optimal"]["vs_chinchilla"] == 0


def test_fit_text_names_the_held_out_pair(capsys):
    code, out, err = run(["scaling", "fit"], capsys)
    assert code == 0, err
    assert "238 points" in out and "5 excluded" in out and "2 of largest training compute held out" in out
    assert "Held out" in out and "6.796e9" in out                 # the largest run of the data file: 6.80e9 parameters
    assert "arXiv:2404.10102" in out


def test_help_has_examples(capsys):
    for verb in ("fit", "optimum", "band", "lifecycle"):
        code, out, _ = run(["scaling", verb, "--help"], capsys)
        assert code == 0 and "examples:" in out and f"aiinfra scaling {verb}" in out


@pytest.mark.parametrize("argv,field", [
    (["scaling", "optimum", "--compute", "-1"], "--compute"),
    (["scaling", "optimum", "--compute", "1e24", "--law", "nope"], "--law"),
    (["scaling", "optimum", "--compute", "5GB"], "--compute"),
    (["scaling", "optimum"], "--compute"),
    (["scaling", "band", "--params", "7e9", "--overhead", "0"], "--overhead"),
    (["scaling", "band", "--params", "0"], "--params"),
    (["scaling", "band", "--params", "7e9", "--overhead", "1e30"], "--overhead"),
    (["scaling", "optimum", "--compute", "nan"], "--compute"),
    (["scaling", "lifecycle", "--loss", "1.5", "--inference-tokens", "1T"], "--loss"),
    (["scaling", "lifecycle", "--inference-tokens", "1T"], "--loss"),
    (["scaling", "lifecycle", "--params", "13e9", "--inference-tokens", "1T"], "--tokens"),
    (["scaling", "lifecycle", "--loss", "2.1", "--inference-tokens", "1T", "--compare", "1e6"], "--compare"),
    (["scaling", "fit", "--law", "hoffmann2022"], "--law"),
    (["scaling", "fit", "--holdout", "300"], "--holdout"),
    (["scaling", "fit", "--holdout", "-1"], "--holdout"),
])
def test_bad_input_one_line_exit_2(argv, field, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and field in err and "Traceback" not in err


def test_numeric_path_imports_no_sympy():
    import subprocess
    import sys

    code = ("import sys; from engine.cli.main import main; "
            "main(['scaling', 'optimum', '--compute', '1e24']); "
            "main(['scaling', 'band', '--params', '7e9']); "
            "main(['scaling', 'lifecycle', '--loss', '2.1', '--inference-tokens', '1T']); "
            "assert 'sympy' not in sys.modules, 'sympy imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
