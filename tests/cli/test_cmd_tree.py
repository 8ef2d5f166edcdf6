"""``aiinfra tree list|walk|regions|boundary|check``: formats, prompting, exit codes, bad input.

Numbers are hand arithmetic from the checkpoint tree: C = 60 s durable write, 1% stall budget
(FX57's cited default), Young's interval sqrt(2 C M) (F22), so the budget holds from
M = C / (2 b^2) = 300000 s.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from engine.cli.main import main

FIXTURES = Path(__file__).parent.parent / "fixtures" / "trees"
SYNC = ["--set", "checkpoint_mode=sync", "--set", "checkpoint_durable_time=60s"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)


def test_list(capsys):
    code, out, _ = run(["tree", "list"], capsys)
    assert code == 0
    for name in ("pd-disaggregation", "training-parallelism", "checkpoint-strategy", "batching-policy", "training-divergence"):
        assert f"tree:{name}" in out


def test_list_csv(capsys):
    code, out, _ = run(["tree", "list", "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and {"id": "tree:checkpoint-strategy", "leaves": "5"}.items() <= next(r for r in rows if r["id"] == "tree:checkpoint-strategy").items()


def test_walk_text(capsys):
    code, out, _ = run(["tree", "walk", "checkpoint-strategy", *SYNC, "--set", "mtbf=400000s"], capsys)
    assert code == 0
    # tau = sqrt(2 x 60 x 400000) = 6928.2 s; 0.01 x 6928.2 = 69.28 s >= 60 s
    assert "checkpoint_stall <= stall_budget * checkpoint_interval_young -> sync-young" in out
    assert "checkpoint_interval_young = 6928.2 s" in out
    assert "Recommendation (sync-young):" in out
    assert "Defaults used:" in out and "- stall_budget = 0.01" in out


def test_walk_json_contract(capsys):
    code, out, _ = run(["tree", "walk", "checkpoint-strategy", *SYNC, "--set", "mtbf=200000s", "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 0
    assert data["tree"] == "tree:checkpoint-strategy"
    assert [s["node"] for s in data["path"]] == ["mode", "sync-budget"]
    assert data["path"][1]["branch"] == 1 and data["leaf"]["id"] == "sync-over-budget"
    assert data["inputs"]["mtbf"] == {"value": 200000.0, "unit": "s", "low": 200000.0, "high": 200000.0, "source": "user"}
    assert data["defaults_used"] == ["stall_budget"]
    assert data["leaf"]["severity"] == "bottleneck"


def test_walk_md(capsys):
    code, out, _ = run(["tree", "walk", "checkpoint-strategy", *SYNC, "--set", "mtbf=1d", "--format", "md"], capsys)
    assert code == 0 and out.startswith("## tree:checkpoint-strategy") and "### Recommendation (sync-over-budget)" in out


def test_walk_answers_file_and_set_override(tmp_path, capsys):
    answers = tmp_path / "answers.yaml"
    answers.write_text("checkpoint_mode: sync\ncheckpoint_durable_time: 60s\nmtbf: 200000\n", encoding="utf-8")
    code, out, _ = run(["tree", "walk", "checkpoint-strategy", "--answers", str(answers), "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["leaf"]["id"] == "sync-over-budget"
    code, out, _ = run(["tree", "walk", "checkpoint-strategy", "--answers", str(answers), "--set", "mtbf=300000", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["leaf"]["id"] == "sync-young"  # exactly on the boundary: C = b x tau


def test_walk_prompts_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    # checkpoint_durable_time is offered before FX55 computes it: a wrong unit is asked again; "" keeps stall_budget's default
    answers = iter(["sync", "60GB", "60s", "1d", ""])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    code, out, err = run(["tree", "walk", "checkpoint-strategy", "--format", "json"], capsys)
    assert code == 0
    assert "checkpoint_mode (one of sync|async)" in err
    assert "checkpoint_durable_time (s): " in err and "[Enter: compute it with FX55]" in err
    assert "has unit GB" in err  # the rejected answer, then the question again
    assert "stall_budget (1)" not in err and "stall_budget (a number)" in err and "[default 0.01]" in err
    data = json.loads(out)
    assert data["inputs"]["checkpoint_durable_time"]["value"] == 60 and data["inputs"]["mtbf"]["value"] == 86400
    assert data["leaf"]["id"] == "sync-over-budget"  # 0.01 x sqrt(2 x 60 x 86400) = 32.2 s < 60 s


def test_walk_ctrl_c_leaves_nothing(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)

    def interrupt(prompt=""):
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", interrupt)
    code, out, err = run(["tree", "walk", "checkpoint-strategy"], capsys)
    assert code == 130 and out == "" and err.endswith("aiinfra: interrupted\n")


def test_walk_without_terminal_names_every_missing_input_at_once(capsys):
    """Issue 11: all the inputs the walk needs at the node it stops at, one line each, in one run (not one per run)."""
    code, out, err = run(["tree", "walk", "checkpoint-strategy", "--set", "checkpoint_mode=sync"], capsys)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == ("aiinfra: error: tree:checkpoint-strategy needs 6 inputs to decide node sync-budget "
                        "(give each with --set NAME=VALUE or --answers FILE):")
    # FX55's five stages (T_queue, T_prepare, slowest rank, T_commit, T_verify) and the MTBF, each with its unit and meaning
    assert lines[1] == ("  --set ckpt_queue_time (s, time waiting in the save queue before writing starts (T_queue)); "
                        "or give checkpoint_durable_time directly")
    named = [line.split()[1] for line in lines[1:]]
    assert named == ["ckpt_queue_time", "ckpt_prepare_time", "ckpt_slowest_rank_time", "ckpt_commit_time", "ckpt_verify_time", "mtbf"]
    assert all(line.startswith("  --set ") and " (s, " in line for line in lines[1:])


def test_walk_without_terminal_one_missing_input_is_one_line(capsys):
    code, out, err = run(["tree", "walk", "checkpoint-strategy", *SYNC], capsys)
    assert code == 2 and out == ""
    assert err == ("aiinfra: error: --set mtbf: tree:checkpoint-strategy needs a value for mtbf (s, mean time between failures that force "
                   "a rollback, for this job's size (FX60 from component rates, or your incident log)); or give n_gpus to derive it (FX60)\n")


@pytest.mark.parametrize("argv, field", [
    (["--set", "nonsense=1"], "--set nonsense"),
    (["--set", "checkpoint_mode=maybe"], "--set checkpoint_mode"),
    (["--set", "mtbf=3GB"], "--set mtbf"),
    (["--format", "csv"], "--format"),
    (["--answers", "/nonexistent.yaml"], "--answers"),
])
def test_walk_bad_input_is_one_line(capsys, argv, field):
    code, out, err = run(["tree", "walk", "checkpoint-strategy", *SYNC[:2], *argv], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"aiinfra: error: {field}") and err.count("\n") == 1


def test_unknown_tree_is_bad_input(capsys):
    code, _, err = run(["tree", "walk", "no-such-tree"], capsys)
    assert code == 2 and err.startswith("aiinfra: error: ID: 'no-such-tree' is not a decision tree (known: ") and "batching-policy, " in err


def test_regions_symbolic(capsys):
    code, out, _ = run(["tree", "regions", "checkpoint-strategy"], capsys)
    assert code == 0
    assert "    when checkpoint_mode = sync and checkpoint_stall <= stall_budget * checkpoint_interval_young" in out
    code, out, _ = run(["tree", "regions", "checkpoint-strategy", "--format", "json"], capsys)
    assert json.loads(out)["regions"]["async-no-staging"] == ["checkpoint_mode = async and checkpoint_bytes > n_nodes * host_memory_per_node"]


def test_regions_for_a_variable(capsys):
    code, out, _ = run(["tree", "regions", "checkpoint-strategy", "--for", "mtbf", *SYNC], capsys)
    assert code == 0
    assert "sync-young        mtbf in [300000, +inf) s" in out
    assert "sync-over-budget  mtbf in (0, 300000) s" in out
    assert "async-young       not reached for these inputs" in out


def test_regions_set_without_for_is_bad_input(capsys):
    code, _, err = run(["tree", "regions", "checkpoint-strategy", *SYNC], capsys)
    assert code == 2 and err == "aiinfra: error: --set: needs --for VAR (without it the regions are symbolic)\n"


def test_boundary_text_and_json(capsys):
    code, out, _ = run(["tree", "boundary", "checkpoint-strategy", "--for", "mtbf", *SYNC], capsys)
    assert code == 0
    assert "mtbf = 300000 s (3.472 d): sync-over-budget below, sync-young above (at the point itself: sync-young)" in out.replace("\u202f", "")
    assert "closed form: mtbf = checkpoint_stall/(2*stall_budget**2) (with checkpoint_stall = 60 s)" in out
    code, out, _ = run(["tree", "boundary", "checkpoint-strategy", "--for", "mtbf", *SYNC, "--format", "json"], capsys)
    [b] = json.loads(out)["boundaries"]
    assert b["value"] == pytest.approx(300000) and b["below"] == "sync-over-budget" and b["above"] == "sync-young"


def test_boundary_for_the_variable_and_set_it_too(capsys):
    code, _, err = run(["tree", "boundary", "checkpoint-strategy", "--for", "mtbf", *SYNC, "--set", "mtbf=1d"], capsys)
    assert code == 2 and err == "aiinfra: error: --set mtbf: is the --for variable; leave it free\n"


def test_boundary_for_a_categorical_is_bad_input(capsys):
    code, _, err = run(["tree", "boundary", "checkpoint-strategy", "--for", "checkpoint_mode"], capsys)
    assert code == 2 and err == "aiinfra: error: --for: 'checkpoint_mode' is not a numeric symbol of tree:checkpoint-strategy\n"


def test_check_shipped_is_clean(capsys):
    code, out, _ = run(["tree", "check"], capsys)
    assert code == 0 and re.match(r"ok: \d+ trees, ", out) and out.endswith("; 0 problems\n")


def test_check_fixture_gap_exits_1(capsys):
    code, out, _ = run(["tree", "check", "--root", str(FIXTURES / "gap")], capsys)
    assert code == 1
    assert out == ("decision_trees/gap.yaml:14 tree:gap nodes.size: gap: no branch holds at load=100 requests (exact witness)\n"
                   "FAILED: 1 trees, 2 node checks proven exactly, 0 sampled; 1 problem\n")


def test_check_json_lists_notes(capsys):
    code, out, _ = run(["tree", "check", "--root", str(FIXTURES / "sampled"), "--format", "json"], capsys)
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and len(data["problems"]) == 1 and len(data["notes"]) == 3


def test_help_shows_examples(capsys):
    code, out, _ = run(["tree", "walk", "--help"], capsys)
    assert code == 0 and "Missing inputs are asked for when stdin is a terminal" in out


def test_walk_with_model_and_device_presets(capsys):
    # Qwen3-8B (Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128) on H100 SXM (datasheet 3.35 TB/s):
    # KV per token 2 x 36 x 8 x 128 x 2 B = 147,456 B; a 4096-token prompt moves 603,979,776 B,
    # 12.1 ms over 50 GB/s. Presets fill the architecture and the device and name their source.
    from engine.cli.main import main

    code = main(["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--device", "h100-sxm", "--no-prompt",
                 "--set", "latency_slo=interactive", "--set", "decode_batch=32", "--set", "prompt_tokens=4096",
                 "--set", "avg_output_tokens=256", "--set", "kv_bytes=2", "--set", "tpot_slo=50ms", "--set", "serving_gpus=64",
                 "--set", "kv_link_bandwidth=50GB/s", "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0
    import json

    data = json.loads(out)
    text = json.dumps(data)
    assert "147456" in text and "model:qwen3-8b" in text and "hw:h100-sxm" in text


def test_walk_refuses_a_billion_laughs_answers_file_quickly(tmp_path, capsys):
    import time

    # ten levels of nine aliases: 9**10 = 3,486,784,401 values once expanded
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 11)]
    answers = tmp_path / "answers.yaml"
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    start = time.perf_counter()
    code, out, err = run(["tree", "walk", "checkpoint-strategy", "--answers", str(answers)], capsys)
    assert time.perf_counter() - start < 5.0
    assert (code, out) == (2, "")
    assert err == (f"aiinfra: error: --answers: {answers}: expands to more than 500,000 nodes through its aliases "
                   "(&anchor / *alias), the most read from one file\n")


def _pty_walk(argv: list[str], answers: dict[str, str | list[str]], limit: float = 240.0) -> tuple[int, str]:
    """Run ``aiinfra ARGV`` on a pseudo-terminal; answer each ``  NAME = `` prompt from ANSWERS (Enter otherwise).

    A list answers the same prompt in turn (its k-th showing gets the k-th entry), for back/help/refused answers.
    """
    import os
    import pty
    import select
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the real CLI, stdin and stderr on the terminal
        os.execv(sys.executable, [sys.executable, "-c", "import sys; from engine.cli.main import main; sys.exit(main(sys.argv[1:]))", *argv])
    out, asked, end = b"", {}, time.time() + limit
    while time.time() < end:
        if not select.select([fd], [], [], 5)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
        m = re.search(rb"  (\w+) = $", out)
        if m:
            name = m.group(1).decode()
            asked[name] = asked.get(name, 0) + 1
            given = answers.get(name, "")
            turns = given if isinstance(given, list) else [given]
            assert asked[name] <= max(2, len(turns)), f"asked for {name} again and again:\n{out.decode(errors='replace')}"
            out += b"\n"
            os.write(fd, (turns[min(asked[name], len(turns)) - 1] + "\r").encode())
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_walk_on_a_pty_keeps_typed_answers_through_ranged_presets():
    """Issue 11: the typed answers were dropped when the walk re-ran at the corners of a ranged input.

    --device h100-sxm gives mfu as a measured band, so the walk is re-run at its corners; those
    re-runs lost every prompted answer and failed with 'needs a value for latency_slo', exit 2.
    Hand arithmetic for the leaf (Qwen3-8B, 8.19e9 parameters per its model card; H100 SXM BF16
    dense 989 TFLOP/s): prefill of 8192 tokens = 2 * 8.19e9 * 8192 / (989e12 * mfu) = 0.30 s at
    mfu 0.45 and 0.39 s at 0.35, above the 50 ms TPOT SLO -> scale; 64 GPUs >= 32 -> transfer;
    KV 8192 * 147456 B (F8: 2*36*8*128*2) / 50e9 B/s = 0.024 s <= 0.30 s -> disaggregate at every corner.
    """
    answers = {"latency_slo": "interactive", "tpot_slo": "50ms", "prompt_tokens": "8192", "serving_gpus": "64",
               "kv_link_bandwidth": "50GB/s", "batch_size": "32", "context_tokens": "8192", "kv_bytes": "2"}
    code, out = _pty_walk(["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--device", "h100-sxm"], answers)
    assert code == 0, out
    assert "latency_slo = interactive -> stall" in out
    assert "Recommendation (disaggregate)" in out
    assert "needs a value" not in out


@pytest.mark.parametrize("action", ["boundary", "regions"])
def test_boundary_and_regions_take_a_device_presets_range(action, capsys):
    """--device h100-sxm presets the MFU as the calibration's range, which travels as [value, low, high]; only a
    user's own list is refused (issue 24), so the preset must not be read as one (this exited 2 and broke make run)."""
    argv = ["tree", action, "pd-disaggregation", "--for", "prompt_tokens", "--model", "qwen3-8b", "--device", "h100-sxm",
            "--set", "latency_slo=interactive", "--set", "decode_batch=32", "--set", "avg_output_tokens=256", "--set", "kv_bytes=2",
            "--set", "tpot_slo=50ms", "--set", "serving_gpus=64", "--set", "kv_link_bandwidth=50GB/s"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "colocate" in out and "disaggregate" in out


def test_a_walk_with_model_and_device_never_asks_for_the_kv_element_size(capsys):
    """Issue 28: --model and --device fix the K/V bytes per token (kv_bytes follows --precision, bf16 = 2 B, as calc
    does); the missing-input list names only what the user must say (the batch, lengths and the TPOT target)."""
    code, _, err = run(["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "latency_slo=interactive"], capsys)
    assert code == 2
    assert "--set decode_batch" in err and "--set tpot_slo" in err
    assert "--set kv_bytes" not in err


def test_a_serving_tree_never_offers_a_training_run_to_derive_mfu(capsys):
    """Issue 28: pd-disaggregation asked for mfu '...; or give measured_throughput to derive it (F11)', F11 being the
    MFU of a training run's tokens/s. The serving trees declare their MFU as measured: no derivation is offered."""
    argv = ["tree", "walk", "pd-disaggregation", "--model", "qwen3-8b", "--set", "latency_slo=interactive", "--set", "decode_batch=32",
            "--set", "prompt_tokens=2048", "--set", "context_tokens=2300", "--set", "tpot_slo=50ms"]
    code, _, err = run(argv, capsys)
    assert code == 2 and "--set mfu (" in err
    assert "measured_throughput" not in err and "F11" not in err
