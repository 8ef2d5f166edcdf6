"""The sympy view of a tree (:class:`Algebra`): atoms, their linear forms, domains, numbers."""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from engine.core import symbolic
from engine.numeric.calculators import condition_function
from engine.trees.literals import Con, Literal, _con
from engine.trees.runner import Runner
from engine.trees.symbols import parse_condition

# ---------------------------------------------------------------------- the sympy view of a tree


class Algebra:
    """Sympy forms of a tree's atoms, their linear forms, domains and numeric evaluation."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.symbols = runner.symbols
        self.params = {p.name: _rational(p.value * self.symbols.scale(p.name)) for p in runner.tree.parameters.values()}
        self.table: dict[str, object] = {}
        self.conds: dict[tuple[str, int], object] = {}
        names = self.symbols.names()
        for node in runner.tree.nodes.values():
            for i, b in enumerate(node.branches):
                self.conds[(node.id, i)] = parse_condition(b.when, names)
        self._sym: dict[object, object] = {}
        self._lin: dict[tuple, object] = {}
        self._fns: dict[object, tuple] = {}
        self._terms: dict[str, object] = {}  # key of a linear term -> its sympy expression

    def symbol(self, name: str):
        if name not in self.table:
            info = self.symbols.info(name)
            self.table[name] = sp.Symbol(name, **symbolic.ASSUMPTIONS.get(info["domain"], {"real": True}))
        return self.table[name]

    def diff(self, atom, params: bool = True):
        """lhs - rhs of a comparison, parameters replaced by their values unless ``params`` is False."""
        key = (atom, params)
        if key not in self._sym:
            table = {n: (self.params[n] if params and n in self.params else self.symbol(n)) for n in atom.symbols()}
            left, right = (symbolic.to_sympy(a, table) for a in atom.args)
            self._sym[key] = left - right
        return self._sym[key]

    def linear(self, lit: Literal) -> list[list[Con]] | None:
        """Alternatives (a DNF) of linear constraints for one literal, or None when not linear in its terms."""
        key = (lit.atom, lit.positive)
        if key in self._lin:
            return self._lin[key]
        out = None
        form = self._form(self.diff(lit.atom))
        if form is not None:
            coeffs, const = form
            neg = ({k: -c for k, c in coeffs.items()}, -const)
            op = lit.op
            out = {">": [[_con(coeffs, const, True)]], ">=": [[_con(coeffs, const, False)]],
                   "<": [[_con(*neg, True)]], "<=": [[_con(*neg, False)]],
                   "==": [[_con(coeffs, const, False), _con(*neg, False)]],
                   "!=": [[_con(coeffs, const, True)], [_con(*neg, True)]]}[op]
        self._lin[key] = out
        return out

    def _form(self, expr):
        num, den = sp.fraction(sp.together(expr))
        sign = _sign(den)
        if sign is None:
            return None
        coeffs: dict[str, Fraction] = {}
        const = Fraction(0)
        for term, c in sp.expand(num * sign).as_coefficients_dict().items():
            if not c.is_Rational:
                return None
            if term == 1:
                const += Fraction(int(c.p), int(c.q))
                continue
            if term.has(sp.I, sp.nan, sp.zoo, sp.oo):
                return None
            key = str(term)
            self._terms[key] = term
            coeffs[key] = coeffs.get(key, Fraction(0)) + Fraction(int(c.p), int(c.q))
        return coeffs, const

    def domain_cons(self, variables: set[str]) -> tuple[list[Con], set[str]]:
        cons: list[Con] = []
        integer: set[str] = set()
        for key in sorted(variables):
            term = self._terms[key]
            if isinstance(term, sp.Symbol):
                domain = self.symbols.info(term.name)["domain"]
                cons += _DOMAIN_CONS.get(domain, lambda k: [])(key)
                if domain.endswith("integer"):
                    integer.add(key)
                continue
            if term.is_positive:
                cons.append(_con({key: 1}, Fraction(0), True))
            elif term.is_nonnegative:
                cons.append(_con({key: 1}, Fraction(0), False))
            elif term.is_negative:
                cons.append(_con({key: -1}, Fraction(0), True))
            elif term.is_nonpositive:
                cons.append(_con({key: -1}, Fraction(0), False))
        return cons, integer

    def fn(self, atom):
        if atom not in self._fns:
            used, fn = condition_function(atom.src, self.symbols.names())
            self._fns[atom] = (used, fn)
        return self._fns[atom]

    def holds(self, lit: Literal, point: dict[str, float]) -> bool:
        used, fn = self.fn(lit.atom)
        return bool(fn(*[point[n] if n in point else float(self.params[n]) for n in used])) == lit.positive


_DOMAIN_CONS = {
    "positive": lambda k: [_con({k: 1}, Fraction(0), True)],
    "positive_integer": lambda k: [_con({k: 1}, Fraction(-1), False)],
    "nonnegative": lambda k: [_con({k: 1}, Fraction(0), False)],
    "nonnegative_integer": lambda k: [_con({k: 1}, Fraction(0), False)],
    "fraction": lambda k: [_con({k: 1}, Fraction(0), False), _con({k: -1}, Fraction(1), False)],
    "positive_fraction": lambda k: [_con({k: 1}, Fraction(0), True), _con({k: -1}, Fraction(1), False)],
    "fraction_below_one": lambda k: [_con({k: 1}, Fraction(0), False), _con({k: -1}, Fraction(1), True)],
    "ge_one": lambda k: [_con({k: 1}, Fraction(-1), False)],
    "ge_two_integer": lambda k: [_con({k: 1}, Fraction(-2), False)],
}


def _sign(expr) -> int | None:
    if expr.is_positive:
        return 1
    if expr.is_negative:
        return -1
    return None


def _rational(x: float):
    return sp.Rational(repr(float(x)))
