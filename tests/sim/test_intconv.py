"""The integer conversions (i2f, f2i): the golden model against SoftFloat (softfloatpy, built
with the RISC-V specialization: NaN converts to the largest integer, as --int-overflow riscv)
for f16/f32 and int32/uint32, the 8- and 16-bit widths derived from it, and against exact values
(Fractions from rtl/formats.py) for every other format and for f2i's stochastic rounding; the
generated Verilog against the golden model over every input (every rbits value too, where they
are few) on the batch engine; each kind's fault caught; the refusals."""

from __future__ import annotations

from fractions import Fraction
from math import floor

import numpy as np
import pytest
from oracles.exact import increment as stochastic_increment

from fpforge.golden.model import evaluate
from fpforge.rtl.format_names import resolve
from fpforge.rtl.intconv import IntFormat
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from tests.rtl.fp_units.rtl_check import assert_exact
from tests.cli_run import fpforge

NV, OF, NX = 1 << 4, 1 << 2, 1
MODES = ("rne", "rtz", "rdn", "rup", "rna")
SR_MODES = ("stochastic", "stochastic_b", "stochastic_c")    # P3109 StochasticA, B, C
WIDTHS = [(8, False), (8, True), (16, False), (16, True), (32, False), (32, True)]


# ----- exact rounding of a Fraction to an integer (the oracle; no golden code) ------------------

def _round_int(v: Fraction, mode: str, rbits: int = 0, sr_bits: int = 0) -> int:
    lo = floor(v)
    if v == lo:
        return lo
    if mode in SR_MODES:
        # Away from zero when |v|'s fraction below the integer grid, against rbits, carries
        # (P3109 4.7.4, as tests/oracles/exact.py reads it below a float's LSB).
        whole = floor(abs(v))
        rest = abs(v) - whole
        away = stochastic_increment(mode, v < 0, whole & 1, rest.numerator, rest.denominator,
                                    rbits, sr_bits)
        return (whole + away) * (1 if v > 0 else -1)
    rest = v - lo
    up = {"rtz": v < 0, "rdn": False, "rup": True, "rna": rest > Fraction(1, 2) or rest == Fraction(1, 2) and v > 0,
          "rne": rest > Fraction(1, 2) or rest == Fraction(1, 2) and lo % 2 == 1,
          "rod": lo % 2 == 0}[mode]
    return lo + 1 if up else lo


def _f2i_expected(fmt, code, mode, ints: IntFormat, overflow="riscv", rbits=0, sr_bits=0):
    """(integer, flags) of one code by RISC-V's rules (docs/intconv.md), from exact values;
    ``rbits`` and ``sr_bits`` for the stochastic modes."""
    cls = fmt.classify(code)
    neg = bool(code & fmt.sign_mask) if fmt.signed else False
    if cls in ("nan", "snan"):
        return (ints.hi if overflow == "riscv" else 0), NV
    if cls == "inf":
        return (ints.lo if neg else ints.hi), NV
    v = Fraction(fmt.code_value(code))
    r = _round_int(v, mode, rbits, sr_bits)
    if r < ints.lo or r > ints.hi:
        return (ints.lo if v < 0 else ints.hi), NV
    return r, (NX if r != v else 0)


def _as_int(bits, ints: IntFormat) -> int:
    bits = int(bits)
    return bits - (1 << ints.width) if ints.signed and bits >> (ints.width - 1) else bits


EXACT_FORMATS = ["fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "binary8p3se", "fp4e2m1", "e8m0",
                 "ue5m2ext", "e2m1_b0"]
# (width, unsigned): the narrow ones overflow from 8-bit formats; 32 bits never does.
F2I_WIDTHS = [(8, False), (8, True), (16, False), (32, True)]
RM = {"rne": 0, "rtz": 1, "rdn": 2, "rup": 3, "rna": 4}


