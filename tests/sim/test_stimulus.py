"""sim/stimulus/ and sim/tiers.py without a simulator: what each kind is fed."""

import numpy as np
import pytest

from fpforge.rtl.format_names import resolve
from kind_examples import SMALL, small
from fpforge.rtl.formats import catalog_formats
from fpforge.rtl.kinds import BASIC_UNITS, KINDS, make_spec
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.sim.stimulus import generate, parts_of
from fpforge.sim.stimulus.base import exhaustive, space_size
from fpforge.sim.stimulus.scalar import Corner, corner_codes, corners, relations
from fpforge.sim.tiers import FULL_MODES, case_id, full_matrix, matrix_simulator, stimulus_for

ONE_PER_KIND = {unit: small(unit) for unit in SMALL}


def test_every_kind_has_a_stimulus_case():
    assert set(ONE_PER_KIND) == set(KINDS)


@pytest.mark.parametrize("unit", ONE_PER_KIND)
def test_exhaustive_enumerates_every_input_once(unit):
    spec = ONE_PER_KIND[unit]
    n = space_size(spec)
    chunks = list(generate(spec, [["exhaustive", {}]], np.random.default_rng(0), 100))
    data = {p.name: np.concatenate([c[p.name] for c in chunks]) for p in spec.inputs()}
    fields = [p for p in spec.inputs() if p.name not in ("rm", "rbits")]
    rows = np.concatenate([data[p.name].reshape(n, p.lanes) for p in fields], axis=1)
    assert len(rows) == n == len({tuple(r) for r in rows.tolist()})
    for p in spec.inputs():                       # every port in its shape and width
        assert data[p.name].shape == ((n,) if p.lanes == 1 else (n, p.lanes))
        assert data[p.name].max() < (1 << p.lane_width)


def test_exhaustive_puts_the_last_operand_in_the_low_bits():
    spec = make_spec("mul", format="fp4e2m1")
    ops = exhaustive(spec, 0, space_size(spec))
    assert ops["a"][:17].tolist() == [0] * 16 + [1] and ops["b"][:3].tolist() == [0, 1, 2]


@pytest.mark.parametrize("unit,start", [("mul", (1 << 32) - 3000), ("fma", (1 << 32) - 1000),
                                        ("fma", 1 << 40)])
def test_exhaustive_indexes_either_side_of_2_to_the_32(unit, start):
    """Up to 2^32 the index is uint32 (and a --limit run of a larger space has operands above
    its bits: all zero); narrow codes are the same numbers in each port's own dtype."""
    spec = make_spec(unit, format="fp16")
    stop = min(start + 2000, 1 << 32) if start < 1 << 32 else start + 2000
    ops, narrow = exhaustive(spec, start, stop), exhaustive(spec, start, stop, narrow=True)
    index = np.arange(start, stop, dtype=object)
    names = [p.name for p in spec.inputs()]
    for k, name in enumerate(reversed(names)):
        want = [(int(i) >> (16 * k)) & 0xffff for i in index]
        assert ops[name].dtype == np.uint32 and ops[name].tolist() == want
        assert narrow[name].dtype == np.uint16 and narrow[name].tolist() == want


def test_corner_classes_of_fp16():
    fp16 = resolve("fp16")
    cc = corner_codes(fp16, np.random.default_rng(0))
    assert cc[Corner.ZERO] == [0x0000, 0x8000]
    assert cc[Corner.MIN_SUBNORMAL] == [0x0001, 0x8001]
    assert cc[Corner.MAX_NORMAL] == [0x7BFF, 0xFBFF]
    assert cc[Corner.INF] == [0x7C00, 0xFC00]
    assert 0x7E00 in cc[Corner.QNAN] and all(fp16.classify(c) == "snan" for c in cc[Corner.SNAN])
    crossed = corners(make_spec("add", format="fp16"), np.random.default_rng(0))
    n = len({c for v in cc.values() for c in v})
    assert len(crossed["a"]) == n * n


