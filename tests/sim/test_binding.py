"""sim/binding.py: port references, constants, the binding's options and every bad input (one
line naming what is valid), and the wrapper module for a packed 2-D operand port, read by
Verilator. The runs end to end are tests/fpforge/test_verify_binding.py."""

import subprocess

import pytest

from fpforge.infra import toolchain
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError, Rounding
from fpforge.sim.binding import (Binding, Bits, PortRef, Value, parse_flags_order, parse_ref,
                                 parse_rm_codes, parse_value, resolve, wrapper_verilog)
from fpforge.sim.frontend import PortInfo

SPEC = make_spec("mul", format="fp8e4m3", rounding="dynamic")
DATA = tuple(p for p in SPEC.ports() if not p.is_control)

# A third-party interface: a packed array of three 8-bit operands, an operation select, an rm
# port with its own codes, five flags in another order, a tag that is no role.
PORTS = {
    "clk_i": PortInfo("input", 1, ((0, 0),)),
    "operands_i": PortInfo("input", 24, ((2, 0), (7, 0))),
    "op_i": PortInfo("input", 2, ((1, 0),)),
    "rnd_i": PortInfo("input", 3, ((2, 0),)),
    "tag_i": PortInfo("input", 4, ((3, 0),)),
    "result_o": PortInfo("output", 16, ((15, 0),)),
    "status_o": PortInfo("output", 5, ((4, 0),)),
}
ROLES = ["a=operands_i[0]", "b=operands_i[1]", "y=result_o[7:0]", "rm=rnd_i",
         "flags=status_o"]


def bind(*, ports=ROLES, ties=(), flags_order="nx,uf,of,dz,nv", rm_codes="rne=3,rtz=0,rdn=1",
         no_flags=False, control=("clk_i",), module=PORTS):
    b = Binding.parse(ports=ports, ties=ties, flags_order=flags_order, rm_codes=rm_codes,
                      no_flags=no_flags)
    return b.resolve(DATA, module, "fpu", control=control, unit=SPEC.default_name)


# ----- references and constants ------------------------------------------------------------------

@pytest.mark.parametrize("text,ref,bits", [
    ("operands_i", PortRef("operands_i"), Bits("operands_i", 0, 24)),
    ("operands_i[1]", PortRef("operands_i", (1,)), Bits("operands_i", 8, 8)),
    ("operands_i[2:1]", PortRef("operands_i", ((2, 1),)), Bits("operands_i", 8, 16)),
    ("operands_i[2][3:0]", PortRef("operands_i", (2, (3, 0))), Bits("operands_i", 16, 4)),
    ("operands_i[1][7]", PortRef("operands_i", (1, 7)), Bits("operands_i", 15, 1)),
    ("result_o[15:8]", PortRef("result_o", ((15, 8),)), Bits("result_o", 8, 8)),
])
def test_a_reference_names_bits_of_the_flattened_port(text, ref, bits):
    assert parse_ref(text, "--port") == ref and str(ref) == text
    assert resolve(ref, PORTS, "--port", "fpu") == bits


def test_an_ascending_dimension_counts_from_its_right_end():
    ports = {"v": PortInfo("input", 8, ((0, 7),))}
    assert resolve(parse_ref("v[0:3]", "x"), ports, "x", "m") == Bits("v", 4, 4)
    with pytest.raises(OptionError, match=r"^x: v\[3:0\] selects against the direction of "
                                          r"v\[0:7\]; write \[0:3\]$"):
        resolve(parse_ref("v[3:0]", "x"), ports, "x", "m")


@pytest.mark.parametrize("text,message", [
    ("operands_i[3]", "--port a=...: operands_i[3] is out of range of operands_i[2:0][7:0] "
                      "(valid: 2..0)"),
    ("operands_i[1][8]", "--port a=...: operands_i[1][8] is out of range of "
                         "operands_i[2:0][7:0] (valid: 7..0)"),
    ("operands_i[1][7][0]", "--port a=...: operands_i[1][7][0] selects below a single bit of "
                            "operands_i[2:0][7:0]"),
    ("nope[1]", "--port a=...: module fpu has no port 'nope'; its ports: clk_i, op_i, "
                "operands_i, result_o, rnd_i, status_o, tag_i"),
])
def test_a_reference_out_of_range_names_the_dimensions(text, message):
    with pytest.raises(OptionError) as err:
        resolve(parse_ref(text, "--port a=..."), PORTS, "--port a=...", "fpu")
    assert str(err.value) == message


