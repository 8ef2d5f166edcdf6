"""The compiled formulas a family evaluates, and an evaluator that remembers which formula records it used."""

from __future__ import annotations

from engine.core.errors import InputError


def formula_module(root=None):
    """The compiled formulas of ``root``, or the shipped ones when ``root`` has no formulas/ folder."""
    import os

    from engine.core.paths import shipped_root
    from engine.numeric import compiled

    if root is None or not os.path.isdir(os.path.join(os.fspath(root), "formulas")):
        root = shipped_root()
    return compiled.load(root, strict=False)  # a refused formula stops only the counts that evaluate it (#24)


class Evaluator:
    """Evaluates formula records from the compiled module and remembers which were used."""

    def __init__(self, module):
        self.module = module
        self.used: list[str] = []

    def __call__(self, fid: str, **given) -> int:
        from engine.numeric.evaluate import evaluate

        if fid not in self.used:
            self.used.append(fid)
        if fid not in self.module.FORMULAS:  # a root of its own whose formulas/ predates the record
            from engine.numeric.compiled import refused_error

            refused = refused_error(self.module, fid)
            if refused is not None:  # a formula of this root that does not load (#24): its broken record
                raise refused
            raise InputError("--root", f"its formulas lack {fid}, which parameter counts need (formulas/model.yaml of the shipped root has it)")
        result = evaluate(self.module.FORMULAS[fid], self.module, given)
        (value,) = (o.value for o in result.outputs.values())
        if not float(value).is_integer():
            raise InputError(fid, f"gave {value}, not a whole number of parameters")
        if abs(value) > 2**53:  # past it a float count is no longer exact
            raise InputError(fid, f"gives {float(value):.4g}, past 2^53 = {2**53} where counts are no longer exact: check the config's sizes")
        return int(value)
