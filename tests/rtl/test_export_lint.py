"""Exported Verilog is read by Icarus (-g2005), Verilator (-Wall, clean with rtl/lint/fpforge.vlt)
and Yosys, over the option matrix: a representative slice by default, all of it marked slow.

Each test exports one batch and starts each tool once for the whole batch."""

import pytest

from fpforge.rtl.kinds import KINDS, make_spec

from tests.rtl.export_cases import (KIND_OPTIONS, KIND_SPECS, OPTIONS, PAIRS, ROUNDINGS,
                                    SAME_FORMAT_UNITS, SMALL, check_batch, export_all, pair_id,
                                    spec, unique)


def test_check_batch_catches_a_lint_warning_and_an_unused_input(tmp_path):
    """check_batch's one Verilator run fails on a module that is not -Wall clean, naming it, and
    on a top module that leaves an input unused, naming the port."""
    clean = spec("mul", "fp8e5m2")
    unread_b = spec("mul", "fp8e4m3")
    (tmp_path / "truncating.v").write_text(
        "module truncating(a, y);\n  input [7:0] a;\n  output [3:0] y;\n  assign y = a;\n"
        "endmodule\n")
    (tmp_path / "unread.v").write_text(
        f"module {unread_b.default_name}(a, b, y, flags);\n  input [7:0] a;\n  input [7:0] b;\n"
        "  output [7:0] y;\n  output [4:0] flags;\n  assign y = a;\n  assign flags = 5'h00;\n"
        "endmodule\n")
    paths = export_all([clean], tmp_path / "clean")
    with pytest.raises(AssertionError, match=r"(?s)%Warning-WIDTHTRUNC: .*truncating\.v.*"
                                             r"In instance 'truncating'"):
        check_batch([*paths, tmp_path / "truncating.v"], [clean, unread_b])
    with pytest.raises(AssertionError, match=rf"{unread_b.default_name}: Signal is not used: 'b'"):
        check_batch([*paths, tmp_path / "unread.v"], [clean, unread_b])


def _check(specs, tmp_path):
    specs = unique(specs)
    check_batch(export_all(specs, tmp_path), specs)


def test_every_kind_combinational_and_pipelined(tmp_path):
    """A small spec of every kind in KINDS, without and with pipeline stages, and with a
    register at every cut point its datapath has (the block kinds' cuts included)."""
    assert list(KIND_OPTIONS) == list(KINDS)
    for unit in KINDS:
        assert set(s.stages > 0 for s in KIND_SPECS if s.unit == unit) == {False, True}
    every_cut = [make_spec(s.unit, **(s.option_values() | {"stages": None,
                                                          "cuts": ",".join(s.pipeline_points)}))
                 for s in KIND_SPECS if s.stages == 0 and s.pipeline_points]
    # The kinds with a datapath to cut (the non-computational ones have output registers only).
    assert {s.unit for s in every_cut} == {k for k in KINDS if KINDS[k].spec.CUT_POINTS}
    _check(KIND_SPECS + every_cut, tmp_path)


# The formats of test_every_unit_in_every_format_rne that make test keeps: one of each encoding
# class the units special-case (fn: NaN only, fnuz: one NaN and no -0, finite six bits, the
# 16-bit width); test_options_combined puts every unit through the IEEE-like fp8e5m2, bf16,
# E8M0 and fp4e2m1, test_every_rounding_mode through fp8e4m3. The rest run in make test-all.
RNE_QUICK = ("float8_e4m3fn", "float8_e4m3fnuz", "float6_e2m3fn", "float16")
# A format of the same class as a kept one, through the same code: the kept test named.
RNE_COVERED_BY = {
    "float8_e5m2": "test_options_combined[fp8e5m2]",
    "float8_e4m3": "test_every_unit_in_every_format_rne[float16] (IEEE-like with infinities)",
    "float8_e3m4": "test_every_unit_in_every_format_rne[float16] (IEEE-like with infinities)",
    "float8_e5m2fnuz": "test_every_unit_in_every_format_rne[float8_e4m3fnuz]",
    "float8_e4m3b11fnuz": "test_every_unit_in_every_format_rne[float8_e4m3fnuz]",
    "float6_e3m2fn": "test_every_unit_in_every_format_rne[float6_e2m3fn]",
    "float4_e2m1fn": "test_options_combined[fp4e2m1]",
    "float8_e8m0fnu": "test_options_combined[e8m0]",
    "bfloat16": "test_options_combined[bf16]",
}
assert set(RNE_QUICK) | set(RNE_COVERED_BY) == set(SMALL)
assert not set(RNE_QUICK) & set(RNE_COVERED_BY)


