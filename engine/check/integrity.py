"""Integrity rules over a loaded knowledge root, all reported together.

1. every reference resolves (chapters, sections, concepts, formulas' sections, path steps);
2. each cross-cutting concept is defined by exactly one section and only referenced elsewhere;
3. chapter dependencies are acyclic (a cycle is printed as ``a --> b --> a``);
4. reading paths follow the dependencies: a step whose prerequisite comes later in the
   path is a backward step, unless that later step is marked ``revisit: true``;
5. every worked example of every formula reproduces its expected value;
6. every formula passes the unit check (done while loading; its problems are included);
7. hardware records agree with themselves (a sparse peak about twice its dense one, link
   directions, measured ratios for precisions the device has);
8. every calculator's outputs are produced by a formula, its inputs are formula symbols,
   the formulas it reaches are Appendix B or extension numbers, its sections and chapters
   resolve, its defaults read in their units and its failure boundaries parse.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from engine.core.errors import AiinfraError, Problem

if TYPE_CHECKING:
    from engine.kb.knowledge import Knowledge


def check(k: Knowledge, measured=None) -> list[Problem]:
    """Every rule over ``k``; ``measured``: the measurement tables' problems already under way
    (:func:`measurements_meanwhile`), else they are read here."""
    problems = list(k.problems)
    graph = k.graph()
    problems += _dangling(k, graph)
    problems += _concepts(k)
    problems += _cycles(k, graph)
    problems += _paths(k, graph)
    problems += _examples(k)
    problems += _hardware(k)
    problems += _models(k)
    problems += _operators(k)
    problems += _calculators(k)
    problems += _archs(k)
    problems += _trees(k)
    problems += _systems(k)
    problems += _failure_taxonomies(k)
    problems += _scaling_laws(k)
    problems += _labs(k)
    problems += _measurements(k) if measured is None else _measured(measured)
    return sorted(set(problems))


def measurements_meanwhile(root):
    """The measurement rule for ``root``, started in a forked worker (engine.core.forked.forked_call):
    it reads only the root's files, so a cold check reads the tables (a third of its time) while it
    loads and checks the rest. Use as a context manager and pass it to :func:`check`."""
    from engine.core.forked import forked_call

    def work():
        from engine.core import cache
        from engine.domain import measurements

        before = len(cache.repaired)
        return measurements.load(root)[1], cache.repaired[before:]

    return forked_call(work)


def _measured(measured) -> list[Problem]:
    from engine.core import cache

    found, repaired = measured.result()
    if measured.forked:  # the cache files the worker repaired, for check's warning
        cache.repaired.extend(repaired)
    return [Problem(*p) for p in found]


# ---------------------------------------------------------------------------- the cached outcome

# what a check reads: the root's knowledge folders (every file) and the engine's own code and data
CHECKED_FOLDERS = ("formulas", "knowledge", "decision_trees")
_ENGINE_SUFFIXES = (".py", ".json", ".yaml")


def outcome_key(root) -> str | None:
    """A key over everything a check reads: every file of the root's knowledge folders and of
    the engine (path and bytes), and the Python version; None when a file cannot be read."""
    import os
    import sys

    import engine
    from engine.kb.loadcache import checksum

    here = os.path.dirname(os.path.abspath(engine.__file__))
    crc, adler = checksum(sys.version.encode() + b"\0" + libraries_stamp().encode())
    named = _files(here, os.path.dirname(here), _ENGINE_SUFFIXES)
    for folder in CHECKED_FOLDERS:
        named += _files(os.path.join(os.fspath(root), folder), os.fspath(root), None)
    for name, path in named:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        crc, adler = checksum(name.encode() + b"\0" + data + b"\0", crc, adler)
    return f"{crc:08x}{adler:08x}{len(named):04x}"


# the libraries whose behaviour a check's result depends on (YAML reading, schema checks,
# symbolic proofs, the graph, the NumPy twins), by import name and distribution name
LIBRARIES = (("yaml", "pyyaml"), ("jsonschema", "jsonschema"), ("sympy", "sympy"), ("networkx", "networkx"), ("numpy", "numpy"))


def libraries_stamp() -> str:
    """Where each library is and which version is installed, read without importing it: its
    package's path and the ``<name>-<version>.dist-info`` folders beside it (about 1 ms, where
    importlib.metadata takes about 60), so an upgrade of any of them runs the check afresh."""
    import importlib.util
    import os

    parts = []
    for module, dist in LIBRARIES:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if not origin:
            parts.append(f"{module}:absent")
            continue
        site = os.path.dirname(os.path.dirname(origin))
        try:
            infos = sorted(n for n in os.listdir(site) if n.lower().replace("_", "-").startswith(dist + "-") and n.endswith((".dist-info", ".egg-info")))
            st = os.stat(origin)
        except OSError:
            infos, st = [], None
        parts.append(f"{module}:{origin}:{','.join(infos)}:{st.st_size if st else 0}:{st.st_mtime_ns if st else 0}")
    return "|".join(parts)


def _files(base: str, relative_to: str, suffixes) -> list[tuple[str, str]]:
    """(name relative to ``relative_to``, path) of the regular files under ``base``, sorted."""
    import os
    import stat

    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for n in sorted(filenames):
            path = os.path.join(dirpath, n)
            if suffixes is not None and not n.endswith(suffixes):
                continue
            try:
                regular = stat.S_ISREG(os.stat(path).st_mode)
            except OSError:
                regular = False
            out.append((os.path.relpath(path, relative_to) + ("" if regular else "\0special"), path if regular else os.devnull))
    return out


def cached_outcome(root, run):
    """``run()``'s (counts, problems) for ``root``, replayed from the private cache while nothing
    a check reads has changed (``outcome_key``); a fresh run is stored for the next."""
    from engine.core import cache

    key = outcome_key(root)
    name = f"check_{key}.json"
    stored = cache.read_json(name) if key else None
    if isinstance(stored, dict) and isinstance(stored.get("counts"), dict) and isinstance(stored.get("problems"), list):
        try:
            return stored["counts"], [Problem(*p) for p in stored["problems"]]
        except TypeError:
            pass
    counts, problems = run()
    if key and cache.write_json(name, {"counts": counts, "problems": [list(p) for p in problems]}):
        cache.prune("check_", ".json", keep=8)
    return counts, problems


def _models(k: Knowledge) -> list[Problem]:
    """Model records: file named for the id; the architecture reproduces the recorded total (as ``model show`` says)."""
    if not getattr(k, "models", None):
        return []
    from engine.domain import models

    return models.problems(k)


def _operators(k: Knowledge) -> list[Problem]:
    """Operator templates of the forward ledger: every expression parses over its declared names."""
    if not k.operators:
        return []
    from engine.domain import ledger

    return list(ledger.template_problems(k.operators, k.places))


def _calculators(k: Knowledge) -> list[Problem]:
    if not k.calculators:
        return []
    from engine.numeric import calculators

    return calculators.problems(k)


def _trees(k: Knowledge) -> list[Problem]:
    from engine.trees import proofs as trees_proofs

    return trees_proofs.problems(k.root, k)


def _archs(k: Knowledge) -> list[Problem]:
    if not k.reference_architectures:
        return []
    from engine.domain import archs

    return archs.problems(k)


def _hardware(k: Knowledge) -> list[Problem]:
    """Cross-field rules of the hardware records (sparse vs dense, link directions, measured ratios)."""
    if not k.hardware:
        return []
    from engine.domain import hardware

    return list(hardware.problems(k))


def _systems(k: Knowledge) -> list[Problem]:
    """System records: the GPU device exists, GPUs x its TDP fit in the system power, the stated GPU memory is the devices' sum."""
    if not getattr(k, "systems", None):
        return []
    from engine.domain import systems

    return systems.problems(k)


