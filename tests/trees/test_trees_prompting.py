"""Issue 11: the interactive tree walk on a real pseudo-terminal (back, skip, help; no question the
engine can answer itself) and ``aiinfra tree show``.

Hand arithmetic for the checkpoint tree (as in tests/cli/test_cmd_tree.py): C = 60 s durable write,
M = 1 d = 86400 s, Young's interval sqrt(2 C M) = sqrt(2 x 60 x 86400) = 3219.9 s (F22);
with the 1% stall budget (FX57's cited default) 0.01 x 3219.9 = 32.2 s < 60 s -> sync-over-budget.
"""

from __future__ import annotations

import json

from engine.cli.main import main
from tests.cli.test_cmd_tree import _pty_walk


def test_pty_back_help_and_skip():
    answers = {
        "checkpoint_mode": ["help", "async", "sync"],  # help, then async; back at the next question returns here
        "checkpoint_bytes": "back",
        "checkpoint_durable_time": "60s",
        "mtbf": "1d",
        "stall_budget": "skip",  # keeps the default 0.01
    }
    code, out = _pty_walk(["tree", "walk", "checkpoint-strategy"], answers)
    assert code == 0, out
    assert "back for the previous question, skip to keep the default" in out
    assert "    choices: sync, async" in out and "    default: none" in out  # what help printed for checkpoint_mode
    assert out.count("  checkpoint_mode = \n") == 3  # help re-asks, back asks it once more
    assert "checkpoint_mode = sync -> sync-budget" in out and "checkpoint_mode = async" not in out.split("Path:")[1]
    assert "Recommendation (sync-over-budget)" in out
    assert "- stall_budget = 0.01" in out


def test_pty_never_asks_what_presets_and_answers_compute():
    """With --model qwen3-8b and kv_bytes given, F8 gives kv_bytes_per_token (2 x 36 x 8 x 128 x 2 B = 147,456 B):
    it is not asked. The leaf is the one tests/cli/test_cmd_tree.py works out by hand (disaggregate)."""
    answers = {"latency_slo": "interactive", "tpot_slo": "50ms", "prompt_tokens": "8192", "serving_gpus": "64",
               "kv_link_bandwidth": "50GB/s", "batch_size": "32", "context_tokens": "8192"}
    code, out = _pty_walk(["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "kv_bytes=2"], answers)
    assert code == 0, out
    for computed in ("kv_bytes_per_token", "weight_bytes", "params", "params_active", "infer_flops_per_token"):
        assert f"\n{computed} (" not in out and f"  {computed} = \n" not in out, computed  # neither the question nor its prompt
    assert "kv_bytes_per_token = 147 456 B/tokens" in out.replace("\u202f", " ")
    assert "Recommendation (disaggregate)" in out


def _show(argv, capsys):
    code = main(["tree", "show", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_show_json_lists_inputs_computed_and_leaves(capsys):
    code, out, _ = _show(["checkpoint-strategy", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    inputs = {i["symbol"]: i for i in data["inputs"]}
    assert inputs["checkpoint_mode"]["values"] == ["sync", "async"] and inputs["checkpoint_mode"]["default"] is None
    assert inputs["stall_budget"]["default"] == 0.01 and inputs["stall_budget"]["computed"] is None
    assert inputs["mtbf"]["unit"] == "s" and inputs["mtbf"]["domain"] == "positive"
    durable = inputs["checkpoint_durable_time"]["computed"]
    assert durable["formula"] == "FX55" and {"ckpt_queue_time", "ckpt_verify_time"} <= set(durable["from"])
    chain = {i["symbol"] for i in data["chain"]}
    assert {"ckpt_queue_time", "ckpt_prepare_time", "ckpt_slowest_rank_time", "ckpt_commit_time", "ckpt_verify_time"} <= chain
    assert len(data["leaves"]) == 5 and data["leaves"][0]["id"] == "sync-young"


def test_show_text_and_md(capsys):
    code, out, _ = _show(["checkpoint-strategy"], capsys)
    assert code == 0
    assert "  checkpoint_mode (one of sync|async): default none" in out
    assert "  stall_budget (positive_fraction): default 0.01" in out
    assert "computed by FX55 from durable_time_basis, ckpt_queue_time" in out and "Leaves:" in out
    code, out, _ = _show(["checkpoint-strategy", "--format", "md"], capsys)
    assert code == 0 and out.startswith("## tree:checkpoint-strategy") and "| `mtbf` | s | positive | none |" in out


def test_show_names_what_a_device_preset_fills(capsys):
    # H100 SXM memory bandwidth 3.35 TB/s (NVIDIA H100 datasheet, knowledge/hardware/h100-sxm.yaml)
    code, out, _ = _show(["pd-disaggregation", "--device", "h100-sxm", "--format", "json"], capsys)
    assert code == 0
    inputs = {i["symbol"]: i for i in json.loads(out)["inputs"]}
    assert inputs["hbm_bandwidth"]["preset"]["value"] == 3.35e12 and "h100-sxm" in inputs["hbm_bandwidth"]["preset"]["source"]
    assert inputs["latency_slo"]["preset"] is None


def test_show_bad_input_is_one_line(capsys):
    code, out, err = _show(["no-such-tree"], capsys)
    assert code == 2 and out == "" and err.startswith("aiinfra: error: ID: 'no-such-tree' is not a decision tree") and err.count("\n") == 1
    code, out, err = _show(["checkpoint-strategy", "--format", "csv"], capsys)
    assert code == 2 and err.startswith("aiinfra: error: --format: csv is available") and err.count("\n") == 1
