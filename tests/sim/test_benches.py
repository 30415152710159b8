"""The cocotb benches against the RTL: the quick matrix of ``make test``.

Every kind on Icarus and the 4-bit fma on Verilator (every kind on both with the slow sweeps;
``SIM=icarus`` or ``SIM=verilator`` keeps one), 8-bit formats exhaustively; dynamic rounding
with rm changing every cycle, stochastic rounding with random rbits, a 2-stage pipeline with
bubbles, and the 16-bit tier (corner classes crossed, relations, biased random). Rerun one case with ``pytest tests/sim/test_benches.py -k '<id>'``.
"""

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.cocotb import CocotbEngine, build_top
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import case_id, simulators, stimulus_for


def check(spec, sim, *, stimulus=None, seed=1, bubbles=0.0):
    plan = Plan(stimulus or stimulus_for(spec), seed=seed, bubbles=bubbles)
    result = CocotbEngine(sim).verify(Design.of(spec), plan)
    if not result.ok:
        pytest.fail(result.explain(), pytrace=False)
    assert result["mismatches"] == 0 and result["vectors"] > 0
    return result


# Every scalar kind, exhaustively on 8-bit (fma: 4-bit) formats, on each simulator.
EVERY_UNIT = [
    make_spec("mul", format="fp8e4m3"),
    make_spec("add", format="fp8e5m2"),
    make_spec("sub", format="fp6e2m3", rounding="rdn"),
    make_spec("fma", format="fp4e2m1"),
    make_spec("cvt", format="fp8e4m3", in_format="fp16"),
]


def every_unit_cases():
    """Every unit on Icarus; on Verilator the 4-bit fma only (its build is the one
    test_verilator_reuses_its_compiled_runtime reuses), the others with the slow sweeps: the
    harness and engine are one for every kind, and the Icarus members prove each unit."""
    both = len(simulators()) > 1
    return [pytest.param(spec, sim, id=f"{case_id(spec)}-{sim}",
                         marks=[pytest.mark.slow] * (both and sim == "verilator" and
                                                     spec.unit != "fma"))
            for sim in simulators() for spec in EVERY_UNIT]


@pytest.mark.parametrize("spec, sim", every_unit_cases())
def test_every_unit_exhaustive(spec, sim):
    result = check(spec, sim)
    assert result["vectors"] == 1 << sum(f.width for f in spec.in_fmts)


def test_a_module_without_flags_is_checked_on_the_rest():
    """A design that lacks an output of the spec is compared on the others, and says so."""
    spec = make_spec("mul", format="fp8e4m3")
    full = Design.of(spec)
    no_flags = Design(spec=spec, top=full.top, ports=full.ports, text=full.text,
                      absent=("flags",), label=full.label + "_noflags")
    result = CocotbEngine(simulators()[0]).verify(no_flags, Plan([["corners", {}]]))
    assert result.ok and result["compared"] == ["y"] and result["not_compared"] == ["flags"]


# More 8-bit formats and options, exhaustively, on Icarus (compiles in seconds); the e8m0 mul in
# the quick matrix, the rest with the slow sweeps (CI time; the fp8e4m3 add's every input runs in
# test_pipelined_back_to_back_and_bubbles[bubbles-add-float8_e4m3fn-rne-s2]).
ICARUS_ONLY = [
    make_spec("mul", format="e8m0", rounding="rup"),
] + [pytest.param(s, marks=pytest.mark.slow) for s in [
    make_spec("add", format="fp8e4m3"),
    make_spec("mul", format="fp8e5m2"),
    make_spec("mul", format="fp8e4m3fnuz", rounding="rtz"),
    make_spec("add", format="float8_e3m4", rounding="rna", saturate=True),
    make_spec("add", format="fp8e5m2fnuz", rounding="rdn", subnormals=False),
    make_spec("add", format="fp6e3m2", rounding="rod"),
    make_spec("cvt", format="bf16", in_format="fp8e5m2"),
]]


@pytest.mark.parametrize("spec", ICARUS_ONLY, ids=case_id)
def test_8bit_exhaustive(spec):
    if "icarus" not in simulators():
        pytest.skip("SIM selects another simulator")
    check(spec, "icarus")


# The add's rm reaches the rounder every unit shares as the fma's does: the add with the slow
# sweeps, the fma proving the claim in the quick set.
@pytest.mark.parametrize("spec", [pytest.param(make_spec("add", format="fp8e4m3",
                                                         rounding="dynamic"),
                                               marks=pytest.mark.slow),
                                  make_spec("fma", format="fp4e2m1", rounding="dynamic")],
                         ids=case_id)
def test_dynamic_rounding_changes_every_cycle(spec):
    # Stimulus draws rm per vector (codes 0..7, reserved ones too): a new mode every cycle.
    check(spec, simulators()[0])


@pytest.mark.parametrize("spec", [make_spec("mul", format="fp8e5m2", rounding="stochastic"),
                                  pytest.param(make_spec("cvt", format="fp8e4m3", in_format="bf16",
                                                               rounding="stochastic", sr_bits=4),
                                               marks=pytest.mark.slow)],
                         ids=case_id)
