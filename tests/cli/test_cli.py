"""The ``aiinfra`` command line: contracts of DESIGN.md ("Outputs"), formats and bad input.

Numbers asserted here are hand arithmetic on published inputs, written out beside them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main

ROOTS = Path(__file__).parent.parent / "fixtures" / "roots"
F8_QWEN3_8B = ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2"]
F2_BASE = ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=1PFLOPS"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- bad input

BAD = {
    "no command": [],
    "unknown command": ["frobnicate"],
    "formula without action": ["formula"],
    "eval without id": ["formula", "eval"],
    "unknown formula": ["formula", "eval", "F99"],
    "not a formula id": ["formula", "eval", "banana"],
    "set without equals": [*F8_QWEN3_8B, "--set", "heads"],
    "set without name": [*F8_QWEN3_8B, "--set", "=3"],
    "set without value": [*F8_QWEN3_8B, "--set", "heads="],
    "not a number": ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=abc", "--set", "kv_heads=8", "--set", "head_dim=128"],
    "zero layers": ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=0", "--set", "kv_heads=8", "--set", "head_dim=128"],
    "fractional layers": ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=2.5", "--set", "kv_heads=8", "--set", "head_dim=128"],
    "wrong dimension": [*F8_QWEN3_8B[:-2], "--set", "kv_bytes=80s"],
    "milli bytes": [*F8_QWEN3_8B[:-2], "--set", "kv_bytes=80mB"],
    "unknown variant": ["formula", "eval", "F8", "--set", "attention=xyz", "--set", "layers=36"],
    "unknown symbol": [*F8_QWEN3_8B, "--set", "foo=1"],
    "symbol given twice": [*F8_QWEN3_8B, "--set", "layers=2"],
    "missing input": ["formula", "eval", "F8", "--set", "attention=gqa", "--set", "layers=36"],
    "bad format": ["--format", "xml", "formula", "list"],
    "missing root": ["--root", "/nonexistent/aiinfra-root", "formula", "list"],
    "root is a file": ["check", "--root", __file__],
    "mfu above one": [*F2_BASE, "--set", "mfu=1.5"],
    "negative mfu": [*F2_BASE, "--set", "mfu=-0.1"],
    "reversed range": [*F2_BASE, "--set", "mfu=0.5..0.3"],
    "overflowing number": [*F2_BASE, "--set", "mfu=1e400"],
    "control character": [*F2_BASE, "--set", "mfu=0.4\x01"],
    "show unknown formula": ["formula", "show", "F99"],
    "solve for unknown symbol": ["formula", "solve", "F2", "--for", "nosuch"],
    "solve without --for": ["formula", "solve", "F2"],
    "solve with unreadable bound": ["formula", "solve", "F2", "--for", "mfu", "--le", "abc"],
    "solve with two relations": ["formula", "solve", "F2", "--for", "mfu", "--eq", "1", "--le", "2"],
    "solve setting its target": ["formula", "solve", "F2", "--for", "mfu", "--set", "mfu=0.5", "--eq", "1d"],
    "solve with a range": ["formula", "solve", "F2", "--for", "mfu", "--set", "n_gpus=1..3", "--eq", "1d"],
    "solve bound in wrong unit": ["formula", "solve", "F2", "--for", "mfu", "--eq", "3GiB"],
    "export without --to": ["graph", "export"],
    "export to dot": ["graph", "export", "--to", "dot"],
    "export into missing folder": ["graph", "export", "--to", "json", "--out", "/nonexistent/dir/graph.json"],
    "zero GPUs": ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=0", "--set", "peak_flops=1PFLOPS", "--set", "mfu=0.4"],
    "negative spread": [*F2_BASE, "--set", "mfu=0.4±-10%"],
    # issue 16: write targets, roots and bounds that used to end in exit 70 or a silent default
    "export into a folder": ["graph", "export", "--to", "json", "--out", str(ROOTS), "--root", str(ROOTS / "good")],
    "export into /proc": ["graph", "export", "--to", "json", "--out", "/proc/aiinfra-graph.json", "--root", str(ROOTS / "good")],
    "export to an empty path": ["graph", "export", "--to", "json", "--out", "", "--root", str(ROOTS / "good")],
    "empty root": ["formula", "list", "--root", ""],
    "root without knowledge": ["formula", "list", "--root", str(ROOTS)],
    "check a root without knowledge": ["check", "--root", str(ROOTS)],
    "solve le 0 for a positive output": ["formula", "solve", "F2", "--for", "mfu", *F2_BASE[3:], "--le", "0"],
    "serve on port 70000": ["site", "serve", "--no-build", "--port", "70000"],
    "serve a negative port": ["site", "serve", "--no-build", "--port", "-1"],
    "site into an empty path": ["site", "build", "--out", ""],
    "site from an empty root": ["site", "build", "--root", ""],
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_exit_2(name, capsys):
    code, out, err = run(BAD[name], capsys)
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("aiinfra"), err
    assert "Traceback" not in err + out


def test_there_are_at_least_30_distinct_bad_invocations():
    assert len({tuple(v) for v in BAD.values()}) >= 30


@pytest.mark.parametrize(
    "name, message",
    [
        ("wrong dimension", "aiinfra: error: --set kv_bytes: '80s' has unit s (s), expected a quantity in B (B)"),
        ("zero layers", "aiinfra: error: --set layers: expected a whole number >= 1, got 0"),
        ("mfu above one", "aiinfra: error: --set mfu: expected a fraction above 0 and at most 1, got 1.5"),
        ("unknown variant", "aiinfra: error: --set attention: 'xyz' is not one of mha, gqa, mqa, mla"),
        ("symbol given twice", "aiinfra: error: --set layers: is given twice"),
        ("missing root", "aiinfra: error: --root: '/nonexistent/aiinfra-root' is not a folder (expected a folder with formulas/ and knowledge/)"),
        ("export into a folder", f"aiinfra: error: --out: {str(ROOTS)!r} is a folder (expected a file path)"),
        ("export into /proc", "aiinfra: error: --out: cannot write '/proc/aiinfra-graph.json' (No such file or directory)"),
        ("export to an empty path", "aiinfra: error: --out: is empty (expected a file path)"),
        ("empty root", "aiinfra: error: --root: is empty (expected a folder with formulas/ and knowledge/)"),
        ("root without knowledge", f"aiinfra: error: --root: {str(ROOTS)!r} holds none of formulas/, knowledge/, decision_trees/ (expected a knowledge root)"),
        ("solve le 0 for a positive output", "aiinfra: error: --le: train_time is positive for every input in its domain, so no value of mfu gives train_time <= 0 s (expected a bound above 0)"),
        ("serve on port 70000", "aiinfra: error: --port: expected a port from 1 to 65535 (or 0 for any free port), got 70000"),
    ],
)
def test_bad_input_messages_name_the_field(name, message, capsys):
    _, _, err = run(BAD[name], capsys)
    assert err.strip() == message


def test_console_script_prints_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "engine", "formula", "eval", "F8", "--set", "layers=x"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- results


def test_eval_json_follows_the_result_contract(capsys):
    code, out, _ = run([*F8_QWEN3_8B, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"inputs", "outputs", "formulas", "assumptions", "warnings"}
    kv = data["outputs"]["kv_bytes_per_token"]
    # Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128; BF16 = 2 B: 2*36*8*128*2 = 147456
    assert kv == {"value": 147456.0, "unit": "B/tokens", "low": 147456.0, "high": 147456.0, "method": "exact"}
    assert data["inputs"]["kv_bytes"]["source"] == "given"
    assert data["formulas"] == ["F8"]


def test_defaults_fill_unset_inputs_and_say_so(capsys):
    # F1 with GPT-3's 175e9 params and 300e9 tokens: 6 * 175e9 * 300e9 = 3.15e23 FLOP (Brown et al. 2020 Table D.1: 3.14e23)
    argv = ["formula", "eval", "F1", "--set", "params_active=175e9", "--set", "train_tokens=300e9", "--format", "json"]
    data = json.loads(run(argv, capsys)[1])
    assert data["outputs"]["train_flops"]["value"] == pytest.approx(3.15e23, rel=1e-12)
    assert data["inputs"]["flop_per_param_token"]["source"].startswith("default: 2 forward + 4 backward")


def test_shared_options_work_before_and_after_the_verb(capsys):
    _, before, _ = run(["--format", "json", *F8_QWEN3_8B], capsys)
    _, after, _ = run([*F8_QWEN3_8B, "--format", "json"], capsys)
    assert json.loads(before) == json.loads(after)


def test_range_propagates_exactly_through_a_monotone_formula(capsys):
    code, out, _ = run([*F2_BASE, "--set", "mfu=35..45%", "--format", "json"], capsys)
    assert code == 0
    t = json.loads(out)["outputs"]["train_time"]
    # T = 6.3e24 / (1024 * 1e15 * mfu): mfu 0.45 -> 13671875 s, mfu 0.35 -> 17578125 s, centre 0.40 -> 15380859.375 s
    assert t["method"] == "exact"
    assert t["low"] == pytest.approx(13671875.0, rel=1e-12)
    assert t["high"] == pytest.approx(17578125.0, rel=1e-12)
    assert t["value"] == pytest.approx(15380859.375, rel=1e-12)


def test_units_on_the_command_line_convert(capsys):
    # 1000 TFLOPS written three ways must give the same duration
    outs = []
    for peak in ("1PFLOPS", "1000TFLOPS", "1e15"):
        argv = ["formula", "eval", "F2", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", f"peak_flops={peak}", "--set", "mfu=0.4", "--format", "json"]
        outs.append(json.loads(run(argv, capsys)[1])["outputs"]["train_time"]["value"])
    assert outs[0] == outs[1] == outs[2] == pytest.approx(6.3e24 / (1024 * 1e15 * 0.4))


@pytest.mark.parametrize("fmt", ["text", "md", "csv", "json"])
def test_every_format_renders_eval_list_and_show(fmt, capsys):
    for argv in (F8_QWEN3_8B, ["formula", "list"], ["formula", "show", "F8"], ["check"]):
        code, out, err = run([*argv, "--format", fmt], capsys)
        assert code == 0, err
        assert out.strip()
        if fmt == "json":
            json.loads(out)
    code, out, _ = run([*F8_QWEN3_8B, "--format", "csv"], capsys)
    assert out.splitlines()[0] == "kind,name,value,unit,low,high,note"


def test_show_prints_latex_units_and_used_by(capsys):
    code, out, _ = run(["formula", "show", "F8", "--format", "json"], capsys)
    data = json.loads(out)
    assert data["symbols"]["kv_bytes"]["unit"] == "B"
    assert "F9" in data["used_by"]
    assert all("\\mathrm" in v["latex"] for v in data["variants"])


def test_solve_gives_closed_form_and_number(capsys):
    # 120 d = 10368000 s; mfu = 6.3e24 / (1024 * 1e15 * 10368000) = 0.59335...
    argv = ["formula", "solve", "F2", "--for", "mfu", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=1PFLOPS", "--eq", "120d", "--format", "json"]
    code, out, _ = run(argv, capsys)
    data = json.loads(out)
    assert code == 0
    assert data["closed_form"] == ["mfu = train_flops/(n_gpus*peak_flops*train_time)"]
    assert data["values"][0] == pytest.approx(6.3e24 / (1024 * 1e15 * 10368000))


def test_solve_inequality_gives_an_interval_inside_the_domain(capsys):
    # T <= 120 d needs mfu >= 0.59335 (see above); the domain caps mfu at 1
    argv = ["formula", "solve", "F2", "--for", "mfu", "--set", "train_flops=6.3e24", "--set", "n_gpus=1024", "--set", "peak_flops=1PFLOPS", "--le", "120d", "--format", "json"]
    data = json.loads(run(argv, capsys)[1])
    lo = 6.3e24 / (1024 * 1e15 * 10368000)
    assert data["interval"] == f"[{lo:.6g}, 1]"


def test_solve_says_when_a_sign_is_unknown_instead_of_guessing(tmp_path, capsys):
    root = tmp_path / "root"
    (root / "formulas").mkdir(parents=True)
    (root / "formulas" / "f.yaml").write_text(
        "- id: FX1\n  name: margin\n  section: \"B.2.8\"\n  defined_in: \"infra:31.2\"\n"
        "  output: {symbol: margin, unit: USD, desc: margin}\n"
        "  symbols:\n    price: {desc: price, unit: USD, domain: positive}\n"
        "    k: {desc: a real factor, unit: \"1\", domain: real}\n"
        "  expr: k * price\n"
        "  examples:\n    - {set: {price: 2, k: 3}, expect: 6, source: \"hand arithmetic 3*2 = 6\"}\n"
    )
    code, out, _ = run(["formula", "solve", "FX1", "--for", "price", "--le", "10", "--root", str(root)], capsys)
    assert code == 0
    assert "the sign of the coefficient of price (k) is unknown" in out


def test_check_exits_1_on_a_broken_root(capsys):
    code, out, _ = run(["check", "--root", str(ROOTS / "dangling_reference")], capsys)
    assert code == 1
    assert "infra:ch22 depends_on: refers to infra:ch99, which is not defined" in out


def test_graph_export_writes_the_file_atomically(tmp_path, capsys):
    target = tmp_path / "g.json"
    code, _, _ = run(["graph", "export", "--to", "json", "--out", str(target), "--root", str(ROOTS / "good")], capsys)
    assert code == 0
    data = json.loads(target.read_text())
    ids = {n["id"] for n in data["nodes"]}
    assert {"F1", "infra:ch6", "infra:6.2", "concept:memory-conversion", "path:serving", "sym:kv_bytes_per_token"} <= ids
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind
    code, out, _ = run(["graph", "export", "--to", "graphml", "--root", str(ROOTS / "good")], capsys)
    assert code == 0 and out.lstrip().startswith("<?xml")


@pytest.mark.parametrize("failing", ["mkstemp", "replace"])
def test_a_write_that_fails_is_one_line_and_leaves_no_temporary(failing, tmp_path, monkeypatch, capsys):
    # a read-only folder, simulated: the tests may run as root, who can write anywhere
    import os
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(*((tempfile, "mkstemp") if failing == "mkstemp" else (os, "replace")), refuse)
    target = tmp_path / "g.json"
    code, out, err = run(["graph", "export", "--to", "json", "--out", str(target), "--root", str(ROOTS / "good")], capsys)
    assert (code, out) == (2, "")
    assert err == f"aiinfra: error: --out: cannot write {str(target)!r} (Permission denied)\n"
    assert list(tmp_path.iterdir()) == []


def test_graph_stats_counts_the_fixture(capsys):
    code, out, _ = run(["graph", "stats", "--format", "json", "--root", str(ROOTS / "good")], capsys)
    data = json.loads(out)
    # good/: 1 book, 3 chapters, 3 sections, 1 concept, 1 path, 1 formula
    assert data["nodes_by_kind"]["chapter"] == 3
    assert data["nodes_by_kind"]["section"] == 3
    assert data["nodes_by_kind"]["formula"] == 1
    assert data["edges_by_rel"]["step"] == 3


# ----------------------------------------------------------------------------- issue 11: typos, case, help

def test_help_lists_calc(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    assert "    calc                calculators declared as data (knowledge/calculators/)" in out.splitlines()


def test_an_unknown_verb_names_calc_and_the_closest_verb(capsys):
    code, _, err = run(["clac", "list"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("aiinfra: error: argument COMMAND: invalid choice: 'clac' (did you mean calc? choose from 'check', 'formula', ")
    assert err.endswith(", 'calc') (see aiinfra --help)\n")
    _, _, err = run(["frobnicate"], capsys)  # nothing close: no guess
    assert err.startswith("aiinfra: error: argument COMMAND: invalid choice: 'frobnicate' (choose from 'check', ") and "'calc'" in err


@pytest.mark.parametrize("argv, message", [
    (["formula", "evl", "F8"], "aiinfra formula: error: argument ACTION: invalid choice: 'evl' (did you mean eval? choose from 'list', 'show', 'eval', 'solve') (see aiinfra formula --help)"),
    (["--format", "jsn", "formula", "list"], "aiinfra: error: argument --format: invalid choice: 'jsn' (did you mean json? choose from 'text', 'json', 'md', 'csv') (see aiinfra --help)"),
    # the fast paths (formula eval, calc NAME, forward) hand an unknown option to the full parser, which names it
    ([*F8_QWEN3_8B, "--sett", "layers=1"], "aiinfra formula eval: error: unrecognized option --sett (did you mean --set?) (see aiinfra formula eval --help)"),
    (["formula", "eval", "F8", "--sett=layers=1"], "aiinfra formula eval: error: unrecognized option --sett (did you mean --set?) (see aiinfra formula eval --help)"),
    (["calc", "kv-concurrency", "--modle", "qwen3-8b"], "aiinfra calc kv-concurrency: error: unrecognized option --modle (did you mean --model?) (see aiinfra calc kv-concurrency --help)"),
    # a typo is why a required option is "missing": the typo is named, not the missing option
    (["forward", "--model", "qwen3-8b", "--tokns", "1"], "aiinfra forward: error: unrecognized option --tokns (did you mean --tokens?) (see aiinfra forward --help)"),
    (["--frmat", "json", "formula", "list"], "aiinfra: error: unrecognized option --frmat (did you mean --format?) (see aiinfra --help)"),
    (["formula", "list", "--xyzzy"], "aiinfra formula list: error: unrecognized option --xyzzy (see aiinfra formula list --help)"),
])
def test_misspelled_verbs_and_options_get_a_suggestion(argv, message, capsys):
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err == message + "\n"


@pytest.mark.parametrize("argv, start", [
    (["calc", "kv-concurency"], "aiinfra: error: CALCULATOR: no calculator 'kv-concurency' (did you mean kv-concurrency? known: checkpoint-window, "),
    # a sweep is read on the fast path too (issue 24), so it names the calculator the same way as a run
    (["calc", "kv-concurency", "--sweep", "context_tokens=1..2"], "aiinfra: error: CALCULATOR: no calculator 'kv-concurency' (did you mean kv-concurrency? known: checkpoint-window, "),
    (["model", "show", "qwen3-8"], "aiinfra: error: ID: no model 'qwen3-8' (did you mean qwen3-8b or qwen3-32b or qwen3-30b-a3b? known: "),
    (["forward", "--model", "qwen3-8", "--tokens", "1"], "aiinfra: error: --model: no model 'qwen3-8' (did you mean qwen3-8b or qwen3-32b or qwen3-30b-a3b? known: "),
    # the calculators, kv and collective read --model through the presets: the error names the option typed (issue 28)
    (["calc", "kv-concurrency", "--model", "gemma-3-27b", "--device", "h100-sxm"], "aiinfra: error: --model: no model 'gemma-3-27b' (did you mean gemma-3-27b-it? known: "),
    (["state", "--model", "qwen3-8", "--context", "1"], "aiinfra: error: --model: no model 'qwen3-8' (did you mean qwen3-8b or "),
    (["tree", "walk", "pd-disagregation", "--set", "latency_slo=offline"], "aiinfra: error: ID: 'pd-disagregation' is not a decision tree (did you mean pd-disaggregation? known: "),
    (["formula", "show", "FX1000"], "aiinfra: error: ID: no formula FX1000 (did you mean FX100 or "),
    (["formula", "eval", "FX1000"], "aiinfra: error: ID: no formula 'FX1000' (did you mean FX100 or "),
])
def test_misspelled_ids_get_a_suggestion(argv, start, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(start), err


@pytest.mark.parametrize("argv, start", [
    (["formula", "show", "f8"], "F8 · KV cache bytes per token"),
    (["formula", "eval", "f8", *F8_QWEN3_8B[3:]], "F8 · KV cache bytes per token"),
    (["model", "show", "Qwen3-8B"], "model:qwen3-8b · Qwen3-8B"),
    (["path", "show", "Inference-Service"], "path:inference-service"),
    (["calc", "KV-Concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2",
      "--set", "gpu_memory_total=80GiB", "--set", "weight_bytes=16GiB", "--set", "engine_overhead_bytes=4GiB", "--set", "context_tokens=4096"],
     "calc:kv-concurrency · "),
])
def test_ids_are_case_insensitive(argv, start, capsys):
    code, out, err = run(argv, capsys)
    assert (code, err) == (0, ""), err
    assert out.startswith(start), out[:200]


def test_calculator_names_are_case_insensitive_on_the_full_parser_too(capsys):
    # --sweep is not on the fast path: the argparse subcommand choice must take the name in any case
    code, out, err = run(["calc", "KV-Concurrency", "--set", "layers=36", "--set", "kv_heads=8", "--set", "head_dim=128", "--set", "kv_bytes=2",
                          "--set", "gpu_memory_total=80GiB", "--set", "weight_bytes=16GiB", "--set", "engine_overhead_bytes=4GiB",
                          "--sweep", "context_tokens=4096..8192", "--points", "2"], capsys)
    assert (code, err) == (0, ""), err
    assert out.startswith("context_tokens [tokens/requests],")


def test_tree_ids_are_case_insensitive(capsys):
    code, out, err = run(["tree", "walk", "PD-Disaggregation", "--set", "latency_slo=offline", "--format", "json"], capsys)
    assert (code, err) == (0, ""), err
    assert json.loads(out)["leaf"]["id"] == "colocate-throughput"  # offline needs no numbers (tests/trees/test_trees.py)


def test_core_verbs_list_every_verb_the_full_parser_adds():
    """CORE_VERBS (one verb's parsers built alone) names every verb build_parser adds besides the plugins."""
    from engine.cli import main as cli

    top = cli.build_parser(None)
    verbs = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(verbs.choices) == set(cli.CORE_VERBS) | set(cli.PLUGIN_VERBS)


@pytest.mark.parametrize("argv, words", [(["roofline", "--bogus"], "unrecognized"), (["model", "shw"], "did you mean show"),
                                         (["hardware", "show"], "ID")])
def test_one_verb_parser_keeps_the_errors(argv, words, capsys):
    from engine.cli.main import main

    assert main(argv) == 2
    assert words in capsys.readouterr().err
