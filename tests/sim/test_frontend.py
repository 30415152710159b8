"""The SystemVerilog front end (sim/frontend.py): sources as a simulator's command line and file
lists give them, ports elaborated by slang with their packed dimensions, one-line errors naming
file and line, and ``fpforge verify`` of a SystemVerilog module end to end on Verilator (the
cocotb bench and the native engine), where a deliberately wrong variant fails."""

import os

import pytest

from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.errors import DesignError
from fpforge.sim.frontend import PortInfo, Sources, files_read, read_ports

PKG = """\
package fp_pkg;
  typedef enum logic [2:0] {RNE = 3'd0, RTZ = 3'd1, RDN = 3'd2, RUP = 3'd3, RMM = 3'd4} rm_e;
  typedef struct packed { logic nv, dz, of, uf, nx; } status_t;
endpackage
"""
DEFS = """\
`ifndef OPW
`define OPW 16
`endif
"""
UNIT = """\
`include "defs.svh"
module sv_unit import fp_pkg::*; #(
  parameter type T = logic [`OPW-1:0],
  parameter int N = 3,
  parameter rm_e MODE = RNE
) (
  input  logic clk,
  input  T [N-1:0] ops,
  input  rm_e rm,
  output status_t status,
  output T y
);
  localparam int HIDDEN = 1;
  always_ff @(posedge clk) y <= ops[0];
  assign status = '0;
endmodule
"""


def ports(opw: int, n: int) -> dict:
    return {"clk": PortInfo("input", 1, ((0, 0),)),
            "ops": PortInfo("input", n * opw, ((n - 1, 0), (opw - 1, 0))),
            "rm": PortInfo("input", 3, ((2, 0),)),
            "status": PortInfo("output", 5, ((4, 0),)),
            "y": PortInfo("output", opw, ((opw - 1, 0),))}


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """pkg.sv and unit.sv in tmp_path/ip, the include in tmp_path/inc; cwd tmp_path."""
    (tmp_path / "ip").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "ip" / "pkg.sv").write_text(PKG)
    (tmp_path / "ip" / "unit.sv").write_text(UNIT)
    (tmp_path / "inc" / "defs.svh").write_text(DEFS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_ports_packages_enums_structs_type_parameters_and_2d_ports(tree):
    src = Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc"])
    assert src.systemverilog and src.include_dirs == (tree / "inc",)
    assert read_ports(src, "sv_unit") == ports(16, 3)
    # A define given outside wins over the include's default; parameters are overridden,
    # an enum-typed one by its integer value.
    src = Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-Iinc", "-D", "OPW=8"],
                            params=["N=2", "MODE=3"])
    assert src.defines == (("OPW", "8"),) and src.params == (("N", "2"), ("MODE", "3"))
    assert read_ports(src, "sv_unit") == ports(8, 2)


def test_a_file_list_as_simulators_read_it(tree):
    (tree / "lists").mkdir()
    (tree / "lists" / "inner.f").write_text("// -F: paths relative to this list\n"
                                            "../ip/unit.sv   # the unit\n")
    (tree / "all.f").write_text("# sources of sv_unit\n\n"
                                "+incdir+inc+ip\n"
                                "+define+OPW=12+UNUSED\n"
                                "ip/pkg.sv // the package first\n"
                                "-F lists/inner.f\n")
    src = Sources.from_args(["-f", "all.f"])
    assert src.files == (tree / "ip" / "pkg.sv", tree / "ip" / "unit.sv")
    assert src.include_dirs == (tree / "inc", tree / "ip")
    assert src.defines == (("OPW", "12"), ("UNUSED", None))
    assert src.file_lists == (tree / "all.f", tree / "lists" / "inner.f")
    assert read_ports(src, "sv_unit") == ports(12, 3)
    # -f: relative to the current directory, so the same inner list read with -f misses
    (tree / "bad.f").write_text("ip/pkg.sv\n-f lists/inner.f\n")
    with pytest.raises(DesignError) as err:
        Sources.from_args(["-f", "bad.f"])
    assert str(err.value) == (f"lists/inner.f:2: Verilog file '{tree.parent / 'ip/unit.sv'}' "
                              "does not exist")


