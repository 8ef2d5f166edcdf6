"""calc:power-tco: worked examples, ranges, boundaries, the CLI.

Every expected number is hand arithmetic written beside it from a cited public source: the
book's calculators README `tco` example and test vectors (cdavid817/AI-Infra
calculators/README and calculators/tests/test_calculators.py@a98dbf79: 1000 GPUs, 1000 W,
capex 200000, price 0.6, 50 person-months -> IT 1400 kW, facility 1820 kW; 100 GPUs x 700 W),
the book's chapter 31 (section 31.2.4: 1000 cards of 1 kW, alpha 1.4, PUE 1.5 vs 1.2, 0.7 yuan per
kWh, 70% load, about 9 and 7.2 million yuan a year; section 31.3.2: 30-80 person-months at 80
thousand), NVIDIA's DGX H100 datasheet (8 x H100 SXM at 700 W, system power about 10.2 kW max).
Money is carried in the currency of the price inputs: the book's figures are yuan (CNY) and
come out in yuan, though the engine names its money unit USD.
"""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.core.errors import InputError
from engine.core.paths import shipped_root
from engine.numeric.calculators import Calculator, load_records, run


@pytest.fixture(scope="module")
def records():
    return load_records(shipped_root())


def tco(records, module, **given):
    return run(Calculator.from_record(records["calc:power-tco"]), module, given)


def out(result, name):
    return result.outputs[name].value


BOOK_README = dict(it_power_model="host_factor", n_gpus=1000, gpu_tdp="1000W", capex_per_gpu=200000, electricity_price=0.6,
                   ecosystem_person_months=50)


def test_book_readme_tco_example(records, module):
    # book README: power_tco(1000, 1000, capex 200000, price 0.6, 50 person-months), defaults alpha 1.4,
    # PUE 1.3, 4 years, person-month 80000
    r = tco(records, module, **BOOK_README)
    assert out(r, "it_power") == pytest.approx(1000 * 1000 * 1.4)  # 1.4e6 W = 1400 kW (IT 功率)
    assert out(r, "facility_power") == pytest.approx(1.4e6 * 1.3)  # 1.82e6 W = 1820 kW (设施功率)
    assert out(r, "facility_energy") == pytest.approx(1820 * 8760)  # 15943200 kWh = 1594.32 万 kWh (年耗电)
    assert out(r, "power_cost_per_year") == pytest.approx(15943200 * 0.6)  # 9565920 = 956.592 万元 (年电费)
    assert out(r, "capex_per_year") == pytest.approx(1000 * 200000 / 4)  # 5e7
    assert out(r, "ecosystem_cost") == pytest.approx(50 * 80000)  # 4e6, spread over 4 years: 1e6 a year
    # 年化 TCO: 5e7 + 9565920 + 0 + 4e6 / 4 = 60565920 = 6056.592 万元
    assert out(r, "tco_per_year") == pytest.approx(60565920)
    # per installed GPU-hour: 60565920 / 1000 / 8760 = 6.9139178
    assert out(r, "gpu_hour_cost") == pytest.approx(60565920 / 1000 / 8760)
    assert out(r, "dcie") == pytest.approx(1 / 1.3)  # DCiE = 1/PUE (The Green Grid) = 0.769 (76.9%)
    assert r.formulas == ["FX140", "FX2", "FX142", "FX84", "FX85", "FX89", "FX148", "FX90", "FX91", "FX750"]


def test_book_ch31_air_versus_liquid(records, module):
    # ch31 §31.2.4: 1000 x 1 kW x alpha 1.4 = 1.4 MW IT; 0.7 per kWh, 70% load rate.
    # air PUE 1.5: 2100 kW x 8760 x 0.7 x 0.7 = 9014040 (about 900 万); liquid PUE 1.2: 1680 kW -> 7211232 (about 720 万)
    base = dict(BOOK_README, electricity_price=0.7, utilization=0.7, ecosystem_person_months=0)
    air, liquid = tco(records, module, **base, pue=1.5), tco(records, module, **base, pue=1.2)
    assert out(air, "power_cost_per_year") == pytest.approx(2100 * 8760 * 0.7 * 0.7)
    assert out(liquid, "power_cost_per_year") == pytest.approx(1680 * 8760 * 0.7 * 0.7)
    assert out(air, "power_cost_per_year") == pytest.approx(9.0e6, rel=0.005)
    assert out(liquid, "power_cost_per_year") == pytest.approx(7.2e6, rel=0.005)
    # the yearly saving the book weighs against the retrofit: 9014040 - 7211232 = 1802808
    assert out(air, "power_cost_per_year") - out(liquid, "power_cost_per_year") == pytest.approx(1802808)