def _every_mode(unit, name, a, **options):
    """The unit's outputs for inputs ``a`` in each mode of MODES (one dynamic unit, rm per
    vector) and rod: {mode: (y, flags)}."""
    n = len(a)
    out = evaluate(make_spec(unit, format=name, rounding="dynamic", **options),
                   a=np.tile(a, len(MODES)), rm=np.repeat([RM[m] for m in MODES], n))
    y, flags = np.asarray(out["y"]), np.asarray(out["flags"])
    got = {m: (y[i * n:(i + 1) * n], flags[i * n:(i + 1) * n]) for i, m in enumerate(MODES)}
    if unit == "f2i":
        rod = evaluate(make_spec(unit, format=name, rounding="rod", **options), a=a)
        got["rod"] = (np.asarray(rod["y"]), np.asarray(rod["flags"]))
    return got


@pytest.mark.parametrize("name", [n if n in ("fp8e4m3", "binary8p3se", "e2m1_b0") else
                                  pytest.param(n, marks=pytest.mark.slow)
                                  for n in EXACT_FORMATS])
def test_f2i_golden_against_exact_values(name):
    fmt = resolve(name)
    codes = np.arange(1 << fmt.width)
    cases = [(w, u, "riscv") for w, u in F2I_WIDTHS] + [(8, False, "saturate")]
    for width, unsigned, overflow in cases:
        ints = IntFormat(width, not unsigned)
        got = _every_mode("f2i", name, codes, int_width=width, unsigned=unsigned,
                          int_overflow=overflow)
        for mode, (y, flags) in got.items():
            for c in codes:
                want = _f2i_expected(fmt, int(c), mode, ints, overflow)
                assert (_as_int(y[c], ints), int(flags[c])) == want, \
                    (name, ints.name, mode, overflow, hex(c))


@pytest.mark.parametrize("name", ["fp8e4m3", "binary8p3se"])
def test_f2i_stochastic_golden_against_exact_values(name):
    """Every code x every value of 4 random bits, StochasticA, B and C, into int8 and uint8:
    the integer and flags of the exact model (inexact whenever a bit below the integer's LSB is
    non-zero, whether or not it carried)."""
    fmt, R = resolve(name), 4
    codes = np.repeat(np.arange(1 << fmt.width), 1 << R)
    rbits = np.tile(np.arange(1 << R), 1 << fmt.width)
    for unsigned in (False, True):
        ints = IntFormat(8, not unsigned)
        for mode in SR_MODES:
            out = evaluate(make_spec("f2i", format=name, int_width=8, unsigned=unsigned,
                                     rounding=mode, sr_bits=R), a=codes, rbits=rbits)
            got = zip(np.asarray(out["y"]).tolist(), np.asarray(out["flags"]).tolist())
            for c, r, (y, f) in zip(codes.tolist(), rbits.tolist(), got):
                want = _f2i_expected(fmt, c, mode, ints, rbits=r, sr_bits=R)
                assert (_as_int(y, ints), f) == want, (name, ints.name, mode, hex(c), r)


def test_f2i_stochastic_golden_wide():
    """fp32 near the integer range into 32- and 16-bit integers with up to 32 random bits (the
    integer and the bits read below it exceed 64 bits): the exact model's integer and flags."""
    fmt, rng = resolve("fp32"), np.random.default_rng(7)
    near = rng.integers((127 - 3) << 23, (127 + 33) << 23, 1000, dtype=np.uint64)
    codes = np.concatenate([near, near | (1 << 31)])
    for mode, R, width, unsigned in (("stochastic", 32, 32, False), ("stochastic_b", 31, 32, True),
                                     ("stochastic_c", 20, 16, False)):
        ints = IntFormat(width, not unsigned)
        rbits = rng.integers(0, 1 << R, len(codes), dtype=np.uint64)
        out = evaluate(make_spec("f2i", format="fp32", int_width=width, unsigned=unsigned,
                                 rounding=mode, sr_bits=R), a=codes, rbits=rbits)
        got = zip(np.asarray(out["y"]).tolist(), np.asarray(out["flags"]).tolist())
        for c, r, (y, f) in zip(codes.tolist(), rbits.tolist(), got):
            want = _f2i_expected(fmt, c, mode, ints, rbits=r, sr_bits=R)
            assert (_as_int(y, ints), f) == want, (ints.name, mode, hex(c), r)


