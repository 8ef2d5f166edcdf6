"""engine.cli.render: one table in text, Markdown, CSV and JSON.

The expected outputs are written out by hand from the rows below: text columns are as
wide as their widest cell and joined by two spaces, with trailing blanks stripped.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli.render import table, to_json

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
