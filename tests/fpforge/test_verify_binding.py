"""``fpforge verify`` on a module with a third-party interface (issue 31, items 2 and 3): three
8-bit operands on one packed bus, an operation select, rm codes of its own and flags in another
order, bound with --port ROLE=NAME[HI:LO], --tie, --rm-codes and --flags-order. The arithmetic
is fpforge's own exported multiplier inside a hand-written shell that re-encodes, so the module
is correct by construction; a wrong --flags-order, a wrong --rm-codes and a tie that selects
the wrong operation each fail with mismatches. Icarus (the batch engine): every input."""

import pytest

from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.kinds import make_spec

SPEC = make_spec("mul", format="fp8e4m3", rounding="dynamic")
UNIT = ["--unit", "mul", "--format", "fp8e4m3", "--rounding", "dynamic", "--engine", "batch"]
# operands[7:0] and [15:8] are multiplied when op_sel is 2; [23:16] is a third operand this
# operation does not read. The module's rm codes: rne=3, rtz=0, rdn=1, rup=2, rna=4.
SHELL = """
module shell(operands, op_sel, rmode, result, fflags_o);
  input [23:0] operands;
  input [1:0] op_sel;
  input [2:0] rmode;
  output [7:0] result;
  output [%d:0] fflags_o;
  reg [2:0] rm;
  always @(*) begin
    case (rmode)
      3'd3: rm = 3'd0;
      3'd0: rm = 3'd1;
      3'd1: rm = 3'd2;
      3'd2: rm = 3'd3;
      default: rm = 3'd4;
    endcase
  end
  wire [7:0] y;
  wire [4:0] f;    // fpforge's order: nv, dz, of, uf, nx
  fp_inner core (.a(operands[7:0]), .b(operands[15:8]), .rm(rm), .y(y), .flags(f));
  assign result = op_sel == 2'd2 ? y : operands[15:8];
  assign fflags_o = %s;
endmodule
"""
REVERSED = (4, "{f[0], f[1], f[2], f[3], f[4]}")       # nx, uf, of, dz, nv
NARROW = (2, "{f[4], f[2], f[0]}")                     # nv, of, nx
ROLES = ["--port", "a=operands[7:0]", "--port", "b=operands[15:8]", "--port", "rm=rmode",
         "--port", "y=result", "--port", "flags=fflags_o"]
RIGHT = ["--tie", "op_sel=2'd2", "--rm-codes", "rne=3,rtz=0,rdn=1,rup=2,rna=4",
         "--flags-order", "nx,uf,of,dz,nv"]


@pytest.fixture(scope="module")
def shells(tmp_path_factory):
    d = tmp_path_factory.mktemp("shells")
    out = {}
    for name, (msb, flags) in (("reversed", REVERSED), ("narrow", NARROW)):
        path = d / f"{name}.v"
        path.write_text(emit.verilog(SPEC, "fp_inner") + SHELL % (msb, flags))
        out[name] = str(path)
    return out


def verify(shell, capsys, *args, roles=ROLES):
    status = main(["verify", *UNIT, "--verilog", shell, "--top", "shell", *roles, *args])
    return status, capsys.readouterr().out


def replaced(args, option, value):
    i = args.index(option)
    return [*args[:i + 1], value, *args[i + 2:]]


def test_the_bound_module_passes_every_input(shells, capsys):
    status, out = verify(shells["reversed"], capsys, *RIGHT)
    assert status == 0, out
    assert "shell: PASS, 65,536 vectors, 0 mismatches" in out
    assert "undriven inputs driven 0: operands[23:16]" in out
    assert "rounding modes driven (module code): rne=3, rtz=0, rdn=1, rup=2, rna=4" in out


@pytest.mark.parametrize("option,wrong", [
    ("--flags-order", "nv,dz,of,uf,nx"),
    ("--rm-codes", "riscv"),
    ("--tie", "op_sel=2'd1"),
])
def test_a_wrong_binding_fails(shells, capsys, option, wrong):
    status, out = verify(shells["reversed"], capsys, *replaced(RIGHT, option, wrong))
    assert status == 1, out
    assert "shell: FAIL, 65,536 vectors" in out and "expected y=" in out


def test_a_narrow_flags_port_compares_the_flags_it_has(shells, capsys):
    status, out = verify(shells["narrow"], capsys, *replaced(RIGHT, "--flags-order", "nv,of,nx"))
    assert status == 0, out
    assert "flags not compared (the module has no such bit): dz, uf" in out
    status, out = verify(shells["narrow"], capsys, *replaced(RIGHT, "--flags-order", "nx,of,nv"))
    assert status == 1, out


def test_only_listed_rounding_modes_are_driven(shells, capsys):
    """rne and rtz only: a module that got the others wrong would still pass, and the verdict
    says which modes were driven; values only, flags ignored (--no-flags)."""
    status, out = verify(shells["reversed"], capsys, "--tie", "op_sel=2'd2", "--rm-codes",
                         "rne=3,rtz=0", "--no-flags", roles=ROLES[:-2])
    assert status == 0, out
    assert "rounding modes driven (module code): rne=3, rtz=0" in out
    assert "not compared (the module has no such port): flags" in out


@pytest.mark.parametrize("args,message", [
    (["--port", "a=operands[24:16]"], "--port a=operands[24:16]: operands[24:16] is out of "
                                      "range of operands[23:0] (valid: 23..0)"),
    (["--tie", "result=0"], "--tie result: result is an output; ties drive inputs only"),
    (["--tie", "op_sel=3'd2"], "--tie op_sel: the value is wider than the 2 bit(s) it drives"),
    (["--tie", "operands[8]=1"], "--tie operands and --port b both drive bits of operands "
                                 "(bits [8..8])"),
    (["--flags-order", "nv,dz,of,uf,xx"], "--flags-order nv,dz,of,uf,xx: unknown flag 'xx'; "
                                          "valid: nv, dz, of, uf, nx"),
    (["--flags-order", "nv,dz,of,uf"], "--flags-order names 4 flag(s); fflags_o has 5 bit(s)"),
    (["--rm-codes", "rne=0,rod=1"], "--rm-codes rne=0,rod=1: fpforge cannot compute mode 'rod' "
                                    "per operation; valid: rne, rtz, rdn, rup, rna"),
    (["--no-flags", "--flags-order", "nv"],
     "--no-flags compares values only; it takes no --flags-order"),
])
def test_bad_binding_exits_2_with_one_line_and_writes_nothing(shells, capsys, tmp_path, args,
                                                              message):
    junit = tmp_path / "v.xml"
    if args[0] == "--port":      # in place of role a
        args = [*args, *ROLES[2:]]
    else:
        args = [*ROLES, *args]
    status = main(["verify", *UNIT, "--verilog", shells["reversed"], "--top", "shell", *args,
                   "--junit", str(junit)])
    out = capsys.readouterr()
    assert status == 2 and out.out == "" and not junit.exists()
    assert out.err == f"fpforge verify: error: {message}\n"


def test_binding_options_need_a_verilog_module(capsys):
    status = main(["verify", *UNIT, "--rm-codes", "riscv"])
    err = capsys.readouterr().err
    assert status == 2 and err == ("fpforge verify: error: --rm-codes describes a module given "
                                   "with --verilog FILE or -f FILE; without them fpforge "
                                   "checks its own unit\n")
