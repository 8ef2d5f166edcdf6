"""No internal provenance in what a person reads (issue 28): the issue's own names for a calculator's inputs and
outputs ("Issue names → symbols", knowledge/calculators/*.yaml) and issue numbers are for maintainers. Text and
Markdown leave them out; --format json keeps the names as ``provenance``. (Paths: tests/cli/test_cmd_path.py.)"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main

TRAINING = ["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "tp_size=8", "--set", "pp_size=4",
            "--set", "dp_size=32", "--set", "zero_stage=1", "--set", "seq_len=8192", "--set", "micro_batch=1", "--set", "recompute=selective"]
POWER = ["calc", "power-tco", "--set", "n_gpus=1000", "--set", "gpu_tdp=1000W", "--set", "it_power_model=host_factor", "--set", "host_overhead=1.4",
         "--set", "pue=1.3", "--set", "electricity_price=0.6CNY/kWh", "--set", "capex_per_gpu=200000CNY", "--set", "depreciation_period=4"]
CAPACITY = ["calc", "inference-capacity", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2", "--set", "batch_size=64",
            "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256"]


@pytest.mark.parametrize("argv", [TRAINING, POWER, CAPACITY], ids=["training-memory", "power-tco", "inference-capacity"])
def test_calculator_text_has_no_issue_names_json_keeps_them(argv, capsys):
    for fmt in (["--explain"], ["--format", "md"]):
        assert main([*argv, *fmt]) == 0
        out = capsys.readouterr().out
        assert "Assumptions" in out and "Issue names" not in out
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p[:22] for p in data["provenance"]] == ["Issue names → symbols:"]
    assert not any("Issue names" in a for a in data["assumptions"])


def test_plan_help_names_no_issue(capsys):
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "bounds:" in out and "issue #" not in out


def test_no_input_description_names_the_issue():
    """Input descriptions and default sources reach the missing-input errors, ``calc show``, the output's source
    column and the site's forms; assumptions are printed: 'issue name dp', "the issue's hbm" or "the issue defines"
    meant nothing to a reader (issue 28). The book's own names stay ('the book's dp')."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2] / "knowledge" / "calculators"
    found = []
    for path in sorted(root.glob("*.yaml")):
        record = yaml.safe_load(path.read_text())
        texts = [(spec.get("symbol"), str(spec.get(k, ""))) for spec in record.get("inputs") or [] for k in ("description", "source")]
        texts += [("assumptions", str(a)) for a in record.get("assumptions") or [] if not str(a).startswith("Issue names")]
        for name, text in texts:
            if any(w in text.lower() for w in ("issue name", "issue #", "the issue")):
                found.append(f"{path.name}: {name}: {text[:60]}")
    assert found == []
