"""fpforge's own units under ``--tininess before`` (docs/numerics.md 5), judged by
``fpforge verify`` (cocotb, Icarus): they pass against their spec, and a unit built for the
other rule fails against it with underflow-only mismatches, exactly on the vectors that
oracles/tininess.py counts from exact products."""

import re

import numpy as np
import pytest

from oracles.tininess import boundary_set, exact_products
from oracles.vectors import exhaustive_pairs
from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.kinds import make_spec


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