def test_verilog_2005_sources_are_read_with_its_keywords(tmp_path):
    # `bit` and `int` are names in Verilog-2005 (Icarus -g2005 reads this), keywords in SV.
    text = "module kw(input [7:0] bit, output [7:0] int);\n  assign int = bit;\nendmodule\n"
    (tmp_path / "kw.v").write_text(text)
    (tmp_path / "kw.sv").write_text(text)
    src = Sources.of([tmp_path / "kw.v"])
    assert not src.systemverilog
    assert read_ports(src, "kw") == {"bit": PortInfo("input", 8, ((7, 0),)),
                                     "int": PortInfo("output", 8, ((7, 0),))}
    with pytest.raises(DesignError, match=r"kw.sv:1: expected identifier"):
        read_ports(Sources.of([tmp_path / "kw.sv"]), "kw")


def test_interface_and_unpacked_ports_are_left_out(tmp_path):
    (tmp_path / "odd.sv").write_text(
        "interface bus_if; logic [7:0] d; modport m(input d); endinterface\n"
        "module odd(input logic [7:0] arr [2], bus_if.m b, input logic [3:0] ok, output int n);\n"
        "  assign n = 0;\nendmodule\n")
    assert read_ports(Sources.of([tmp_path / "odd.sv"]), "odd") == {
        "ok": PortInfo("input", 4, ((3, 0),)), "n": PortInfo("output", 32, ((31, 0),))}


def test_the_key_covers_included_files_defines_and_params(tree):
    src = Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc"])
    assert files_read(src) == (tree / "ip/pkg.sv", tree / "ip/unit.sv", tree / "inc/defs.svh")
    key = src.key()
    assert Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc"]).key() == key
    assert Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc", "-DX"]).key() != key
    assert Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc"],
                             params=["N=2"]).key() != key
    (tree / "inc" / "defs.svh").write_text(DEFS + "// edited\n")
    assert src.key() != key


@pytest.mark.parametrize("edit, args, top, params, message", [
    (("unit.sv", "assign status = '0;", "assign status = ;"), [], "sv_unit", [],
     "ip/unit.sv:15: expected expression"),
    (("unit.sv", '"defs.svh"', '"nope.svh"'), [], "sv_unit", [],
     "ip/unit.sv:1: 'nope.svh': No such file or directory"),
    (("unit.sv", "import fp_pkg", "import no_pkg"), [], "sv_unit", [],
     "ip/unit.sv:2: unknown package 'no_pkg'"),
    (None, [], "fpu", [], "no module 'fpu' in pkg.sv, unit.sv; its modules: sv_unit"),
    (None, [], "sv_unit", ["HIDDEN=2"],
     "--param HIDDEN: module sv_unit has no parameter 'HIDDEN'; its parameters: T, N, MODE"),
    (None, [], "sv_unit", ["N=two"], "--param takes NAME=VALUE with an integer VALUE (42, -1, "
                                     "8'hff; an enum parameter by its integer value), not 'N=two'"),
    (None, ["-D", "2X"], "sv_unit", [],
     "--define takes NAME or NAME=VALUE (NAME an identifier), not '2X'"),
    (None, ["-I", "nowhere"], "sv_unit", [], "include directory '{tmp}/nowhere' does not exist"),
    (None, ["ip/gone.sv"], "sv_unit", [], "Verilog file '{tmp}/ip/gone.sv' does not exist"),
    (None, ["-f", "gone.f"], "sv_unit", [], "file list '{tmp}/gone.f' does not exist"),
    (None, ["+libext+.v"], "sv_unit", [],
     "'+libext+.v' is not an option here; sources, -f/-F FILE, -I DIR, +incdir+DIR, "
     "-D NAME[=VALUE], +define+NAME[=VALUE]"),
])
def test_bad_sources_are_one_line_naming_file_and_line(tree, edit, args, top, params, message):
    if edit:
        path = tree / "ip" / edit[0]
        assert edit[1] in path.read_text()
        path.write_text(path.read_text().replace(edit[1], edit[2]))
    with pytest.raises(DesignError) as err:
        src = Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc", *args], params=params)
        read_ports(src, top)
    assert str(err.value) == message.format(tmp=tree)


def test_a_user_design_compares_port_widths_from_the_front_end(tree):
    spec = make_spec("mul", format="fp8e4m3")
    src = Sources.from_args(["ip/pkg.sv", "ip/unit.sv", "-I", "inc"])
    with pytest.raises(DesignError) as err:
        Design.from_files(spec, src, "sv_unit", port_map={"a": "ops", "b": "rm"})
    assert str(err.value) == "module sv_unit port ops is an input of 48 bit(s); a needs an " \
                             "input of 8"