def _measurements(k: Knowledge) -> list[Problem]:
    """Measurement tables (knowledge/measurements/): each row schema-checked after its file's defaults, its model
    and device records present, its unit one its metric is stated in."""
    from engine.domain import measurements

    return measurements.load(k.root)[1]


def _failure_taxonomies(k: Knowledge) -> list[Problem]:
    """Failure taxonomy records: the categories' counts add up to the totals (a printed share off its
    count / total is a note of ``aiinfra failures show``, not a problem)."""
    if not getattr(k, "failure_taxonomies", None):
        return []
    from engine.domain import failures

    return failures.problems(k)


def _scaling_laws(k: Knowledge) -> list[Problem]:
    """Scaling-law records: the law they name is a formula of the root, the points' columns name
    parameters, loss and tokens or FLOPs, and an exclusion leaves points to fit."""
    if not getattr(k, "scaling_laws", None):
        return []
    from engine.domain import scaling_data

    return scaling_data.problems(k)


def _labs(k: Knowledge) -> list[Problem]:
    """Lab records: the chapters, sections, formulas, calculators, trees and labs they name exist,
    and their computation runs on their own inputs."""
    if not getattr(k, "labs", None):
        return []
    from engine.domain import labs

    return labs.problems(k)


def _dangling(k: Knowledge, graph) -> list[Problem]:
    out = []
    known = set(k.books) | set(k.chapters) | set(k.sections) | set(k.concepts) | set(k.paths) | set(k.actions) | set(k.formulas.by_id)
    fields = {"part_of": "book", "depends_on": "depends_on", "defines": "defines", "references": "references", "extends": "extends",
              "defined_in": "defined_in", "also_in": "also_in", "step": "steps", "points_to": "targets"}
    for u, v, rel in graph.g.edges(data="rel"):
        if rel in fields and v not in known:
            place = k.places.get(u) or _place_of_section(k, u)
            out.append(Problem(place, u, fields[rel], f"refers to {v}, which is not defined"))
    part_of: dict[str, int] = {}
    for book in k.books.values():
        for part in book.parts:
            for cid in part["chapters"]:
                part_of[cid] = part["number"]
                if cid not in k.chapters:
                    out.append(Problem(book.place, book.id, f"parts[{part['number']}].chapters", f"refers to {cid}, which is not defined"))
    for c in k.chapters.values():
        if c.part is not None and part_of.get(c.id, c.part) != c.part:
            out.append(Problem(c.place, c.id, "part", f"says part {c.part}, but {c.book} lists it in part {part_of[c.id]}"))
    return out