def test_dgx_h100_system_power(records, module):
    # NVIDIA DGX H100 datasheet: 8 x H100 SXM (700 W each), system power about 10.2 kW max:
    # per node 8 x 700 + 4600 W of other load = 10200 W; or the system figure directly
    per_node = tco(records, module, n_gpus=8, gpu_tdp="700W", gpus_per_node=8, node_overhead_power="4600W",
                   capex_per_gpu=30000, electricity_price=0.1, pue=1.0)
    system = tco(records, module, it_power_model="node_power", n_gpus=8, gpus_per_node=8, node_power="10.2kW",
                 capex_per_gpu=30000, electricity_price=0.1, pue=1.0)
    assert out(per_node, "it_power") == out(system, "it_power") == pytest.approx(10200)
    # the book's alpha for the same box: 10200 / 5600 = 1.82, above its typical 1.3-1.5
    host = tco(records, module, it_power_model="host_factor", n_gpus=8, gpu_tdp="700W", host_overhead=10200 / 5600,
               capex_per_gpu=30000, electricity_price=0.1, pue=1.0)
    assert out(host, "it_power") == pytest.approx(10200)


def test_thousand_h100_cluster_in_usd(records, module):
    # 1024 H100 SXM in 128 DGX-class nodes (ceil(1024 / 8) = 128): 1024 x 700 + 128 x 4600 = 1305600 W IT;
    # cold-plate PUE 1.2 (ch31): 1566720 W; at 0.08 USD/kWh all year: 1566.72 x 8760 x 0.08 = 1097957.376 USD;
    # capex 30000 USD per card over the book's conservative 3 years: 1024 x 30000 / 3 = 10240000 USD;
    # 1.5 M USD of staff: TCO = 10240000 + 1097957.376 + 1500000 = 12837957.376 USD a year;
    # per GPU-hour 12837957.376 / 1024 / 8760 = 1.4311941 USD
    r = tco(records, module, n_gpus=1024, gpu_tdp="700W", gpus_per_node=8, node_overhead_power="4600W", pue=1.2,
            electricity_price="0.08USD/kWh", capex_per_gpu="30000USD", depreciation_period="3yr", ops_cost_per_year=1.5e6)
    assert out(r, "it_power") == pytest.approx(1305600)
    assert out(r, "facility_power") == pytest.approx(1566720)
    assert out(r, "power_cost_per_year") == pytest.approx(1566.72 * 8760 * 0.08)
    assert out(r, "capex_per_year") == pytest.approx(10240000)
    assert out(r, "tco_per_year") == pytest.approx(12837957.376)
    assert out(r, "gpu_hour_cost") == pytest.approx(12837957.376 / 1024 / 8760)
    assert "FX141" in r.formulas  # nodes derived from the card count


def test_book_test_vector_energy(records, module):
    # book test vector power_tco(100, 700): 100 x 700 x 1.4 = 98 kW IT x 1.3 = 127.4 kW; x 8760 = 1116024 kWh
    r = tco(records, module, it_power_model="host_factor", n_gpus=100, gpu_tdp="700W", capex_per_gpu=0, electricity_price=0.6)
    assert out(r, "it_power") == pytest.approx(98000)
    assert out(r, "facility_energy") == pytest.approx(1116024)


