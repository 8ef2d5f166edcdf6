"""What a fitted Chinchilla law (FX430) says about a training plan, from the compiled formulas:

- ``optimum(module, law, compute)``: the compute-optimal N*, D* for a budget C = 6ND (FX431,
  FX432), tokens per parameter (FX425) and the loss there;
- ``band(module, law, params, overhead)``: the over-training band of a model size, the tokens
  over which training it costs at most ``overhead`` more compute than the compute-optimal run
  reaching the same loss (de Vries 2023: FX433, FX434, with FX437 and FX438);
- ``lifecycle(module, law, target_loss, inference_tokens)``: the model size and tokens that
  minimise training plus lifetime inference FLOPs for a target loss (Sardana et al. 2023:
  FX435 over N, with D from FX436), beside the Chinchilla-optimal model of that loss.

Library errors name the parameter (``compute``, ``overhead``, ...); the CLI maps them to flags.
"""

from __future__ import annotations

import math

from engine.core.errors import EvaluationError, InputError
from engine.core.record import dataclass
from engine.domain.scaling_data import Law

LOSS, N_OPT, D_OPT, C_OPT = "FX430", "FX431", "FX432", "FX437"
TOKEN_FACTOR, COMPUTE_FACTOR, K_MIN = "FX433", "FX434", "FX438"
LIFECYCLE, TOKENS_FOR_LOSS = "FX435", "FX436"
TRAIN_FLOPS, INFER_FLOPS, TOKENS_PER_PARAM = "F1", "FX30", "FX425"
FORMULAS = (LOSS, N_OPT, D_OPT, C_OPT, TOKEN_FACTOR, COMPUTE_FACTOR, K_MIN, LIFECYCLE, TOKENS_FOR_LOSS, TRAIN_FLOPS, INFER_FLOPS, TOKENS_PER_PARAM)


@dataclass(frozen=True, slots=True)
class Plan:
    """One (N, D) with what it costs and reaches; inference FLOPs only in a lifecycle."""

    label: str
    params: float
    tokens: float
    tokens_per_param: float
    train_flops: float
    loss: float
    inference_flops: float = 0.0

    @property
    def total_flops(self) -> float:
        return self.train_flops + self.inference_flops


@dataclass(frozen=True, slots=True)
class Band:
    params: float
    overhead: float
    optimal: Plan  # the size trained to the tokens that make it compute-optimal
    over: Plan  # the over-training edge: most tokens within the overhead
    under: Plan  # the under-training edge: fewest tokens within the overhead
    fraction_over: float  # k = N / N* at the over-training edge (below 1)
    fraction_under: float  # k at the under-training edge (above 1)
    min_fraction: float  # FX438: no model below this fraction of N* reaches the loss


@dataclass(frozen=True, slots=True)
class Lifecycle:
    target_loss: float
    inference_tokens: float
    chinchilla: Plan  # compute-optimal for the target loss, inference ignored
    optimal: Plan  # minimum of training + inference FLOPs at the target loss
    compared: tuple  # Plans of the sizes asked for


def formula_module(root: str):
    """The compiled formulas of ``root``, or of the shipped knowledge when ``root`` has none."""
    from engine.numeric import compiled

    return compiled.load_having(root, FORMULAS, "scaling-law formulas", "formulas/compute.yaml")


def value(module, fid: str, given: dict) -> float:
    from engine.numeric.evaluate import evaluate

    meta = module.FORMULAS[fid]
    return evaluate(meta, module, given).outputs[meta["output"]["symbol"]].value


def loss(module, law: Law, params: float, tokens: float) -> float:
    return value(module, LOSS, {**law.given(), "params": params, "train_tokens": tokens})


def plan(module, law: Law, label: str, params: float, tokens: float, inference_tokens: float = 0.0) -> Plan:
    """N trained on D: tokens per parameter (FX425), training FLOPs (F1), loss (FX430), inference FLOPs (FX30 x tokens)."""
    infer = value(module, INFER_FLOPS, {"params_active": params}) * inference_tokens
    return Plan(label, params, tokens, value(module, TOKENS_PER_PARAM, {"train_tokens": tokens, "params": params}),
                value(module, TRAIN_FLOPS, {"params_active": params, "train_tokens": tokens}), loss(module, law, params, tokens), infer)


def optimum(module, law: Law, compute: float) -> Plan:
    """The compute-optimal allocation of ``compute`` FLOPs (FX431, FX432)."""
    _positive("compute", compute)
    exponents = _frontier_inputs(law)
    return plan(module, law, "compute-optimal", value(module, N_OPT, {**exponents, "train_flops": compute}),
                value(module, D_OPT, {**exponents, "train_flops": compute}))


def optimal_for_params(module, law: Law, params: float, label: str = "compute-optimal") -> Plan:
    """``params`` trained to the tokens that put it on the frontier (FX437, then FX432)."""
    _positive("params", params)
    compute = value(module, C_OPT, {**_frontier_inputs(law), "params": params})
    return plan(module, law, label, params, value(module, D_OPT, {**_frontier_inputs(law), "train_flops": compute}))


