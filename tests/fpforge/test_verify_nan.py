"""``fpforge verify --nan``: TestFloat's judgement of NaNs (issue 31, item 4). A user's E4M3
multiplier that returns its NaNs as ``{sign, 7'h7f}`` (0xff for a negative NaN: both are the
format's NaN codes) is correct, and passes by default; compared code for code (``--nan exact``)
every NaN result differs from the golden model's canonical 0x7f. A multiplier that returns a NaN
where a number is expected fails under either policy: ``any`` accepts NaN for NaN only."""

import numpy as np
import pytest

from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.sim.check import any_nan, bit_exact, nan_mask

SPEC = make_spec("mul", format="fp8e4m3")
# fpforge's own multiplier inside a user's module whose NaN carries the product's sign; the
# broken variant also turns the largest finite magnitude (0x7e, 448) into a NaN.
WRAPPER = """
module user_mul(input [7:0] op_a, input [7:0] op_b, output [7:0] res, output [4:0] fflags);
  wire [7:0] r;
  %s core (.a(op_a), .b(op_b), .y(r), .flags(fflags));
  wire nan = %s;
  assign res = nan ? {op_a[7] ^ op_b[7], 7'h7f} : r;
endmodule
"""
SIGNED_NAN = "r[6:0] == 7'h7f"
NAN_FOR_MAX = "r[6:0] == 7'h7f || r[6:0] == 7'h7e"
PORTS = ["--port", "a=op_a", "--port", "b=op_b", "--port", "y=res", "--port", "flags=fflags"]


def user_module(tmp_path, nan_rule) -> str:
    path = tmp_path / "user_mul.v"
    name = SPEC.default_name
    path.write_text(emit.verilog(SPEC, name) + WRAPPER % (name, nan_rule))
    return str(path)


def verify(tmp_path, capsys, nan_rule, *extra):
    status = main(["verify", "--unit", "mul", "--format", "fp8e4m3", "--verilog",
                   user_module(tmp_path, nan_rule), "--top", "user_mul", *PORTS, *extra])
    return status, capsys.readouterr().out


def test_a_signed_nan_passes_by_default_as_testfloat_judges(tmp_path, capsys):
    status, out = verify(tmp_path, capsys, SIGNED_NAN)
    assert status == 0, out
    assert "PASS, 65,536 vectors, 0 mismatches" in out
    assert "NaN: any NaN code of the format matches an expected NaN" in out


def test_the_same_module_fails_code_for_code(tmp_path, capsys):
    status, out = verify(tmp_path, capsys, SIGNED_NAN, "--nan", "exact")
    assert status == 1
    mismatches = [line for line in out.splitlines() if line.lstrip().startswith("expected")]
    assert mismatches and all("expected y=0x7f (NaN" in line and "got y=0xff (NaN" in line
                              for line in mismatches), out


def test_a_nan_for_a_number_fails_under_any(tmp_path, capsys):
    status, out = verify(tmp_path, capsys, NAN_FOR_MAX)
    assert status == 1
    assert "expected y=0x7e (+448, normal)" in out and "got y=0x7f (NaN" in out


@pytest.mark.parametrize("name, nans", [
    ("float8_e4m3fn", {0x7f, 0xff}),                        # FN: all-ones magnitude
    ("float8_e5m2", {s | e << 2 | f for s in (0, 0x80) for e in (0x1f,) for f in (1, 2, 3)}),
    ("float8_e4m3fnuz", {0x80}),                             # FNUZ: the negative-zero code
    ("float8_e8m0fnu", {0xff}),                              # unsigned, all ones
    ("binary8p3se", {0x80}),                                 # P3109 extended: one NaN
    ("float4_e2m1fn", set()),                                # finite: none
])
def test_nan_mask_knows_every_format_family(name, nans):
    fmt = resolve(name)
    codes = np.arange(1 << fmt.width)
    assert set(codes[nan_mask(fmt, codes)].tolist()) == nans
    assert set(codes[nan_mask(fmt, codes)].tolist()) == \
        {c for c in range(1 << fmt.width) if fmt.classify(c) in ("nan", "snan")}
    assert not nan_mask(fmt, np.array([0xFFFFFFFF], np.uint32)).any()   # undefined bits


def test_any_nan_matches_nan_for_nan_only_and_keeps_flags_exact():
    ports = SPEC.outputs()
    want = {"y": np.array([0x7f, 0x7f, 0x7e, 0x7f]), "flags": np.array([16, 16, 0, 16])}
    got = {"y": np.array([0xff, 0x7f, 0x7f, 0xff]), "flags": np.array([16, 16, 0, 0])}
    assert any_nan(ports)(want, got).tolist() == [False, False, True, True]
    assert bit_exact(want, got).tolist() == [True, False, True, True]