@pytest.mark.parametrize("text", ["op i", "3op", "op[1:0][2]", "op[-1]", "op[a]"])
def test_a_malformed_reference(text):
    with pytest.raises(OptionError, match=r"^--tie: '.*' is not a port reference|a part select"):
        parse_ref(text, "--tie")


@pytest.mark.parametrize("text,width,value", [
    ("3'b101", 3, 5), ("4'd3", 8, 3), ("8'hff", 8, 255), ("'1", 6, 63), ("'0", 6, 0),
    ("12", 4, 12), ("'h1_0", 8, 16), ("2'o3", 2, 3),
])
def test_constants(text, width, value):
    assert parse_value(text, "--tie") .bits(width, "--tie") == value


@pytest.mark.parametrize("text,width,message", [
    ("4'd3", 3, "--tie x: the value is wider than the 3 bit(s) it drives"),
    ("9", 3, "--tie x: the value is wider than the 3 bit(s) it drives"),
])
def test_a_constant_wider_than_its_bits(text, width, message):
    with pytest.raises(OptionError) as err:
        parse_value(text, "--tie x").bits(width, "--tie x")
    assert str(err.value) == message


@pytest.mark.parametrize("text", ["3'b102", "2'd7", "x", "'2", "8'hzz", "-1", "0'd0"])
def test_a_bad_constant(text):
    with pytest.raises(OptionError, match=r"^--tie x: .*(is not a constant; valid: a decimal or "
                                          r"a Verilog literal such as 3'b111|does not fit)"):
        parse_value(text, "--tie x")


# ----- options -----------------------------------------------------------------------------------

def test_flags_order_and_rm_codes_parse():
    assert parse_flags_order("NX,uf,of") == ("nx", "uf", "of")
    assert parse_rm_codes("riscv") == ((Rounding.RNE, 0), (Rounding.RTZ, 1), (Rounding.RDN, 2),
                                       (Rounding.RUP, 3), (Rounding.RNA, 4))
    assert parse_rm_codes("rne=3,rna=0") == ((Rounding.RNE, 3), (Rounding.RNA, 0))
    assert Value(5, 3) == parse_value("3'd5", "x")


@pytest.mark.parametrize("kw,message", [
    ({"flags_order": "nv,dz,xx"}, "--flags-order nv,dz,xx: unknown flag 'xx'; valid: nv, dz, of, "
                                  "uf, nx"),
    ({"flags_order": "nv,nv"}, "--flags-order nv,nv: a flag is named twice; valid: each of nv, "
                               "dz, of, uf, nx at most once"),
    ({"flags_order": "nv,of,nx"}, "--flags-order names 3 flag(s); status_o has 5 bit(s)"),
    ({"no_flags": True}, "--no-flags compares values only; it takes no --flags-order"),
    ({"no_flags": True, "flags_order": None},
     "--no-flags compares values only; it takes no --port flags=..."),
    ({"rm_codes": "rne=0,rod=1"}, "--rm-codes rne=0,rod=1: fpforge cannot compute mode 'rod' per "
                                  "operation; valid: rne, rtz, rdn, rup, rna"),
    ({"rm_codes": "rne=0,rtz=0"}, "--rm-codes rne=0,rtz=0: a code is listed twice; each mode has "
                                  "one code and each code one mode"),
    ({"rm_codes": "rne=0,rne=1"}, "--rm-codes rne=0,rne=1: a mode is listed twice; each mode has "
                                  "one code and each code one mode"),
    ({"rm_codes": "rne=8"}, "--rm-codes: code 8 does not fit rnd_i (3 bit(s))"),
    ({"rm_codes": "ieee"}, "--rm-codes takes MODE=CODE,... (e.g. rne=0,rtz=1) or a preset "
                           "(riscv), not 'ieee'"),
    ({"ties": ["result_o=0"]}, "--tie result_o: result_o is an output; ties drive inputs only"),
    ({"ties": ["op_i=3'd1"]}, "--tie op_i: the value is wider than the 2 bit(s) it drives"),
    ({"ties": ["opcode=1"]}, "--tie opcode: module fpu has no port 'opcode'; its ports: clk_i, "
                             "op_i, operands_i, result_o, rnd_i, status_o, tag_i"),
    ({"ties": ["operands_i[1][3:0]=0"]},
     "--tie operands_i and --port b both drive bits of operands_i (bits [8..11])"),
    ({"ties": ["tag_i[3:1]=0", "tag_i[1:0]=0"]},
     "--tie tag_i and --tie tag_i both drive bits of tag_i (bits [1..1])"),
    ({"ties": ["clk_i=1"]}, "--tie clk_i: clk_i is a clock, reset, valid or ready port"),
    ({"ports": ROLES + ["z=op_i"]}, "--port z=...: fp_mul_e4m3fn_dynamic has no port 'z'; its "
                                    "ports: a, b, flags, rm, y"),
    ({"ports": ROLES + ["a=op_i"]}, "--port a=...: role a is mapped twice"),
    ({"ports": ["a=operands_i[0]", "b=result_o[7:0]", "y=result_o[7:0]"]},
     "module fpu port result_o[7:0] is an output of 8 bit(s); b needs an input of 8"),
    ({"ports": ["a=operands_i[1:0]", "b=operands_i[2]", "y=result_o[7:0]"]},
     "module fpu port operands_i[1:0] is an input of 16 bit(s); a needs an input of 8"),
    ({"ports": ["a=operands_i[0]", "b=operands_i[1]", "y=result_o[7:0]"], "rm_codes": None},
     "module fpu has no port 'rm' for input rm (3 bits); map it with --port rm=NAME"),
])
def test_bad_binding_is_one_line(kw, message):
    with pytest.raises(OptionError) as err:
        bind(**kw)
    assert str(err.value) == message


