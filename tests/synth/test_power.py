"""Energy per operation (synth/power.py, synth/activity.py, codesign/power_data.py): real Yosys,
Icarus and OpenSTA on sky130hd."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

import pytest

from fpforge import synth
from fpforge.cli import main
from fpforge.codesign.power_data import operand_vectors
from fpforge.rtl.kinds import make_spec
from fpforge.synth.activity import Activity, simulate_activity
from fpforge.synth.cell_library import library_for
from fpforge.synth.liberty_file import cells_of, read_liberty
from fpforge.synth.power import (cell_powers, combine, measure_power, netlist_cells,
                                 run_power_sta)

VECTORS = 300
KINDS = ("mul", "add", "fma")


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    """fp8e4m3 mul, add, fma and fp16 mul on sky130hd: spec -> record, and the library."""
    out = tmp_path_factory.mktemp("power")
    specs = [make_spec(k, format="fp8e4m3") for k in KINDS] + [make_spec("mul", format="fp16")]
    records = synth.run(specs, out_dir=out, fpga=False, cores=False, lib="sky130hd", jobs=2)
    library = library_for("sky130hd", directory=Path(records[0].directory).parent / "lib")
    return {s: r for s, r in zip(specs, records)}, library


@pytest.fixture(scope="module")
def energies(mapped):
    """(spec name, data set) -> PowerFigures."""
    records, library = mapped
    return {(s.default_name, data): measure_power(s, r, library,
                                                  operand_vectors(s, data, VECTORS), data)
            for s, r in records.items() for data in ("zeros", "uniform")}


def _independent_switching_w(netlist: Path, liberty: Path, activity: Activity, clock_ps: float,
                             voltage: float, output_load_pf: float) -> float:
    """0.5 C V^2 per transition of every cell-driven net; C: the liberty's input pin
    capacitances of its loads, the boundary's output load where it leaves the unit, and the
    liberty's default wire load model for its fanout."""
    text = netlist.read_text()
    lib = read_liberty(liberty)
    cells = cells_of(lib)
    loads: dict[str, float] = {}
    fanout: dict[str, int] = {}
    drivers = set()

    def load(net, cap):
        loads[net] = loads.get(net, 0.0) + cap
        fanout[net] = fanout.get(net, 0) + 1
    for inst, (cell, pins) in netlist_cells(text).items():
        for pin, net in pins.items():
            if pin in cells[cell].outputs:
                drivers.add(net)
            else:
                load(net, float(cells[cell].pin(pin).attrs["capacitance"]))
    outputs = re.findall(r"^\s*output\s+(?:\[(\d+):(\d+)\]\s+)?(\w+);", text, re.M)
    for msb, lsb, name in outputs:
        for bit in ([f"{name}[{i}]" for i in range(int(lsb), int(msb) + 1)] if msb else [name]):
            load(bit, output_load_pf)
    # ``assign y[3] = _012_;``: the output's load is on the net that drives it.
    for lhs, rhs in re.findall(r"^\s*assign\s+(\S+)\s*=\s*(\S+);", text, re.M):
        if rhs in drivers:
            load(rhs, loads.pop(lhs, 0.0))
            fanout[rhs] += fanout.pop(lhs, 1) - 1
    wire = next(g for g in lib.groups("wire_load") if g.name == lib.attrs["default_wire_load"])
    lengths = {int(f): float(x) for f, x in wire.values("fanout_length")}
    top = max(lengths)

    def wire_cap(n: int) -> float:
        length = lengths.get(n, lengths[top] + float(wire.attrs["slope"]) * (n - top))
        return float(wire.attrs["capacitance"]) * length
    period_s = clock_ps * 1e-12
    return sum(0.5 * (loads.get(net, 0.0) + wire_cap(fanout.get(net, 0))) * 1e-12 *
               voltage ** 2 * activity.rate(net) / period_s
               for net in drivers if net in activity.toggles and fanout.get(net))