def band(module, law: Law, params: float, overhead: float) -> Band:
    """The tokens over which ``params`` costs at most (1 + overhead) x the compute-optimal run of its loss."""
    from scipy.optimize import brentq

    _positive("params", params)
    _positive("overhead", overhead)
    exponents = {"loss_param_exponent": law.loss_param_exponent, "loss_data_exponent": law.loss_data_exponent}
    k_min = value(module, K_MIN, exponents)

    def excess(k: float) -> float:
        tokens = value(module, TOKEN_FACTOR, {**exponents, "model_size_fraction": k})
        return value(module, COMPUTE_FACTOR, {"model_size_fraction": k, "overtrain_token_factor": tokens}) - (1 + overhead)

    low, high = k_min * (1 + 1e-9), 2.0
    while excess(high) < 0 and high < 1e30:
        high *= 2
    if excess(low) < 0 or excess(high) < 0:
        raise InputError("overhead", f"{overhead:g} is beyond what the law resolves (every size from {k_min:.4g} x N* up is within it); expected a smaller overhead")
    over = brentq(excess, low, 1.0, xtol=1e-14, rtol=1e-12)
    under = brentq(excess, 1.0, high, xtol=1e-14, rtol=1e-12)
    return Band(params, overhead, optimal_for_params(module, law, params), _edge(module, law, params, over, "over-training edge"),
                _edge(module, law, params, under, "under-training edge"), over, under, k_min)


def _edge(module, law: Law, params: float, k: float, label: str) -> Plan:
    """``params`` trained to the loss of the compute-optimal model of params / k: that model's tokens x FX433(k)."""
    reference = optimal_for_params(module, law, params / k)
    factor = value(module, TOKEN_FACTOR, {"loss_param_exponent": law.loss_param_exponent, "loss_data_exponent": law.loss_data_exponent,
                                          "model_size_fraction": k})
    return plan(module, law, label, params, reference.tokens * factor)


def lifecycle(module, law: Law, target_loss: float, inference_tokens: float, compare=()) -> Lifecycle:
    """Sardana et al.'s problem: minimise 6·N·D + 2·N·inference_tokens over N with L(N, D) = target_loss."""
    from scipy.optimize import minimize_scalar

    _positive("target_loss", target_loss)
    if inference_tokens < 0:
        raise InputError("inference_tokens", f"expected 0 or more tokens, got {inference_tokens:g}")
    chinchilla = _chinchilla_for_loss(module, law, target_loss)
    smallest = _smallest_size(module, law, target_loss, chinchilla.params)

    def total(log_n: float) -> float:
        return at_loss(module, law, "", math.exp(log_n), target_loss, inference_tokens).total_flops

    best = minimize_scalar(total, bounds=(math.log(smallest), math.log(chinchilla.params)), method="bounded", options={"xatol": 1e-9})
    optimal = at_loss(module, law, "lifecycle-optimal", math.exp(best.x), target_loss, inference_tokens)
    chinchilla = at_loss(module, law, "Chinchilla-optimal", chinchilla.params, target_loss, inference_tokens)
    rows = tuple(_compared(module, law, n, target_loss, inference_tokens) for n in compare)
    return Lifecycle(target_loss, inference_tokens, chinchilla, optimal, rows)


def _compared(module, law: Law, params: float, target_loss: float, inference_tokens: float) -> Plan:
    try:
        return at_loss(module, law, f"{params:.4g} parameters", params, target_loss, inference_tokens)
    except InputError as exc:
        raise InputError("compare", exc.message) from None


def at_loss(module, law: Law, label: str, params: float, target_loss: float, inference_tokens: float) -> Plan:
    """``params`` trained to ``target_loss`` (FX436), with ``inference_tokens`` served (FX435's terms)."""
    _positive("params", params)
    try:
        tokens = value(module, TOKENS_FOR_LOSS, {**law.given(), "params": params, "target_loss": target_loss})
    except EvaluationError:
        raise InputError("params", f"{params:.4g} parameters cannot reach loss {target_loss:g} under this law on any number of tokens (FX436)") from None
    return plan(module, law, label, params, tokens, inference_tokens)


def _chinchilla_for_loss(module, law: Law, target_loss: float) -> Plan:
    """The compute-optimal run whose loss is ``target_loss``: FX430 along the frontier, solved for C."""
    from scipy.optimize import brentq

    if target_loss <= law.loss_irreducible:
        raise InputError("target_loss", f"{target_loss:g} is not above the law's irreducible loss E = {law.loss_irreducible:g}")

    def gap(log_c: float) -> float:
        return optimum(module, law, math.exp(log_c)).loss - target_loss

    low, high = math.log(1e15), math.log(1e30)
    while gap(low) < 0 and low > math.log(1e3):
        low -= math.log(1e3)
    while gap(high) > 0:
        if high > math.log(1e60):
            raise InputError("target_loss", f"{target_loss:g} is not reached below 1e60 FLOPs under this law")
        high += math.log(1e3)
    if gap(low) < 0:
        raise InputError("target_loss", f"{target_loss:g} is already reached by 1e3 FLOPs under this law")
    return optimum(module, law, math.exp(brentq(gap, low, high, xtol=1e-12)))


def _smallest_size(module, law: Law, target_loss: float, reachable: float) -> float:
    """The size below which FX436 has no real answer (the target under E + A/N^alpha), by bisection in log N."""
    low, high = math.log(reachable) - math.log(1e6), math.log(reachable)
    for _ in range(80):
        mid = (low + high) / 2
        try:
            value(module, TOKENS_FOR_LOSS, {**law.given(), "params": math.exp(mid), "target_loss": target_loss})
            high = mid
        except EvaluationError:
            low = mid
    return math.exp(high)


def _frontier_inputs(law: Law) -> dict:
    given = law.given()
    return {k: v for k, v in given.items() if k != "loss_irreducible"}


def _positive(name: str, x: float) -> None:
    if not (isinstance(x, int | float) and math.isfinite(x) and x > 0):
        raise InputError(name, f"expected a positive number, got {x!r}")