def test_a_narrow_flags_port_needs_its_order():
    narrow = {**PORTS, "status_o": PortInfo("output", 3, ((2, 0),))}
    with pytest.raises(OptionError) as err:
        bind(flags_order=None, module=narrow)
    assert str(err.value) == ("module fpu port status_o is an output of 3 bit(s); flags needs "
                              "an output of 5 (name its flags with --flags-order, or --no-flags)")
    bound = bind(flags_order="nv,of,nx", module=narrow)
    assert bound.flags_mask == 0b10101
    assert "flags not compared (the module has no such bit): dz, uf" in bound.notes()


def test_a_control_port_named_as_a_data_port():
    ports = {**PORTS, "a": PortInfo("input", 1, ((0, 0),))}
    with pytest.raises(OptionError) as err:
        bind(module=ports, control=("a",))
    assert str(err.value) == ("module fpu's control port a has the name of the unit's data port "
                              "a; the wrapper carries both: rename one")


def test_rm_codes_need_an_rm_input():
    spec = make_spec("mul", format="fp8e4m3")
    data = tuple(p for p in spec.ports() if not p.is_control)
    with pytest.raises(OptionError, match=r"^--rm-codes needs a unit with an rm input "
                                          r"\(--rounding dynamic\)$"):
        Binding.parse(rm_codes="riscv").resolve(data, PORTS, "fpu")


# ----- the resolved binding and its wrapper ------------------------------------------------------

def test_what_the_binding_drives_and_says():
    bound = bind(ties=["op_i=2'd1"], no_flags=False)
    assert bound.rm_values() == (0, 1, 2)
    assert bound.flags_mask is None
    assert bound.notes() == ("undriven inputs driven 0: operands_i bits [23:16], tag_i",
                             "rounding modes driven (module code): rne=3, rtz=0, rdn=1")
    default = bind(rm_codes=None)
    assert default.rm_values() == (0, 1, 2, 3, 4) and default.rm_map is None
    values_only = bind(ports=ROLES[:4], flags_order=None, no_flags=True)
    assert values_only.absent == ("flags",) and values_only.flags_order is None


def wrapper():
    return wrapper_verilog(bind(ties=["op_i=2'd1", "tag_i[3]='1"]), params=(("W", "8"),))