def _place_of_section(k: Knowledge, ident: str) -> str:
    section = k.sections.get(ident)
    return section.place if section else ""


def _concepts(k: Knowledge) -> list[Problem]:
    out = []
    definers: dict[str, list[str]] = {c: [] for c in k.concepts}
    for s in k.sections.values():
        for c in s.defines:
            definers.setdefault(c, []).append(s.id)
        for c in set(s.defines) & set(s.extends):
            out.append(Problem(s.place, s.id, "extends", f"{c} is both defined and extended here; a section does one or the other"))
    for cid, sections in sorted(definers.items()):
        if cid not in k.concepts:
            continue  # reported as a dangling reference
        concept = k.concepts[cid]
        if not sections:
            out.append(Problem(concept.place, cid, "", "no section defines it (exactly one section must list it under defines)"))
        elif len(sections) > 1:
            out.append(Problem(concept.place, cid, "", f"is defined in {len(sections)} sections ({', '.join(sorted(sections))}); a concept has exactly one defining section and is only referenced elsewhere"))
    return out


def _cycles(k: Knowledge, graph) -> list[Problem]:
    cycle = graph.chapter_cycle()
    if not cycle:
        return []
    return [Problem(k.places.get(cycle[0], ""), cycle[0], "depends_on", "chapter dependencies form a cycle: " + " --> ".join(cycle))]


def _paths(k: Knowledge, graph) -> list[Problem]:
    out = []
    for p in k.paths.values():
        chapters = [graph.chapter_of(s.to) if s.to in graph.g else s.to for s in p.steps]
        for i, step in enumerate(p.steps):
            if not step.to or step.to not in graph.g:  # placeholders, dangling (reported elsewhere)
                continue
            needs = graph.prerequisites(step.to)
            for j in range(i + 1, len(p.steps)):
                later = p.steps[j]
                if not later.to or later.revisit or later.condition or chapters[j] == chapters[i] or chapters[j] not in needs:
                    continue
                out.append(Problem(p.place, p.id, f"steps[{j}]", f"{later.to} comes after {step.to} (step {i + 1}), which builds on it; reorder the path or mark step {j + 1} as revisit: true"))
    return out


def _examples(k: Knowledge) -> list[Problem]:
    if not len(k.formulas):
        return []
    from engine.numeric import compiled
    from engine.numeric.evaluate import evaluate

    try:
        module = compiled.for_knowledge(k)
    except AiinfraError as exc:  # pragma: no cover - generation of loaded formulas
        return [Problem("", "", "", f"cannot compile the formulas: {exc}")]
    out = []
    for f in k.formulas:
        meta = module.FORMULAS[f.id]
        for i, ex in enumerate(f.examples):
            path = f"examples[{i}]"
            try:
                result = evaluate(meta, module, ex.set)
            except AiinfraError as exc:
                out.append(Problem(f.place, f.id, path, f"cannot be evaluated: {exc}"))
                continue
            got = result.outputs[f.output.symbol].value
            if not math.isclose(got, ex.expect, rel_tol=ex.rel_tol, abs_tol=0.0):
                rel = abs(got - ex.expect) / abs(ex.expect) if ex.expect else float("inf")
                out.append(Problem(f.place, f.id, path, f"gives {got:.6g} {f.output.unit_text}, expected {ex.expect:.6g} within {ex.rel_tol:g} (off by {rel:.2%}; source: {ex.source})"))
    return out
