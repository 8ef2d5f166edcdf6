"""``aiinfra check`` over scaling-law records (knowledge/scaling_laws/): the shipped records pass; a
points table without a loss column, with both tokens and FLOPs, or an exclusion that leaves fewer
than six points, and a law that names no formula of the root, are problems naming the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from engine.check import integrity
from engine.kb.knowledge import Knowledge

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "knowledge" / "scaling_laws"
# the first seven rows of the shipped points (epoch-research/analyzing-chinchilla data/svg_extracted_data.csv @9225883)
ROWS = yaml.safe_load((SHIPPED / "besiroglu2024.yaml").read_text(encoding="utf-8"))["points"]["rows"][:7]
SMALL = """id: sl:small
name: the first seven shipped points, to test the rules
law: FX430
points:
  columns: {columns}
  source: "knowledge/scaling_laws/besiroglu2024.yaml, its first seven rows"
  exclude: {{rule: highest_loss, count: {count}, source: "test of the rule"}}
  rows:
""" + "".join(f"    - [{n!r}, {c!r}, {loss!r}]\n" for n, c, loss in ROWS) + """source: "knowledge/scaling_laws/besiroglu2024.yaml"
"""


def _root(tmp_path, text: str | None = None, formulas: bool = True) -> Knowledge:
    folder = tmp_path / "knowledge" / "scaling_laws"
    if text is None:
        shutil.copytree(SHIPPED, folder)
    else:
        folder.mkdir(parents=True)
        (folder / "small.yaml").write_text(text, encoding="utf-8")
    if formulas:
        shutil.copytree(ROOT / "formulas", tmp_path / "formulas")
    return Knowledge.load(tmp_path, strict=False)


def _problems(k: Knowledge, ident: str) -> list[tuple[str, str]]:
    return sorted((p.path, p.message) for p in integrity.check(k) if p.id == ident)


def test_shipped_records_pass(tmp_path):
    k = _root(tmp_path)
    assert sorted(k.scaling_laws) == ["sl:besiroglu2024", "sl:hoffmann2022", "sl:hoffmann2022-unrounded"]
    assert [p for p in integrity.check(k) if p.id.startswith("sl:")] == []


def test_a_table_of_seven_rows_less_one_excluded_passes(tmp_path):
    k = _root(tmp_path, SMALL.format(columns="[params, train_flops, loss]", count=1))
    assert _problems(k, "sl:small") == []


def test_an_exclusion_that_leaves_five_rows_fails(tmp_path):
    k = _root(tmp_path, SMALL.format(columns="[params, train_flops, loss]", count=2))
    assert _problems(k, "sl:small") == [("points.exclude.count", "leaves 5 of 7 points (a fit of five constants needs at least 6)")]


def test_columns_without_loss_or_with_tokens_and_flops_fail(tmp_path):
    k = _root(tmp_path, SMALL.format(columns="[params, train_flops, train_tokens]", count=1))
    assert _problems(k, "sl:small") == [
        ("points.columns", "['params', 'train_flops', 'train_tokens'] lacks params or loss (expected params, loss and train_tokens or train_flops)"),
        ("points.columns", "gives both train_tokens and train_flops (expected one of them with params and loss)")]


def test_a_law_that_is_not_a_formula_of_the_root_fails(tmp_path):
    k = _root(tmp_path, SMALL.format(columns="[params, train_flops, loss]", count=1).replace("law: FX430", "law: FX9999"))
    assert _problems(k, "sl:small") == [("law", "refers to FX9999, which is not a formula of this root")]