def test_switching_matches_half_c_v_squared(mapped, tmp_path):
    """OpenSTA's switching component, from the simulated activity, against 0.5 C V^2 per
    transition computed from the liberty alone; halved toggles are caught by the same check."""
    records, library = mapped
    spec = make_spec("mul", format="fp8e4m3")
    record = records[spec]
    netlist = Path(record.directory).parent / record.asic.netlist
    activity = simulate_activity(netlist, library.cell_models, record.name, spec.ports(),
                                 operand_vectors(spec, "uniform", VECTORS), tmp_path)
    clock_ps = 6000.0
    powers = run_power_sta(tmp_path, library, netlist, record.name, False, clock_ps)
    cells = netlist_cells(netlist.read_text())
    lib_cells = cells_of(read_liberty(library.liberty))
    outputs = {c: tuple(lib_cells[c].outputs) for c, _ in cells.values()}
    assert library.boundary.cap_unit == "pF"

    def compare(act):
        _, switching, _ = combine(cells, outputs, powers, act)
        mine = _independent_switching_w(netlist, library.liberty, act, clock_ps,
                                        library.voltage, library.boundary.output_load)
        return switching, mine
    switching, mine = compare(activity)
    assert switching > 0
    assert abs(switching - mine) / mine < 0.05, (switching, mine)
    halved = replace(activity, toggles={n: t // 2 for n, t in activity.toggles.items()})
    wrong, _ = compare(halved)
    assert abs(wrong - mine) / mine > 0.05, (wrong, mine)


def test_cell_powers_reads_both_runs():
    text = ("@@ idle\n     Internal  Switching  Leakage  Total\n"
            " 0.0 0.0 2.0e-12 2.0e-12 _1_\n@@ unit\n 1.0e-6 2.0e-6 2.0e-12 3.0e-6 _1_\n")
    p = cell_powers(text)["_1_"]
    assert p.idle == (0.0, 0.0, 2.0e-12) and p.unit == (1.0e-6, 2.0e-6, 2.0e-12)
    with pytest.raises(ValueError, match="per-instance"):
        cell_powers(text.replace("@@ unit", "@@ other"))


@pytest.mark.parametrize("kind", KINDS)
def test_zeros_cost_less_than_uniform(energies, kind):
    name = make_spec(kind, format="fp8e4m3").default_name
    zeros, uniform = energies[(name, "zeros")], energies[(name, "uniform")]
    assert zeros.energy_pj < uniform.energy_pj
    assert zeros.to_json().keys() == {"data", "vectors", "clock_ps", "internal_uw",
                                      "switching_uw", "leakage_uw", "energy_pj"}


def test_fp16_mul_costs_more_than_fp8(energies):
    fp8 = energies[(make_spec("mul", format="fp8e4m3").default_name, "uniform")]
    fp16 = energies[(make_spec("mul", format="fp16").default_name, "uniform")]
    assert fp16.energy_pj > fp8.energy_pj


def test_energy_is_power_times_the_units_own_clock(energies, mapped):
    """Without --clock-ps a combinational unit is measured at its worst delay rounded up to
    10 ps, and its energy is the total power times that period."""
    records, _ = mapped
    delay = {s.default_name: r.asic.delay_ps for s, r in records.items()}
    for (name, _), f in energies.items():
        assert f.clock_ps == math.ceil(delay[name] / 10) * 10
        total = f.internal_uw + f.switching_uw + f.leakage_uw
        assert f.energy_pj == pytest.approx(total * f.clock_ps * 1e-6, rel=1e-4)


@pytest.mark.parametrize("argv, message", [
    (["--lib", "sky130hd", "--data", "normal"], "unknown data set 'normal'; the data sets are "
                                                "uniform, gaussian, minilm, zeros"),
    (["--lib", "fpforge"], "the fpforge library has no power tables"),
    (["--lib", "sky130hd", "--clock-ps", "50"], "--clock-ps 50: a register alone needs"),
    (["--lib", "sky130hd", "--stages", "0", "--clock-ps", "1000"],
     "--clock-ps 1000 is shorter than"),
])
def test_bad_power_requests_exit_2_and_write_nothing(tmp_path, capsys, argv, message):
    status = main(["power", "--unit", "mul", "--format", "fp8e4m3", "--vectors", "20",
                   "--out", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_synth_power_writes_the_record(mapped, tmp_path, capsys):
    assert main(["synth", "--unit", "mul", "--format", "fp8e4m3", "--lib", "sky130hd",
                 "--no-fpga", "--no-core", "--power", "--data", "zeros", "--vectors", "20",
                 "--out", str(tmp_path)]) == 0
    record, = tmp_path.glob("*/fp_mul_e4m3fn_rne.json")
    power = json.loads(record.read_text())["power"]
    assert power["data"] == "zeros" and power["vectors"] == 20
    assert main(["synth", "--unit", "mul", "--format", "fp8e4m3", "--data", "zeros",
                 "--out", str(tmp_path)]) == 2


def test_a_pipelined_unit_at_its_clock_pays_for_its_registers(mapped, tmp_path, capsys):
    """One stage of registers measured as built at --clock-ps: the record states that clock,
    and the same operations cost more than through the combinational unit at that clock (the
    flip-flops' clock pins switch every period)."""
    argv = ["power", "--unit", "mul", "--format", "fp8e4m3", "--lib", "sky130hd", "--stages",
            "1", "--clock-ps", "8000", "--data", "uniform", "--vectors", str(VECTORS),
            "--out", str(tmp_path)]
    assert main(argv) == 0
    record = json.loads(next(tmp_path.glob("*/fp_mul_e4m3fn_rne_s1*.json")).read_text())
    assert record["stages"] == 1 and record["power"]["clock_ps"] == 8000
    records, library = mapped
    spec = make_spec("mul", format="fp8e4m3")
    combinational = measure_power(spec, records[spec], library,
                                  operand_vectors(spec, "uniform", VECTORS), "uniform", 8000)
    assert combinational.clock_ps == 8000
    assert record["power"]["energy_pj"] > combinational.energy_pj
