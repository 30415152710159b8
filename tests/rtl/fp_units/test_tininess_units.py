"""fpforge's own units under ``--tininess before`` (docs/numerics.md 5): the scalar units judged
by ``fpforge verify`` (cocotb, Icarus), the dot product and the MX quantizer on the batch engine
with vectors aimed at the boundary. Each passes against its spec, and a unit built for the other
rule fails against it, with underflow-only mismatches, exactly on the vectors that
oracles/tininess.py counts from exact values."""

import re
from fractions import Fraction

import numpy as np
import pytest

from oracles.tininess import boundary_set, exact_products
from oracles.vectors import exhaustive_pairs
from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.mx import MxQuantSpec
from tests.rtl.fp_units.rtl_check import assert_exact, check, design_of, failures


def verify(capsys, *args):
    status = main(["verify", *args])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("args", [
    ("--unit", "mul", "--format", "fp8e4m3"),
    ("--unit", "mul", "--format", "fp8e5m2", "--no-subnormals", "--rounding", "rup"),
    pytest.param(("--unit", "add", "--format", "fp8e4m3"), marks=pytest.mark.slow),
    pytest.param(("--unit", "mul", "--format", "fp16"), marks=pytest.mark.slow),
    pytest.param(("--unit", "add", "--format", "fp16"), marks=pytest.mark.slow),
], ids=lambda a: "-".join(a[1::2]))
def test_units_pass_before_rounding(capsys, args):
    status, out = verify(capsys, *args, "--tininess", "before")
    assert status == 0, out
    assert "tinybefore" in out and " 0 mismatches" in out


@pytest.mark.parametrize("built, judged", [("after", "before"), ("before", "after")])
def test_a_unit_of_the_other_rule_fails_on_underflow_only(tmp_path, capsys, built, judged):
    spec = make_spec("mul", format="fp8e4m3", tininess=built)
    path = tmp_path / "unit.v"
    path.write_text(emit.verilog(spec, spec.default_name))
    status, out = verify(capsys, "--unit", "mul", "--format", "fp8e4m3", "--tininess", judged,
                         "--verilog", str(path), "--top", spec.default_name)
    assert status == 1
    fmt = CATALOG["float8_e4m3fn"]
    a, b = exhaustive_pairs(fmt)
    expected = int(boundary_set(fmt, exact_products(fmt, a, b), "rne").sum())
    assert f"FAIL, 65,536 vectors, {expected} mismatches" in out, out
    pairs = re.findall(r"expected y=(\S+) .*flags=(\S+)\s+got y=(\S+) .*flags=(\S+)", out)
    assert pairs
    for y_exp, f_exp, y_got, f_got in pairs:
        assert y_exp == y_got
        with_uf, without = (f_exp, f_got) if judged == "before" else (f_got, f_exp)
        assert with_uf == "UF|NX" and without == "NX"


# ----- the block units, on vectors aimed at the boundary (their tiers rarely reach it) ----------

def dot_case(tininess):
    """A one-lane unscaled dot product into E4M3 is an E4M3 multiplier: the operand pairs whose
    product lies in [2^(emin-1), 2^(emin+1)], and every 16th pair besides."""
    spec = MxDotSpec("fp8e4m3", n=1, scaled=False, out_fmt="fp8e4m3", tininess=tininess)
    fmt = CATALOG["float8_e4m3fn"]
    a, b = exhaustive_pairs(fmt)
    exact = exact_products(fmt, a, b)
    lo, hi = Fraction(2) ** (fmt.emin - 1), Fraction(2) ** (fmt.emin + 1)
    keep = np.array([x is not None and lo <= abs(x) <= hi for x in exact])
    keep[::16] = True
    inputs = {"a": a[keep].astype(np.uint32), "b": b[keep].astype(np.uint32)}
    return spec, inputs, [x for x, k in zip(exact, keep) if k]


def mxq_case(tininess):
    """Blocks (1.0, x): the floor rule's scale is 2^-8, so x * 2^8 is the E4M3 element; x sweeps
    [2^-15, 2^-14] in 4,096 steps of either sign, the top sixteenth of which rounds to 2^-6."""
    spec = MxQuantSpec("fp8e4m3", block=2, tininess=tininess)
    lo = np.float32(2.0 ** -15).view(np.uint32)
    x = lo + np.arange(4097, dtype=np.uint32) * np.uint32(1 << 11)
    x = np.concatenate([x, x | np.uint32(1 << 31)])
    one = np.full(x.size, np.float32(1.0).view(np.uint32))
    values = [Fraction(float(v)) * 256 for v in x.view(np.float32)]
    return spec, {"x": np.stack([one, x], axis=-1)}, values


@pytest.mark.parametrize("case", [dot_case, mxq_case], ids=["dot", "mxq"])
def test_block_units_follow_their_rule(case):
    before, inputs, exact = case("before")
    after, _, _ = case("after")
    assert_exact([before, after], inputs)
    boundary = int(boundary_set(CATALOG["float8_e4m3fn"], exact, "rne").sum())
    assert boundary > 0
    # The comparison can fail: each rule's unit judged by the other's golden model.
    for claimed, built in ((before, after), (after, before)):
        [checker] = check([claimed], inputs, design_of([built]))
        assert checker.mismatches == boundary, failures([checker])
