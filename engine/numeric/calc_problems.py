"""Integrity of the calculator records (rule 8 of engine.check.integrity): names, defaults,
reachable formulas, failure boundaries, refuse rules and the worked examples."""

from __future__ import annotations

from pathlib import Path

from engine.core.errors import InputError, Problem
from engine.numeric.calc_conditions import condition_function, field_place, record_error
from engine.numeric.calc_records import FORMULA_NUMBER, Calculator, Graph, graph_of
from engine.numeric.calc_run import run
from engine.numeric.evaluate import check_domain


def problems(k) -> list[Problem]:
    """Integrity of every calculator of a loaded root (rule 8 of engine.check.integrity)."""
    if not k.calculators:
        return []
    from engine.core.errors import AiinfraError, ExprError, UnitError
    from engine.core.units import parse_quantity
    from engine.numeric import compiled

    try:
        module = compiled.for_knowledge(k)
    except AiinfraError as exc:  # pragma: no cover - reported by the formula rules
        return [Problem("", "", "", f"cannot compile the formulas: {exc}")]
    graph = Graph(module)
    out = []
    for cid, rec in sorted(k.calculators.items()):
        place = k.places.get(cid, "")
        calc = Calculator.from_record(rec)
        if place and Path(place.rsplit(":", 1)[0]).stem != calc.name:
            out.append(Problem(place, cid, "id", f"the file should be named {calc.name}.yaml"))
        broken = graph.unproduced_error(calc, place, refused_first=False)  # then: a refused formula its chain needs (#24)
        out += record_error(k.root, calc, broken).problems if broken is not None else []
        for name, spec in calc.inputs.items():
            if not graph.known(name):
                out.append(Problem(place, cid, f"inputs.{name}", "is not a formula symbol"))
                continue
            default = spec.get("default")
            if default is None:
                continue
            sym = graph.spec(name)
            if sym["values"]:
                if str(default) not in sym["values"]:
                    out.append(Problem(place, cid, f"inputs.{name}.default", f"{default!r} is not one of {', '.join(sym['values'])}"))
                continue
            try:
                check_domain(name, parse_quantity(str(default), sym["unit"]), sym)
            except (UnitError, InputError) as exc:
                out.append(Problem(place, cid, f"inputs.{name}.default", str(exc)))
        fids, _ = graph.reach(calc)
        for fid in fids:
            if not FORMULA_NUMBER.match(fid):
                out.append(Problem(place, cid, "", f"reaches {fid}, which is neither an Appendix B number (F1..F22) nor in the extension range (FX..)"))
        for field_, table in (("sections", k.sections), ("chapters", k.chapters)):
            for j, ident in enumerate(getattr(calc, field_)):
                if ident not in table:
                    out.append(Problem(place, cid, f"{field_}[{j}]", f"refers to {ident}, which is not defined"))
        for j, fb in enumerate(calc.failure_boundaries):
            try:
                used, _ = condition_function(fb["when"], graph.units)
            except ExprError as exc:
                out.append(Problem(field_place(k.root, place.split(":", 1)[0], ["failure_boundaries", j, "when"]), cid, f"failure_boundaries[{j}].when", exc.reason))
            if fb.get("refuse") and not graph.known(fb["refuse"]):
                out.append(Problem(place, cid, f"failure_boundaries[{j}].refuse", f"{fb['refuse']} is not a formula symbol"))
        for j, ex in enumerate(rec.get("examples", ())):
            out += _example_problems(place, cid, j, calc, module, ex)
        for j, rule in enumerate(calc.refuse):
            for key, values in rule["when"].items():
                sym = graph.spec(key) if graph.known(key) else None
                if sym is None or not sym["values"]:
                    out.append(Problem(place, cid, f"refuse[{j}].when.{key}", "is not a categorical formula symbol"))
                    continue
                for v in [values] if isinstance(values, str) else values:
                    if v not in sym["values"]:
                        out.append(Problem(place, cid, f"refuse[{j}].when.{key}", f"{v!r} is not one of {', '.join(sym['values'])}"))
    return out


def _example_problems(place: str, cid: str, j: int, calc: Calculator, module, ex: dict) -> list[Problem]:
    """A worked example of a calculator: it runs, and every expected output matches within rel_tol."""
    import math

    from engine.core.errors import AiinfraError

    graph = graph_of(module)
    if graph.unproduced(calc) or graph.needs_refused(calc, place):
        return []  # reported above: an output no formula produces, a refused formula its chain needs
    try:
        result = run(calc, module, dict(ex["set"]))
    except AiinfraError as exc:
        return [Problem(place, cid, f"examples[{j}]", f"does not run: {exc}")]
    out = []
    tol = ex.get("rel_tol", 1e-6)
    for name, want in ex["expect"].items():
        got = result.outputs.get(name)
        if got is None:
            out.append(Problem(place, cid, f"examples[{j}].expect.{name}", "is not an output of this run"))
        elif not math.isclose(got.value, want, rel_tol=tol, abs_tol=0 if want else 1e-12):
            out.append(Problem(place, cid, f"examples[{j}].expect.{name}", f"expected {want:.10g}, the chain gives {got.value:.10g} (rel_tol {tol:g})"))
    return out
