"""Cell libraries as synthesis targets (synth/cell_library.py, docs/synth/libraries.md):
sky130hd mapped, timed and simulated at gate level; the trimmed liberty reproducible and
complete; the boundary read from the library's own tables; bad names refused."""

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from fpforge import synth
from fpforge.rtl.kinds import make_spec
from fpforge.synth.cell_library import (SKY130HD_LIBERTY, boundary_of, library_for,
                                        register_overhead_of)
from fpforge.synth.cells import INPUT_SLEW_NS, OUTPUT_LOAD_FF
from fpforge.synth.liberty import write_library
from fpforge.synth.liberty_file import cells_of, parse, read_liberty
from fpforge.synth.liberty_trim import HEADER, gzip_bytes, keep_cell, trim
from fpforge.synth.records import Design
from fpforge.synth.sta import register_overhead_ps
from tests.cli_run import fpforge

SPEC = make_spec("mul", format="fp8e4m3")
# A two-register pipeline: its register-to-register path has a hold check.
REGISTERED = """module regs(input clk, input [3:0] d, output reg [3:0] q);
  reg [3:0] r;
  always @(posedge clk) begin r <= d ^ {d[0], d[3:1]}; q <= r + 4'd1; end
endmodule
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sky130hd")
    [record] = synth.run([SPEC], out_dir=out, fpga=False, cores=False, lib="sky130hd")
    return record, Path(record.directory).parent


@pytest.fixture(scope="module")
def sky130(tmp_path_factory):
    return library_for("sky130hd", directory=tmp_path_factory.mktemp("lib"))


def test_sky130hd_record_area_ge_delay_and_netlist(run, sky130):
    record, run_dir = run
    a = record.asic
    assert record.library == "sky130hd"
    nand2 = cells_of(read_liberty(sky130.liberty))["sky130_fd_sc_hd__nand2_1"].area
    assert sky130.nand2_area == nand2
    assert a.area_um2 > 0 and a.ge == round(a.area_um2 / nand2, 1)
    assert all(t.startswith("sky130_fd_sc_hd__") for t in a.cells_by_type)
    # The delay is OpenSTA's: period less slack in its own log.
    log = (run_dir / record.name / "asic" / "sta.log").read_text()
    slack = float(re.search(r"(-?[\d.]+)\s+slack \(MET\)", log).group(1))
    assert a.delay_ps == round((1000 - slack) * 1000, 1)
    stored = json.loads((run_dir / f"{record.name}.json").read_text())
    netlist = run_dir / stored["asic"]["netlist"]
    assert netlist.is_file() and f"module {record.name}" in netlist.read_text()


def _verify(record, run_dir, models: Path):
    from fpforge.sim.design import Design as SimDesign
    from fpforge.sim.verify import verify
    netlist = run_dir / record.asic.netlist
    design = SimDesign.from_files(SPEC, [models, netlist], SPEC.default_name, nan="exact")
    return verify(design, engine="batch")


def test_gate_level_sky130hd_netlist_matches_golden_and_a_broken_cell_is_caught(run, tmp_path):
    record, run_dir = run
    models = next((run_dir / "lib").glob("*_cells.v"))
    assert _verify(record, run_dir, models).ok
    # Flip the function of the most used cell: the simulation must see it.
    cell = max(record.asic.cells_by_type, key=record.asic.cells_by_type.get)
    text = models.read_text()
    body = re.search(rf"module {cell} .*?endmodule", text, re.S).group(0)
    broken = re.sub(r"assign (\w+) = (.*);", r"assign \1 = ~(\2);", body)
    assert broken != body
    bad = tmp_path / "broken_cells.v"
    bad.write_text(text.replace(body, broken))
    assert not _verify(record, run_dir, bad).ok


def test_trim_is_reproducible_and_keeps_power_tables():
    data = SKY130HD_LIBERTY.read_bytes()
    text = gzip.decompress(data).decode()
    assert gzip_bytes(text) == data and text.startswith(HEADER)
    assert trim(text.removeprefix(HEADER)) == text       # idempotent: nothing left to drop
    lib = parse(text)
    cells = cells_of(lib)
    assert len(cells) > 150 and all(keep_cell(c) for c in cells.values())
    for c in cells.values():
        if not c.inputs:          # the tie cell: no switching, no leakage table
            continue
        assert c.group.groups("leakage_power"), c.name
        assert any(p.groups("internal_power") for p in c.group.groups("pin")), c.name
    assert "sky130_fd_sc_hd__dfxtp_1" in cells
    assert not [n for n in cells if re.search("lpflow|probe|decap|diode|dlx|sdf", n)]


def test_trim_drops_a_dont_use_cell_put_back():
    text = gzip.decompress(SKY130HD_LIBERTY.read_bytes()).decode().removeprefix(HEADER)
    inv = re.search(r'\n    cell \("sky130_fd_sc_hd__inv_1"\) \{.*?\n    \}', text, re.S).group(0)
    planted = inv.replace("sky130_fd_sc_hd__inv_1", "sky130_fd_sc_hd__lpflow_isobufsrc_1")
    with_it = text.replace(inv, inv + planted)
    assert "lpflow_isobufsrc_1" in with_it
    assert trim(with_it) == HEADER + text


def test_own_library_boundary_read_from_its_liberty_is_cells_py(tmp_path):
    lib_path, _ = write_library(tmp_path)
    lib = read_liberty(lib_path)
    cells = cells_of(lib)
    b = boundary_of(lib, cells)
    assert b.input_transition == pytest.approx(INPUT_SLEW_NS, abs=1e-5)
    assert b.output_load == pytest.approx(OUTPUT_LOAD_FF, rel=1e-6) and b.units == "ns, fF"
    assert register_overhead_of(lib, cells, b) == pytest.approx(register_overhead_ps(), abs=0.2)


def test_a_liberty_is_parsed_once_per_content_not_per_path(tmp_path):
    """Every synthesis job writes the library into its own folder: read_liberty parses a text
    it has seen once (the same group back), and a file rewritten in place, its modification
    time kept, is read again."""
    lib_path, _ = write_library(tmp_path / "a")
    text = lib_path.read_text()
    copy = tmp_path / "b.lib"
    copy.write_text(text)
    assert read_liberty(copy) is read_liberty(lib_path)
    stat = copy.stat()
    copy.write_text(text.replace("area : ", "area : 1", 1))
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    changed = read_liberty(copy)
    assert changed is not read_liberty(lib_path)
    assert changed == parse(copy.read_text())


def test_boundary_follows_the_inverter_table(tmp_path, sky130):
    b = sky130.boundary
    assert b.driver == "sky130_fd_sc_hd__inv_1" and b.units == "ns, pF"
    nand = cells_of(read_liberty(sky130.liberty))["sky130_fd_sc_hd__nand2_1"]
    assert b.output_load == pytest.approx(4 * max(float(nand.pin(p).attrs["capacitance"])
                                                  for p in nand.inputs))
    # The same library with the inverter's transition tables doubled: a different slew.
    text = sky130.liberty.read_text()
    start = text.index('cell ("sky130_fd_sc_hd__inv_1")')
    end = text.index('cell ("', start + 10)

    def doubled(m):
        return "values(" + re.sub(r"[\d.]+", lambda v: f"{2 * float(v.group(0)):.10f}",
                                  m.group(1)) + ");"
    inv = re.sub(r"(?s)(?<=transition \(\"del_1_7_7\"\) \{)(.*?)(?=\})",
                 lambda m: re.sub(r"(?s)values\((.*?)\);", doubled, m.group(1)), text[start:end])
    assert inv != text[start:end]
    other = tmp_path / "doubled.lib"
    other.write_text(text[:start] + inv + text[end:])
    lib = read_liberty(other)
    assert boundary_of(lib, cells_of(lib)).input_transition == \
        pytest.approx(2 * b.input_transition, rel=1e-3)


def test_hold_is_checked_on_registered_designs(tmp_path, sky130):
    design = Design("regs", REGISTERED, "verilog", "two registers")
    [r] = synth.run_designs([design], out_dir=tmp_path, fpga=False, lib="sky130hd")
    assert r.asic.registers == 8 and r.asic.cells_by_type.get(sky130.dff, 0) >= 1
    log = (Path(r.directory) / "asic" / "sta.log").read_text()
    hold = log.split("@@ hold")[1]
    assert "Path Type: min" in hold
    slack = float(re.search(r"(-?[\d.]+)\s+slack \((?:MET|VIOLATED)\)", hold).group(1))
    assert r.asic.hold_slack_ps == round(slack * 1000, 1) and r.asic.hold_slack_ps > 0


@pytest.mark.parametrize("args,message", [
    (["--lib", "tsmc7"], "--lib must be one of fpforge, sky130hd, not 'tsmc7'"),
    (["--lib", "sky130hd", "--liberty", "x.lib"],
     "--lib and --liberty both name the cells: give one of them"),
])
def test_bad_library_is_one_line_exit_2_nothing_written(args, message, tmp_path):
    done = fpforge("synth", "--unit", "mul", "--format", "fp8e4m3", "--no-fpga", "--out",
                   str(tmp_path), *args)
    assert done.returncode == 2 and done.stderr == f"fpforge synth: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_no_liberty_is_one_line_exit_2_nothing_written(tmp_path):
    bogus = tmp_path / "cells.lib"
    bogus.write_text("not a liberty\n")
    out = tmp_path / "out"
    out.mkdir()
    done = fpforge("synth", "--unit", "mul", "--format", "fp8e4m3", "--no-fpga", "--liberty",
                   str(bogus), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr == (f"fpforge synth: error: liberty file {str(bogus)!r} cannot be used: "
                           f"no library group\n")
    assert list(out.iterdir()) == []


def test_a_gzipped_user_liberty_is_read_as_its_text(tmp_path):
    """OpenSTA's examples ship liberties gzipped: fpforge's own cells, gzipped, give the figures
    of fpforge's own run, under the file's own name."""
    plain, _ = write_library(tmp_path / "plain")
    packed = tmp_path / "mine.lib.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    spec = [make_spec("mul", format="fp8e4m3")]
    own, = synth.run(spec, out_dir=tmp_path / "a", fpga=False, cores=False)
    user, = synth.run(spec, out_dir=tmp_path / "b", fpga=False, cores=False, liberty=packed)
    assert user.library == "mine.lib.gz"
    assert (user.asic.area_um2, user.asic.delay_ps) == (own.asic.area_um2, own.asic.delay_ps)


@pytest.mark.parametrize("function", ["!!!(((C1 & C2) | B) | A)", "!(A B)", "(A^B) + !C",
                                      "!!A"])
def test_cell_functions_simulate_as_their_truth_table(function, tmp_path):
    """Every liberty function becomes Verilog that Icarus reads and that computes the
    function's truth table (NanGate's X4 cells write "!!!(...)": "~~" is no Verilog)."""
    import itertools

    from fpforge.synth.liberty_models import evaluate, parse_function, verilog_expr
    expr = parse_function(function)
    names = sorted(set(re.findall(r"[A-Z]\w*", function)))
    rows = list(itertools.product((0, 1), repeat=len(names)))
    checks = "\n".join(f"    {{{', '.join(names)}}} = {len(names)}'b{''.join(map(str, r))}; #1 "
                       f"$display(\"%b\", y);" for r in rows)
    (tmp_path / "t.v").write_text(
        f"module t; reg {', '.join(names)}; wire y = {verilog_expr(expr)};\n"
        f"  initial begin\n{checks}\n  end\nendmodule\n")
    subprocess.run(["iverilog", "-o", "t.vvp", "t.v"], cwd=tmp_path, check=True)
    out = subprocess.run(["vvp", "-n", "t.vvp"], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(evaluate(expr, dict(zip(names, r)))) for r in rows]


def _in_picoseconds(text: str) -> str:
    """fpforge's own liberty with every time in ps: transitions (index_1, and index_2 of the
    constraint tables) and delays (values) x 1000; loads stay."""
    def scaled(numbers: str) -> str:
        return ", ".join(f"{float(x) * 1000:g}" for x in numbers.split(","))

    def table(m) -> str:
        body = re.sub(r'index_1\("([^"]*)"\)', lambda i: f'index_1("{scaled(i.group(1))}")',
                      m.group(3))
        if m.group(2) == "constraint_3x3":
            body = re.sub(r'index_2\("([^"]*)"\)', lambda i: f'index_2("{scaled(i.group(1))}")',
                          body)
        body = re.sub(r'values\((.*?)\);', lambda v: "values(" + ", ".join(
            f'"{scaled(row)}"' for row in re.findall(r'"([^"]*)"', v.group(1))) + ");", body,
                      flags=re.S)
        return f"{m.group(1)}({m.group(2)}) {{{body}}}"
    text = text.replace('time_unit : "1ns"', 'time_unit : "1ps"')
    text = text.replace("default_max_transition : 1;", "default_max_transition : 1000;")
    return re.sub(r"(\w+)\((delay_3x3|constraint_3x3)\) \{(.*?)\}", table, text, flags=re.S)


def test_a_liberty_in_picoseconds_times_to_the_same_picoseconds(tmp_path):
    """OpenSTA reads and reports in the liberty's time unit: the same cells written in ps give
    the same delay, boundary and register overhead as in ns."""
    plain, _ = write_library(tmp_path / "ns")
    ps = tmp_path / "cells_ps.lib"
    ps.write_text(_in_picoseconds(plain.read_text()))
    spec = [make_spec("mul", format="fp8e4m3", stages=1)]
    in_ns, = synth.run(spec, out_dir=tmp_path / "a", fpga=False, cores=False, liberty=plain)
    in_ps, = synth.run(spec, out_dir=tmp_path / "b", fpga=False, cores=False, liberty=ps)
    assert in_ps.asic.delay_ps == pytest.approx(in_ns.asic.delay_ps, abs=0.2)
    assert in_ps.asic.hold_slack_ps == pytest.approx(in_ns.asic.hold_slack_ps, abs=0.2)
    libs = [library_for(liberty=f, directory=tmp_path / f.stem) for f in (plain, ps)]
    assert libs[1].boundary.text == libs[0].boundary.text
    assert libs[1].register_overhead_ps == pytest.approx(libs[0].register_overhead_ps, abs=0.1)
