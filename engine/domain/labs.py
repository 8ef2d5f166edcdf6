"""The book's labs (knowledge/labs/lab-NN.yaml, kind ``lab``) and the expectation each computes.

A lab record names its inputs (value, unit, source) and its computation: a check of
``engine.domain.lab_checks`` (a boolean or categorical criterion) and/or formulas evaluated in
order, each reading the inputs and the values computed before it. :func:`expectation` runs it;
:func:`problems` holds the records to their references and to a computation that runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.core.errors import AiinfraError, InputError, Problem


@dataclass(frozen=True)
class Output:
    formula: str
    name: str  # the formula's name
    symbol: str
    value: float
    unit: str

    def to_json(self) -> dict:
        return {"formula": self.formula, "name": self.name, "symbol": self.symbol, "value": self.value, "unit": self.unit}


@dataclass(frozen=True)
class Expectation:
    lab: str
    check: object = None  # lab_checks.CheckResult or None
    outputs: list[Output] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"check": self.check.to_json() if self.check else None, "outputs": [o.to_json() for o in self.outputs]}


def number_of(text: str) -> int | None:
    """``2``, ``lab:2``, ``lab-02`` or ``02`` -> 2; None when ``text`` names no lab number."""
    name = str(text).strip().lower()
    for prefix in ("lab:", "lab-", "lab"):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return int(name) if name.isdigit() and int(name) > 0 else None


def find(table: dict, text: str) -> dict:
    """The lab named ``text`` (``2``, ``lab:2``, ``lab-02``); InputError naming the known ones."""
    n = number_of(text)
    if n is None:
        raise InputError("N", f"expected a lab number such as 2 or lab:2, got {text!r}")
    if f"lab:{n}" not in table:
        known = ", ".join(str(r["number"]) for r in sorted(table.values(), key=lambda r: r["number"]))
        raise InputError("N", f"no lab {text!r} (known: {known or 'none'})")
    return table[f"lab:{n}"]


def ordered(table: dict) -> list[dict]:
    return sorted(table.values(), key=lambda r: r["number"])


def _evaluator(module):
    from engine.numeric.evaluate import evaluate

    def value(fid: str, **given) -> float:
        meta = module.FORMULAS[fid]
        return evaluate(meta, module, given).outputs[meta["output"]["symbol"]].value

    return value


def expectation(record: dict, module) -> Expectation:
    """The lab's computed expectation from its own inputs (InputError naming the input when one is wrong)."""
    from engine.domain.lab_checks import CHECKS
    from engine.numeric.evaluate import evaluate

    compute = record.get("compute") or {}
    pool = {i["name"]: i["value"] for i in record.get("inputs", [])}
    result = None
    if compute.get("check"):
        result = CHECKS[compute["check"]](pool, _evaluator(module))
        pool.update(result.values)
    outputs = []
    for fid in compute.get("formulas", []):
        meta = module.FORMULAS.get(fid)
        if meta is None:
            raise InputError("compute.formulas", f"no formula {fid}")
        given = {name: pool[name] for name in meta["symbols"] if name in pool}
        try:
            r = evaluate(meta, module, given)
        except AiinfraError as e:
            raise InputError(f"compute.formulas.{fid}", str(e)) from None
        symbol = meta["output"]["symbol"]
        out = r.outputs[symbol]
        pool[symbol] = out.value
        outputs.append(Output(fid, meta["name"], symbol, out.value, out.unit))
    return Expectation(record["id"], result, outputs)


def problems(k) -> list[Problem]:
    """Every lab's references exist (chapters, sections, formulas, calculators, trees, labs) and its
    computation runs on its own inputs."""
    from pathlib import Path

    from engine.numeric import compiled

    trees = {f"tree:{p.stem}" for p in (Path(k.root) / "decision_trees").glob("*.yaml")}
    module = None
    out: list[Problem] = []
    for ident, r in sorted(getattr(k, "labs", {}).items()):
        place = k.places.get(ident, "")

        def bad(path: str, message: str) -> None:
            out.append(Problem(place, ident, path, message))

        if ident != f"lab:{r['number']}":
            bad("number", f"{r['number']} does not match the id {ident}")
        for i, c in enumerate(r["chapters"]):
            if k.chapters and c not in k.chapters:
                bad(f"chapters[{i}]", f"refers to {c}, which is not a chapter")
        for i, s in enumerate(r.get("sections", [])):
            if k.sections and s not in k.sections:
                bad(f"sections[{i}]", f"refers to {s}, which is not a section")
        links = r.get("links", {})
        wanted = [("compute.formulas", f, f in k.formulas) for f in (r.get("compute") or {}).get("formulas", [])]
        wanted += [("links.formulas", f, f in k.formulas) for f in links.get("formulas", [])]
        wanted += [("links.calculators", c, c in k.calculators) for c in links.get("calculators", [])]
        wanted += [("links.trees", t, t in trees) for t in links.get("trees", [])]
        wanted += [("links.labs", lab, lab in k.labs) for lab in links.get("labs", [])]
        for path, target, ok in wanted:
            if not ok:
                bad(path, f"refers to {target}, which does not exist")
        if r.get("compute") and all(ok for _, _, ok in wanted if _.startswith("compute")):
            module = module or compiled.for_knowledge(k)  # the formulas that load (a refused one is its own problem)
            try:
                expectation(r, module)
            except AiinfraError as e:
                bad("compute", f"the computation does not run on the lab's inputs: {e}")
    return sorted(out)


def chapters_of(record: dict) -> list[str]:
    """The lab's chapters and the chapters of its sections, in the record's order."""
    seen = list(record["chapters"])
    for s in record.get("sections", []):
        ch = f"{s.split(':', 1)[0]}:ch{s.split(':', 1)[1].split('.', 1)[0]}"
        if ch not in seen:
            seen.append(ch)
    return seen


def labs_of_chapter(table: dict, chapter: str) -> list[str]:
    """Ids of the labs that read ``chapter`` (as a chapter or through one of their sections)."""
    return [r["id"] for r in ordered(table) if chapter in chapters_of(r)]
