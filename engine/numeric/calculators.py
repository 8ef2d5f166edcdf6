"""Calculators declared as data: ``knowledge/calculators/<name>.yaml`` run over the formula graph.

A calculator names formula symbols as inputs and outputs. Its formula chain is derived,
not written: from each output back through the formula that produces it, until a symbol is
given by the user, is a declared input, or has a default. A user may give an intermediate
symbol (``kv_bytes_per_token``) and the chain stops there. Categorical selectors (``attention``)
are inputs too and choose each formula's variant. Evaluation is topological and uses the
compiled formula functions (no sympy).

Ranges: an output's range is ``exact`` when the per-input monotonicity the compiler stored
composes along the chain to one known direction for every ranged input it depends on (the
corners are then evaluated through the chain with plain floats); otherwise it is ``sampled``
(corners plus seeded uniform samples through the NumPy twins).

This module is the public face; the work is split by job:

- ``calc_records``: the record (``Calculator``), loading, the formula ``Graph``, ``CalcResult``;
- ``calc_plan``: the depth-first plan (``_Plan``) and the categorical refusals;
- ``calc_run``: ``run``, every missing input reported at once (``MissingInputs``);
- ``calc_ranges``: the point, composed monotonicity, exact corners, sampled ranges, ranking;
- ``calc_sweep``: ``sweep``;
- ``calc_conditions``: failure boundaries (warnings, refusals, their file:line);
- ``calc_problems``: the integrity rule over every record.
"""

from __future__ import annotations

from engine.numeric.calc_conditions import (
    _boundaries,
    _condition,
    _refused,
    condition_error,
    condition_function,
    condition_source,
    field_place,
)
from engine.numeric.calc_plan import MissingInputs, _Missing, _Plan
from engine.numeric.calc_problems import problems
from engine.numeric.calc_ranges import _chain, _directions, _point, _ranking, _sampled, _step
from engine.numeric.calc_records import (
    FOLDER,
    FORMULA_NUMBER,
    LEFT_OUT,
    CalcResult,
    Calculator,
    Graph,
    cached_records,
    graph_of,
    load_records,
)
from engine.numeric.calc_run import run
from engine.numeric.calc_sweep import MAX_POINTS, sweep

# CalcResult -> Markdown for notebooks; installed by engine.api (the text is the CLI's render)
MARKDOWN = None

__all__ = [
    "FOLDER", "FORMULA_NUMBER", "LEFT_OUT", "MARKDOWN", "MAX_POINTS", "CalcResult", "Calculator", "Graph", "MissingInputs",
    "_Missing", "_Plan", "_boundaries", "_chain", "_condition", "_directions", "_point", "_ranking", "_refused", "_sampled", "_step",
    "cached_records", "condition_error", "condition_function", "condition_source", "field_place", "graph_of", "load_records", "problems", "run",
    "sweep",
]