@pytest.mark.parametrize("fmt", [f if f in RNE_QUICK else pytest.param(f, marks=pytest.mark.slow)
                                 for f in SMALL])
def test_every_unit_in_every_format_rne(fmt, tmp_path):
    _check([spec(*pair) for pair in PAIRS if fmt in pair[1:]], tmp_path)


# mul, add, sub and fms feed the one rounder (rtl/fp_units/rounder.py) as fma does, each of
# them under some rounding modes in test_every_kind_combinational_and_pipelined: fma's run
# covers every mode in make test (test_every_rounding_mode[fma]); div, sqrt and cvt reach the
# rounder from datapaths of their own and stay.
ROUNDING_SLOW = ("mul", "add", "sub", "fms")


@pytest.mark.parametrize("unit", [pytest.param(u, marks=pytest.mark.slow) if u in ROUNDING_SLOW
                                  else u for u in (*SAME_FORMAT_UNITS, "cvt")])
def test_every_rounding_mode(unit, tmp_path):
    inp = "float32" if unit == "cvt" else None
    _check([spec(unit, "fp8e4m3", inp, rounding=r) for r in ROUNDINGS if r != "rne"], tmp_path)


@pytest.mark.parametrize("fmt", ["fp8e5m2", "bf16", "e8m0", "fp4e2m1"])
def test_options_combined(fmt, tmp_path):
    specs = []
    for unit in (*SAME_FORMAT_UNITS, "cvt"):
        inp = "float32" if unit == "cvt" else None
        specs += [spec(unit, fmt, inp, rounding="dynamic", saturate=True, subnormals=False,
                       stages=2),
                  spec(unit, fmt, inp, rounding="stochastic", saturate=True, stages=1)]
    _check(specs, tmp_path)


# binary4p2sf (signed, finite) in make test-all only: its conventions are binary8p4se's sign and
# binary8p1uf's finite range, both kept, and its four bits fp4e2m1's (test_options_combined).
@pytest.mark.parametrize("fmt", ["binary8p4se", "binary8p1uf",
                                 pytest.param("binary4p2sf", marks=pytest.mark.slow),
                                 "binary8p3ue"])
def test_p3109_formats_and_saturation_modes(fmt, tmp_path):
    """The P3109 conventions (ext, unsigned with a zero, P = 1) under each saturation mode and
    the P3109 roundings, pipelined too."""
    specs = []
    for unit in (*SAME_FORMAT_UNITS, "cvt"):
        inp = "float32" if unit == "cvt" else None
        specs += [spec(unit, fmt, inp, rounding="dynamic", saturation="none", stages=2),
                  spec(unit, fmt, inp, rounding="stochastic_b", saturation="finite"),
                  spec(unit, fmt, inp, rounding="rod", saturation="propagate", stages=1)]
    _check(specs, tmp_path)


