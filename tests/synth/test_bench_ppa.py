"""make bench-ppa's verdicts (synth/bench_ppa.py): each target judged on the netlist mapped for
its own delay, a figure at its limit passing and one unit above it failing."""

from types import SimpleNamespace

import pytest

from fpforge.synth.bench_ppa import AREA_FIFTH, TARGETS, mapped_delays, verdicts


def _record(ge, ps):
    return SimpleNamespace(asic=SimpleNamespace(ge=ge, delay_ps=ps))


def _at_the_limits():
    """Per netlist, the tightest limit of each figure among the targets judged on it."""
    tightest = {}
    for t in TARGETS:
        ge, ps = tightest.get(t.design_name, (float("inf"), float("inf")))
        tightest[t.design_name] = (min(ge, t.limit), ps) if t.figure == "ge" else \
            (ge, min(ps, t.limit))
    return {name: _record(ge, None if ps == float("inf") else ps)
            for name, (ge, ps) in tightest.items()}


def test_each_target_is_judged_on_the_netlist_mapped_for_its_own_delay():
    # fp8e4m3 mul: the project's targets at 1200 ps, the last fifth's at 1110 ps
    assert mapped_delays("mul", "fp8e4m3") == [1200, 1110]
    assert {t.design_name for t in TARGETS if t.fmt == "fp8e4m3"} == \
        {"fp_mul_e4m3fn_rne_timed1200", "fp_mul_e4m3fn_rne_timed1110"}
    # fp16 and bf16 mul: every target, 0.8x the area included, at HardFloat's delay
    for fmt, ps in (("fp16", 2514), ("bf16", 2279)):
        assert mapped_delays("mul", fmt) == [ps]
        assert {t.mapped_ps for t in TARGETS if (t.unit, t.fmt) == ("mul", fmt)} == {ps}
    assert mapped_delays("add", "fp16") == [] and \
        [t.design_name for t in TARGETS if t.unit == "add"] == ["fp_add_e5m10_rne"]


def test_a_figure_at_its_limit_passes_and_one_above_it_misses():
    records = _at_the_limits()
    assert all(v == "PASS" for _, _, v in verdicts(records))
    bf16 = "fp_mul_e8m7_rne_timed2279"
    assert records[bf16].asic.ge == pytest.approx(AREA_FIFTH * 1193)
    records[bf16] = _record(records[bf16].asic.ge + 1, records[bf16].asic.delay_ps)
    missed = [t.source for t, _, v in verdicts(records) if v == "MISS"]
    assert missed == ["0.8x HardFloat bf16 mul"]
