"""PNR=1: Fmax by nextpnr (iCE40, ECP5) on a wrapper that registers the unit's ports."""

import json
import re
import subprocess

import pytest

import synth.pnr as pnr
from rtl.spec import UnitSpec
from synth import run
from synth.flow import module_ports
from synth.records import SynthRecord, unit_design


def test_wrapper_registers_every_port_once():
    design = unit_design(UnitSpec.create("mul", "fp8e4m3", rounding="dynamic", stages=2))
    text = pnr.wrapper_verilog(design.name, design.verilog)
    ports = module_ports(design.verilog, design.name)
    assert {n for _, _, n in ports} == {"clk", "rst", "a", "b", "rm", "valid_i", "y", "flags",
                                        "valid_o"}
    for direction, _, name in ports:
        if name == "clk":
            assert ".clk(clk)" in text
        elif direction == "input":
            assert f"{name}_r <= {name}_i;" in text and f".{name}({name}_r)" in text
        else:
            assert f"{name}_o <= {name}_w;" in text and f".{name}({name}_w)" in text
    wrapper_ports = module_ports(text, pnr.WRAPPER_TOP)
    assert [n for _, _, n in wrapper_ports][0] == "clk" and len(wrapper_ports) == len(ports)


def test_fmax_of_a_small_unit_on_both_fpgas(tmp_path):
    rec, = run([UnitSpec.create("mul", "fp4e2m1")], out_dir=tmp_path, fpga=False, cores=False,
               pnr=True)
    assert set(rec.fmax) == {"ice40", "ecp5"}
    for target, figures in rec.fmax.items():
        # An FP4 multiplier between registers: tens to hundreds of MHz on either family.
        assert 10 < figures.fmax_mhz < 1000, (target, figures)
        log = (tmp_path.glob(f"*/{rec.name}/pnr_{target}/nextpnr.log"))
        assert re.search(r"Max frequency for clock", next(log).read_text())
    data = json.loads(next(tmp_path.glob(f"*/{rec.name}.json")).read_text())
    assert SynthRecord.from_json(data).fmax == rec.fmax
    report = next(tmp_path.glob("*/report.md")).read_text()
    assert f"{rec.fmax['ice40'].fmax_mhz:.1f}" in report


def test_missing_nextpnr_is_one_line_exit_2_and_no_run_dir(tmp_path, monkeypatch, capsys):
    # A package name that is not installed stands for an environment without nextpnr.
    monkeypatch.setitem(pnr.PNR_TARGETS, "ice40",
                        dict(pnr.PNR_TARGETS["ice40"], package="yowasp-nextpnr-nonexistent"))
    from synth.__main__ import main
    code = main(["--format", "fp4e2m1", "--units", "mul", "--pnr", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "needs yowasp-nextpnr-nonexistent" in err
    assert list(tmp_path.iterdir()) == []


def test_make_synth_pnr_passes_the_flag():
    out = subprocess.run(["make", "-n", "synth", "FORMAT=fp4e2m1", "PNR=1"], capture_output=True,
                         text=True, check=True).stdout
    assert "-m synth" in out and "--pnr" in out
    plain = subprocess.run(["make", "-n", "synth", "FORMAT=fp4e2m1"], capture_output=True,
                           text=True, check=True).stdout
    assert "--pnr" not in plain
