"""The symbolic half of decision trees: regions, flip boundaries, gap/overlap proofs.

Conditions become disjunctive normal forms of comparison literals. Each literal is moved to
``expr op 0``; after clearing a denominator of known sign the expression is linear in its
terms (plain symbols, or opaque products and functions of them, each treated as one more
variable whose sign comes from the symbols' domains). Such systems are decided exactly by
Fourier-Motzkin elimination over fractions, which also yields a witness point. Abstracting
a product to a free variable only enlarges the space, so "infeasible" stays a proof; a
witness counts only once a real point is built from it and checked exactly. What cannot be
decided this way is sampled (seeded) and reported as sampled.

Produced symbols (``prefill_time``) are free variables over their domains in the proofs
(the branches of a node must partition whatever values reach it); in ``--for VAR --set``
they are expanded through the formula chain the walk uses, so the region is an interval of
VAR for the given inputs. All values are in base units.

This module is the front door; the work lives in one module per job, every name importable
from here:

- :mod:`engine.trees.literals`: literals, DNF, root-to-leaf paths, linear constraints and
  Fourier-Motzkin elimination;
- :mod:`engine.trees.algebra`: the sympy view of a tree (:class:`Algebra`);
- :mod:`engine.trees.decide`: deciding a DNF (exact or sampled) and :func:`prove`;
- :mod:`engine.trees.boundaries`: :func:`intervals`, :func:`boundaries`, :func:`set_text`.
"""

from __future__ import annotations

from engine.trees.algebra import (  # noqa: F401
    _DOMAIN_CONS,
    Algebra,
    _rational,
    _sign,
)
from engine.trees.boundaries import (  # noqa: F401
    Flip,
    Interval,
    _add_text,
    _answers,
    _check_given,
    _closed_form,
    _domain_set,
    _ends,
    _expansions,
    _factors_text,
    _interior,
    _leaf_of,
    _pretty,
    _probes,
    _root_matching,
    _solve,
    _values,
    boundaries,
    intervals,
    set_text,
)
from engine.trees.decide import (  # noqa: F401
    Proofs,
    Verdict,
    _decide_linear,
    _draw,
    _hints,
    _point_text,
    _prove_node,
    _realise,
    _region,
    _sample,
    _simplify,
    decide,
    prove,
)
from engine.trees.literals import (  # noqa: F401
    _REL,
    MAX_CONSTRAINTS,
    MAX_DISJUNCTS,
    NEG,
    SAMPLES,
    SEED,
    Con,
    Literal,
    Path,
    _con,
    _edges,
    _holds,
    _pick,
    _product,
    _TooBig,
    dnf,
    fourier_motzkin,
    literals_of,
    routes,
)
