"""engine.cli.render: one table in text, Markdown, CSV and JSON.

The expected outputs are written out by hand from the rows below: text columns are as
wide as their widest cell and joined by two spaces, with trailing blanks stripped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.render import display_width, table, to_json

COLUMNS = [("id", "ID"), ("name", "Name"), ("n", "N")]
ROWS = [
    {"id": "F1", "name": "KV bytes", "n": 3},
    {"id": "FX12", "name": "x", "n": None},
]


def test_text():
    # widths: ID max(2, 2, 4) = 4; Name max(4, 8, 1) = 8; N max(1, 1, 0) = 1
    assert table(ROWS, COLUMNS, "text") == "\n".join([
        "ID    Name      N",
        "----  --------  -",
        "F1    KV bytes  3",
        "FX12  x",
    ])


def test_text_without_rows_is_the_header():
    assert table([], COLUMNS, "text") == "ID  Name  N\n--  ----  -"


def test_md():
    assert table(ROWS, COLUMNS, "md") == "\n".join([
        "| ID | Name | N |",
        "|---|---|---|",
        "| F1 | KV bytes | 3 |",
        "| FX12 | x |  |",
    ])


def test_md_escapes_pipes():
    assert table([{"id": "a|b", "name": "", "n": 0}], COLUMNS, "md").splitlines()[-1] == "| a\\|b |  | 0 |"


def test_csv_uses_the_keys_as_header_and_quotes_where_needed():
    rows = ROWS + [{"id": "F8", "name": "KV, per token", "n": ["mha", "mqa"]}]
    assert table(rows, COLUMNS, "csv") == "\n".join([
        "id,name,n",
        "F1,KV bytes,3",
        "FX12,x,",
        'F8,"KV, per token","mha, mqa"',
    ])


def test_json_keeps_values_and_keys():
    rows = ROWS + [{"id": "F8", "name": "KV", "n": ["mha", "mqa"], "extra": "dropped"}]
    text = table(rows, COLUMNS, "json")
    assert json.loads(text) == [
        {"id": "F1", "name": "KV bytes", "n": 3},
        {"id": "FX12", "name": "x", "n": None},
        {"id": "F8", "name": "KV", "n": ["mha", "mqa"]},
    ]
    assert text.startswith('[\n  {\n    "id": "F1",')  # indented by two spaces


def test_a_missing_key_is_an_empty_cell():
    assert table([{"id": "F1"}], COLUMNS, "csv") == "id,name,n\nF1,,"
    assert table([{"id": "F1"}], COLUMNS, "text").splitlines()[-1] == "F1"


def test_lists_are_joined_in_text_cells():
    assert table([{"id": "F8", "name": ("mha", "mqa"), "n": 2}], COLUMNS, "text").splitlines()[-1] == "F8  mha, mqa  2"


def test_to_json_keeps_non_ascii_and_stringifies_the_rest():
    assert to_json({"name_zh": "显存换算", "root": Path("a/b")}) == '{\n  "name_zh": "显存换算",\n  "root": "a/b"\n}'


def test_text_table_aligns_chinese_titles():
    # 推理 is two wide characters, four terminal columns: the next column starts at the same place
    from engine.cli.render import display_width, table

    assert display_width("推理服务") == 8 and display_width("abc") == 3
    out = table([dict(a="推理", b="x"), dict(a="abcd", b="y")], [("a", "a"), ("b", "b")], "text").splitlines()
    assert out[2] == "推理  x" and out[3] == "abcd  y"


# Fitting the terminal: the table below is 8 + 3 + 86 columns wide plus two 2-space gaps = 101.
NOTE = "a" * 40 + " " + "b" * 45  # free text: 86 columns with a space
FIT_COLUMNS = [("id", "id"), ("gb", "GB"), ("note", "note")]
FIT_ROWS = [{"id": "h100-sxm", "gb": 80, "note": NOTE}, {"id": "b200", "gb": 192, "note": "HBM3e"}]
WHOLE = "\n".join(["id        GB   note", "--------  ---  " + "-" * 86, "h100-sxm  80   " + NOTE, "b200      192  HBM3e"])


def test_text_fits_columns_80_by_shortening_the_free_text(monkeypatch):
    # 80 - (8 + 3 + 4) = 65 columns for the note: 64 of its characters and an ellipsis; id and GB whole
    monkeypatch.setenv("COLUMNS", "80")
    assert table(FIT_ROWS, FIT_COLUMNS, "text") == "\n".join([
        "id        GB   note",
        "--------  ---  " + "-" * 65,
        "h100-sxm  80   " + "a" * 40 + " " + "b" * 23 + "…",
        "b200      192  HBM3e",
    ])


def test_numbers_ids_and_headers_are_never_shortened(monkeypatch):
    # 10 columns cannot hold it: the note stops at its floor of 8 (7 characters and the ellipsis), the rest whole
    monkeypatch.setenv("COLUMNS", "10")
    rows = [{"id": "h100-sxm", "gb": 1_234_567_890, "note": NOTE}]
    assert table(rows, FIT_COLUMNS, "text").splitlines()[2] == "h100-sxm  1234567890  aaaaaaa…"


def test_chinese_text_is_cut_by_terminal_columns(monkeypatch):
    # 推理服务与显存 is 14 columns; at COLUMNS 11 the title column gets 11 - (1 + 2) = 8: a fourth wide character would
    # leave no column for the ellipsis, so three (6 columns) and the ellipsis
    monkeypatch.setenv("COLUMNS", "11")
    out = table([{"n": 1, "t": "推理服务与显存"}, {"n": 2, "t": "KV 缓存"}], [("n", "#"), ("t", "title")], "text").splitlines()
    assert out[2] == "1  推理服…" and out[3] == "2  KV 缓存"


def test_a_pipe_without_columns_and_the_other_formats_are_left_whole(monkeypatch):
    import io

    from engine.cli.render import terminal_width

    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width({}, io.StringIO()) is None
    assert table(FIT_ROWS, FIT_COLUMNS, "text") == WHOLE  # stdout is pytest's capture, not a terminal
    monkeypatch.setenv("COLUMNS", "20")
    assert table(FIT_ROWS, FIT_COLUMNS, "text", width=None) == WHOLE  # no limit asked
    assert NOTE in table(FIT_ROWS, FIT_COLUMNS, "md") and NOTE in table(FIT_ROWS, FIT_COLUMNS, "csv")
    assert NOTE in table(FIT_ROWS, FIT_COLUMNS, "json")


def test_a_terminal_gives_its_width(monkeypatch):
    import io
    import os
    import shutil

    from engine.cli.render import terminal_width

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a, **k: os.terminal_size((72, 24)))
    assert terminal_width({}, Terminal()) == 72
    assert terminal_width({"COLUMNS": "80"}, Terminal()) == 80 and terminal_width({"COLUMNS": "80"}, io.StringIO()) == 80
    assert terminal_width({"COLUMNS": "wide"}, io.StringIO()) is None


def test_calc_list_fits_80_columns(monkeypatch, capsys):
    from engine.cli.main import main
    from engine.cli.render import display_width

    assert main(["calc", "list"]) == 0
    assert max(display_width(line) for line in capsys.readouterr().out.splitlines()) > 80  # the titles and outputs are long
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["calc", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(display_width(line) for line in lines) <= 80
    assert any(line.startswith("calc:speculative-decoding  ") for line in lines)  # one-word ids whole


def test_calc_sources_fit_the_terminal_and_explain_prints_them_whole(monkeypatch, capsys):
    """Issue 28: a calculator's long source notes are shortened to $COLUMNS with a line saying so; --explain prints
    them whole. The H100's driver-reported total (79.18 GiB, from vLLM's start-up logs) has a source over 200 characters."""
    from engine.cli.main import main

    argv = ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=8192"]
    monkeypatch.setenv("COLUMNS", "100")
    assert main(argv) == 0
    out = capsys.readouterr().out
    table_lines = out.split("\n\noutput")[0].splitlines()[2:]
    assert table_lines and max(len(line) for line in table_lines) <= 100
    assert "(sources shortened to fit 100 columns: --explain or json prints them whole)" in out
    assert main(argv + ["--explain"]) == 0
    out = capsys.readouterr().out
    assert "empirical-vllm-memory-results.md" in out and "shortened" not in out


def test_hardware_list_fits_100_columns_by_leaving_out_name_and_vendor(monkeypatch, capsys):
    """Issue 28: hardware list was 115 columns wide at COLUMNS=100 (the ids, up to 34 characters, and the numbers are
    never cut); the name and vendor columns go first, every id stays whole."""
    from engine.cli.main import main

    monkeypatch.setenv("COLUMNS", "100")
    assert main(["hardware", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert any(line.startswith("rtx-pro-6000-blackwell-workstation ") for line in lines)
    assert lines[0].split()[:2] == ["id", "per"] or lines[0].split()[:2] == ["id", "memory"]
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["hardware", "list"]) == 0
    assert capsys.readouterr().out.split()[:3] == ["id", "vendor", "name"]  # wide enough: every column


def test_a_cell_that_starts_with_a_number_and_goes_on_in_words_is_free_text(monkeypatch):
    """'192x Huawei Kunpeng (Arm)' and '64–128 卡训练集群' start with a digit; before, any cell did that counted as a number
    and was never shortened (system list was 189 columns, arch list 144, at COLUMNS=80). A number with its units stays whole."""
    from engine.cli.render import _numeric

    assert [_numeric(c) for c in ("1.133e11", "105.5 GiB = 113.3 GB", "2.56 ktokens/s", "8x b200", "12 288", "3 µs")] == [True] * 6
    assert [_numeric(c) for c in ("192x Huawei Kunpeng (Arm)", "64–128 卡训练集群", "2x400Gb/s (2 ports each)", "exact", "-")] == [False] * 5
    monkeypatch.setenv("COLUMNS", "30")
    rows = [{"id": "gb200-nvl72", "cpus": "36x NVIDIA Grace (72 Arm Neoverse V2 cores each)", "mem": "13.4 TB = 12.19 TiB"}]
    assert table(rows, [("id", "id"), ("cpus", "CPUs"), ("mem", "memory")], "text").splitlines()[2] == "gb200-nvl72  36x NVI…  13.4 TB = 12.19 TiB"


LISTS = [["formula", "list"], ["model", "list"], ["hardware", "list"], ["hardware", "audit"], ["arch", "list"], ["system", "list"],
         ["failures", "list"], ["failures", "show", "llama3-405b"], ["hardware", "show", "h100-sxm"], ["calc", "list"], ["tree", "list"],
         ["path", "list"], ["lab", "list"],
         ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h200", "--set", "context_tokens=8192"],
         ["calc", "training-memory", "--model", "llama-3.1-70b", "--device", "h100-sxm", "--set", "tp_size=8", "--set", "pp_size=4",
          "--set", "dp_size=32", "--set", "zero_stage=1", "--set", "recompute=selective", "--set", "seq_len=4096", "--set", "micro_batch=1"]]


@pytest.mark.parametrize("argv", LISTS, ids=[" ".join(a[:2]) for a in LISTS])
def test_every_table_of_the_listing_commands_fits_80_columns(argv, monkeypatch, capsys):
    """Issue 28: at COLUMNS=80 formula list was 96 columns, model list 94, hardware list 95, hardware audit 112, arch list 144,
    system list 189, failures list 99, calc's outputs 81-82, hardware show's peaks 83: after the free text is shortened, the
    columns each command names go (section, hidden, vendor, ...), every id whole. Each table: its header, the dashes and
    the rows up to the next blank line."""
    import re

    from engine.cli.main import main
    from engine.cli.render import display_width

    monkeypatch.setenv("COLUMNS", "80")
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    seps = [i for i, line in enumerate(lines) if i and re.fullmatch(r"-+(  -+)*", line)]
    assert seps
    for i in seps:
        block = [lines[i - 1]] + [line for line in lines[i:][: next((k for k, x in enumerate(lines[i:]) if not x.strip()), None)]]
        assert max(map(display_width, block)) <= 80, "\n".join(block[:4])


@pytest.mark.parametrize("argv", [
    ["forward", "--model", "deepseek-v3", "--tokens", "1024"],
    ["collective", "ring", "--op", "allreduce", "--ranks", "8", "--bytes", "1MiB", "--bandwidth", "50GB/s"],
    ["collective", "ring", "--op", "allreduce", "--model", "llama-3.1-70b", "--tokens", "4096", "--tp", "8", "--bandwidth", "450GB/s"],
    # a calculator's assumptions (prose under its tables) and its --help (descriptions of every input)
    ["calc", "kv-concurrency", "--model", "qwen3-8b", "--device", "h100-sxm", "--set", "context_tokens=32768"],
    ["calc", "kv-concurrency", "--help"],
    ["kv", "pages", "create:a:17", "fork:a:b", "fork:a:c", "append:a:1", "append:b:16", "cancel:c"],
])
def test_the_ledgers_fit_an_80_column_terminal(argv):
    """Issue 28: forward's operator table keeps its leading columns, collective's rounds their first transfers, and the
    text around them wraps; JSON, CSV and Markdown keep everything."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    p = subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300, cwd=root,
                       env={**os.environ, "COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    wide = [line for line in p.stdout.splitlines() if display_width(line) > 80]
    assert not wide, wide[:3]
    whole = subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, timeout=300, cwd=root,
                           env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert max(map(display_width, whole.stdout.splitlines())) > 80  # on a pipe without $COLUMNS nothing is cut