def test_the_wrapper_of_a_packed_2d_operand_port():
    text = wrapper()
    assert text.splitlines()[1] == "module fpforge_bind_fpu(clk_i, a, b, rm, y, flags);"
    for line in ["  input clk_i;", "  input [7:0] a;", "  input [2:0] rm;", "  output [4:0] flags;",
                 "  wire [23:0] bind_operands_i;",
                 "  assign bind_operands_i = {8'd0, b, a};",
                 "  assign bind_op_i = 2'd1;",
                 "  assign bind_tag_i = {1'd1, 3'd0};",
                 "  assign bind_rnd_i = bind_rm;",
                 "      3'd0: bind_rm = 3'd3;", "      3'd1: bind_rm = 3'd0;",
                 "  assign y = bind_result_o[7:0];",
                 "  assign flags = {bind_status_o[0], bind_status_o[1], bind_status_o[2], "
                 "bind_status_o[3], bind_status_o[4]};  // nv, dz, of, uf, nx",
                 "  fpu #(.W(8)) dut(.clk_i(clk_i), .operands_i(bind_operands_i), "
                 ".op_i(bind_op_i), .rnd_i(bind_rnd_i), .tag_i(bind_tag_i), "
                 ".result_o(bind_result_o), .status_o(bind_status_o));"]:
        assert line in text.splitlines(), line


def test_missing_flags_read_zero_in_the_wrapper():
    narrow = {**PORTS, "status_o": PortInfo("output", 2, ((1, 0),))}
    text = wrapper_verilog(bind(flags_order="of,nv", module=narrow))
    assert "  assign flags = {bind_status_o[0], 1'b0, bind_status_o[1], 1'b0, 1'b0};  " \
           "// nv, dz, of, uf, nx" in text


# The module the wrapper above expects, in SystemVerilog: a packed 2-D port and a packed struct.
FPU_SV = """
typedef struct packed { logic nv, dz, of, uf, nx; } status_t;
module fpu #(parameter int W = 4) (
  input  logic clk_i,
  input  logic [2:0][W-1:0] operands_i,
  input  logic [1:0] op_i,
  input  logic [2:0] rnd_i,
  input  logic [3:0] tag_i,
  output logic [15:0] result_o,
  output status_t status_o);
  always_ff @(posedge clk_i) result_o <= {operands_i[1] ^ {5'd0, rnd_i}, operands_i[0]} ^
                                         {12'd0, tag_i} ^ {14'd0, op_i};
  assign status_o = '{nv: operands_i[2][0], dz: 1'b0, of: 1'b0, uf: 1'b0, nx: 1'b1};
endmodule
"""


