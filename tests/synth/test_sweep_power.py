"""The sweep's power column (synth/sweep_power.py; ``fpforge sweep --power [--data NAME]``)."""

from __future__ import annotations

import pytest

from fpforge.cli import main
from fpforge.codesign.power_data import operand_vectors
from fpforge.synth.sweep_power import PowerRun
from fpforge.synth.sweep_report import read_csv, run_sweep

VECTORS = 32


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """fp8e4m3 mul on sky130hd, on idle and on uniform operands (one result store: the second
    run synthesises nothing)."""
    out = tmp_path_factory.mktemp("sweep-power")
    done = {}
    for data in ("zeros", "uniform"):
        assert run_sweep(formats="fp8e4m3", units="mul", variants="default", mx=False,
                         lib="sky130hd", power=PowerRun(data, VECTORS, operand_vectors),
                         out=out / data, resume=True) == 0
        run_dir, = (out / data).glob("*sweep*")
        done[data] = (read_csv(run_dir / "sweep.csv"), (run_dir / "sweep.md").read_text())
    return done


def test_each_unit_gets_its_power_object_and_the_report_its_table(runs):
    (row,), text = runs["uniform"]
    assert (row.power_data, row.vectors) == ("uniform", VECTORS)
    assert row.clock_ps >= row.delay_ps and row.clock_ps % 10 == 0
    total = row.internal_uw + row.switching_uw + row.leakage_uw
    assert row.energy_pj == pytest.approx(total * row.clock_ps * 1e-6, rel=1e-4)
    assert row.power == {"data": "uniform", "vectors": VECTORS, "clock_ps": row.clock_ps,
                         "internal_uw": row.internal_uw, "switching_uw": row.switching_uw,
                         "leakage_uw": row.leakage_uw, "energy_pj": row.energy_pj}
    assert "## Energy per operation" in text and f"{row.energy_pj:.4g} |" in text


def test_idle_operands_cost_less_than_random_ones(runs):
    (idle,), _ = runs["zeros"]
    (busy,), _ = runs["uniform"]
    assert idle.module == busy.module and idle.area_um2 == busy.area_um2
    assert idle.switching_uw < busy.switching_uw and idle.energy_pj < busy.energy_pj / 2


@pytest.mark.parametrize("args, says", [
    (["--power"], "the fpforge library has no power tables (internal_power, leakage); energy "
                  "needs --lib sky130hd or a --liberty PATH that has them"),
    (["--lib", "sky130hd", "--power", "--data", "noise"], "unknown data set 'noise'; the data "
                                                          "sets are uniform, gaussian"),
    (["--lib", "sky130hd", "--data", "zeros"], "--data names the data set of --power's energy"),
    (["--lib", "sky130hd", "--power", "--vectors", "1"], "--vectors must be at least 2, not 1"),
])
def test_bad_power_options_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, args, says):
    out = tmp_path / "out"
    out.mkdir()
    assert main(["sweep", "--formats", "fp8e4m3", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not any(out.iterdir())


def test_a_liberty_without_power_tables_is_refused_before_any_work(tmp_path, capsys):
    """fpforge's own cells, brought as a user's liberty: mapped and timed, but no power."""
    from fpforge.synth.cell_library import own_library
    liberty = own_library(tmp_path / "lib").liberty
    out = tmp_path / "out"
    out.mkdir()
    assert main(["sweep", "--formats", "fp8e4m3", "--liberty", str(liberty), "--power",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "library has no power tables" in err and err.count("\n") == 1
    assert not any(out.iterdir())
