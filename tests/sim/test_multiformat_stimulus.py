"""The stimulus, tiers and matrix of multi-format and multi-lane units (rtl/multiformat.py),
without a simulator: what they are fed, checked against their golden model."""

import numpy as np
import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import Flag
from fpforge.sim.check import expected
from fpforge.sim.stimulus import generate, parts_of
from fpforge.sim.stimulus.base import space_size
from fpforge.sim.stimulus.multiformat import unused_codes
from fpforge.sim.stimulus.scalar import Corner, corner_codes
from fpforge.sim.tiers import (FULL_MODES, MULTI_SETS, case_id, exhaustive_tier, full_matrix,
                               multi_matrix, stimulus_for)

PAIR = "fp8e4m3,fp8e5m2"
TRIPLE = "fp8e4m3,fp8e5m2,fp6e3m2"


def _all(spec, parts, seed=0, chunk=1 << 20):
    chunks = list(generate(spec, parts, np.random.default_rng(seed), chunk))
    return {p: np.concatenate([c[p] for c in chunks]) for p in chunks[0]}


def _elements(spec, i, port, values):
    """Member i's elements of ``values`` of ``port``: (N, its lanes)."""
    v = np.asarray(values, np.uint64).reshape(len(values), -1)
    cols = []
    for j in range(spec.member_lanes(i)):
        low, w = spec.element(i, port, j)
        col, shift = (j, 0) if spec.port(port).lanes > 1 else (0, low)
        cols.append((v[:, col] >> np.uint64(shift)) & np.uint64((1 << w) - 1))
    return np.stack(cols, axis=1)


def test_exhaustive_space_crosses_every_fmt_code():
    # every input pair times every fmt code, the unused ones included
    assert space_size(make_spec("mul", formats=PAIR)) == 2 * (1 << 16)
    assert space_size(make_spec("mul", formats=TRIPLE)) == 4 * (1 << 16)
    assert space_size(make_spec("cvt", formats=PAIR, in_formats="bf16")) == 2 * (1 << 16)
    # a member held: verify-exhaustive --fmt
    assert space_size(make_spec("mul", formats="fp16,bf16"), held=("fmt",)) == 1 << 32
    spec = make_spec("mul", formats=TRIPLE)
    data = _all(spec, [["exhaustive", {}]])
    assert np.bincount(data["fmt"]).tolist() == [1 << 16] * 4
    rows = data["a"].astype(np.int64) << 10 | data["b"].astype(np.int64) << 2 | data["fmt"]
    assert len(np.unique(rows)) == 4 << 16
    held = _all(spec, [["exhaustive", {"held": {"fmt": 2}, "start": 5, "stop": 9}]])
    assert held["fmt"].tolist() == [2] * 4 and held["b"].tolist() == [5, 6, 7, 8]


def test_tiers_of_multi_format_units():
    pair = make_spec("mul", formats=PAIR)
    assert exhaustive_tier(pair) and stimulus_for(pair) == [["exhaustive", {}]]
    assert exhaustive_tier(make_spec("cvt", formats=",".join(MULTI_SETS[1]), in_formats="bf16"))
    member_parts = ["corners", "relations", "random", "unused"]
    assert [p for p, _ in stimulus_for(pair, quick=True)] == member_parts
    for spec in (make_spec("fma", formats=PAIR), make_spec("mul", formats="fp16,bf16"),
                 make_spec("mul", formats=PAIR, lanes=2)):
        assert not exhaustive_tier(spec)
        assert [p for p, _ in stimulus_for(spec)] == member_parts
    assert set(member_parts) <= set(parts_of(pair))


def test_matrix_cases():
    specs = multi_matrix()
    assert len(specs) == len({case_id(s) for s in specs}) == \
        len(MULTI_SETS) * 4 * len(FULL_MODES) * 2
    assert case_id(specs[0]) == "mul-float8_e4m3fn+float8_e5m2-rne"
    assert case_id(make_spec("cvt", formats=PAIR, in_formats="bf16", stages=2, lanes=4)) == \
        "cvt-bfloat16-to-float8_e4m3fn+float8_e5m2-rne-x4-s2"
    assert {s.unit for s in specs} == {"mul", "add", "fma", "cvt"}
    full = full_matrix()
    assert full[-len(specs):] == specs and len({case_id(s) for s in full}) == len(full)
    from fpforge.rtl.format_names import resolve
    assert len(multi_matrix([resolve("fp8e4m3"), resolve("fp8e5m2")])) == len(specs) // 2
    assert multi_matrix([resolve("fp8e4m3")]) == []


@pytest.fixture(scope="module")
def triple():
    spec = make_spec("mul", formats=TRIPLE, rounding="dynamic")
    return spec, _all(spec, stimulus_for(spec, sample=4096, quick=True))


