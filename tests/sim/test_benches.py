"""The cocotb benches against the RTL: the quick matrix of ``make test``.

Every unit on both simulators (``SIM=icarus`` or ``SIM=verilator`` keeps one), 8-bit formats
exhaustively; dynamic rounding with rm changing every cycle, stochastic rounding with random
rbits, a 2-stage pipeline with bubbles, and the 16-bit tier (corner classes crossed, relations,
biased random). Rerun one case with ``pytest tests/sim/test_benches.py -k '<id>'``.
"""

import pytest

from rtl.spec import UnitSpec
from sim.bench import runner
from sim.bench.harness import Harness
from sim.bench.tiers import case_id, config_for, simulators, stimulus_for


def check(spec, sim, **kw):
    result = runner.run(config_for(spec, sim, **kw), sim)
    if not result.ok:
        pytest.fail(result.explain(), pytrace=False)
    assert result["mismatches"] == 0 and result["vectors"] > 0
    return result


# Every unit, exhaustively on 8-bit (fma: 4-bit) formats, on each simulator.
EVERY_UNIT = [
    UnitSpec.create("mul", "fp8e4m3"),
    UnitSpec.create("add", "fp8e5m2"),
    UnitSpec.create("fma", "fp4e2m1"),
    UnitSpec.create("cvt", "fp8e4m3", in_fmt="fp16"),
]


@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("spec", EVERY_UNIT, ids=case_id)
def test_every_unit_exhaustive(spec, sim):
    result = check(spec, sim)
    assert result["vectors"] == 1 << sum(f.width for f in spec.in_fmts)


# More 8-bit formats and options, exhaustively, on Icarus (compiles in seconds); the first two
# in the quick matrix, the rest with the slow sweeps (CI time).
ICARUS_ONLY = [
    UnitSpec.create("add", "fp8e4m3"),
    UnitSpec.create("mul", "e8m0", rounding="rup"),
] + [pytest.param(s, marks=pytest.mark.slow) for s in [
    UnitSpec.create("mul", "fp8e5m2"),
    UnitSpec.create("mul", "fp8e4m3fnuz", rounding="rtz"),
    UnitSpec.create("add", "float8_e3m4", rounding="rna", saturate=True),
    UnitSpec.create("add", "fp8e5m2fnuz", rounding="rdn", subnormals=False),
    UnitSpec.create("add", "fp6e3m2", rounding="rod"),
    UnitSpec.create("cvt", "bf16", in_fmt="fp8e5m2"),
]]


@pytest.mark.parametrize("spec", ICARUS_ONLY, ids=case_id)
def test_8bit_exhaustive(spec):
    if "icarus" not in simulators():
        pytest.skip("SIM selects another simulator")
    check(spec, "icarus")


@pytest.mark.parametrize("spec", [UnitSpec.create("add", "fp8e4m3", rounding="dynamic"),
                                  UnitSpec.create("fma", "fp4e2m1", rounding="dynamic")],
                         ids=case_id)
def test_dynamic_rounding_changes_every_cycle(spec):
    # Stimulus draws rm per vector (codes 0..7, reserved ones too): a new mode every cycle.
    check(spec, simulators()[0])


@pytest.mark.parametrize("spec", [UnitSpec.create("mul", "fp8e5m2", rounding="stochastic"),
                                  pytest.param(UnitSpec.create("cvt", "fp8e4m3", in_fmt="bf16",
                                                               rounding="stochastic", sr_bits=4),
                                               marks=pytest.mark.slow)],
                         ids=case_id)
def test_stochastic_rounding_random_bits(spec):
    check(spec, simulators()[0], seed=7)


# Regression: these read x bits on Icarus (flags of the 2-stage add, every output of the 2-stage
# fma) while the benches compiled with -g2012, where a declaration initializer is no event and
# Yosys's time-0 trigger for ``always @*`` blocks never fires (sim/bench/runner.py ICARUS_ARGS).
@pytest.mark.parametrize("spec", [UnitSpec.create("add", "fp8e4m3", stages=2),
                                  UnitSpec.create("fma", "fp4e2m1", stages=2, rounding="dynamic")],
                         ids=case_id)
@pytest.mark.parametrize("bubbles", [0.0, 0.4], ids=["back-to-back", "bubbles"])
def test_pipelined_back_to_back_and_bubbles(spec, bubbles):
    check(spec, simulators()[0], bubbles=bubbles, seed=3)


@pytest.mark.parametrize("spec", [UnitSpec.create("add", "fp16"),
                                  UnitSpec.create("mul", "bf16"),
                                  UnitSpec.create("fma", "fp8e4m3")], ids=case_id)
def test_corner_classes_and_biased_random(spec):
    # The quick matrix draws 8k biased-random vectors on top of corners and relations; the
    # full matrix (make verify) draws 64k.
    check(spec, simulators()[0], seed=11, stimulus=stimulus_for(spec, sample=8192))


def test_verilator_reuses_its_compiled_runtime(tmp_path):
    """Verilator's run-time library is compiled once per flag set: a new design's build compiles
    only the design's own code, links the kept objects, and its bench still runs."""
    if "verilator" not in simulators():
        pytest.skip("SIM selects another simulator")
    spec = UnitSpec.create("fma", "fp4e2m1")
    cfg = config_for(spec, "verilator")
    runner.build(cfg, "verilator")                 # the first build keeps the objects
    h = Harness(spec, cfg.lanes, cfg.steps)
    fresh = runner.build_top("verilator", tmp_path / "fresh", h.name, h.verilog(), waves=False)
    log = (fresh / "build.log").read_text()
    assert "-o Vtop__ALL.o" in log and "-o verilated.o" not in log
    result = runner.run(cfg, "verilator", build_dir=fresh)
    assert result.ok and result["vectors"] == 1 << 12, result.explain()
