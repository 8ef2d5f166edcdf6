"""Every command in README.md's ``sh`` blocks exits 0, and its ``python`` block runs (issue 11).

The commands are read from the README itself (backslash continuations joined, trailing
``# comments`` dropped) and run as a user would, through ``.venv/bin/aiinfra`` (or the
interpreter running the tests), with stdin closed, in a temporary folder so that the files
they write (graph.graphml, kv.svg) land there. Left out, and why:

- ``site serve`` never exits;
- ``site build`` takes minutes here; the same build is made and checked by
  tests/site/test_site.py::test_strict_build_has_no_warnings, so it is not built twice;
- ``tree walk`` without answers asks for them on a terminal (its README comment says so);
  with stdin closed it is bad input by design, so that line is skipped here; the README's
  next line gives the answers with ``--set`` and is run;
- ``model import`` writes into the knowledge root by default: it is given a config.json at
  the README's placeholder path (tiiuae/falcon-7b's, as in tests/cli/test_cmd_model.py) and an
  ``--out`` folder, so the shipped knowledge is never touched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SKIPPED = {("site", "serve"): "never exits", ("site", "build"): "built and checked by tests/site/test_site.py"}
INTERACTIVE = {".venv/bin/aiinfra tree walk pd-disaggregation --model qwen3-8b"}  # asks on a terminal

# tiiuae/falcon-7b config.json (the same record as tests/cli/test_cmd_model.py)
FALCON_7B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["FalconForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": True, "new_decoder_architecture": False, "num_attention_heads": 71, "num_hidden_layers": 32,
    "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024,
}


def blocks(language: str) -> list[str]:
    """The bodies of the README's fenced blocks in ``language``."""
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def commands() -> list[str]:
    """Each ``.venv/bin/aiinfra ...`` line of the ``sh`` blocks, continuations joined, comments dropped."""
    out = []
    for body in blocks("sh"):
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line.startswith(".venv/bin/aiinfra "):
                out.append(" ".join(line.split()))
    return out


def test_the_readme_has_the_commands_it_documents():
    found = commands()
    assert len(found) >= 30, found  # the README's CLI tour: formulas, models, hardware, calculators, trees, paths
    assert not [c for c in found if "\\" in c or "#" in c]


def _argv(command: str, tmp_path: Path) -> list[str]:
    import shlex

    argv = shlex.split(command)[1:]
    if argv[:2] == ["model", "import"]:
        config = tmp_path / argv[2]
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps(FALCON_7B))
        (tmp_path / "models").mkdir()
        argv += ["--out", str(tmp_path / "models")]
    return argv


def _aiinfra() -> list[str]:
    script = ROOT / ".venv" / "bin" / "aiinfra"
    return [str(script)] if script.exists() else [sys.executable, "-m", "engine"]


@pytest.mark.parametrize("command", commands())
def test_readme_command_exits_0(command, tmp_path):
    argv = _argv(command, tmp_path)
    if tuple(argv[:2]) in SKIPPED:
        pytest.skip(f"{' '.join(argv[:2])}: {SKIPPED[tuple(argv[:2])]}")
    if command in INTERACTIVE:
        pytest.skip("asks for its inputs on a terminal; stdin is closed here")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*_aiinfra(), *argv], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.stdout.strip() or list(tmp_path.iterdir()), command  # every command prints or writes something


def test_readme_python_block_runs(tmp_path, monkeypatch):
    (code,) = blocks("python")
    monkeypatch.chdir(tmp_path)
    names: dict = {"__name__": "readme"}
    exec(compile(code, f"{README}:python", "exec"), names)  # the README's own example, not user input
    # the number its comment states: 79.18 GiB = 85,018,877,624 B (driver-reported, knowledge/hardware/h100-sxm.yaml);
    # x 0.9 = 76,516,989,862; - 8,190,735,360 x 2 B weights - 2 GiB = 57,988,035,494 B;
    # / (8192 tokens x 147,456 B) = 57,988,035,494 / 1,207,959,552 = 48.005 -> 48 requests
    assert names["r"].outputs["max_concurrent_requests"].value == 48
    assert "# 48 requests per H100" in code


def test_the_readmes_counts_are_the_shipped_counts():
    """Issue 28: the README said 22 models when 27 shipped. Every 'N models' / 'N devices' claim matches the records."""
    import re

    text = (ROOT / "README.md").read_text()
    shipped = {"models": len(list((ROOT / "knowledge" / "models").glob("*.yaml"))),
               "devices": len(list((ROOT / "knowledge" / "hardware").glob("*.yaml")))}
    claims = [(int(n), what) for n, what in re.findall(r"\b(\d+) (models|devices)\b", text)]
    assert claims, "the README states how many models ship"
    assert [(n, what) for n, what in claims if n != shipped[what]] == []


# README line (its command, as commands() joins it) -> what its trailing comment says, as the command prints it
STATED = {
    "calc kv-concurrency --model qwen3-next-80b-a3b --device h100-sxm --set tp_size=4 --set context_tokens=32768":
        (r"max_concurrent_requests\s+75\s", "75 requests"),
    "state --model llama-3.1-70b --context 32768 --device b200 --weights nvfp4 --kv-cache fp8": (r"\b23 requests of ", "23 requests"),
    "calc speculative-decoding --set spec_draft_len=5 --set spec_acceptance_rate=0.8 --set draft_cost_ratio=0":
        (r"spec_tokens_per_step\s+3\.689\d*\s", "3.69 tokens per step"),
    "plan --model llama-3.1-405b --device h100-sxm --gpus 16384 --global-batch 128 --seq 131072":
        (r"\n1\s+8\s+16\s+16\s+\d+\s+8\s", "TP 8 CP 16 PP 16 DP 8"),
    "scaling optimum --compute 5.76e23": (r"7\.225e10\s+1\.329e12", "72.2B parameters on 1.33T tokens"),
    "scaling optimum --compute 5.76e23 --law hoffmann2022": (r"3\.219e10", "32.2B"),
    "scaling band --params 7e9 --overhead 10%": (r"5\.262e10 \.\. 3\.976e11 tokens, 7\.517 \.\. 56\.79 tokens per parameter", "5.26e10 .. 3.98e11 tokens"),
    "lab show 2": (r"4\.6875x", "4.69x slower"),
}


@pytest.mark.parametrize("command", sorted(STATED))
def test_the_number_a_readme_comment_states_is_what_the_command_prints(command, capsys):
    """Issue 28: the README's examples a user copies give the answer their comment says (exit 0 alone did not check it)."""
    import shlex

    from engine.cli.main import main

    pattern, said = STATED[command]
    line = next((c for c in commands() if c == f".venv/bin/aiinfra {command}"), None)
    assert line is not None, f"the README no longer has: {command}"
    comment = next(m for m in re.finditer(r"^\.venv/bin/aiinfra .*?(?=^\.venv|^```|\Z)", README.read_text(), re.M | re.S)
                   if " ".join(m.group(0).replace("\\\n", " ").split("#")[0].split()) == line)
    assert said in comment.group(0), f"the README's comment no longer says {said!r}"
    assert main(shlex.split(command)) == 0
    assert re.search(pattern, capsys.readouterr().out), f"{command}: the output does not show {said}"