def test_verilator_reads_the_wrapper_around_a_systemverilog_module(tmp_path):
    (tmp_path / "fpu.sv").write_text(FPU_SV)
    (tmp_path / "bind.v").write_text(wrapper())
    exe, env = toolchain.verilator()
    proc = subprocess.run([exe, "--lint-only", "-Wno-fatal", "-Wno-lint", "-Wno-style",
                           "--top-module", "fpforge_bind_fpu", "fpu.sv", "bind.v"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "%Error" not in proc.stderr, proc.stderr


# ----- what the binding changes in the bench: the rm codes drawn, the flags compared -------------

def test_the_rm_stimulus_draws_the_listed_codes_only():
    import numpy as np
    from fpforge.sim.design import Design
    from fpforge.sim.stimulus import generate
    parts = [["exhaustive", {"stop": 4096}]]
    own = next(generate(SPEC, parts, np.random.default_rng(1), 4096))["rm"]
    assert set(own.tolist()) == set(range(8)) and Design.of(SPEC).rm_values is None
    some = next(generate(SPEC, parts, np.random.default_rng(1), 4096, (0, 3)))["rm"]
    assert set(some.tolist()) == {0, 3}


def test_a_flags_mask_ignores_only_the_flags_a_module_lacks():
    import numpy as np
    from fpforge.sim.check import comparison
    outputs = [p for p in DATA if not p.is_input]
    compare = comparison("exact", outputs, 0b10101)       # nv, of, nx
    want = {"y": np.array([1, 1, 1], np.uint32), "flags": np.array([0b00011] * 3, np.uint32)}
    got = {"y": np.array([1, 1, 2], np.uint32), "flags": np.array([0b00001, 0b00010, 0b00001],
                                                                  np.uint32)}
    assert compare(want, got).tolist() == [False, True, True]
    assert comparison("exact", outputs)(want, got).tolist() == [True, True, True]


# ----- parameter overrides on Verilator ----------------------------------------------------------

# An enum parameter set by number (FPnew's FpFormat=3); an elaboration-time $error reports a
# value other than the one expected.
PARAM_SV = """
package pk; typedef enum logic [2:0] {A, B, C, D} e_t; endpackage
module pm #(parameter pk::e_t E = pk::A, parameter int WANT_E = 0) (
  input logic [7:0] a, b, input logic [2:0] rm, output logic [7:0] y, output logic [4:0] flags);
  if (E != WANT_E) begin : g_e $error("E is %0d", E); end
  assign y = a ^ b;
  assign flags = 5'(rm);
endmodule
"""
PM_PORTS = {n: PortInfo(d, w, ((w - 1, 0),)) for n, d, w in
            [("a", "input", 8), ("b", "input", 8), ("rm", "input", 3), ("y", "output", 8),
             ("flags", "output", 5)]}


def elaborate_with(tmp_path, params, args):
    from fpforge.sim.engines.native import VERILATOR_ARGS
    bound = Binding.parse().resolve(DATA, PM_PORTS, "pm", unit=SPEC.default_name)
    (tmp_path / "pm.sv").write_text(PARAM_SV)
    (tmp_path / "bind.v").write_text(wrapper_verilog(bound, params))
    exe, env = toolchain.verilator()
    flags = [a for a in VERILATOR_ARGS if a.startswith("-W")] if args is None else args
    proc = subprocess.run([exe, "--lint-only", *flags, "--top-module", "fpforge_bind_pm",
                           "pm.sv", "bind.v"], cwd=tmp_path, env=env, capture_output=True,
                          text=True)
    return proc.returncode, proc.stderr


def test_an_enum_parameter_is_set_by_its_number_on_verilator(tmp_path):
    rc, err = elaborate_with(tmp_path, (("E", "3"), ("WANT_E", "3")), None)
    assert rc == 0 and "%Error" not in err and "USERERROR" not in err, err
    rc, err = elaborate_with(tmp_path, (("E", "2"), ("WANT_E", "3")), None)  # can fail
    assert "E is 2" in err, err
    rc, err = elaborate_with(tmp_path, (("E", "3"),), ["-Wno-fatal"])  # what the flag waives
    assert rc != 0 and "ENUMVALUE" in err, err



# A '1-default parameter set to 1 (FPnew's FpFmtConfig=1): Verilator keeps '1 when the override
# is written as 1 and no other override differs from its default.
ONES_SV = """
typedef logic [0:4] fl_t;
module ones #(parameter logic [4:0] P = '1, parameter fl_t F = '1, parameter int S = '1,
              parameter int N = 2) (
  input logic [7:0] a, b, input logic [2:0] rm, output logic [7:0] y, output logic [4:0] flags);
  if (P != 1) begin : g_p $error("P is %0d", P); end
  if (F != 1) begin : g_f $error("F is %0d", F); end
  if (S != 1) begin : g_s $error("S is %0d", S); end
  assign y = a ^ b;
  assign flags = 5'(rm);
endmodule
"""


def test_a_1_default_parameter_set_to_1_is_1_on_verilator(tmp_path):
    from fpforge.sim.design import Design
    from fpforge.sim.frontend import Sources, instance_params
    from fpforge.sim.engines.native import VERILATOR_ARGS
    (tmp_path / "ones.sv").write_text(ONES_SV)
    sources = Sources.from_args([str(tmp_path / "ones.sv")],
                                params=["P=1", "F=1", "S=1", "N=2"])
    assert instance_params(sources, "ones") == (("P", "6'd33"), ("F", "6'd33"),
                                                ("S", "33'd4294967297"), ("N", "2"))
    design = Design.from_files(SPEC, sources, top="ones")
    (tmp_path / "bind.v").write_text(design.text)
    plain = design.text.replace("6'd33", "1").replace("33'd4294967297", "1")
    (tmp_path / "plain.v").write_text(plain)
    exe, env = toolchain.verilator()
    flags = [a for a in VERILATOR_ARGS if a.startswith("-W")]
    for wrapper, wrong in (("bind.v", ""), ("plain.v", "P is 31")):   # the check can fail
        proc = subprocess.run([exe, "--lint-only", *flags, "--top-module", design.top,
                               "ones.sv", wrapper], cwd=tmp_path, env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0 and ("USERERROR" in proc.stderr) == bool(wrong), proc.stderr
        assert wrong in proc.stderr