def _grid(fmt):
    """The finite values of a signed format with the parity of their codes, and beyond max
    finite the values the top binade would go on with (an unbounded exponent: what tells an
    overflow), up to 2^(emax+1)."""
    grid = {}
    for c in range(1 << fmt.width):
        if fmt.classify(c) in ("zero", "subnormal", "normal"):
            grid.setdefault(Fraction(fmt.code_value(c)), c & 1)
    ulp, top = Fraction(2) ** (fmt.emax - fmt.man_bits), Fraction(2) ** (fmt.emax + 1)
    k = 1
    while fmt.max_finite + k * ulp <= top:
        v = fmt.max_finite + k * ulp
        grid[v] = grid[-v] = (fmt.max_finite_code + k) & 1
        k += 1
    return grid


def _i2f_expected(grid, v: int, mode: str):
    """The value v rounds to on ``grid`` (_grid) in ``mode``, and whether it is inexact."""
    if v in grid:
        return Fraction(v), False
    below = max(x for x in grid if x < v)
    above = min(x for x in grid if x > v)
    half = (below + above) / 2
    pick = {"rtz": below if v > 0 else above, "rdn": below, "rup": above,
            "rna": (above if v > 0 else below) if v == half else (below if v < half else above),
            "rne": ((below if grid[below] == 0 else above) if v == half else
                    (below if v < half else above))}[mode]
    return pick, True


@pytest.mark.parametrize("name", ["fp8e4m3", "e2m1_b0"] + [
    pytest.param(n, marks=pytest.mark.slow) for n in ("fp8e5m2", "binary8p3se", "fp4e2m1")])
def test_i2f_golden_against_exact_values(name):
    """Every int8 and uint8 and a sample of int16, the five IEEE modes, saturating: the value is
    the mode's neighbour, inexact when it differs; overflow (rounded beyond max finite) gives
    +-max with overflow and inexact; tiny results (e2m1_b0) add underflow."""
    fmt = resolve(name)
    grid = _grid(fmt)
    for width, unsigned in [(8, False), (8, True), (16, False)]:
        ints = IntFormat(width, not unsigned)
        a = np.arange(0, 1 << width, 1 if width == 8 else 97)
        got = _every_mode("i2f", name, a, int_width=width, unsigned=unsigned, saturate=True)
        for mode, (y, flags) in got.items():
            for bits, code, f in zip(a, y, flags):
                v = _as_int(bits, ints)
                value = Fraction(fmt.code_value(int(code)))
                if abs(v) >= 2 ** (fmt.emax + 1):
                    assert (value, int(f)) == (fmt.max_finite * (1 if v > 0 else -1), OF | NX)
                    continue
                pick, inexact = _i2f_expected(grid, v, mode)
                over = abs(pick) > fmt.max_finite
                tiny = inexact and abs(pick) < 2 ** fmt.emin
                want = (min(max(pick, -fmt.max_finite), fmt.max_finite),
                        (OF if over else 0) | (2 if tiny else 0) | (NX if inexact else 0))
                assert (value, int(f)) == want, (name, ints.name, mode, v, hex(int(code)))


# ----- SoftFloat (f16, f32; int32, uint32 and the narrower widths derived) ---------------------

def _softfloat():
    sf = pytest.importorskip("softfloatpy")
    return sf, {"rne": sf.RoundingMode.NEAR_EVEN, "rtz": sf.RoundingMode.MIN_MAG,
                "rdn": sf.RoundingMode.MIN, "rup": sf.RoundingMode.MAX,
                "rna": sf.RoundingMode.NEAR_MAX_MAG}


