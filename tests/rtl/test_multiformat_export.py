"""Multi-format units' Verilog (rtl/fp_units/multiformat.py): read by Icarus, Verilator (-Wall,
clean) and Yosys, combinational and with fmt through every cut; the same bytes converted again
in another process; the header and the fmt port list the fmt codes."""

from __future__ import annotations

import os
import subprocess
import sys

from fpforge.rtl import emit
from fpforge.rtl.export import export_verilog
from fpforge.rtl.kinds import make_spec
from tests.rtl.export_cases import check_batch, export_all

FP8 = "fp8e4m3,fp8e5m2"
SPECS = [
    make_spec("mul", formats=FP8),
    make_spec("mul", formats="fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1", rounding="dynamic",
              stages=2),
    make_spec("mul", formats="fp16,bf16", cuts="decode,product,core,round"),
    make_spec("mul", formats="fp8e4m3,float8_e8m0fnu", saturate=True),
    make_spec("add", formats="fp8e5m2,binary8p4se,binary8p3ue", rounding="stochastic",
              cuts="decode,align,core,round"),
    make_spec("sub", formats="fp16,bf16", subnormals=False),
    make_spec("fma", formats=FP8, c_formats="bf16", cuts="decode,product,align,core,round",
              rounding="dynamic"),
    make_spec("fms", formats="fp8e4m3,fp6e3m2", tininess="before"),
    make_spec("cvt", formats="fp8e4m3,fp6e3m2,fp4e2m1", in_formats="bf16", stages=1),
    make_spec("cvt", formats="fp16,fp16", in_formats="fp32,bf16", saturation="finite"),
]
ONE_LINER = ("import sys; from fpforge.rtl import emit; from fpforge.rtl.kinds import make_spec; "
             "sys.stdout.write(emit.verilog(make_spec('mul', formats='fp16,bf16', "
             "cuts='decode,product,core,round')))")


def test_lint_clean(tmp_path):
    check_batch(export_all(SPECS, tmp_path), SPECS)


def test_same_bytes_from_another_process(tmp_path):
    env = dict(os.environ, PYTHONHASHSEED="4242", FPFORGE_CACHE=str(tmp_path / "cache"))
    other = subprocess.run([sys.executable, "-c", ONE_LINER], cwd=str(emit.RTL.parent), env=env,
                           check=True, capture_output=True, text=True).stdout
    assert other == emit.verilog(SPECS[2])


def test_header_and_sidecar_list_the_fmt_codes():
    spec = make_spec("mul", formats="fp8e4m3,fp8e5m2,fp6e3m2")
    out = export_verilog(spec)
    header = [line for line in out.verilog.splitlines() if line.startswith("//")]
    for i, name in enumerate(("float8_e4m3fn", "float8_e5m2", "float6_e3m2fn")):
        assert any(line.startswith(f"// fmt {i}") and name in line for line in header)
    assert [m["fmt"] for m in out.sidecar["options"]["members"]] == [0, 1, 2]
