"""The exported Verilog as a downstream team uses it: Icarus Verilog simulates the file through
its documented ports only (names and widths from the JSON sidecar), with reset, valid_i ->
valid_o after the latency, and the rm / rbits inputs; the results match the golden model."""

import json
import subprocess

import numpy as np
import pytest

from fpforge import golden
from fpforge import cli
from fpforge.infra import toolchain
from fpforge.rtl.kinds import make_spec

CASES = {
    "mul-fp8e4m3-s2": (["--unit", "mul", "--format", "fp8e4m3", "--stages", "2"],
                       make_spec("mul", format="fp8e4m3", stages=2)),
    "cvt-fp32-to-fp8e5m2-dynamic": (
        ["--unit", "cvt", "--format", "fp8e5m2", "--in-format", "fp32", "--rounding", "dynamic"],
        make_spec("cvt", format="fp8e5m2", in_format="fp32", rounding="dynamic")),
    "add-bf16-stochastic-s1-sat": (
        ["--unit", "add", "--format", "bf16", "--rounding", "stochastic", "--saturate",
         "--stages", "1"],
        make_spec("add", format="bf16", rounding="stochastic", saturate=True, stages=1)),
    "sub-fp8e5m2-dynamic": (
        ["--unit", "sub", "--format", "fp8e5m2", "--rounding", "dynamic"],
        make_spec("sub", format="fp8e5m2", rounding="dynamic")),
    "fma-fp4-rod-s3-ftz": (
        ["--unit", "fma", "--format", "fp4e2m1", "--in-format", "fp8e4m3", "--c-format", "fp16",
         "--rounding", "rod", "--no-subnormals", "--stages", "3"],
        make_spec("fma", format="fp4e2m1", in_format="fp8e4m3", c_format="fp16", rounding="rod",
                  subnormals=False, stages=3)),
}
N = 3000


def data_inputs(side: dict) -> list[dict]:
    return [p for p in side["ports"]
            if p["direction"] == "input" and p["name"] not in ("clk", "rst")]


def make_testbench(side: dict, n: int) -> str:
    """Drives the inputs (in sidecar order, packed in one word per line of in.hex) and writes
    y, flags (and valid_o) per cycle to out.txt. Clocked units first get two cycles of ``rst``
    with every input bit set (valid_i too), and their outputs are written then as well."""
    ins = data_inputs(side)
    outs = [p for p in side["ports"] if p["direction"] == "output"]
    width = sum(p["width"] for p in ins)
    clocked = side["latency"] > 0
    lines = ["module tb;", f"  reg [{width - 1}:0] mem [0:{n - 1}];", f"  reg [{width - 1}:0] v;",
             "  reg clk, rst;", "  integer i, f;"]
    lines += [f"  wire [{p['width'] - 1}:0] {p['name']};" for p in outs]
    conns, hi = [], width
    for p in ins:
        conns.append(f".{p['name']}(v[{hi - 1}:{hi - p['width']}])")
        hi -= p["width"]
    conns += [f".{p['name']}({p['name']})" for p in outs]
    if clocked:
        conns += [".clk(clk)", ".rst(rst)"]
    fmt = " ".join("%0d" for _ in outs)
    write = f'$fwrite(f, "{fmt}\\n", {", ".join(p["name"] for p in outs)});'
    step = "#1 clk = 1; #1 clk = 0;" if clocked else "#1;"
    lines += [f"  {side['module']} dut({', '.join(conns)});",
              "  initial begin",
              '    $readmemh("in.hex", mem);',
              '    f = $fopen("out.txt", "w");',
              "    clk = 0; rst = 1; v = ~0;",
              f"    #1 clk = 1; #1 clk = 0; {write} #1 clk = 1; #1 clk = 0; {write}"
              if clocked else "",
              "    rst = 0;",
              f"    for (i = 0; i < {n + max(side['latency'] - 1, 0)}; i = i + 1) begin",
              f"      v = (i < {n}) ? mem[i] : {width}'d0;",
              f"      {step}",
              f"      {write}",
              "    end",
              "    $fclose(f);",
              "    $finish;",
              "  end",
              "endmodule", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("case", CASES)
def test_exported_verilog_simulates_to_the_golden_model(case, tmp_path):
    argv, spec = CASES[case]
    assert cli.main(["verilog", *argv, "-o", str(tmp_path / "dut.v")]) == 0
    side = json.loads((tmp_path / "dut.json").read_text())
    rng = np.random.default_rng(20261129)
    inputs = {p["name"]: rng.integers(0, 1 << p["width"], N, dtype=np.uint64)
              for p in data_inputs(side)}
    word = np.zeros(N, dtype=object)
    for p in side["ports"]:
        if p["name"] in inputs:
            word = (word << p["width"]) | inputs[p["name"]].astype(object)
    (tmp_path / "in.hex").write_text("".join(f"{w:x}\n" for w in word))
    (tmp_path / "tb.v").write_text(make_testbench(side, N))
    subprocess.run([toolchain.tool("iverilog"), "-g2005", "-o", "sim.vvp", "tb.v", "dut.v"],
                   cwd=tmp_path, check=True, capture_output=True)
    subprocess.run([toolchain.tool("vvp"), "-n", "sim.vvp"], cwd=tmp_path, check=True,
                   capture_output=True)
    rows = np.loadtxt(tmp_path / "out.txt", dtype=np.int64, ndmin=2)

    # Clocked: two rows written in reset, then the row written after clock edge i holds the
    # operation presented before edge i - lat + 1.
    lat = side["latency"]
    if lat:
        in_reset, rows = rows[:2], rows[2:]
        np.testing.assert_array_equal(in_reset[:, 2], 0)   # reset holds valid_o low
    skip = max(lat - 1, 0)
    want = golden.evaluate(spec, **{p.name: inputs[p.name] for p in spec.inputs()})
    got = rows[skip:skip + N]
    np.testing.assert_array_equal(got[:, 0], np.asarray(want["y"], dtype=np.int64))
    np.testing.assert_array_equal(got[:, 1], np.asarray(want["flags"], dtype=np.int64))
    if lat:
        # valid_o is valid_i delayed by the latency; reset cleared it before the first operation.
        np.testing.assert_array_equal(rows[:skip, 2], 0)
        np.testing.assert_array_equal(got[:, 2], inputs["valid_i"])
