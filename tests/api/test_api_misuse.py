"""Issue #24: misuse of the Python API raises the project's errors (InputError naming the parameter,
or KnowledgeError for a root that is not one), never AttributeError, TypeError or OverflowError, and a
list is never taken as an internal (value, low, high) triple."""

from __future__ import annotations

import pytest

from engine import api
from engine.core.errors import AiinfraError, InputError, KnowledgeError

BASE = dict(layers=36, kv_heads=8, head_dim=128, gpu_memory_total="80GiB", weight_bytes="16GiB", context_tokens=4096)
SWEPT = {k: v for k, v in BASE.items() if k != "context_tokens"}
F8 = dict(attention="gqa", layers=36, kv_heads=8, head_dim=128, kv_bytes=2)


def kv():
    return api.calculator("kv-concurrency")


MISUSES = {
    "evaluate None id": lambda: api.evaluate(None),
    "evaluate number id": lambda: api.evaluate(8),
    "evaluate list id": lambda: api.evaluate(["F8"]),
    "evaluate 10**400": lambda: api.evaluate("F8", **{**F8, "layers": 10**400}),
    "evaluate list value": lambda: api.evaluate("F8", **{**F8, "layers": [36, 1, 100]}),
    "evaluate root int": lambda: api.evaluate("F8", root=5),
    "solve None id": lambda: api.solve(None, "mfu"),
    "solve number target": lambda: api.solve("F2", 5),
    "formulas root int": lambda: api.formulas(5),
    "formulas root list": lambda: api.formulas(["/tmp"]),
    "calculators root int": lambda: api.calculators(5),
    "calculator None": lambda: api.calculator(None),
    "calculator number": lambda: api.calculator(3),
    "calculator list": lambda: api.calculator(["kv-concurrency"]),
    "check root int": lambda: api.check(5),
    "load root int": lambda: api.load(5),
    "run 10**400": lambda: kv().run(**{**BASE, "context_tokens": 10**400}),
    "run model number": lambda: kv().run(model=5, **BASE),
    "run model list": lambda: kv().run(model=["qwen3-8b"], **BASE),
    "run device number": lambda: kv().run(device=7, **BASE),
    "sweep None name": lambda: kv().sweep(None, 1, 2, **BASE),
    "sweep 10**400": lambda: kv().sweep("context_tokens", 1, 10**400, **SWEPT),
    "sweep points str": lambda: kv().sweep("context_tokens", 1, 2, points="x", **SWEPT),
    "sweep list low": lambda: kv().sweep("context_tokens", [1, 2], 3, **SWEPT),
    "sweep inverted": lambda: kv().sweep("context_tokens", 10, 2, **SWEPT),
}


@pytest.mark.parametrize("case", sorted(MISUSES))
def test_misuse_raises_the_projects_error(case):
    with pytest.raises(AiinfraError):
        MISUSES[case]()


def test_a_list_value_is_refused_not_read_as_value_low_high():
    # it used to give value 4096 with low 8192 > high 1024 and no error
    with pytest.raises(InputError) as err:
        kv().run(**{**BASE, "context_tokens": [4096, 8192, 1024]})
    assert str(err.value) == "--set context_tokens: expected a number in tokens/requests or a string such as '80GiB', '1..3h' or '40±10%', got a list"


def test_error_texts_name_the_parameter():
    with pytest.raises(InputError) as err:
        api.evaluate(None)
    assert str(err.value) == "formula_id: expected a string, got None"
    with pytest.raises(InputError) as err:
        api.formulas(5)
    assert str(err.value) == "root: expected a folder path (str or os.PathLike), got a int"
    with pytest.raises(InputError) as err:
        api.evaluate("F8", **{**F8, "layers": 10**400})
    assert str(err.value) == "--set layers: expected a finite number, got an integer of 401 digits"
    with pytest.raises(InputError) as err:
        kv().sweep("context_tokens", 10, 2, **SWEPT)
    assert str(err.value) == "high: the range 10..2 is empty (expected low < high)"


def test_calculators_of_a_missing_root_raise_like_formulas():
    with pytest.raises(KnowledgeError) as formulas_err:
        api.formulas("/nonexistent/aiinfra-root")
    with pytest.raises(KnowledgeError) as calculators_err:
        api.calculators("/nonexistent/aiinfra-root")
    assert str(calculators_err.value) == str(formulas_err.value) == (
        "/nonexistent/aiinfra-root: is not a folder (expected a knowledge root with formulas/ and knowledge/)\n1 problem found")
