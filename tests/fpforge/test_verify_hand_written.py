"""Issue 31's acceptance on a unit fpforge did not write: hand_e4m3_mul.v, a float8_e4m3fn
multiplier written by hand in Verilog-2005 (other port names, NaN returned as ``{sign, 7'h7f}``),
checked on every input. It passes with the defaults (NaNs judged as TestFloat judges them);
compared code for code (``--nan exact``) it fails on its negative NaNs and nothing else; built
with ties rounded away (``--param TIES_AWAY=1``) it fails in the class "value wrong, exact
ties". The expected counts come from an integer model of E4M3 products written here, not from
the golden model."""

import re
from pathlib import Path

from fpforge.cli import main

SOURCE = str(Path(__file__).with_name("hand_e4m3_mul.v"))
COMMAND = ["verify", "--unit", "mul", "--format", "fp8e4m3", "--verilog", SOURCE,
           "--top", "hand_e4m3_mul", "--port", "a=op_a", "--port", "b=op_b",
           "--port", "y=res", "--port", "flags=fflags"]
MAX_FINITE = 448 << 18          # in units of 2^-18, the grid of every product of two codes


def magnitude(code: int) -> int | None:
    """|code| in units of 2^-9 (the smallest subnormal); None for NaN (S.1111.111)."""
    e, f = code >> 3 & 0xF, code & 7
    if e == 0xF and f == 7:
        return None
    return f if e == 0 else (8 + f) << (e - 1)


def products():
    """(a, b, negative NaN expected, a tie where RNE and RNA differ) for every pair of codes."""
    for a in range(256):
        for b in range(256):
            ma, mb = magnitude(a & 0x7F), magnitude(b & 0x7F)
            negative = (a ^ b) >> 7 == 1
            if ma is None or mb is None:
                yield negative, False
                continue
            p = ma * mb
            # 4 significant bits: the quantum is 2^(E-3) for p in [2^E, 2^(E+1)), never below
            # the subnormals' 2^-9 (2^9 units of 2^-18).
            shift = max(p.bit_length() - 4, 9)
            n, rest = divmod(p, 1 << shift)
            tie = 2 * rest == 1 << shift
            up = 2 * rest > 1 << shift or (tie and n & 1)
            # RNE keeps the even n of a tie, RNA takes n + 1: they differ unless both overflow
            # (464 is a tie of 448 and 480: RNA overflows to NaN, RNE stays finite).
            yield (negative and (n + up) << shift > MAX_FINITE,
                   tie and not n & 1 and n << shift <= MAX_FINITE)


NEGATIVE_NANS = sum(neg for neg, _ in products())
TIES_THAT_DIFFER = sum(tie for _, tie in products())


def run(capsys, *extra):
    status = main([*COMMAND, *extra])
    return status, capsys.readouterr().out


def class_counts(out: str) -> dict[str, int]:
    """The verdict's class table: {class: count}."""
    table = out.split("in all:\n", 1)[1].split("by operand classes:", 1)[0]
    return {m[1]: int(m[2].replace(",", "")) for m in
            re.finditer(r"^\s+(\S.*?)\s+([\d,]+)$", table, re.M)}


def test_the_model_knows_the_format():
    assert magnitude(0x7E) == 448 << 9 and magnitude(0x08) == 2 ** -6 * 2 ** 9
    assert magnitude(0x01) == 1 and magnitude(0x7F) is None
    assert NEGATIVE_NANS > 0 and TIES_THAT_DIFFER > 0


def test_the_hand_written_multiplier_passes_with_the_defaults(capsys):
    status, out = run(capsys)
    assert status == 0, out
    assert "hand_e4m3_mul: PASS, 65,536 vectors, 0 mismatches" in out


def test_code_for_code_only_its_negative_nans_differ(capsys):
    status, out = run(capsys, "--nan", "exact", "--engine", "batch")
    assert status == 1
    assert class_counts(out) == {"value wrong, NaN": NEGATIVE_NANS}, out
    examples = [line for line in out.splitlines() if line.lstrip().startswith("expected")]
    assert examples and all("expected y=0x7f (NaN" in line and "got y=0xff (NaN" in line
                            for line in examples), out


def test_ties_away_fails_in_the_exact_ties_class(capsys):
    status, out = run(capsys, "--param", "TIES_AWAY=1", "--engine", "batch")
    assert status == 1
    assert f"{TIES_THAT_DIFFER:,} mismatches" in out
    assert class_counts(out) == {"value wrong, exact ties": TIES_THAT_DIFFER}, out


def test_every_input_on_the_native_engine(capsys):
    status, out = run(capsys, "--exhaustive")
    assert status == 0, out
    assert "hand_e4m3_mul: PASS, 65,536 vectors, 0 mismatches" in out
