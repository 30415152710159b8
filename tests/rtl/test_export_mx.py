"""fpforge verilog --unit mxq|dot: the export contract of the MX units (header, sidecar, core,
regeneration, one-line errors that write nothing) and lint with Verilator -Wall, Icarus and
Yosys, as tests/export does for the scalar units."""

from __future__ import annotations

import json
from collections import namedtuple
from pathlib import Path

import pytest

from rtl import cli
from rtl.export import ports, write_export
from rtl.lint import iverilog_read, verilator_lint, yosys_read
from rtl.mx import MxDequantSpec, MxDotSpec, MxQuantSpec, element_format
from export.cases import unused_top_inputs   # tests/export: the scalar export checks

E = "fpforge verilog: error: "


def run(argv, cwd: Path, monkeypatch) -> int:
    monkeypatch.chdir(cwd)
    return cli.main(argv)


# ----- round trip ---------------------------------------------------------------------------------

CASES = {
    "mxq": (["--unit", "mxq", "--format", "fp6e3m2", "--block", "4", "--scale-rule", "rceil",
             "--stages", "2"],
            MxQuantSpec("fp6e3m2", block=4, scale_rule="rceil", stages=2)),
    "mxq-bf16-stochastic": (["--unit", "mxq", "--format", "mxint8", "--in-format", "bf16",
                             "--block", "4", "--rounding", "stochastic", "--sr-bits", "5"],
                            MxQuantSpec("mxint8", in_fmt="bfloat16", block=4,
                                        rounding="stochastic", sr_bits=5)),
    "mxdq": (["--unit", "mxdq", "--format", "float32", "--in-format", "fp8e5m2", "--block", "4",
              "--stages", "1"], MxDequantSpec("fp8e5m2", block=4, stages=1)),
    "dot": (["--unit", "dot", "--format", "float32", "--in-format", "fp8e4m3", "--n", "4"],
            MxDotSpec("fp8e4m3", n=4)),
    "dot-fixed-mixed": (["--unit", "dot", "--format", "bf16", "--a-format", "fp8e5m2",
                         "--b-format", "float4_e2m1fn", "--n", "4", "--accum", "fixed",
                         "--frac-bits", "12", "--no-scales", "--rounding", "rtz", "--stages",
                         "3"],
                        MxDotSpec("fp8e5m2", "fp4e2m1", n=4, accum="fixed", frac_bits=12,
                                  scaled=False, out_fmt="bfloat16", rounding="rtz", stages=3)),
}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every case exported once through the command line: {case: .v path}."""
    folder = tmp_path_factory.mktemp("mx_export")
    out = {}
    for case, (argv, _) in CASES.items():
        path = folder / f"{case}.v"
        assert cli.main(["verilog", *argv, "-o", str(path)]) == 0
        out[case] = path
    return out


@pytest.mark.parametrize("case", CASES)
def test_round_trip(case, exported, tmp_path, monkeypatch):
    argv, spec = CASES[case]
    path = exported[case]
    text = path.read_text()
    sidecar = json.loads(path.with_suffix(".json").read_text())
    core = path.with_suffix(".core").read_text()
    name = spec.default_name
    assert f"module {name}(" in text and f"toplevel: \"{name}\"" in core
    assert sidecar["module"] == name and sidecar["unit"] == spec.unit
    assert sidecar["ports"] == [p.__dict__ for p in ports(spec)]
    assert sidecar["latency"] == spec.stages and sidecar["spec"] == spec.describe()
    header = text.split("\n\n")[0]
    for p in ports(spec):
        assert f"//   {p.name:<8}{p.direction:<7}{p.width:>5}  {p.meaning}" in header
    # The recorded command regenerates the same three files.
    cmd = sidecar["command"].split()
    assert cmd[:2] == ["fpforge", "verilog"]
    assert run(cmd[1:], tmp_path, monkeypatch) == 0
    again = tmp_path / f"{name}.v"
    assert again.read_text() == text
    assert json.loads(again.with_suffix(".json").read_text())["ports"] == sidecar["ports"]


def test_lint_clean(exported):
    """Verilator -Wall (with the export waiver file), Icarus -g2005 and Yosys read every MX
    export cleanly, and every input port of each top module is used."""
    paths = list(exported.values())
    for tool in (verilator_lint, iverilog_read, yosys_read):
        ok, out = tool(paths)
        assert ok, f"{tool.__name__}:\n{out[:6000]}"
        if tool is not verilator_lint:
            assert out == ""
    Top = namedtuple("Top", "default_name operands")
    tops = [Top(spec.default_name, tuple(p.name for p in ports(spec) if p.direction == "input"))
            for _, spec in CASES.values()]
    assert unused_top_inputs(paths, tops) == []


def test_header_states_resolved_parameters(exported):
    text = exported["mxq"].read_text()
    assert "// element     fp6e3m2: float6_e3m2fn (E3M2, 6 bits, bias 3, max 28" in text
    assert "// scale rule  rceil" in text and "// block       4 elements" in text
    assert "//   x       input    128  the block: 4 float32 codes, element i at x[i*32 +: 32]" \
        in text
    text = exported["dot-fixed-mixed"].read_text()
    assert "// accumulator fixed, 12 fraction bits" in text
    assert "scale_a" not in text.split("/* Generated")[0]


def test_api_names_and_defaults():
    q = MxQuantSpec("float8_e4m3fn")
    assert (q.default_name, q.block, q.scale_rule) == ("mxq_fp8e4m3_f32_k32_floor_rne", 32,
                                                       "floor")
    d = MxDotSpec("fp8e4m3", "fp6e2m3", accum="fixed", frac_bits=16, scaled=False, stages=2)
    assert d.default_name == "mxdot_fp8e4m3_fp6e2m3_n32_fixed16_e8m23_rne_ns_s2"
    assert element_format("int8") is element_format("mxint8")
    assert [p.name for p in ports(MxQuantSpec("fp4e2m1", rounding="stochastic", stages=1))] == \
        ["clk", "rst", "x", "rbits", "valid_i", "scale", "y", "flags", "valid_o"]


# ----- errors -------------------------------------------------------------------------------------

Q = ["verilog", "--unit", "mxq", "--format", "fp8e4m3"]
D = ["verilog", "--unit", "dot", "--format", "float32", "--in-format", "fp8e4m3"]
ERRORS = {
    "unknown element": (["verilog", "--unit", "mxq", "--format", "fp7"],
                        E + "MX element format must be one of fp8e4m3, fp8e5m2, fp6e3m2, "
                            "fp6e2m3, fp4e2m1, mxint8 (or their catalog names), not 'fp7'"),
    "mxq input format": (Q + ["--in-format", "fp16"],
                         E + "MX quantizer input format must be one of float32, bfloat16, not "
                             "'fp16'"),
    "block zero": (Q + ["--block", "0"], E + "block must be an integer 1..256, not 0"),
    "scale rule": (Q + ["--scale-rule", "round"],
                   E + "argument --scale-rule: invalid choice: 'round' (choose from 'floor', "
                       "'ceil', 'rceil', 'even')"),
    "mxq dynamic": (Q + ["--rounding", "dynamic"],
                    E + "the MX quantizer takes a static rounding mode or stochastic, not "
                        "'dynamic'"),
    "mxq saturate": (Q + ["--saturate"],
                     E + "--saturate does not apply to unit mxq (its elements always saturate)"),
    "mxq a-format": (Q + ["--a-format", "fp16"],
                     E + "unit mxq takes --in-format (float32 or bfloat16), not "
                         "--a-format/--b-format"),
    "n with mxq": (Q + ["--n", "8"], E + "--n applies to unit dot only, not mxq"),
    "block with dot": (D + ["--block", "8"],
                       E + "--block applies to units mxq and mxdq only, not dot"),
    "block with mul": (["verilog", "--unit", "mul", "--format", "fp8e4m3", "--block", "8"],
                       E + "--block applies to units mxq and mxdq only, not mul"),
    "scale rule with mxdq": (["verilog", "--unit", "mxdq", "--format", "float32", "--in-format",
                              "fp4e2m1", "--scale-rule", "ceil"],
                             E + "--scale-rule applies to unit mxq only, not mxdq"),
    "mxdq output": (["verilog", "--unit", "mxdq", "--format", "bf16", "--in-format", "fp4e2m1"],
                    E + "unit mxdq writes float32; --format must be float32, not 'bf16'"),
    "mxdq element missing": (["verilog", "--unit", "mxdq", "--format", "float32"],
                             E + "unit mxdq needs its element format: --in-format ELEM"),
    "mxdq rounding": (["verilog", "--unit", "mxdq", "--format", "float32", "--in-format",
                       "fp4e2m1", "--rounding", "rtz"],
                      E + "unit mxdq rounds rne (exact unless float32 overflows or underflows); "
                          "--rounding rtz does not apply"),
    "dot n": (D + ["--n", "12"], E + "dot length n must be one of 4, 8, 16, 32, not 12"),
    "dot element missing": (["verilog", "--unit", "dot", "--format", "float32"],
                            E + "unit dot needs its element format(s): --in-format ELEM (both "
                                "vectors) or --a-format ELEM and --b-format ELEM"),
    "dot element": (D[:-1] + ["fp16"],
                    E + "MX element format must be one of fp8e4m3, fp8e5m2, fp6e3m2, fp6e2m3, "
                        "fp4e2m1, mxint8 (or their catalog names), not 'fp16'"),
    "dot stochastic": (D + ["--rounding", "stochastic"],
                       E + "the dot unit takes a static rounding mode (rne, rtz, rdn, rup, rna, "
                           "rod), not 'stochastic'"),
    "frac-bits exact": (D + ["--frac-bits", "8"],
                        E + "--frac-bits sets the width of --accum fixed; it does not apply to "
                            "--accum exact"),
    "frac-bits range": (D + ["--accum", "fixed", "--frac-bits", "56"],
                        E + "frac_bits must be an integer 1..55, not 56"),
    "dot output": (["verilog", "--unit", "dot", "--format", "e8m0", "--in-format", "fp4e2m1"],
                   E + "dot output format must hold signed values, not float8_e8m0fnu"),
    "dot stages": (D + ["--stages", "-2"], E + "stages must be a non-negative integer, not -2"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_bad_parameters(case, tmp_path, monkeypatch, capsys):
    argv, message = ERRORS[case]
    assert run(argv + ["-o", "OUT.v"], tmp_path, monkeypatch) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n" and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_failed_export_keeps_the_earlier_one(tmp_path):
    spec = MxQuantSpec("fp4e2m1", block=2)
    path = tmp_path / "q.v"
    write_export(spec, path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ValueError):
        write_export(spec, path, name="9bad")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
