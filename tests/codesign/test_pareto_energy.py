"""fpforge pareto --power (docs/codesign.md, "Energy per MAC"): a one-configuration run on
sky130hd, its energy columns against the units' own power objects."""

from __future__ import annotations

import csv
import json

import pytest

from fpforge.cli import main
from fpforge.codesign import pareto, pareto_axes
from fpforge.infra.executor import ResultStore
from fpforge.synth.sweep import sweep

from tests.codesign.shared_jax_cache import compiled_as_users_do, share_jax_cache

AXES = {"elements": ["fp4e2m1"], "block": [8], "scaling": ["block"], "accum": ["bf16"]}
VECTORS = 16


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pareto-energy")
    (tmp / "axes.json").write_text(json.dumps(AXES))
    out = share_jax_cache(tmp / "out")
    with compiled_as_users_do():
        assert main(["pareto", "--config", str(tmp / "axes.json"), "--out", str(out),
                     "--power", "--vectors", str(VECTORS), "-j", "2"]) == 0
    with open(out / "pareto.csv") as fh:
        row, = csv.DictReader(fh)
    return out, row


def test_the_run_reports_energy_per_mac_and_its_plot(run):
    out, row = run
    pj = {d: float(row[f"pj_per_mac_{d}"]) for d in ("gaussian", "minilm")}
    for d, e in pj.items():
        assert 0 < e < 10 and float(row[f"tflops_per_w_{d}"]) == pytest.approx(2 / e, rel=1e-3)
    assert 0 < float(row["leakage_pj_per_mac"]) < pj["gaussian"]
    assert float(row["um2_per_mac"]) > 0 and float(row["energy_step_ps"]) > 0
    meta = json.loads((out / "pareto.json").read_text())["meta"]["energy"]
    assert meta["vectors"] == VECTORS and meta["data"] == ["gaussian", "minilm"]
    assert meta["library"].startswith("sky130hd: SkyWater SKY130 sky130_fd_sc_hd, tt 25 C")
    text = (out / "pareto.md").read_text()
    assert "## Energy per MAC" in text and f"on {VECTORS} operand vectors" in text
    assert (out / "energy.png").read_bytes()[:4] == b"\x89PNG"


def test_the_step_energy_is_its_units_own_energies_over_the_lanes(run):
    """The dot unit's and the bf16 adder's energy per operation as the power flow states it
    (total power x their own clock), summed over the 8 lanes: the join's pJ per MAC, up to
    the leakage over the step's longer period (nanowatts: far below the tolerance)."""
    out, row = run
    config, = pareto_axes.configurations(pareto_axes.Axes(**{k: tuple(v)
                                                             for k, v in AXES.items()}))
    plan = pareto.hardware_cases(config)
    from fpforge.codesign.power_data import operand_vectors
    from fpforge.synth.sweep_power import PowerRun
    rows, _, _ = sweep([case for _, case in plan], out_dir=out / "check", jobs=2,
                       store=ResultStore(out / "results"), lib="sky130hd",
                       power=PowerRun("gaussian", VECTORS, operand_vectors))
    assert [r.power_data for r in rows] == ["gaussian", "gaussian"]
    per_mac = sum(r.energy_pj for r in rows) / 8
    assert float(row["pj_per_mac_gaussian"]) == pytest.approx(per_mac, rel=1e-3)
    assert float(row["um2_per_mac"]) == pytest.approx(sum(r.area_um2 for r in rows) / 8,
                                                      rel=1e-3)
    assert float(row["energy_step_ps"]) == pytest.approx(sum(r.delay_ps for r in rows),
                                                         abs=0.2)


def test_an_iso_power_roofline_of_the_run(run, capsys):
    out, row = run
    assert main(["roofline", "--pareto", str(out / "pareto.json"), "--power-w", "1",
                 "--out", str(out / "iso")]) == 0
    fig, = json.loads((out / "iso" / "roofline.json").read_text())["formats"]
    assert fig["peak_tmacs"] == pytest.approx(1 / float(row["pj_per_mac_gaussian"]), rel=1e-3)


@pytest.mark.parametrize("args, says", [
    (["--vectors", "8"], "--vectors N goes with --power"),
    (["--power", "--vectors", "0"], "--vectors must be at least 2, not 0"),
    (["--power", "--vectors", "1"], "--vectors must be at least 2, not 1"),
    (["--power-w", "10"], "--power-w needs --power: the iso-power array divides by"),
])
def test_bad_energy_options_are_one_line_exit_2_before_any_work(tmp_path, capsys, args, says):
    out = tmp_path / "out"
    assert main(["pareto", "--quick", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and not out.exists()