def test_mixed_operand_formats(tmp_path):
    _check([make_spec("mul", format="bf16", a_format="fp8e4m3", b_format="fp8e5m2"),
            make_spec("fma", format="fp16", in_format="fp8e4m3", c_format="fp16",
                      rounding="rod"),
            make_spec("add", format="fp8e4m3", in_format="fp16", saturate=True, stages=3),
            make_spec("sub", format="fp8e4m3", a_format="fp4e2m1", b_format="bf16"),
            make_spec("cvt", format="float32", in_format="e8m0")], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_every_rounding_mode_in_every_format(pair, tmp_path):
    """Issue 3's acceptance matrix: every unit x every format of <= 16 bits (and float32 as a
    cvt source) x every rounding mode; tests/rtl/fp_units/test_rtl_matrix.py runs the quick
    check on it."""
    _check([spec(*pair, rounding=r) for r in ROUNDINGS], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_full_option_matrix(pair, tmp_path):
    """... x saturating or not x subnormals kept or flushed x 0 or 2 stages (4,864 modules)."""
    _check([spec(*pair, **options) for options in OPTIONS], tmp_path)


def _cut_specs(every_rounding: bool) -> list:
    """fma at every cut placement --clock-ps chooses among (every subset of rtl/scalar.py
    CUT_POINTS), with the rounding mode or the random bits travelling through the registers:
    each placement under each of rne, dynamic and stochastic, or (``every_rounding`` False)
    each placement under one of them in turn and every cut under all three. The rotation still
    meets every cut point, every pair of adjacent cut points and every number of cuts with each
    of the three roundings (asserted); it is a third of the Verilator runs."""
    from itertools import combinations

    from fpforge.rtl.scalar import CUT_POINTS, FmaSpec
    assert FmaSpec.CUT_POINTS == CUT_POINTS
    cuts = [c for k in range(1, len(CUT_POINTS) + 1) for c in combinations(CUT_POINTS, k)]
    roundings = ("rne", "dynamic", "stochastic")
    if every_rounding:
        chosen = [(c, r) for c in cuts for r in roundings]
    else:
        chosen = [(c, roundings[i % 3]) for i, c in enumerate(cuts)]
        chosen += [(cuts[-1], r) for r in roundings if (cuts[-1], r) not in chosen]
        adjacent = list(zip(CUT_POINTS, CUT_POINTS[1:]))
        for r in roundings:
            met = [c for c, cr in chosen if cr == r]
            assert all(any(p in c for c in met) for p in CUT_POINTS)
            assert all(any(a in c and b in c for c in met) for a, b in adjacent)
            assert {len(c) for c in met} == set(range(1, len(CUT_POINTS) + 1))
    return [spec("fma", "fp8e4m3", rounding=r, cuts=",".join(c)) for c, r in chosen]


@pytest.mark.parametrize("every_rounding", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["rotated", "every_rounding"])
def test_every_cut_placement_is_lint_clean_and_deterministic(every_rounding, tmp_path):
    """The cut placements of _cut_specs, and cuts in other kinds: lint-clean, and the same
    bytes when exported again."""
    specs = _cut_specs(every_rounding)
    specs += [spec("cvt", "fp8e4m3", "bf16", cuts="decode", stages=3),
              spec("sub", "bf16", cuts="align,round", rounding="dynamic"),
              spec("mul", "fp16", cuts="product")]
    assert unique(specs) == specs
    paths = export_all(specs, tmp_path / "a")
    first = [p.read_bytes() for p in paths]
    again = [p.read_bytes() for p in export_all(specs, tmp_path / "b")]
    assert first == again and len(set(first)) == len(specs)
    # The tools read the first export (the second is the same bytes).
    check_batch(paths, specs)


def test_lanes_lint_clean_and_deterministic(tmp_path):
    """Multi-lane units (--lanes, --simd-width; rtl/fp_units/lanes.py): one module with a unit
    per lane, lint-clean, every input bit a member reads used, the same bytes exported again."""
    specs = [make_spec("mul", format="fp8e4m3", lanes=4, stages=2),
             make_spec("cvt", format="fp8e4m3", in_format="float32", lanes=2),
             make_spec("add", format="fp8e5m2", lanes=3, rounding="stochastic"),
             make_spec("fma", formats="fp16", simd_width=32, rounding="dynamic", stages=1),
             make_spec("fms", formats="fp6e3m2", simd_width=32),
             make_spec("sub", formats="fp4e2m1", simd_width=32, lanes=4),
             make_spec("mul", formats="fp32,fp16,bf16,fp8e4m3,fp8e5m2", simd_width=32),
             make_spec("add", formats="fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1", simd_width=32,
                       rounding="stochastic", stages=2),
             make_spec("cvt", formats="fp8e4m3,fp8e5m2", in_formats="bf16", lanes=2,
                       rounding="dynamic")]
    first = [p.read_bytes() for p in export_all(specs, tmp_path / "a")]
    _check(specs, tmp_path / "b")
    again = [p.read_bytes() for p in export_all(specs, tmp_path / "c")]
    assert first == again
    # Converted anew (not from the cache): the same text.
    from fpforge.rtl import emit
    from fpforge.rtl.kinds import build
    packed = specs[-2]
    assert emit.convert(build(packed), packed.default_name) == emit.verilog(packed)
