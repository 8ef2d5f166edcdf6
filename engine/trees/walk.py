"""Decision trees as data: ``decision_trees/<name>.yaml`` walked numerically, never with sympy.

A tree declares inputs (formula symbols, or tree-local symbols with a unit and domain, or
categorical values), named parameters (thresholds with a source), nodes and leaves. Node
kinds come from a table (:data:`KINDS`): ``ask`` picks the next node by a categorical
input; ``test`` takes the first branch whose condition holds (or ``otherwise``).
Conditions are parsed by engine.core.expr and evaluated in base units. A condition symbol that
a formula produces is computed through the formula chain with the calculators' planner
(:class:`engine.numeric.calculators._Plan`), so a user may give an intermediate symbol and the
chain stops there, exactly as for ``aiinfra calc``.

This module is the front door: every name lives in one module by job and is importable from
here, where callers import it.

- :mod:`engine.trees.records`: the records (:class:`Tree`, :class:`Node`, ...) and loading;
- :mod:`engine.trees.symbols`: :class:`Symbols` and the tree as a calculator;
- :mod:`engine.trees.state`: one walk's values and the prompts (:class:`Prompt`);
- :mod:`engine.trees.runner`: node kinds, :class:`Runner`, :class:`Walk`;
- :mod:`engine.trees.structure`: structure checks without sympy and :class:`Report`;
- :mod:`engine.trees.inputs`: what ``tree show`` lists about a tree's inputs.

The symbolic half (regions, boundaries, gap/overlap proofs) lives in
``engine.trees.regions`` and is imported only when asked for. ``engine.trees.proofs.problems``
is the integrity rule ``aiinfra check`` runs.
"""

from __future__ import annotations

from engine.trees.records import (
    FOLDER,
    Branch,
    Input,
    Leaf,
    Node,
    Parameter,
    Tree,
    find,
    load,
    load_trees,
    tree_files,
)
from engine.trees.runner import (
    KINDS,
    MAX_RANGE_CORNERS,
    Runner,
    Step,
    Walk,
    _Ask,
    _numpy_condition,
    _Test,
    runner,
)
from engine.trees.state import BACK, MissingInputs, Prompt, _TreePlan, _WalkState
from engine.trees.structure import ALLOWED_NUMBERS, Report, structure_problems
from engine.trees.symbols import Symbols, parse_condition, pseudo_calculator

__all__ = [
    "ALLOWED_NUMBERS", "BACK", "FOLDER", "KINDS", "MAX_RANGE_CORNERS", "Branch", "Input", "Leaf", "MissingInputs", "Node", "Parameter",
    "Prompt", "Report", "Runner", "Step", "Symbols", "Tree", "Walk", "_Ask", "_Test", "_TreePlan", "_WalkState", "_numpy_condition",
    "find", "load", "load_trees", "parse_condition", "pseudo_calculator", "runner", "structure_problems", "tree_files",
]