def test_every_member_and_unused_code_is_drawn(triple):
    spec, data = triple
    counts = np.bincount(data["fmt"], minlength=4)
    assert counts[3] == 1024 and unused_codes(spec) == [3]
    for i, member in enumerate(spec.members):
        assert counts[i] > 4096
        mine = data["fmt"] == i
        for op, fmt in zip(member.operands, member.in_fmts):
            codes = set(_elements(spec, i, op, data[op][mine])[:, 0].tolist())
            want = {c for k, cs in corner_codes(fmt, np.random.default_rng(0)).items()
                    if k is not Corner.MID for c in cs}
            assert want <= codes, (member.member_ident, op)
    # fp6 codes in 8-bit slots: the two bits above them random, not zero
    fp6 = data["fmt"] == 2
    assert np.mean(data["a"][fp6] >> 6 != 0) > 0.5
    # formats switch between consecutive operations
    assert np.mean(data["fmt"][1:] != data["fmt"][:-1]) > 0.5
    assert set(np.unique(data["rm"])) == set(range(8))


def test_golden_of_the_stimulus(triple):
    spec, data = triple
    pick = np.random.default_rng(1).choice(len(data["fmt"]), 1 << 14, replace=False)
    data = {p: v[pick] for p, v in data.items()}
    out = expected(spec, data)
    unused = data["fmt"] == 3
    assert unused.any() and (out["y"][unused] == 0).all() and \
        (out["flags"][unused] == int(Flag.NV)).all()
    for i, member in enumerate(spec.members):       # each member's results in its own format
        mine = data["fmt"] == i
        assert (out["y"][mine] < (1 << member.out_fmt.width)).all()
        assert len(np.unique(out["y"][mine])) > 16


@pytest.mark.parametrize("lanes,simd", [(2, None), (None, 32)])
def test_lanes_each_draw_their_own(lanes, simd):
    spec = make_spec("mul", formats="fp16,fp8e4m3", lanes=lanes, simd_width=simd,
                     rounding="stochastic")
    data = _all(spec, [["corners", {}], ["random", {"count": 2048}]], seed=3)
    assert data["rbits"].shape == (len(data["a"]), spec.max_lanes)
    for i in range(len(spec.members)):
        mine = data["fmt"] == i
        el = _elements(spec, i, "a", data["a"][mine])
        assert el.shape[1] == spec.member_lanes(i) == (2 if lanes else 32 // (16, 8)[i])
        for j in range(1, el.shape[1]):
            assert np.mean(el[:, j] != el[:, 0]) > 0.5          # lanes differ
            assert set(el[:, j].tolist()) == set(el[:, 0].tolist())   # same tuples
    if lanes:      # the fp8 member's elements in 16-bit slots: the bits above them random
        fp8 = data["fmt"] == 1
        assert np.mean(data["a"][fp8] >> 8 != 0) > 0.5
    out = expected(spec, {p: v[:4096] for p, v in data.items()})
    assert out["y"].shape[0] == 4096


# ----- the checker's classes and reports, on the golden model's own results -------------------

def _checked(spec, data, got):
    from fpforge.sim.check import Checker
    ports = [p for p in spec.ports() if not p.is_control]
    checker = Checker(spec, [p for p in ports if p.is_input], [p for p in ports if not p.is_input],
                      max_report=4)
    checker.check(data, 0, expected(spec, data), got)
    return checker


def test_classes_and_reports_per_member(triple):
    spec, data = triple
    pick = np.random.default_rng(2).choice(len(data["fmt"]), 1 << 13, replace=False)
    data = {p: v[pick] for p, v in data.items()}
    # the other member's results (fmt ^ 1: e4m3 <-> e5m2, fp6 e3m2 <-> the unused code)
    got = expected(spec, {**data, "fmt": data["fmt"] ^ 1})
    checker = _checked(spec, data, got)
    assert checker.mismatches > len(pick) // 2
    names = checker.classes.record({})["classes"]
    for prefix in ("fmt 0 (float8_e4m3fn): ", "fmt 1 (float8_e5m2): ",
                   "fmt 2 (float6_e3m2fn): ", "fmt 3 (no member): "):
        assert any(n.startswith(prefix) for n in names), prefix
    # fp6's results wrong as zeros with NV: classed in fp6 (expected values are fp6 codes)
    assert any(n.startswith("fmt 2 (float6_e3m2fn): value wrong, ") for n in names)
    ops = checker.classes.record({})["operand_classes"]
    assert any(n.startswith("fmt 1 (float8_e5m2): a=") for n in ops)
    # reports: the fp6 member's codes decoded as fp6 codes, the bits above them raw first
    lines = checker.lines
    assert any("fmt=" in line and "(float8_e5m2)" in line for line in lines)
    fp6 = next(i for i in range(len(pick)) if data["fmt"][i] == 2 and data["a"][i] >> 6)
    report = "\n".join(checker._report(fp6, 0, data, expected(spec, data), got))
    code = int(data["a"][fp6])
    assert f"a=0x{code:02x}: 0x{code & 63:02x} (" in report and "fmt=2 (float6_e3m2fn)" in report


def test_lane_reports_decode_each_element():
    spec = make_spec("mul", formats="fp16,fp8e4m3", lanes=2)
    data = _all(spec, [["random", {"count": 256}]], seed=5)
    want = expected(spec, data)
    got = {**want, "y": want["y"] ^ np.array([0, 1], np.uint32)}     # lane 1 off by one code
    checker = _checked(spec, data, got)
    assert checker.mismatches == len(data["a"])
    assert set(checker.classes.record({})["classes"]) == \
        {"fmt 0 (float16): value wrong", "fmt 1 (float8_e4m3fn): value wrong"}
    assert any("y: 1 of 2 elements differ: [1] expected 0x" in line for line in checker.lines)