def test_utilization_scales_power_between_idle_and_full(records, module):
    # ch31: power scales with the load rate u (no idle floor by default): 30% -> load factor 0.3; with
    # Barroso and Hölzle's half-power idle: 0.3 + 0.7 x 0.5 = 0.65
    base = dict(BOOK_README, ecosystem_person_months=0)
    plain = tco(records, module, **base, utilization=0.3)
    floor = tco(records, module, **base, utilization=0.3, idle_power_fraction=0.5)
    assert out(plain, "load_factor") == pytest.approx(0.3)
    assert out(floor, "load_factor") == pytest.approx(0.65)
    assert out(plain, "power_cost_per_year") == pytest.approx(9565920 * 0.3)
    assert out(floor, "power_cost_per_year") == pytest.approx(9565920 * 0.65)
    # ch31 §31.4: below about 40% utilisation owning loses its edge
    assert any("40% utilisation" in w for w in plain.warnings)
    # doubling utilisation doubles the bill without an idle floor (ch31's u in Cost_power)
    double = tco(records, module, **base, utilization=0.6)
    assert out(double, "power_cost_per_year") == pytest.approx(2 * out(plain, "power_cost_per_year"))


def test_ecosystem_person_months_range_is_exact(records, module):
    # ch31 §31.3.2: 30-80 person-months at 80 thousand = 2.4-6.4 million (240-640 万)
    r = tco(records, module, **{**BOOK_README, "ecosystem_person_months": "30..80"})
    e = r.outputs["ecosystem_cost"]
    assert e.method == "exact" and (e.low, e.high) == (pytest.approx(2.4e6), pytest.approx(6.4e6))
    t = r.outputs["tco_per_year"]  # 5e7 + 9565920 + (2.4e6..6.4e6) / 4
    assert t.method == "exact" and (t.low, t.high) == (pytest.approx(60165920), pytest.approx(61165920))


def test_impossible_pue_is_a_warning(records, module):
    r = tco(records, module, **BOOK_README, pue=0.9)
    assert any("PUE below 1 is impossible" in w for w in r.warnings)


def test_missing_and_bad_inputs_name_them(records, module):
    with pytest.raises(InputError) as exc:
        tco(records, module, n_gpus=8, gpu_tdp="700W", capex_per_gpu=30000, electricity_price=0.1)  # per_node needs gpus_per_node
    named = [m.field for m in getattr(exc.value, "missing", [exc.value])]  # every missing input at once
    assert named and set(named) <= {"--set gpus_per_node", "--set n_nodes", "--set node_overhead_power"}
    with pytest.raises(InputError) as exc:
        tco(records, module, **{**BOOK_README, "gpu_tdp": "1000GB"})
    assert exc.value.field == "--set gpu_tdp"


# ---------------------------------------------------------------------- CLI


def test_cli_book_readme_json(capsys):
    argv = ["calc", "power-tco", "--set", "it_power_model=host_factor", "--set", "n_gpus=1000", "--set", "gpu_tdp=1000W",
            "--set", "capex_per_gpu=200000", "--set", "electricity_price=0.6", "--set", "ecosystem_person_months=50",
            "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outputs"]["tco_per_year"]["value"] == pytest.approx(60565920)  # 6056.592 万元
    assert data["outputs"]["facility_power"]["value"] == pytest.approx(1.82e6)
    assert data["inputs"]["pue"]["source"].startswith("default: ")


def test_cli_help_and_bad_input(capsys):
    assert main(["calc", "power-tco", "--help"]) == 0
    assert "electricity_price_per_kwh" in capsys.readouterr().out  # the book's term
    code = main(["calc", "power-tco", "--set", "n_gpus=0"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--set n_gpus" in err


def test_cli_host_overhead_below_one_refused(capsys):
    # α < 1 would mean servers draw less than their cards (book tco calculator refuses it); the symbol's
    # domain ge_one refuses it (it used to be only a warning, exit 0)
    code = main(["calc", "power-tco", "--set", "it_power_model=host_factor", "--set", "n_gpus=8", "--set", "gpu_tdp=700W",
                 "--set", "host_overhead=0.9", "--set", "capex_per_gpu=200000", "--set", "electricity_price=0.6"])
    captured = capsys.readouterr()
    assert (code, captured.out, captured.err) == (2, "", "aiinfra: error: --set host_overhead: expected a number >= 1, got 0.9\n")