def _values(fmt, codes):
    return np.array([float(fmt.code_value(int(c))) for c in codes])


@pytest.mark.parametrize("unit,exact", [("add", lambda a, b: a + b),
                                        ("sub", lambda a, b: a - b)])
def test_relations_hit_ties_and_cancellation(unit, exact):
    """The relational stimulus, aimed through the kind's own operation (spec.EXACT), really
    contains exact cancellations and exact ties, for add and for sub alike."""
    spec = make_spec(unit, format="fp16")
    rel = relations(spec, np.random.default_rng(5), 2048)
    s = exact(_values(spec.out_fmt, rel["a"]), _values(spec.out_fmt, rel["b"]))   # exact
    assert (s == 0).sum() > 100                            # massive cancellation, exactly
    s = s[np.isfinite(s) & (np.abs(s) < 65504)]
    y = s.astype(np.float16).astype(np.float64)            # numpy rounds to nearest even
    with np.errstate(over="ignore"):
        lower = np.nextafter(y.astype(np.float16), np.float16(-np.inf)).astype(np.float64)
        upper = np.nextafter(y.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    ties = (np.abs(s - y) > 0) & ((s - lower == y - s) | (upper - s == s - y))
    assert ties.sum() > 10


@pytest.mark.parametrize("unit", ["add", "sub", "mul", "fma", "fms", "div"])
@pytest.mark.parametrize("fmt", ["fp16", "fp8e4m3"])
def test_relations_warn_of_nothing(unit, fmt):
    """A quotient's aim can be infinite; the relational stimulus takes that in its stride
    (make test turns every warning into an error) and still gives every operand its codes."""
    spec = make_spec(unit, format=fmt)
    rel = relations(spec, np.random.default_rng(0), 1024)
    assert len({len(v) for v in rel.values()}) == 1 and len(rel[spec.operands[0]]) > 1024


def test_relations_aim_products_at_the_overflow_threshold():
    spec = make_spec("mul", format="fp8e4m3")
    rel = relations(spec, np.random.default_rng(2), 1024)
    p = np.abs(_values(spec.out_fmt, rel["a"]) * _values(spec.out_fmt, rel["b"]))
    assert ((p > 448) & (p < 480)).sum() > 20 and ((p >= 416) & (p <= 448)).sum() > 20


def test_dynamic_and_stochastic_inputs_are_drawn_per_vector():
    spec = make_spec("add", format="fp8e4m3", rounding="dynamic")
    chunk = next(generate(spec, [["exhaustive", {}]], np.random.default_rng(1), 4096))
    assert set(np.unique(chunk["rm"]).tolist()) == set(range(8))
    spec = make_spec("mul", format="fp8e4m3", rounding="stochastic", sr_bits=6)
    chunk = next(generate(spec, [["corners", {}]], np.random.default_rng(1), 4096))
    assert chunk["rbits"].max() < 64 and len(np.unique(chunk["rbits"])) > 32


def test_block_kinds_stimulus_shapes():
    rng = np.random.default_rng(3)
    q = make_spec("mxq", format="fp8e4m3", block=8)
    (x,) = [c["x"] for c in generate(q, [["adversarial", {"per_class": 2}]], rng, 1 << 16)]
    assert x.shape[1] == 8 and x.dtype == np.uint32
    d = make_spec("dot", in_format="fp4e2m1", n=4)
    (c,) = generate(d, [["pairs", {}]], rng, 1 << 16)
    assert c["a"].shape == (256, 4) and c["scale_a"].shape == (256,)
    assert {(int(a), int(b)) for a, b in zip(c["a"][:, 0], c["b"][:, 0])} == \
        {(i, j) for i in range(16) for j in range(16)}


def test_unknown_part_names_the_kinds_parts():
    spec = make_spec("mxdq", in_format="fp4e2m1")
    assert parts_of(spec) == ("exhaustive", "pairs")
    with pytest.raises(ValueError, match=r"^unknown stimulus part 'corners' for unit mxdq; "
                                         r"valid: exhaustive, pairs$"):
        next(generate(spec, [["corners", {}]], np.random.default_rng(0), 16))


def _basic_matrix():
    """make verify's cases of mul, add, fma and cvt as the matrix had them before each kind
    said its own (Spec.matrix_options): the kinds' variants must keep them, in this order."""
    specs = []
    for fmt in catalog_formats(16):
        for unit in BASIC_UNITS:
            for rounding in FULL_MODES:
                for saturate in (False, True):
                    for subnormals in (True, False):
                        for stages in (0, 2):
                            src = ("float16" if fmt.name != "float16" else "bfloat16") \
                                if unit == "cvt" else None
                            specs.append(make_spec(unit, format=fmt, in_format=src,
                                                   rounding=rounding, saturate=saturate,
                                                   subnormals=subnormals, stages=stages))
    return specs


def test_matrix_takes_each_kind_by_its_options():
    """Every registered kind in the matrix with its own variants: the NaN policies only where the
    format has a NaN, flushing only where it has subnormals (sgnj never), sgnj only in signed
    formats, block kinds and sub/fms left to their benches."""
    specs = full_matrix()
    by_kind = {u: [s for s in specs if s.unit == u] for u in KINDS}
    assert not by_kind["sub"] and not by_kind["fms"] and not by_kind["mxq"]
    fp8 = [s for s in by_kind["max"] if s.fmt.with_subnormals(True).name == "float8_e4m3fn"]
    assert {(s.minmax, s.subnormals, s.stages) for s in fp8} == \
        {(m, sub, st) for m in ("ieee", "number") for sub in (True, False) for st in (0, 2)}
    assert {s.stages for s in by_kind["min"] if s.fmt.name == "float4_e2m1fn"} == {0, 2}
    assert {s.fmt.name for s in by_kind["sgnj"]} == \
        {f.name for f in catalog_formats(16) if f.signed}
    flushing = [f for f in catalog_formats(16) if f.has_subnormals]       # all but E8M0
    assert len(by_kind["cmp"]) == len(by_kind["classify"]) == \
        2 * len(catalog_formats(16)) + 2 * len(flushing)
    assert all(s.subnormals for s in by_kind["classify"] if not s.fmt.man_bits)   # E8M0
    assert {s.rounding.value for s in by_kind["f2i"]} == set(FULL_MODES)   # stochastic too


def test_tiers_and_ids():
    assert stimulus_for(make_spec("mul", format="fp8e4m3")) == [["exhaustive", {}]]
    assert stimulus_for(make_spec("sub", format="fp8e4m3")) == [["exhaustive", {}]]
    assert stimulus_for(make_spec("fma", format="fp6e2m3")) == [["exhaustive", {}]]
    assert stimulus_for(make_spec("fma", format="fp8e4m3"))[0] == ["corners", {}]
    assert stimulus_for(make_spec("cvt", format="fp8e4m3", in_format="fp16")) == \
        [["exhaustive", {}]]
    assert stimulus_for(make_spec("mxdq", in_format="fp4e2m1", block=1)) == [["exhaustive", {}]]
    assert stimulus_for(make_spec("mxq", format="fp4e2m1"))[0][0] == "adversarial"
    assert case_id(make_spec("add", format="fp16", rounding="rtz", saturate=True,
                             subnormals=False, stages=2)) == "add-float16-rtz-sat-ftz-s2"
    specs = full_matrix()
    assert len(specs) == len(set(specs)) == len({case_id(s) for s in specs})
    basic = [s for s in specs if s.unit in BASIC_UNITS and not isinstance(s, MultiFormatSpec)]
    assert basic == _basic_matrix()
    # make verify without SIM: Icarus for cvt and 8-bit mul/add, Verilator for the rest.
    route = {(s.unit, s.out_fmt.width): matrix_simulator(s) for s in basic}
    assert route[("mul", 8)] == route[("add", 8)] == route[("cvt", 16)] == "icarus"
    assert route[("fma", 8)] == route[("mul", 16)] == route[("fma", 6)] == "verilator"