def _f2i_codes(bits, rng):
    """Every 2^16 code of f16; for f32 a sample: uniform, and codes between 2^-2 and 2^33."""
    if bits == 16:
        return np.arange(1 << 16)
    near = rng.integers((127 - 2) << 23, (127 + 33) << 23, 1500)
    special = [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x4F000000,
               0xCF000000, 0x4F800000, 0x4EFFFFFF, 0xCF000001, 0x3F000000, 0xBF000000,
               0x3FC00000, 0xBFC00000, 0x40200000, 0xC0200000, 1, 0x80000001]
    out = np.concatenate([rng.integers(0, 1 << 32, 1500), near, special])
    return np.concatenate([out, out | (1 << 31)]).astype(np.uint64)


@pytest.mark.parametrize("bits", [16, pytest.param(32, marks=pytest.mark.slow)])
def test_f2i_golden_against_softfloat(bits):
    sf, modes = _softfloat()
    rng = np.random.default_rng(bits)
    codes = _f2i_codes(bits, rng)[::(31 if bits == 16 else 1)]
    kind = getattr(sf, f"Float{bits}")
    objs = [kind.from_bytes(int(c).to_bytes(bits // 8, "big")) for c in codes]
    for unsigned in (False, True):
        fn = getattr(sf, f"f{bits}_to_{'ui32' if unsigned else 'i32'}")
        ref = {}
        for mode in MODES:
            ref[mode] = []
            for x in objs:
                sf.set_exception_flags(0)
                ref[mode].append((fn(x, modes[mode], True).to_int(),
                                  int(sf.get_exception_flags())))
        for width in (8, 16, 32):
            ints = IntFormat(width, not unsigned)
            got = _every_mode("f2i", f"fp{bits}", codes, int_width=width, unsigned=unsigned)
            for mode in MODES:
                y, flags = got[mode]
                for i, (v, f) in enumerate(ref[mode]):
                    # A narrower integer: SoftFloat's 32-bit result saturated, invalid alone.
                    if not ints.lo <= v <= ints.hi:
                        v, f = min(max(v, ints.lo), ints.hi), NV
                    assert (_as_int(y[i], ints), int(flags[i])) == (v, f), \
                        (bits, ints.name, mode, hex(int(codes[i])))


def _i2f_inputs(rng):
    """int32 bit patterns: every power of two and its neighbours, ties for f16/f32, random."""
    v = {0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1}
    for k in range(32):
        v |= {2 ** k, 2 ** k - 1, 2 ** k + 1, 2 ** k + 2 ** max(k - 11, 0),
              2 ** k + 2 ** max(k - 24, 0), 2 ** k + 3 * 2 ** max(k - 11, 0)}
    v = np.array(sorted(x & 0xFFFFFFFF for x in v), np.uint64)
    return np.concatenate([v, rng.integers(0, 1 << 32, 500, dtype=np.uint64),
                           rng.integers(0, 1 << 16, 200, dtype=np.uint64)])


@pytest.mark.parametrize("bits", [pytest.param(16, marks=pytest.mark.slow), 32])
def test_i2f_golden_against_softfloat(bits):
    sf, modes = _softfloat()
    a = _i2f_inputs(np.random.default_rng(bits))
    for unsigned in (False, True):
        fn = getattr(sf, f"{'ui32' if unsigned else 'i32'}_to_f{bits}")
        make = sf.UInt32 if unsigned else sf.Int32
        vals = [_as_int(x, IntFormat(32, not unsigned)) for x in a]
        ref = {}
        for mode in MODES:
            sf.set_rounding_mode(modes[mode])
            ref[mode] = []
            for v in vals:
                sf.set_exception_flags(0)
                r = fn(make.from_int(v))
                ref[mode].append((int.from_bytes(r.to_bytes(), "big"),
                                  int(sf.get_exception_flags())))
        sf.set_rounding_mode(modes["rne"])
        for width in (8, 16, 32):
            ints = IntFormat(width, not unsigned)
            # The narrower widths: the patterns whose value fits, as width-bit codes.
            keep = [i for i, v in enumerate(vals) if ints.lo <= v <= ints.hi]
            codes = np.array([vals[i] & ((1 << width) - 1) for i in keep], np.uint64)
            got = _every_mode("i2f", f"fp{bits}", codes, int_width=width, unsigned=unsigned)
            for mode in MODES:
                y, flags = got[mode]
                assert list(zip(y.tolist(), flags.tolist())) == [ref[mode][i] for i in keep], \
                    (bits, ints.name, mode)


# ----- the generated Verilog against the golden model ------------------------------------------

def _verify(*args):
    r = fpforge("verify", *args, "--engine", "batch")
    return r.returncode, r.stdout + r.stderr


# Every input: 8-bit formats into each integer, 8- and 16-bit integers into formats; 2^16
# inputs: f2i from fp16 and bf16, i2f from 16-bit integers; sampled: 32-bit integers and fp32
# (corners and biased random, sim/stimulus/intconv.py). The quick ones run in make test.
VERILOG_CASES = [
    ("--unit", "f2i", "--format", "fp8e5m2", "--int-width", "8", "--rounding", "dynamic",
     "--stages", "2"),
    ("--unit", "f2i", "--format", "bf16", "--unsigned", "--int-width", "16",
     "--rounding", "dynamic"),
    ("--unit", "i2f", "--format", "fp8e5m2", "--int-width", "16", "--rounding", "dynamic"),
    ("--unit", "i2f", "--format", "e2m1_b0", "--int-width", "8", "--unsigned",
     "--tininess", "before", "--stages", "1"),
    ("--unit", "f2i", "--format", "fp8e4m3", "--int-width", "8", "--rounding", "stochastic_b",
     "--sr-bits", "3", "--stages", "2"),
    ("--unit", "f2i", "--format", "fp16", "--int-width", "16", "--rounding", "stochastic",
     "--stages", "2"),
] + [pytest.param(args, marks=pytest.mark.slow) for args in [
    ("--unit", "f2i", "--format", "fp8e4m3", "--int-width", "8", "--rounding", "rne"),
    ("--unit", "f2i", "--format", "fp8e5m2", "--unsigned", "--rounding", "rdn"),
    ("--unit", "f2i", "--format", "binary8p3se", "--int-width", "16", "--rounding", "rod",
     "--int-overflow", "saturate"),
    ("--unit", "i2f", "--format", "fp8e4m3", "--int-width", "8", "--rounding", "rna"),
    ("--unit", "i2f", "--format", "binary8p3ue", "--int-width", "8", "--rounding", "stochastic"),
    ("--unit", "f2i", "--format", "fp16", "--rounding", "rup"),
    ("--unit", "i2f", "--format", "fp16", "--int-width", "16", "--unsigned", "--saturate",
     "--rounding", "rtz"),
    ("--unit", "i2f", "--format", "fp32", "--rounding", "dynamic"),
    ("--unit", "f2i", "--format", "fp32", "--unsigned", "--rounding", "rne", "--stages", "1"),
]]


def test_f2i_stochastic_verilog_every_input():
    """fp8e4m3 into int8 and uint8, 4 random bits: every (a, rbits) pair through StochasticA, B
    and C (one simulation of the three units side by side) against the golden model."""
    units = [make_spec("f2i", format="fp8e4m3", int_width=8, unsigned=mode == "stochastic_b",
                       rounding=mode, sr_bits=4) for mode in SR_MODES]
    a = np.repeat(np.arange(256, dtype=np.uint32), 16)
    assert_exact(units, {"a": a, "rbits": np.tile(np.arange(16, dtype=np.uint32), 256)})


@pytest.mark.parametrize("args", VERILOG_CASES, ids=lambda a: "-".join(
    x.lstrip("-") for x in a if x != "--unit"))
def test_verilog_against_golden(args):
    rc, out = _verify(*args)
    assert rc == 0 and ", 0 mismatches" in out, out


@pytest.mark.parametrize("args,fault", [
    (("--unit", "f2i", "--format", "fp8e4m3", "--int-width", "8"), "f2i-wraps"),
    (("--unit", "i2f", "--format", "fp8e4m3", "--int-width", "8"), "i2f-other-signedness"),
    (("--unit", "f2i", "--format", "fp8e4m3", "--int-width", "8", "--rounding", "stochastic",
      "--sr-bits", "4"), "f2i-wraps"),
    pytest.param(("--unit", "f2i", "--format", "binary8p3se", "--int-width", "16",
                  "--rounding", "stochastic_c", "--sr-bits", "4"), "force-inexact",
                 marks=pytest.mark.slow),
    pytest.param(("--unit", "f2i", "--format", "fp8e4m3", "--int-width", "8", "--rounding",
                  "stochastic_b", "--sr-bits", "4"), "stochastic-a-instead",
                 marks=pytest.mark.slow),
    pytest.param(("--unit", "f2i", "--format", "fp8e5m2"), "rtz-instead",
                 marks=pytest.mark.slow),
    pytest.param(("--unit", "i2f", "--format", "fp8e4m3", "--int-width", "8"), "force-inexact",
                 marks=pytest.mark.slow),
])
def test_fault_caught(args, fault):
    rc, out = _verify(*args, "--fault", fault)
    assert rc != 0 and "mismatches" in out and ", 0 mismatches" not in out, out


@pytest.mark.parametrize("unit,options,message", [
    ("i2f", dict(int_width=12), "--int-width must be 8, 16 or 32, not 12"),
    ("f2i", dict(int_width=64), "--int-width must be 8, 16 or 32, not 64"),
    ("i2f", dict(int_overflow="riscv"), "--int-overflow applies to unit f2i only, not i2f"),
    ("f2i", dict(int_overflow="arm"), "--int-overflow must be one of riscv, saturate, not 'arm'"),
    ("f2i", dict(sr_bits=4), "--sr-bits sets the width of the rbits input of --rounding "
                             "stochastic; it does not apply to --rounding rne"),
    ("f2i", dict(rounding="stochastic", sr_bits=0), "sr_bits must be an integer 1..32, not 0"),
    ("f2i", dict(saturate=True), "--saturate applies to units"),
    ("cvt", dict(int_width=8), "--int-width applies to units i2f and f2i only, not cvt"),
])
def test_refused(unit, options, message):
    with pytest.raises(OptionError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        make_spec(unit, **options)


@pytest.mark.parametrize("mode", SR_MODES)
def test_f2i_takes_stochastic_rounding_as_the_float_kinds(mode):
    """The rbits port of a stochastic f2i is the float kinds' (name, width, meaning), named in
    the module name as theirs; the default width is 8."""
    spec = make_spec("f2i", format="fp8e4m3", rounding=mode, sr_bits=5)
    assert spec.port("rbits") == make_spec("cvt", format="fp8e4m3", in_format="bf16",
                                           rounding=mode, sr_bits=5).port("rbits")
    assert spec.default_name == f"fp_f2i_e4m3fn_to_i32_{mode}_sr5"
    assert make_spec("f2i", rounding=mode).port("rbits").width == 8


def test_bad_input_on_the_command_line_writes_nothing(tmp_path):
    out = tmp_path / "v"
    r = fpforge("verilog", "--unit", "i2f", "--int-width", "24", "--out-dir", str(out))
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.strip().splitlines()[-1].endswith("--int-width must be 8, 16 or 32, not 24")
    assert len(r.stderr.strip().splitlines()) == 1
