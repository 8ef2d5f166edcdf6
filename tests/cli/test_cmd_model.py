"""``aiinfra model list|show|import``: formats, atomic writes and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from engine.cli.main import main
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]

# tiiuae/falcon-7b config.json: multi-query attention, 32 layers, hidden 4544, 71 heads
FALCON_7B = {
    "alibi": False, "apply_residual_connection_post_layernorm": False, "architectures": ["FalconForCausalLM"],
    "attention_dropout": 0.0, "bias": False, "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0,
    "hidden_size": 4544, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "falcon",
    "multi_query": True, "new_decoder_architecture": False, "num_attention_heads": 71, "num_hidden_layers": 32,
    "parallel_attn": True, "torch_dtype": "bfloat16", "transformers_version": "4.27.4", "use_cache": True, "vocab_size": 65024,
}


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def config_file(tmp_path) -> Path:
    folder = tmp_path / "Falcon-7B"
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(FALCON_7B))
    return path


@pytest.fixture
def out_dir(tmp_path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


# ----------------------------------------------------------------------------- list and show
def test_list_text_names_every_shipped_model(capsys):
    code, out, _ = run(["model", "list"], capsys)
    assert code == 0
    assert out.splitlines()[0].split() == ["id", "family", "attention", "layers", "hidden", "parameters", "active"]
    names = {line.split()[0] for line in out.splitlines()[2:]}
    assert names == {p.stem for p in (ROOT / "knowledge" / "models").glob("*.yaml")}


def test_list_json_has_exact_counts(capsys):
    code, out, _ = run(["model", "list", "--format", "json"], capsys)
    rows = {r["id"]: r for r in json.loads(out)}
    # Qwen/Qwen3-235B-A22B: Hub safetensors total 235093634560; model card 22B activated,
    # FX18 example: 94 x (71303168 + 8448 + 151519232) + 1244659712 + 4096 = 22190763520
    assert (rows["qwen3-235b-a22b"]["parameters"], rows["qwen3-235b-a22b"]["active"]) == (235093634560, 22190763520)
    assert rows["qwen3-235b-a22b"]["family"] == "moe" and rows["deepseek-v3"]["attention"] == "mla"


def test_list_csv_and_md(capsys):
    _, csv_out, _ = run(["model", "list", "--format", "csv"], capsys)
    assert csv_out.splitlines()[0] == "id,family,attention,layers,hidden,parameters,active,name,matches"
    # meta-llama/Llama-3.1-8B: Hub safetensors total 8030261248
    assert "llama-3.1-8b,dense,gqa,32,4096,8030261248,8030261248,Llama-3.1-8B,checkpoint" in csv_out.splitlines()
    _, md_out, _ = run(["model", "list", "--format", "md"], capsys)
    assert md_out.startswith("| id | family | attention | layers | hidden | parameters | active |")


def test_show_json_carries_the_record_and_what_is_computed(capsys):
    code, out, _ = run(["model", "show", "model:qwen3-8b", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["source"]["revision"] == "b968826d9c46dd6066d109eabc6255188de91218"
    # Hub safetensors total 8190735360; KV: 2 x 36 x 8 x 128 x 2 B = 147456
    assert data["computed"]["total"] == 8190735360 and data["computed"]["reproduces_reference"] is True
    assert data["computed"]["kv_bytes_per_token_bf16"] == 147456
    assert data["computed"]["formulas"] == ["FX10", "FX12", "FX14", "FX11", "FX13", "FX17", "FX18"]


def test_show_text_md_csv(capsys):
    _, text, _ = run(["model", "show", "deepseek-v3"], capsys)
    assert text.startswith("model:deepseek-v3 · DeepSeek-V3")
    assert "the architecture reproduces it" in text and "router_bias" in text
    _, md, _ = run(["model", "show", "gemma-3-27b-it", "--format", "md"], capsys)
    assert md.startswith("# model:gemma-3-27b-it")
    _, csv_out, _ = run(["model", "show", "opt-13b", "--format", "csv"], capsys)
    lines = csv_out.splitlines()
    assert lines[0] == "field,value" and "derived.position,learned" in lines
    assert "parameters.matches,paper_rounded" in lines


# ----------------------------------------------------------------------------- import
def test_import_writes_a_record_that_loads(config_file, out_dir, capsys):
    code, out, err = run(["model", "import", str(config_file), "--repo", "tiiuae/falcon-7b", "--out", str(out_dir)], capsys)
    assert code == 0, err
    target = out_dir / "falcon-7b.yaml"
    assert out.startswith(f"wrote {target}")
    assert [p.name for p in out_dir.iterdir()] == ["falcon-7b.yaml"]  # no temporary file left behind
    rec = yaml.safe_load(target.read_text())
    assert rec["id"] == "model:falcon-7b" and rec["derived"]["attention"] == "mqa"
    assert rec["parameters"]["matches"] == "computed"
    root = out_dir.parent / "root"
    (root / "knowledge" / "models").mkdir(parents=True)
    shutil.copy(target, root / "knowledge" / "models")
    assert set(Knowledge.load(root).models) == {"model:falcon-7b"}
    code, out, _ = run(["model", "list", "--root", str(root), "--format", "json"], capsys)  # shipped formulas count it
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["falcon-7b"]


def test_import_with_an_id_and_a_matching_total(out_dir, capsys, tmp_path):
    shipped = yaml.safe_load((ROOT / "knowledge" / "models" / "qwen3-8b.yaml").read_text())
    path = tmp_path / "qwen.json"
    path.write_text(json.dumps(shipped["config"]))
    # Qwen/Qwen3-8B: Hub safetensors total 8190735360
    argv = ["model", "import", str(path), "--id", "my-qwen", "--params", "8190735360", "--out", str(out_dir)]
    code, out, _ = run(argv, capsys)
    assert code == 0
    assert out.splitlines()[1] == "model:my-qwen: dense, gqa, 36 layers, 8190735360 parameters (given)"
    code, out, err = run(argv, capsys)  # issue 28: the same id again is refused without --force, the file untouched
    assert code == 2 and out == ""
    assert err.startswith("aiinfra: error: --id: model 'my-qwen' already has a record (") and "give --force to replace it" in err
    code, out, _ = run([*argv, "--force"], capsys)
    assert code == 0 and out.startswith("replaced ")


def test_a_failed_write_leaves_the_old_file(config_file, out_dir, capsys, monkeypatch):
    target = out_dir / "falcon-7b.yaml"
    target.write_text("old\n")

    def refuse(*_):
        raise OSError("disk full")

    monkeypatch.setattr("engine.cli.common.os.replace", refuse)
    code, _, err = run(["model", "import", str(config_file), "--out", str(out_dir), "--force"], capsys)
    assert code != 0 and "disk full" in err
    assert target.read_text() == "old\n"
    assert [p.name for p in out_dir.iterdir()] == ["falcon-7b.yaml"]


# ----------------------------------------------------------------------------- bad input
def _bad(tmp_path: Path) -> dict:
    not_json = tmp_path / "broken.json"
    not_json.write_text("{not json")
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps(dict(FALCON_7B, attention_sink_size=4)))
    good = tmp_path / "falcon.json"
    good.write_text(json.dumps(FALCON_7B))
    weird = tmp_path / "Weird Name!.json"
    weird.write_text(json.dumps(FALCON_7B))
    return {
        "missing file": (["model", "import", str(tmp_path / "nope.json")], "aiinfra: error: CONFIG_JSON: "),
        "folder": (["model", "import", str(tmp_path)], "aiinfra: error: CONFIG_JSON: "),
        "not json": (["model", "import", str(not_json)], "aiinfra: error: CONFIG_JSON: "),
        "json array": (["model", "import", str(array)], "aiinfra: error: CONFIG_JSON: "),
        "unknown key": (["model", "import", str(unknown), "--out", str(tmp_path)], "aiinfra: error: attention_sink_size: is not a known config.json key"),
        "wrong total": (["model", "import", str(good), "--params", "7000000000", "--out", str(tmp_path)], "aiinfra: error: --params: the architecture gives "),
        "zero total": (["model", "import", str(good), "--params", "0", "--out", str(tmp_path)], "aiinfra: error: --params: expected a whole number >= 1"),
        "bad id": (["model", "import", str(good), "--id", "Bad Id", "--out", str(tmp_path)], "aiinfra: error: --id: "),
        "id from odd name": (["model", "import", str(weird), "--out", str(tmp_path)], "aiinfra: error: --id: cannot make a model id"),
        "out missing": (["model", "import", str(good), "--out", str(tmp_path / "nowhere")], "aiinfra: error: --out: "),
        "params not a number": (["model", "import", str(good), "--params", "8B"], "aiinfra model import: error: argument --params"),
        "show unknown": (["model", "show", "gpt-5"], "aiinfra: error: ID: no model 'gpt-5' (did you mean gpt-3-175b? known: deepseek-r1-distill-llama-70b, "),
        "show without id": (["model", "show"], "aiinfra model show: error: "),
        "no action": (["model"], "aiinfra model: error: "),
    }


BAD_NAMES = ["missing file", "folder", "not json", "json array", "unknown key", "wrong total", "zero total", "bad id",
             "id from odd name", "out missing", "params not a number", "show unknown", "show without id", "no action"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(name, tmp_path, capsys):
    argv, start = _bad(tmp_path)[name]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run(argv, capsys)
    assert code == 2, (code, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith(start), err
    assert "Traceback" not in err + out
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ------------------------------------------------------------------ hostile config.json (issue 16)
EXACT = 9007199254740992  # 2**53


def _import_text(tmp_path: Path, text: str, capsys) -> tuple[int, str, str]:
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    return run(["model", "import", str(path), "--id", "hostile", "--out", str(tmp_path)], capsys)


def _refused(tmp_path: Path, text: str, capsys) -> str:
    """The one stderr line of an import that must exit 2 and write nothing."""
    code, out, err = _import_text(tmp_path, text, capsys)
    assert code == 2, (code, out, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "hostile.yaml").exists()
    return err.rstrip("\n")


def _with(**changes) -> str:
    return json.dumps(dict(FALCON_7B, **changes))


def test_import_refuses_a_key_given_twice(tmp_path, capsys):
    # json.loads would keep the last model_type silently
    text = '{"model_type": "falcon", ' + _with()[1:]
    path = tmp_path / "config.json"
    assert _refused(tmp_path, text, capsys) == f"aiinfra: error: model_type: is given twice in '{path}' (expected each key once)"


def test_import_refuses_a_key_given_twice_inside_a_nested_object(tmp_path, capsys):
    text = _with()[:-1] + ', "rope_scaling": {"type": "linear", "type": "dynamic"}}'
    path = tmp_path / "config.json"
    assert _refused(tmp_path, text, capsys) == f"aiinfra: error: type: is given twice in '{path}' (expected each key once)"


def test_import_refuses_100000_nested_lists(tmp_path, capsys):
    text = _with()[:-1] + ', "rope_scaling": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = tmp_path / "config.json"
    assert _refused(tmp_path, text, capsys) == f"aiinfra: error: CONFIG_JSON: '{path}' is nested too deeply (expected at most 32 levels)"


def test_import_refuses_nesting_past_32_levels(tmp_path, capsys):
    # the object is level 1, so 32 lists inside it reach level 33
    text = _with()[:-1] + ', "rope_scaling": ' + "[" * 32 + "]" * 32 + "}"
    path = tmp_path / "config.json"
    assert _refused(tmp_path, text, capsys) == f"aiinfra: error: CONFIG_JSON: '{path}' is nested more than 32 levels deep"


def test_import_refuses_a_size_of_2_to_the_53_plus_1(tmp_path, capsys):
    # 2**53 + 1 = 9007199254740993 is the first integer a float cannot hold; before, an AssertionError (exit 70)
    assert _refused(tmp_path, _with(vocab_size=EXACT + 1), capsys) == (
        "aiinfra: error: vocab_size: 9007199254740993 is past 2^53 = 9007199254740992, "
        "where counts are no longer exact (expected a whole number up to 2^53)")


def test_import_names_the_nested_key_of_a_number_past_2_to_the_53(tmp_path, capsys):
    text = _with()[:-1] + ', "rope_scaling": {"factors": [1, ' + str(EXACT + 1) + "]}}"
    assert _refused(tmp_path, text, capsys).startswith("aiinfra: error: rope_scaling.factors[1]: 9007199254740993 is past 2^53")


def test_import_refuses_a_count_past_2_to_the_53(tmp_path, capsys):
    # every size fits, but the tied embedding vocab x hidden = 2**43 x 4544 = 71 x 2**49
    # = 39969446692913152 ~ 3.997e16 is past 2**53 ~ 9.007e15
    assert _refused(tmp_path, _with(vocab_size=2**43), capsys) == (
        "aiinfra: error: FX14: gives 3.997e+16, past 2^53 = 9007199254740992 where counts are no longer exact: check the config's sizes")


def test_import_refuses_a_5000_digit_number_by_name(tmp_path, capsys):
    text = _with(vocab_size=1).replace('"vocab_size": 1', '"vocab_size": ' + "9" * 5000)
    assert _refused(tmp_path, text, capsys) == (
        "aiinfra: error: vocab_size: is a 5000-digit number, past 2^53 = 9007199254740992 (expected a whole number up to 2^53)")


def test_import_refuses_a_config_over_4_mib(tmp_path, capsys):
    text = _with()[:-1] + ', "padding": "' + "x" * (4 * 1024 * 1024) + '"}'
    path = tmp_path / "config.json"
    assert _refused(tmp_path, text, capsys) == f"aiinfra: error: CONFIG_JSON: '{path}' is larger than 4 MiB, the most read from one file"


def _main_in_thread(argv, timeout: float = 30.0):
    import threading

    box: list = []
    worker = threading.Thread(target=lambda: box.append(main(argv)), daemon=True)
    worker.start()
    worker.join(timeout)
    return box[0] if box else None


def test_import_refuses_a_fifo_without_hanging(tmp_path, capsys):
    import os

    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    code = _main_in_thread(["model", "import", str(fifo), "--id", "hostile", "--out", str(tmp_path)])
    if code is None:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    _, err = capsys.readouterr()
    assert (code, err) == (2, f"aiinfra: error: CONFIG_JSON: '{fifo}' is a FIFO, not a regular file\n")


def test_import_refuses_dev_zero(tmp_path, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    code = _main_in_thread(["model", "import", "/dev/zero", "--id", "hostile", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert (code, err) == (2, "aiinfra: error: CONFIG_JSON: '/dev/zero' is a character device, not a regular file\n")
