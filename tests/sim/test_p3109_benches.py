"""The RTL on P3109 formats and saturation modes, bit for bit against the golden model.

Every input of each unit (fma: a sample) on the native Verilator engine; two cases on the cocotb
bench too; and deliberately wrong variants (SatFinite where SatPropagate or SatNone was asked)
caught, and StochasticA where B or C was asked. make test runs every unit kind, format and mode
at least once and each fault once; make test-all the other pairings. The full cross of formats
x units x modes is ``make verify-p3109`` (docs/verification.md).
"""

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.cocotb import CocotbEngine
from fpforge.sim.faults import faulty_design
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import case_id, simulators, stimulus_for
from fpforge.sim.verify import verify_exhaustive

# The minimum conformance set (Binary8p4se, Binary8p3se, Binary4p2sf, scale Binary8p1uf) and
# the unsigned extended kind, across the unit kinds and the three saturation modes. SLOW: in
# make test-all only; its format, unit and modes are in the make-test cases named beside it.
SLOW = pytest.mark.slow
CASES = [
    pytest.param(make_spec("mul", format="binary8p4se", rounding="dynamic"),
                 marks=SLOW),       # [mul-float8_e4m3fnuz-rne], [add-Binary8p4se-stochastic_c]
    make_spec("add", format="binary8p3se", rounding="dynamic", saturation="propagate"),
    pytest.param(make_spec("mul", format="binary8p1uf", rounding="dynamic"),
                 marks=SLOW),       # [cvt-bfloat16-to-Binary8p1uf-..], [mul-float8_e4m3fnuz-rne]
    make_spec("add", format="binary8p3ue", rounding="rod"),
    make_spec("sub", format="binary8p3ue", rounding="dynamic", saturation="finite"),
    pytest.param(make_spec("cvt", format="binary8p4se", in_format="bf16", rounding="dynamic",
                           saturation="finite"),
                 marks=SLOW),       # [cvt-bfloat16-to-Binary8p1uf-..], [sub-Binary8p3ue-dynamic]
    pytest.param(make_spec("cvt", format="binary8p1uf", in_format="fp16", rounding="dynamic"),
                 marks=SLOW),       # [cvt-bfloat16-to-Binary8p1uf-..], [cvt-Binary8p3ue-..]
    make_spec("cvt", format="fp16", in_format="binary8p3ue"),
    make_spec("fma", format="binary4p2sf", rounding="dynamic"),
    make_spec("mul", format="binary8p4sf", saturation="none"),
    make_spec("mul", format="binary8p1se", rounding="stochastic"),
    pytest.param(make_spec("mul", format="binary8p3se", rounding="stochastic_b"),
                 marks=SLOW),       # [cvt-bfloat16-to-Binary8p1uf-..], [add-Binary8p3se-dynamic]
    make_spec("add", format="binary8p4se", rounding="stochastic_c", sr_bits=5),
    pytest.param(make_spec("add", format="fp8e4m3", rounding="stochastic_c"),
                 marks=SLOW),       # [add-Binary8p4se-stochastic_c]
    make_spec("cvt", format="binary8p1uf", in_format="bf16", rounding="stochastic_b",
              sr_bits=3),
]


def _exhaustive(design, limit=0):
    return verify_exhaustive(design, shards=2, limit=limit, progress=False, log=lambda *_: None)


@pytest.mark.parametrize("spec", CASES, ids=case_id)
def test_every_input(spec):
    verdict = _exhaustive(Design.of(spec))
    assert verdict.ok, verdict.explain()
    assert verdict.vectors == 1 << sum(f.width for f in spec.in_fmts)


@pytest.mark.parametrize("spec", [
    make_spec("add", format="binary8p3se", saturation="none"),
    # slow: the cocotb bench is make test's on the add above; this fma, on the native engine in
    # test_every_input[fma-Binary4p2sf-dynamic]
    pytest.param(make_spec("fma", format="binary8p3ue", rounding="dynamic"), marks=SLOW),
], ids=case_id)
def test_cocotb_bench(spec):
    sim = simulators()[0]
    result = CocotbEngine(sim).verify(Design.of(spec), Plan(stimulus_for(spec), seed=3))
    assert result.ok and result["vectors"] > 0, result.explain()


@pytest.mark.parametrize("spec", [
    make_spec("add", format="binary8p3se", saturation="propagate"),
    # slow: the same fault, caught in make test on the add above
    pytest.param(make_spec("mul", format="binary8p4se", saturation="none"), marks=SLOW),
    pytest.param(make_spec("cvt", format="binary8p3ue", in_format="bf16", rounding="rtz"),
                 marks=SLOW),
], ids=case_id)
def test_satfinite_in_place_of_another_mode_is_caught(spec):
    verdict = _exhaustive(faulty_design(spec, "satfinite-instead"))
    assert verdict.mismatches > 0 and not verdict.ok
    assert verdict.mismatches < verdict.vectors      # only the saturating cases differ


@pytest.mark.parametrize("spec", [
    # slow: the same fault, caught in make test on the add below
    pytest.param(make_spec("mul", format="binary8p3se", rounding="stochastic_b"), marks=SLOW),
    make_spec("add", format="binary8p4se", rounding="stochastic_c"),
], ids=case_id)
def test_the_wrong_stochastic_formula_is_caught(spec):
    verdict = _exhaustive(faulty_design(spec, "stochastic-a-instead"))
    assert 0 < verdict.mismatches < verdict.vectors


def test_satfinite_instead_needs_another_mode():
    with pytest.raises(ValueError, match="^saturation finite instead needs a scalar unit of "
                                         "another P3109 saturation mode, not "
                                         "fp_mul_e4m3fn_rne$"):
        faulty_design(make_spec("mul", format="fp8e4m3"), "satfinite-instead")


# The full cross (make verify-p3109): every unit kind on the P3109 formats of the conformance set
# and the unsigned kinds, under each saturation mode and the P3109 roundings.
CROSS_FORMATS = ["binary8p4se", "binary8p3se", "binary4p2sf", "binary8p1uf", "binary8p1se",
                 "binary8p3ue", "binary6p3se", "binary5p2uf"]
CROSS_MODES = [("dynamic", "none"), ("dynamic", "finite"), ("dynamic", "propagate"),
               ("rod", "none"), ("stochastic", "none"), ("stochastic_b", "propagate"),
               ("stochastic_c", "finite")]


def _cross():
    for fmt in CROSS_FORMATS:
        for unit in ("mul", "add", "sub", "fma", "cvt"):
            for rounding, sat in CROSS_MODES:
                extra = {"in_format": "bf16"} if unit == "cvt" else {}
                spec = make_spec(unit, format=fmt, rounding=rounding, saturation=sat, **extra)
                yield pytest.param(spec, marks=pytest.mark.slow, id=case_id(spec))


@pytest.mark.parametrize("spec", list(_cross()))
def test_full_cross(spec):
    limit = 1 << 20 if spec.unit == "fma" else 0
    verdict = _exhaustive(Design.of(spec), limit=limit)
    assert verdict.ok, verdict.explain()
