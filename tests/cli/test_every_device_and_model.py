"""Every preset-driven command on every device record and every model record (issue 28, "Done when").

Each run answers (exit 0) or refuses naming a real limit: the weights do not fit, the device states no peak at the
precision or no TDP (energy-per-token, power-tco), or the model's family is refused by name for that use. Never a request for a value the records should hold
("needs a value for ...", "gpu_memory_total", "give --mfu"). In-process through engine.cli.main.main; marked ``sweep``
(``pytest -m sweep``; about a minute or two on the shared 2-CPU machine). Calculators run on every (device, model) pair;
plan serve, whose search is the slow one, runs every model on one device and one model on every device, pinned to a
small space (--tp 1 --max-batch 8).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli.main import main

pytestmark = [pytest.mark.sweep, pytest.mark.slow]  # slow: left out by make test-fast
ROOT = Path(__file__).resolve().parents[2]
DEVICES = sorted(p.stem for p in (ROOT / "knowledge" / "hardware").glob("*.yaml"))
MODELS = sorted(p.stem for p in (ROOT / "knowledge" / "models").glob("*.yaml"))
CALCS = {
    "kv-concurrency": ["--set", "context_tokens=8192"],
    "inference-capacity": ["--set", "context_tokens=4096", "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256",
                           "--set", "decode_batch=8"],
    "serving-fleet": ["--set", "qps=10", "--set", "prompt_tokens=2048", "--set", "avg_output_tokens=256", "--set", "ttft_target=2s",
                      "--set", "tpot_target=100ms"],
    "training-memory": ["--set", "tp_size=8", "--set", "pp_size=4", "--set", "dp_size=8", "--set", "zero_stage=1", "--set", "seq_len=4096",
                        "--set", "micro_batch=1", "--set", "recompute=selective"],
    "training-duration": ["--set", "train_tokens=1T", "--set", "n_gpus=1024"],
    "energy-per-token": ["--set", "batch_size=8", "--set", "prompt_tokens=1024", "--set", "avg_output_tokens=256"],
}
# calculators a model does not enter (power and cost of a cluster, one collective call): every device, no model
DEVICE_CALCS = {
    # eff_bandwidth: the record's measured busBw, else its link per direction x the calibrated e_link of its fabric
    # (engine.cli.efficiency); a record with no per-direction link is refused by name ("has no ...")
    "collective": ["--set", "ranks=8", "--set", "msg_bytes=1GiB"],
    "power-tco": ["--set", "n_gpus=64", "--set", "gpus_per_node=8", "--set", "node_overhead_power=4kW", "--set", "capex_per_gpu=30000USD",
                  "--set", "electricity_price=0.1USD/kWh"],
}
# what a refusal may name: a real limit of the records, never a missing value they should hold
REAL_LIMITS = ("holds the weights", "has no", "do not fit", "does not fit", "no room", "states no dense", "is refused", "refuse", "not supported", "counts GQA/MHA/MLA",
               "models are not planned", "does not size", "not sized", "no scale-up interconnect", "must divide", "sizes no", "only",
               "is not a valid TP", "states no TDP",
               # serving-fleet: the calibrated fixed cost of a step plus the weight reads already exceed --tpot_target (e.g.
               # Qwen3-235B's 94 MoE layers on one A100 PCIe at 100 ms)
               "alone exceed the target")
ASKS = ("needs a value for", "gpu_memory_total", "give --mfu", "instance_goodput", "records no usable memory")
# Gaps this sweep found and issue 28 has not closed yet (each still asks for a value; listed so a new one fails). Closed:
# the sliding-window K/V budget (gemma-3, gpt-oss asked kv_budget: FX608 turns the per-GPU budget into the replica's),
# the MLA attention width (DeepSeek-V3, Kimi K2 asked head_dim: FX609 takes it from qk_nope/qk_rope/v_head_dim) and
# serving-fleet's instance_goodput, which asked for lack of those two.
KNOWN_GAPS: set[tuple[str, str]] = set()


def _check(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    _, err = capsys.readouterr()
    if argv[0] == "calc" and any((argv[1], gap) == known and gap in err for known in KNOWN_GAPS for gap in (known[1],)):
        return code, err
    assert not any(a in err for a in ASKS), f"{' '.join(argv)}: asks for a value the records should hold: {err}"
    if code != 0:
        assert code == 2 and err.count("\n") == 1 and any(r in err for r in REAL_LIMITS), f"{' '.join(argv)}: {err}"
    return code, err


@pytest.mark.parametrize("calc", sorted(CALCS))
def test_every_calculator_on_every_device_and_model(calc, capsys):
    answered = 0
    for device in DEVICES:
        for model in MODELS:
            code, _ = _check(["calc", calc, "--model", model, "--device", device, "--format", "json", *CALCS[calc]], capsys)
            answered += code == 0
    assert answered > 0


@pytest.mark.parametrize("calc", sorted(DEVICE_CALCS))
def test_every_device_calculator_on_every_device(calc, capsys):
    answered = sum(_check(["calc", calc, "--device", device, "--format", "json", *DEVICE_CALCS[calc]], capsys)[0] == 0 for device in DEVICES)
    assert answered > 0


def test_state_on_every_device_and_model(capsys):
    for device in DEVICES:
        for model in MODELS:
            _check(["state", "--model", model, "--device", device, "--context", "8192", "--tp", "8" if "deepseek" in model or "kimi-k" in model else "1",
                    "--format", "json"], capsys)


def test_roofline_model_on_every_device_and_model(capsys):
    for device in DEVICES:
        for model in MODELS:
            _check(["roofline", "--device", device, "--model", model, "--tokens", "1", "--history", "2048", "--format", "json"], capsys)


SERVE = ["--ttft", "2", "--tpot", "0.1", "--prompt", "1024", "--output", "128", "--max-batch", "8", "--format", "json"]


@pytest.mark.parametrize("model", MODELS)
def test_plan_serve_every_model_on_h200(model, capsys):
    _check(["plan", "serve", "--model", model, "--device", "h200", *SERVE], capsys)


@pytest.mark.parametrize("device", DEVICES)
def test_plan_serve_every_device(device, capsys):
    _check(["plan", "serve", "--model", "qwen3-8b", "--device", device, *SERVE], capsys)
