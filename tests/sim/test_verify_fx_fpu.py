"""``fpforge verify`` judges the SystemVerilog test FPU fx_fpu (tests/sim/sv_fixtures: a package
with enums and a packed status struct, ``parameter type``, an included register macro, a packed
2-D operand port, a valid/ready pipeline with a tag, reserved rounding codes) through issue 31's
options: read by the front end from a file list, bound by element selects, ties, rm codes and
the status struct as flags, simulated on Verilator under random back-pressure and bubbles. The
correct variant passes; each broken variant (``--param FAULT=N``) fails in its intended class."""

import fx_fpu
import pytest

from fpforge.cli import main


@pytest.fixture(scope="module")
def file_list(tmp_path_factory):
    return fx_fpu.build(tmp_path_factory.mktemp("fx_fpu"))


def verify(argv, capsys):
    status = main(["verify", *argv])
    out = capsys.readouterr()
    return status, out.out + out.err


def classes(out: str) -> dict[str, int]:
    """The verdict's class table: {class: count}."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("mismatch classes"))
    table = {}
    for line in lines[start + 1:]:
        name, _, count = line.strip().rpartition(" ")
        if not line.startswith("    ") or not count.replace(",", "").isdigit():
            break
        table[name.strip()] = int(count.replace(",", ""))
    return table


# The add is the same binding with another op tied: it runs with the slow sweeps, the mul
# proving the claim in the quick set.
@pytest.mark.parametrize("unit", ["mul", pytest.param("add", marks=pytest.mark.slow)])
def test_the_correct_fpu_passes_under_back_pressure(file_list, unit, capsys):
    status, out = verify(fx_fpu.verify_argv(unit, file_list, 0), capsys)
    assert status == 0, out
    assert "PASS, 65,536 vectors, 0 mismatches" in out and "verilator" in out
    assert "rounding modes driven (module code): rne=0, rtz=1, rdn=2, rup=3, rna=4" in out


def test_underflow_dropped_at_the_boundary_fails_on_that_flag_only(file_list, capsys):
    status, out = verify(fx_fpu.verify_argv("mul", file_list, 1), capsys)
    assert status == 1
    table = classes(out)
    assert table and all(name.startswith("flags only: UF missing") for name in table), out
    assert table.get("flags only: UF missing, subnormal/normal boundary", 0) > 0, out


def test_ties_away_fails_on_values_at_exact_ties_only(file_list, capsys):
    status, out = verify(fx_fpu.verify_argv("mul", file_list, 2), capsys)
    assert status == 1
    assert list(classes(out)) == ["value wrong, exact ties"], out


def test_a_flipped_nan_sign_passes_any_and_fails_exact(file_list, capsys):
    status, out = verify(fx_fpu.verify_argv("mul", file_list, 3, nan="any"), capsys)
    assert status == 0, out
    status, out = verify(fx_fpu.verify_argv("mul", file_list, 3, nan="exact"), capsys)
    assert status == 1
    assert list(classes(out)) == ["value wrong, NaN"], out


def test_a_wrong_rm_code_map_fails(file_list, capsys):
    """rdn and rup swapped in --rm-codes: the inexact vectors of those modes are judged wrong."""
    argv = fx_fpu.verify_argv("mul", file_list, 0)
    argv[argv.index("--rm-codes") + 1] = "rne=0,rtz=1,rdn=3,rup=2,rna=4"
    status, out = verify(argv, capsys)
    assert status == 1 and "value wrong" in out, out
