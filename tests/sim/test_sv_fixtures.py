"""The SystemVerilog test FPU fx_fpu (tests/sim/sv_fixtures) around fpforge's exported cores:
every FAULT variant reads and elaborates on Verilator with no warning (fpforge's waiver covers
the cores), and a parameter outside the fixture's range stops elaboration with its message."""

import subprocess

import fx_fpu
import pytest

from fpforge.infra import toolchain
from fpforge.rtl.lint import WAIVER_FILE


@pytest.fixture(scope="module")
def file_list(tmp_path_factory):
    return fx_fpu.build(tmp_path_factory.mktemp("fx_fpu"))


def lint(file_list, *params: str) -> tuple[int, str]:
    exe, env = toolchain.verilator()
    cmd = [exe, "--lint-only", "-Wall", str(WAIVER_FILE), "-f", str(file_list),
           "--top-module", "fx_fpu", *(f"-G{p}" for p in params)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("fault", sorted(fx_fpu.FAULTS))
def test_every_variant_elaborates_clean(file_list, fault):
    rc, out = lint(file_list, f"FAULT={fault}")
    assert rc == 0 and "%Warning" not in out, out


@pytest.mark.parametrize("param, message", [("FAULT=4", "fx_fpu: FAULT must be 0..3"),
                                            ("NUM_OPS=1", "fx_fpu: NUM_OPS must be at least 2")])
def test_parameter_out_of_range_stops_elaboration(file_list, param, message):
    rc, out = lint(file_list, param)
    assert rc != 0 and message in out, out
