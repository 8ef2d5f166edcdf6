"""The Accuracy page (issue 26): generated from a validate result, cached by content, linked from the calculators.

The result is the hand-built one of tests/site/conftest.py over the three measurement files of
tests/fixtures/roots/accuracy/ (copied from knowledge/measurements/), so no test waits for a real run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.site import accuracy_causes, accuracy_pages
from engine.site.accuracy_causes import Evidence, cause

SITE_ROOT = Path(__file__).parent.parent / "fixtures" / "site_root"
ACCURACY_ROOT = Path(__file__).parent.parent / "fixtures" / "roots" / "accuracy"


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AIINFRA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def page(private_cache, fake_run):
    pages, files = accuracy_pages.pages(str(ACCURACY_ROOT), run=fake_run)
    assert [p.path for p in pages] == ["accuracy.md"]
    return pages[0].text, files


def test_summary_table_per_kind_held_out_and_in_sample(page):
    text, _ = page
    # GEMM held out: |822.3/274.1 - 1| = 2.0, 1100/1216.9 -> 0.0961, 1250/1290.1 -> 0.0311, 700/410.7 -> 0.7044,
    # 620/794.5 -> 0.2196; mean 0.6102 -> MAPE 61.0 %; error factors 3.0, 1.106, 1.032, 1.704, 1.281 -> median 1.28;
    # within 15 %: 2 of 5 = 40, within 30 %: 3 = 60, within 50 %: 3 = 60
    assert "| [GEMM](#kind-gemm) | held out | 5 | 61.0 | 1.28 | 40 | 60 | 60 |" in text
    assert "## GEMM { #kind-gemm }" in text and "## Collectives { #kind-collective }" in text
    assert "| all, held out | 5 | 61.0 |" in text
    assert "| all, in-sample | 5 |" in text
    assert "leave-one-family-out" in text and "**In-sample**" in text


def test_held_out_by_table_and_by_family_when_the_result_has_both(validate_result):
    from engine.measure.validate import Result

    r = validate_result
    summary = {kind: {**s, "held_out_family": s["held_out"]} for kind, s in r.summary.items()}
    text, _ = accuracy_pages.render(Result(r.rows, r.unmapped, summary, r.calibration, r.sources), accuracy_pages.headers(ACCURACY_ROOT))
    assert "| all, held out (table) | 5 | 61.0 |" in text and "| all, held out (family) | 5 | 61.0 |" in text
    assert "leave-one-table-out" in text and "leave-one-family-out" in text


def test_scatter_svg_beside_the_page(page):
    text, files = page
    assert sorted(files) == ["accuracy-collective-b-s.svg", "accuracy-gemm-flop-s.svg"]  # one panel per kind and unit
    gemm = files["accuracy-gemm-flop-s.svg"]
    assert gemm.startswith("<svg") and "gemm (5 rows)" in gemm and gemm.count("<circle") == 5
    assert ("[![gemm, measured in FLOP/s: predicted (held out) against measured, log-log](accuracy-gemm-flop-s.svg)]"
            "(accuracy-gemm-flop-s.svg)") in text


def test_worst_rows_with_measured_predicted_ratio_and_cause(page):
    text, _ = page
    worst = text.split("## The 8 worst held-out predictions", 1)[1].split("\n## ", 1)[0]
    first = [line for line in worst.splitlines() if line.startswith("| ×")][0]
    # 822.3 / 274.1 = 3.00, the largest error factor; the shape 1024^3 is below the 2048^3 small-GEMM bound
    assert first.startswith("| ×3.00 | [azure-nd-h100-gemm-cublaslt-fp8/gemm-1024x1024x1024](source/knowledge/measurements/"
                            "azure-nd-h100-gemm-cublaslt-fp8.yaml.md#L18)<br>tflops · gemm · h100-sxm × 1 |")  # the row's line
    assert "| 274.1 TFLOP/s | 822.3 TFLOP/s | small GEMM (1024x1024x1024)" in first
    assert "not diagnosed" in worst  # an all-reduce of 8 GiB on one node: no rule applies


def test_unmapped_counted_by_reason_calibration_and_sources(page):
    text, _ = page
    assert "| 2 | serve | N GPUs are not a multiple of TP x EP = N |" in text
    assert "| `e_gemm` | 0.71 | hopper 0.7 |" in text and "| `launch` | 6e-06 | – |" in text
    assert "| `azure-ai-benchmarking-guide` | 2 | collective, gemm | 7 | 0 |" in text
    assert "| `ml-engineering` | 1 | gemm | 1 | 2 |" in text
    # each file's own source string, its repository@commit linked
    assert "[Azure/AI-benchmarking-guide@8fd0c6e1 Azure_Results/ND_H100_v5_results.md](https://github.com/Azure/AI-benchmarking-guide/blob/8fd0c6e1/Azure_Results/ND_H100_v5_results.md)" in text
    assert "[stas00/ml-engineering@744d01e1 compute/accelerator/README.md]" in text
    assert "[mle-mamf-bf16](source/knowledge/measurements/mle-mamf-bf16.yaml.md)" in text


def test_cached_by_content(tmp_path, private_cache, fake_run):
    root = tmp_path / "root"
    shutil.copytree(ACCURACY_ROOT, root)
    first = accuracy_pages.pages(str(root), run=fake_run)
    again = accuracy_pages.pages(str(root), run=fake_run)
    assert fake_run.calls == 1 and again[0][0].text == first[0][0].text and again[1] == first[1]
    table = root / "knowledge" / "measurements" / "mle-mamf-bf16.yaml"
    table.write_text(table.read_text(encoding="utf-8").replace("794.5", "794.6"), encoding="utf-8")
    accuracy_pages.pages(str(root), run=fake_run)
    assert fake_run.calls == 2


def test_digest_covers_measurements_records_formulas_and_engine(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(ACCURACY_ROOT, root)
    before = accuracy_pages.digest(root)
    (root / "formulas").mkdir()
    (root / "formulas" / "x.yaml").write_text("[]\n", encoding="utf-8")
    assert accuracy_pages.digest(root) != before
    assert accuracy_pages.digest(root) == accuracy_pages.digest(root)


def test_a_root_without_measurements_has_no_page():
    assert accuracy_pages.pages(str(SITE_ROOT)) == ([], {})


@pytest.fixture
def site_with_measurements(tmp_path, fake_run, monkeypatch):
    from engine.site.generate import generate

    root = tmp_path / "root"
    shutil.copytree(SITE_ROOT, root)
    shutil.copytree(ACCURACY_ROOT / "knowledge", root / "knowledge", dirs_exist_ok=True)
    monkeypatch.setattr("engine.measure.validate.run", fake_run)
    return generate(str(root))


def test_calculator_pages_link_to_the_accuracy_page(site_with_measurements):
    site = site_with_measurements
    calc = next(p for p in site.pages if p.path.startswith("calculators/") and not p.path.endswith("index.md"))
    assert "[Accuracy](../accuracy.md)" in calc.text
    assert "[Accuracy](../accuracy.md)" in site.page("calculators/index.md").text
    assert {"Accuracy": "accuracy.md"} in site.nav
    assert site.page("accuracy.md").title == "Accuracy" and "accuracy-gemm-flop-s.svg" in site.generated


def test_no_link_without_the_page():
    from engine.site.generate import generate

    site = generate(str(SITE_ROOT))
    assert all("accuracy.md" not in p.text for p in site.pages if p.path.startswith("calculators/"))
    assert {"Accuracy": "accuracy.md"} not in site.nav


# ---------------------------------------------------------------------- causes


def _row(**given):
    row = dict(kind="serve", metric="output_throughput_per_gpu", statistic="single", ratio=1.0, layout={}, gpus=8, group="hopper", capped=False)
    return {**row, **given}


@pytest.mark.parametrize("row, words, workload, expected", [
    (_row(metric="itl", ratio=0.1), "", {}, "metric mismatch: inter-token latency measured"),
    (_row(metric="ttft", statistic="median", ratio=2.0), "", {}, "statistic mismatch: median measured"),
    (_row(ratio=0.7), "min-latency run with mtp speculative decoding", {}, "speculative decoding"),
    (_row(ratio=0.7), "model label 'deepseekv3 (w/o mtp)'", {}, "not diagnosed"),
    (_row(ratio=0.05, layout={"ep": 48, "attention_dp": True}), "gb200 with pd disaggregation", {}, "decode-only pool"),
    (_row(ratio=20.0, layout={"ep": 48}), "gb200 with pd disaggregation", {}, "wide expert parallelism (EP 48)"),  # too fast: not the pool
    (_row(ratio=0.5, capped=True), "", {}, "batch capped by the K/V pages that fit"),
    (_row(ratio=2.0, capped=True), "", {}, "not diagnosed"),  # capping can only slow a prediction
    (_row(metric="ttft", ratio=0.08), "", {"rate": 32}, "TTFT under load (rate 32/s)"),
    (_row(kind="collective", metric="bus_bandwidth", ratio=24.3, gpus=32, group="scaleout"), "", {"message_bytes": 32768, "nodes": 4},
     "multi-node collective (32 GPUs over the scale-out fabric); small message latency (32 KiB"),
    (_row(kind="collective", metric="bus_bandwidth", ratio=0.5, gpus=32, group="scaleout"), "", {"message_bytes": 32768}, "not diagnosed"),
    (_row(kind="gemm", metric="tflops", ratio=9.1), "", {"m": 1024, "n": 1024, "k": 1024}, "small GEMM (1024x1024x1024)"),
    (_row(kind="gemm", metric="tflops", ratio=1.5), "", {"m": 8192, "n": 8192, "k": 8192}, "not diagnosed"),
])
def test_cause_rules(row, words, workload, expected):
    assert expected in cause(Evidence(row, words, workload))


def test_optimistic_reads_times_and_rates_the_other_way_round():
    assert accuracy_causes.optimistic(_row(metric="ttft", ratio=0.5))
    assert not accuracy_causes.optimistic(_row(metric="output_throughput", ratio=0.5))


def test_reason_class_generalises_numbers_and_quoted_values():
    assert accuracy_pages.reason_class("8 GPUs are not a multiple of TP x EP = 16") == "N GPUs are not a multiple of TP x EP = N"
    assert accuracy_pages.reason_class("rtx-4090 records no host link") == "rtx-4090 records no host link"
    assert accuracy_pages.reason_class("--weights: 'fp4 (experts)' is not known; DeepSeek-V4's attention") == \
        "--weights: '…' is not known; DeepSeek-V4's attention"


def test_a_tiny_ratio_keeps_two_significant_digits():
    assert [accuracy_pages._ratio(x) for x in (3.0, 0.45, 0.000214)] == ["3.00", "0.45", "0.00021"]


def test_source_links_escape_text_and_link_urls():
    text = accuracy_pages.source_links("issue #870 'a|b'; https://github.com/SemiAnalysisAI/InferenceX/issues/870.")
    assert text == ("issue #870 'a\\|b'; [https://github.com/SemiAnalysisAI/InferenceX/issues/870]"
                    "(https://github.com/SemiAnalysisAI/InferenceX/issues/870).")