# ----- fpforge verify end to end ------------------------------------------------------------------

# A SystemVerilog shell (a package's struct port, an included define, logic types) around
# fpforge's own Verilog of fp16 -> E5M2; under `define BREAK it flips the result's lowest bit.
SHELL_PKG = """\
package shell_pkg;
  typedef struct packed { logic nv, dz, of, uf, nx; } flags_t;
endpackage
"""
SHELL_DEFS = "`define FLIP_MASK 8'h01\n"
SHELL = """\
`include "shell_defs.svh"
module sv_cvt import shell_pkg::*; (
  input  logic [15:0] x,
  output logic [7:0]  y,
  output flags_t      flags
);
  logic [7:0] y_core;
  logic [4:0] f_core;
  core u_core (.x(x), .y(y_core), .flags(f_core));
`ifdef BREAK
  assign y = y_core ^ `FLIP_MASK;
`else
  assign y = y_core;
`endif
  assign flags = f_core;
endmodule
"""
CVT = ["--unit", "cvt", "--format", "fp8e5m2", "--in-format", "fp16"]


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    d = tmp_path_factory.mktemp("shell")
    (d / "inc").mkdir()
    spec = make_spec("cvt", format="fp8e5m2", in_format="fp16")
    (d / "core.v").write_text(emit.verilog(spec, "core"))
    (d / "shell_pkg.sv").write_text(SHELL_PKG)
    (d / "inc" / "shell_defs.svh").write_text(SHELL_DEFS)
    (d / "sv_cvt.sv").write_text(SHELL)
    (d / "files.f").write_text(f"+incdir+{d / 'inc'}\n{d / 'core.v'}\n{d / 'shell_pkg.sv'}\n"
                               f"{d / 'sv_cvt.sv'}\n")
    return d


def test_verify_a_systemverilog_module_on_verilator(shell, capsys):
    status = main(["verify", *CVT, "-f", str(shell / "files.f"), "--top", "sv_cvt"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "0 mismatches" in out


def test_the_broken_variant_fails_on_the_native_engine(shell, capsys):
    status = main(["verify", *CVT, "--verilog", str(shell / "core.v"),
                   "--verilog", str(shell / "shell_pkg.sv"), "--verilog", str(shell / "sv_cvt.sv"),
                   "--include", str(shell / "inc"), "--define", "BREAK", "--top", "sv_cvt",
                   "--exhaustive", "--shards", "1"])
    out = capsys.readouterr().out
    assert status == 1, out
    # every input but the 2,046 fp16 NaNs (whose NaN stays a NaN with its low bit flipped)
    assert "sv_cvt: FAIL, 65,536 vectors, 63,490 mismatches" in out


@pytest.mark.parametrize("args, message", [
    (["--sim", "icarus"], "sv_cvt has SystemVerilog sources, which run on Verilator (the default "
                          "for them: --sim verilator, or --exhaustive); --sim icarus runs Icarus "
                          "on Verilog-2005 only"),
    (["--engine", "batch"], "sv_cvt has SystemVerilog sources, which run on Verilator (the "
                            "default for them: --sim verilator, or --exhaustive); --engine batch "
                            "runs Icarus on Verilog-2005 only"),
    (["--param", "N=1"], "--param N: module sv_cvt has no parameter 'N'; its parameters: none"),
    (["--param", "N"], "--param takes NAME=VALUE with an integer VALUE (42, -1, 8'hff; an enum "
                       "parameter by its integer value), not 'N'"),
    (["--define", "A-B"], "--define takes NAME or NAME=VALUE (NAME an identifier), not 'A-B'"),
])
def test_bad_systemverilog_input_is_exit_2_and_writes_nothing(shell, args, message, capsys,
                                                              tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(shell))
    status = main(["verify", *CVT, "-f", str(shell / "files.f"), "--top", "sv_cvt", *args])
    out = capsys.readouterr()
    assert (status, out.out) == (2, "")
    assert out.err == f"fpforge verify: error: {message}\n"
    assert sorted(os.listdir(shell)) == before and os.listdir(tmp_path) == []


def test_source_options_need_sources(capsys):
    status = main(["verify", *CVT, "--define", "X"])
    assert status == 2
    assert capsys.readouterr().err == (
        "fpforge verify: error: --define describes a module given with --verilog FILE or "
        "-f FILE; without them fpforge checks its own unit\n")
