"""engine.domain.scaling: the Chinchilla frontier (FX431, FX432), de Vries' over-training factors
(FX433, FX434, FX438) and Sardana et al.'s lifecycle compute (FX435, FX436).

Every expected number is a published one (cited on the line) or hand arithmetic written in the
test with ``math`` from the published constants; none comes from running the engine."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from engine.core.errors import InputError
from engine.domain import scaling
from engine.domain.scaling_data import Law

ROOT = Path(__file__).resolve().parents[2]
# Hoffmann et al. 2022 (arXiv:2203.15556) Appendix D.2, rounded as printed
HOFFMANN = Law(1.69, 406.4, 410.7, 0.34, 0.28, "Hoffmann et al. 2022 Appendix D.2")
# Besiroglu et al. 2024 (arXiv:2404.10102), refit of Approach 3
BESIROGLU = Law(1.8172, 482.01, 2085.43, 0.3478, 0.3658, "Besiroglu et al. 2024")
# Hoffmann's estimates before rounding, as Besiroglu et al.'s notebook holds them (log A, log B, log E, alpha, beta =
# 6.0073404, 6.0179186, 0.5267228, 0.33917084, 0.2849083; epoch-research/analyzing-chinchilla @9225883)
UNROUNDED = Law(math.exp(0.5267228), math.exp(6.0073404), math.exp(6.0179186), 0.33917084, 0.2849083, "Epoch notebook")
# de Vries' notebook (bigcode-project/bigcode-analysis chinchilla_analysis.ipynb @fe729cd7): E 1.62, A 406.4, B 410.7, alpha 0.336, beta 0.283
DE_VRIES = Law(1.62, 406.4, 410.7, 0.336, 0.283, "de Vries 2023")
GOPHER = 5.76e23  # Hoffmann et al. Table 3: the compute budget of Gopher (67B row, 1 Gopher unit)


@pytest.fixture(scope="module")
def module():
    return scaling.formula_module(str(ROOT))


def by_hand(law: Law, compute: float) -> tuple[float, float]:
    """Hoffmann et al. section 3.3: N = G (C/6)^(beta/(alpha+beta)), D = G^-1 (C/6)^(alpha/(alpha+beta))."""
    a, b = law.loss_param_exponent, law.loss_data_exponent
    g = (a * law.loss_param_coeff / (b * law.loss_data_coeff)) ** (1 / (a + b))
    return g * (compute / 6) ** (b / (a + b)), (compute / 6) ** (a / (a + b)) / g


def loss_by_hand(law: Law, n: float, d: float) -> float:
    return law.loss_irreducible + law.loss_param_coeff / n ** law.loss_param_exponent + law.loss_data_coeff / d ** law.loss_data_exponent


def test_refit_puts_gophers_budget_at_chinchillas_size(module):
    # G = (0.3478 x 482.01 / (0.3658 x 2085.43))^(1/0.7136) = 0.1196298; N* = G x (9.6e22)^0.5126121 = 7.22487e10;
    # D* = 9.6e22 / N* = 1.32874e12: Chinchilla is 70B on 1.4T tokens at this budget (Hoffmann et al. section 4)
    best = scaling.optimum(module, BESIROGLU, GOPHER)
    n, d = by_hand(BESIROGLU, GOPHER)
    assert best.params == pytest.approx(n, rel=1e-9) and best.tokens == pytest.approx(d, rel=1e-9)
    assert n == pytest.approx(7.22487e10, rel=1e-5) and d == pytest.approx(1.32874e12, rel=1e-5)
    assert abs(best.params / 70e9 - 1) < 0.04 and abs(best.tokens / 1.4e12 - 1) < 0.06
    assert best.tokens_per_param == pytest.approx(d / n, rel=1e-9)                  # 18.39 tokens per parameter
    assert best.train_flops == pytest.approx(GOPHER, rel=1e-12)                     # 6 N* D* = C
    assert best.loss == pytest.approx(loss_by_hand(BESIROGLU, n, d), rel=1e-12)


def test_rounded_constants_miss_figure_4s_40b_and_unrounded_ones_hit_it(module):
    # Rounded (Appendix D.2): G = 1.2015722^1.6129032 = 1.3447106, N* = 1.3447106 x (9.6e22)^0.4516129 = 3.21899e10,
    # 92.6 tokens per parameter; Figure 4's caption projects 40B for Gopher's budget, which the unrounded estimates give.
    rounded = scaling.optimum(module, HOFFMANN, GOPHER)
    assert rounded.params == pytest.approx(3.21899e10, rel=1e-5) and rounded.params == pytest.approx(by_hand(HOFFMANN, GOPHER)[0], rel=1e-9)
    unrounded = scaling.optimum(module, UNROUNDED, GOPHER)
    assert unrounded.params == pytest.approx(by_hand(UNROUNDED, GOPHER)[0], rel=1e-9)
    assert abs(unrounded.params / 40e9 - 1) < 0.01                                   # Figure 4: "40B parameters"
    # Table 2, Approach 3: a = 0.46, b = 0.54; beta/(alpha+beta) = 0.2849083 / 0.6240791 = 0.4565
    assert round(0.2849083 / (0.33917084 + 0.2849083), 2) == 0.46


def test_de_vries_notebook_frontier(module):
    # cell 62: C = 1.62e20 -> N_opt 0.9928012883225557e9, D_opt 27.19577453975649e9 (Table A3, Approach 3: 1B, 27.1B tokens)
    best = scaling.optimum(module, DE_VRIES, 1.62e20)
    assert best.params == pytest.approx(0.9928012883225557e9, rel=1e-12)
    assert best.tokens == pytest.approx(27.19577453975649e9, rel=1e-12)


# de Vries' notebook cell 64, the plotted curve: model fraction k -> compute overhead in percent (alpha 0.336, beta 0.283)
OVERHEAD_CURVE = [(0.175, 785.0858667914), (0.25, 188.88266689009936), (0.3052, 100.12670891141049), (0.4, 43.70156182650042),
                  (0.5, 20.782255750198008), (0.75, 2.845569584278995), (1.5, 4.643803344473785), (2, 13.124298002336786),
                  (3, 32.580975381561636), (4, 52.556106249980814), (5, 72.33219879157087)]


@pytest.mark.parametrize("k,percent", OVERHEAD_CURVE)
def test_compute_factor_reproduces_de_vries_curve(module, k, percent):
    exponents = {"loss_param_exponent": 0.336, "loss_data_exponent": 0.283}
    tokens = scaling.value(module, scaling.TOKEN_FACTOR, {**exponents, "model_size_fraction": k})
    factor = scaling.value(module, scaling.COMPUTE_FACTOR, {"model_size_fraction": k, "overtrain_token_factor": tokens})
    assert 100 * (factor - 1) == pytest.approx(percent, rel=1e-9, abs=1e-9)


def test_band_at_100_percent_is_de_vries_critical_size(module):
    # 'Go smol or go home': the critical model size is about 30% of the optimum, at a 100% overhead (the curve: 0.3052 -> 100.13%)
    zone = scaling.band(module, DE_VRIES, 7e9, 1.0)
    assert zone.fraction_over == pytest.approx(0.3052, abs=2e-4)
    # FX438 by hand: (1 + 0.336/0.283)^(-1/0.336) = 2.1872792^-2.9761905 = 0.0973599
    assert zone.min_fraction == pytest.approx((1 + 0.336 / 0.283) ** (-1 / 0.336), rel=1e-12)


def test_band_edges_satisfy_the_definition(module):
    # For each edge: the compute-optimal run of the same loss is N/k on D*(N/k) (Hoffmann section 3.3 inverted:
    # C = 6 (N*/G)^((alpha+beta)/beta)); the edge reaches that loss and costs (1 + overhead) x its compute.
    law, n, overhead = BESIROGLU, 7e9, 0.10
    zone = scaling.band(module, law, n, overhead)
    a, b = law.loss_param_exponent, law.loss_data_exponent
    g = (a * law.loss_param_coeff / (b * law.loss_data_coeff)) ** (1 / (a + b))
    for edge, k in ((zone.over, zone.fraction_over), (zone.under, zone.fraction_under)):
        n_star = n / k
        c_star = 6 * (n_star / g) ** ((a + b) / b)
        d_star = c_star / (6 * n_star)
        assert loss_by_hand(law, n, edge.tokens) == pytest.approx(loss_by_hand(law, n_star, d_star), rel=1e-9)
        assert 6 * n * edge.tokens / c_star == pytest.approx(1 + overhead, rel=1e-9)
    assert zone.fraction_over < 1 < zone.fraction_under
    assert zone.under.tokens < zone.optimal.tokens < zone.over.tokens
    # the middle row is N on the tokens that make it compute-optimal: D = C/(6N) with C = 6 (N/G)^((alpha+beta)/beta)
    assert zone.optimal.tokens == pytest.approx((n / g) ** ((a + b) / b) / n, rel=1e-9)


def test_lifecycle_without_inference_is_chinchilla(module):
    life = scaling.lifecycle(module, BESIROGLU, 2.1, 0)
    assert life.optimal.params == pytest.approx(life.chinchilla.params, rel=1e-5)
    n, d = life.chinchilla.params, life.chinchilla.tokens
    assert loss_by_hand(BESIROGLU, n, d) == pytest.approx(2.1, rel=1e-9)
    assert by_hand(BESIROGLU, 6 * n * d)[0] == pytest.approx(n, rel=1e-9)          # on the frontier


def test_lifecycle_sardana_figure_1_scenario(module):
    # Sardana et al. 2023 Figure 1: a 13B model with 2 trillion tokens of inference demand, and a 7B model trained to
    # the same quality. 13B here trains at 20 tokens per parameter (F3: 260B tokens). Hand arithmetic: the target is
    # L(13e9, 260e9); 7B needs D = (B / (l - E - A/7e9^alpha))^(1/beta); totals 6ND + 2N x 2e12.
    law, demand = BESIROGLU, 2e12
    target = loss_by_hand(law, 13e9, 260e9)
    life = scaling.lifecycle(module, law, target, demand, compare=(7e9, 13e9))
    seven, thirteen = life.compared
    d7 = (law.loss_data_coeff / (target - law.loss_irreducible - law.loss_param_coeff / 7e9 ** law.loss_param_exponent)) ** (1 / law.loss_data_exponent)
    assert seven.tokens == pytest.approx(d7, rel=1e-9)
    assert seven.total_flops == pytest.approx(6 * 7e9 * d7 + 2 * 7e9 * demand, rel=1e-9)
    assert thirteen.total_flops == pytest.approx(6 * 13e9 * 260e9 + 2 * 13e9 * demand, rel=1e-9)   # 7.228e22
    assert thirteen.total_flops == pytest.approx(7.228e22, rel=1e-9)
    best = life.optimal
    assert best.total_flops <= seven.total_flops and best.total_flops <= thirteen.total_flops
    # stationarity of 6 N D(N) + 2 N I with D(N) from the loss constraint: 6 D (1 - (alpha/beta) A N^-alpha / r) + 2 I = 0,
    # r = l - E - A N^-alpha (d/dN of the objective, written out by hand)
    a_term = law.loss_param_coeff * best.params ** -law.loss_param_exponent
    r = target - law.loss_irreducible - a_term
    slope = 6 * best.tokens * (1 - law.loss_param_exponent / law.loss_data_exponent * a_term / r) + 2 * demand
    assert abs(slope) < 1e-6 * 6 * best.tokens
    assert best.params < life.chinchilla.params                                        # inference pushes the size down


@pytest.mark.parametrize("call,field", [
    (lambda m: scaling.optimum(m, BESIROGLU, 0), "compute"),
    (lambda m: scaling.band(m, BESIROGLU, 7e9, 0), "overhead"),
    (lambda m: scaling.band(m, BESIROGLU, -1, 0.1), "params"),
    (lambda m: scaling.lifecycle(m, BESIROGLU, 1.8, 1e12), "target_loss"),          # below E = 1.8172
    (lambda m: scaling.lifecycle(m, BESIROGLU, 2.1, -1), "inference_tokens"),
    (lambda m: scaling.lifecycle(m, BESIROGLU, 2.1, 1e12, compare=(1e6,)), "compare"),
])
def test_bad_input_names_the_parameter(module, call, field):
    with pytest.raises(InputError) as err:
        call(module)
    assert err.value.field == field
