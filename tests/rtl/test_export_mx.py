"""The export contract of the MX units (mxq, mxdq, dot): header, sidecar, core and regeneration
through ``fpforge verilog``, and lint with Verilator -Wall, Icarus and Yosys, as
test_export_files.py and test_export_lint.py do for the scalar units. Their command-line errors
are in tests/fpforge/test_verilog_command.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpforge import cli
from fpforge.rtl.accum import Fixed
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.pipeline import Pipeline

from tests.rtl.export_cases import check_batch


def run(argv, cwd: Path, monkeypatch) -> int:
    monkeypatch.chdir(cwd)
    return cli.main(argv)


# ----- round trip ---------------------------------------------------------------------------------

CASES = {
    "mxq": (["--unit", "mxq", "--format", "fp6e3m2", "--block", "4", "--scale-rule", "rceil",
             "--stages", "2"],
            MxQuantSpec("fp6e3m2", block=4, scale_rule="rceil", pipeline=Pipeline(2))),
    "mxq-bf16-stochastic": (["--unit", "mxq", "--format", "mxint8", "--in-format", "bf16",
                             "--block", "4", "--rounding", "stochastic", "--sr-bits", "5"],
                            MxQuantSpec("mxint8", in_fmt="bfloat16", block=4,
                                        rounding="stochastic", sr_bits=5)),
    "mxdq": (["--unit", "mxdq", "--format", "float32", "--in-format", "fp8e5m2", "--block", "4",
              "--stages", "1"], MxDequantSpec("fp8e5m2", block=4, pipeline=Pipeline(1))),
    "dot": (["--unit", "dot", "--format", "float32", "--in-format", "fp8e4m3", "--n", "4"],
            MxDotSpec("fp8e4m3", n=4)),
    "dot-fixed-mixed": (["--unit", "dot", "--format", "bf16", "--a-format", "fp8e5m2",
                         "--b-format", "float4_e2m1fn", "--n", "4", "--accum", "fixed",
                         "--frac-bits", "12", "--no-scales", "--rounding", "rtz", "--stages",
                         "3"],
                        MxDotSpec("fp8e5m2", "fp4e2m1", n=4, accum=Fixed(12),
                                  scaled=False, out_fmt="bfloat16", rounding="rtz", pipeline=Pipeline(3))),
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
    assert sidecar["ports"] == [p.record() for p in spec.ports()]
    assert sidecar["latency"] == spec.stages and sidecar["spec"] == spec.describe()
    header = text.split("\n\n")[0]
    for p in spec.ports():
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
    check_batch(list(exported.values()), [spec for _, spec in CASES.values()])


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
    d = MxDotSpec("fp8e4m3", "fp6e2m3", accum=Fixed(16), scaled=False, pipeline=Pipeline(2))
    assert d.default_name == "mxdot_fp8e4m3_fp6e2m3_n32_fixed16_e8m23_rne_ns_s2"
    assert element_format("int8") is element_format("mxint8")
    assert [p.name for p in MxQuantSpec("fp4e2m1", rounding="stochastic",
                                        pipeline=Pipeline(1)).ports()] == \
        ["clk", "rst", "x", "rbits", "valid_i", "scale", "y", "flags", "valid_o"]
