"""Energy per MAC of a pareto configuration and the roofline's iso-power array
(codesign/energy.py, codesign/roofline.py): the arithmetic, against SI-unit recomputations."""

from __future__ import annotations

import json

import pytest

from fpforge.cli import main
from fpforge.codesign import energy, pareto, pareto_report, roofline
from fpforge.golden.gemm_config import GemmConfig

# A unit's power object as the synthesis record holds it (µW at clock_ps).
DOT = {"data": "gaussian", "vectors": 64, "clock_ps": 4000.0, "internal_uw": 300.0,
       "switching_uw": 200.0, "leakage_uw": 2.0, "energy_pj": 2.008}
ADDER = {"data": "gaussian", "vectors": 64, "clock_ps": 3000.0, "internal_uw": 40.0,
         "switching_uw": 20.0, "leakage_uw": 0.5, "energy_pj": 0.1815}


def _joules(power, step_s):
    """SI units: (internal + switching) W x the unit's own period s, leakage W x the step's."""
    return ((power["internal_uw"] + power["switching_uw"]) * 1e-6 * power["clock_ps"] * 1e-12,
            power["leakage_uw"] * 1e-6 * step_s)


def test_a_unit_alone_at_its_own_clock_gives_its_records_energy():
    dynamic, leak = energy.unit_energy_pj(DOT, DOT["clock_ps"])
    assert dynamic + leak == pytest.approx(DOT["energy_pj"], rel=1e-12)
    d, lk = _joules(DOT, 9e-9)
    assert energy.unit_energy_pj(DOT, 9000.0) == pytest.approx((d * 1e12, lk * 1e12), rel=1e-12)


def test_a_promoted_step_charges_the_float32_adder_per_promotion_and_its_leakage_always():
    c = GemmConfig("fp8e4m3", block=32, accum="bf16_promote128")
    fire = pareto.firings(c)
    assert fire == {"dot": 1.0, "adder": 1.0, "promotion": 32 / 128}
    units = {"dot": DOT, "adder": ADDER, "promotion": ADDER}
    step_ps = 7000.0
    e = energy.step_energy(units, fire, pareto.lanes(c), step_ps)
    j = {role: _joules(p, step_ps * 1e-12) for role, p in units.items()}
    dynamic = j["dot"][0] + j["adder"][0] + j["promotion"][0] / 4
    leakage = sum(lk for _, lk in j.values())
    assert e.pj == pytest.approx((dynamic + leakage) * 1e12, rel=1e-12)
    assert e.pj_per_mac == pytest.approx(e.pj / 32, rel=1e-12)
    assert e.leakage_pj_per_mac == pytest.approx(leakage * 1e12 / 32, rel=1e-12)
    # TFLOPS/W from power and rate: the step's power and its 2 x 32 FLOP per period
    watts = (dynamic + leakage) / (step_ps * 1e-12)
    flops = 2 * 32 / (step_ps * 1e-12)
    assert e.tflops_per_w == pytest.approx(flops / watts / 1e12, rel=1e-12)


def test_a_tensor_core_step_is_one_unit_over_its_group():
    c = GemmConfig("fp8e4m3", accum="hopper_fp8", scaling="channel")
    assert pareto.firings(c) == {"dot": 1.0} and pareto.lanes(c) == 32


def _row(name, pj, q, **kw):
    return pareto_report.Row(name, "e", "e", "block", 32, "floor", "rne", "fp32", 8.25,
                             qsnr_dot_db=q, pj_per_mac_gaussian=pj, ge_per_mac=1.0, **kw)


def test_the_energy_front_is_drawn_on_energy_not_area():
    rows = [_row("cheap", 0.1, 10.0), _row("dear-good", 0.5, 30.0), _row("dominated", 0.6, 20.0),
            _row("no-energy", None, 40.0)]
    assert pareto_report.front(rows, cost="pj_per_mac_gaussian") == [True, True, False, False]
    # on area (every row 1 GE) only the best quality with a cost survives
    assert pareto_report.front(rows) == [False, False, False, True]


ROW = {"config": "fp8e4m3 k32", "elem_a": "fp8e4m3", "scaling": "block", "block": 32,
       "accum": "fp32", "bits_per_elem": 8.25, "ge_per_mac": 800.0, "delay_ps": 8000.0,
       "qsnr_dot_db": 27.7, "minilm_qsnr_db": 20.0, "digits_acc": 0.97,
       "um2_per_mac": 50.0, "energy_step_ps": 5000.0, "pj_per_mac_gaussian": 0.2,
       "pj_per_mac_minilm": 0.15, "leakage_pj_per_mac": 0.01}


def test_iso_power_peak_is_power_over_energy_per_mac_and_its_area_follows():
    fig, = roofline.roofline_rows([ROW], roofline.Machine(power_w=10.0))
    macs_per_s = 10.0 / 0.2e-12
    assert fig["peak_tmacs"] == pytest.approx(macs_per_s / 1e12, rel=1e-3)
    assert fig["clock_mhz"] == 200.0 and fig["tflops_per_w"] == pytest.approx(10.0)
    # MAC units = MAC/s / clock, each 50 µm²
    assert fig["array_mm2"] == pytest.approx(macs_per_s / 200e6 * 50.0 / 1e6, rel=1e-3)
    minilm, = roofline.roofline_rows([ROW], roofline.Machine(power_w=10.0, power_data="minilm"))
    assert minilm["peak_tmacs"] == pytest.approx(10.0 / 0.15e-12 / 1e12, rel=1e-3)
    # a clock at half the step's rate leaks over twice the period: one more leakage share
    slow, = roofline.roofline_rows([ROW], roofline.Machine(power_w=10.0, clock_mhz=100.0))
    assert slow["pj_per_mac"] == pytest.approx(0.21) and slow["clock_mhz"] == 100.0
    assert slow["array_mm2"] == pytest.approx(10.0 / 0.21e-12 / 100e6 * 50.0 / 1e6, rel=1e-3)
    # rows without an energy are left out; the area budget has no say
    assert roofline.roofline_rows([dict(ROW, pj_per_mac_gaussian=None)],
                                  roofline.Machine(power_w=10.0)) == []
    big, = roofline.roofline_rows([ROW], roofline.Machine(power_w=10.0, area_mm2=1.0))
    assert big["peak_tmacs"] == fig["peak_tmacs"]


def test_roofline_writes_the_iso_power_report_and_refuses_a_bad_data_set(tmp_path, capsys):
    path = tmp_path / "pareto.json"
    path.write_text(json.dumps({"meta": {}, "rows": [ROW]}))
    assert main(["roofline", "--pareto", str(path), "--power-w", "5"]) == 0
    data = json.loads((tmp_path / "roofline.json").read_text())
    assert data["assumptions"]["power_w"] == 5 and data["formats"][0]["pj_per_mac"] == 0.2
    text = (tmp_path / "roofline.md").read_text()
    assert "iso-power, 5 W" in text and "| 5000 | 0.2 | 10 |" in text
    capsys.readouterr()
    assert main(["roofline", "--pareto", str(path), "--power-w", "5",
                 "--power-data", "uniform"]) == 2
    err = capsys.readouterr().err
    assert "--power-data must be one of gaussian, minilm, not 'uniform'" in err
    assert err.count("\n") == 1