def test_stochastic_rounding_random_bits(spec):
    check(spec, simulators()[0], seed=7)


# Regression: these read x bits on Icarus (flags of the 2-stage add, every output of the 2-stage
# fma) while the benches compiled with -g2012, where a declaration initializer is no event and
# Yosys's time-0 trigger for ``always @*`` blocks never fires (sim/engines/cocotb.py ICARUS_ARGS).
# The add back to back runs with the slow sweeps: its x bits showed in either timing, and the
# fma proves back to back in the quick set.
PIPELINED = [make_spec("add", format="fp8e4m3", stages=2),
             make_spec("fma", format="fp4e2m1", stages=2, rounding="dynamic")]


@pytest.mark.parametrize("spec, bubbles", [
    pytest.param(spec, bubbles, id=f"{timing}-{case_id(spec)}",
                 marks=[pytest.mark.slow] * (spec.unit == "add" and not bubbles))
    for timing, bubbles in (("back-to-back", 0.0), ("bubbles", 0.4)) for spec in PIPELINED])
def test_pipelined_back_to_back_and_bubbles(spec, bubbles):
    check(spec, simulators()[0], bubbles=bubbles, seed=3)


# Every placement of the cut points --clock-ps chooses among, exhaustively on an 8-bit mul and a
# 4-bit fma whose rounding mode travels with the data; an extra output stage on one. The mul and
# add with a cut at every point they have (s4-cut-decode-product-core-round,
# s4-cut-decode-align-core-round) register what crosses each point: their partial placements
# run with the slow sweeps.
PARTIAL_CUTS = [make_spec("mul", format="fp8e4m3", cuts=c) for c in
                ("decode", "product", "round", "decode,core", "decode,product,round")] + \
    [make_spec("add", format="fp8e5m2", cuts="align")]


@pytest.mark.parametrize("spec", [pytest.param(s, marks=pytest.mark.slow) for s in PARTIAL_CUTS] +
                         [make_spec("mul", format="fp8e4m3", cuts="decode,product,core,round"),
                          make_spec("add", format="fp8e5m2", cuts="decode,align,core,round")] +
                         [make_spec("sub", format="fp6e2m3", rounding="stochastic", cuts="align"),
                          make_spec("fma", format="fp4e2m1", rounding="dynamic", cuts="decode",
                                    stages=2),
                          make_spec("fma", format="fp4e2m1", rounding="dynamic",
                                    cuts="product,align"),
                          make_spec("fms", format="fp4e2m1", cuts="decode,product,align,core,round"),
                          make_spec("cvt", format="fp8e5m2", in_format="fp16", cuts="decode,round")],
                         ids=case_id)
def test_every_cut_placement(spec):
    check(spec, simulators()[0], bubbles=0.3, seed=5)


def tier_simulator(spec) -> str:
    """The simulator SIM names, else Icarus, but Verilator for the 8-bit fma: its three crossed
    operands' corners make the largest stimulus, which Verilator's run repays its build on
    (measured, build and run: 8 CPU-s against 29 on Icarus; the add and mul cost less on
    Icarus)."""
    if len(simulators()) == 1:
        return simulators()[0]
    return "verilator" if spec.unit == "fma" else "icarus"


@pytest.mark.parametrize("spec", [make_spec("add", format="fp16"),
                                  make_spec("mul", format="bf16"),
                                  make_spec("fma", format="fp8e4m3")], ids=case_id)
def test_corner_classes_and_biased_random(spec):
    # The quick matrix draws 8k biased-random vectors on top of corners and relations; the
    # full matrix (make verify) draws 64k.
    check(spec, tier_simulator(spec), seed=11, stimulus=stimulus_for(spec, sample=8192))


def test_verilator_reuses_its_compiled_runtime(tmp_path):
    """Verilator's run-time library is compiled once per flag set: a new design's build compiles
    only the design's own code, links the kept objects, and its bench still runs."""
    if "verilator" not in simulators():
        pytest.skip("SIM selects another simulator")
    design = Design.of(make_spec("fma", format="fp4e2m1"))
    eng = CocotbEngine("verilator")
    eng.build(design)                              # the first build keeps the objects
    h = eng.harness(design)
    fresh = build_top("verilator", tmp_path / "fresh", h.name, h.verilog(), waves=False)
    log = (fresh / "build.log").read_text()
    assert "-o Vtop__ALL.o" in log and "-o verilated.o" not in log
    result = eng.verify(design, Plan([["exhaustive", {}]]), build_dir=fresh)
    assert result.ok and result["vectors"] == 1 << 12, result.explain()


def test_make_verify_matrix_runs_its_cases():
    """The matrix path of make verify (each case labelled by its pytest-style id, in worker
    processes): regression test of labels with dashes in the bench's module name."""
    from fpforge.sim.verify import verify_matrix
    specs = [make_spec("add", format="fp4e2m1"), make_spec("mul", format="fp4e2m1", stages=1)]
    verdicts = verify_matrix(specs, sim=simulators()[0], jobs=2, log=lambda *_: None)
    assert [v.name for v in verdicts] == [case_id(s) for s in specs]
    assert all(v.ok and v.vectors == 256 for v in verdicts), [v.explain() for v in verdicts]
