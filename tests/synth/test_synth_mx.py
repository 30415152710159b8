"""The MX units in synthesis (``fpforge synth --unit mxq|mxdq|dot``) and in the sweep."""

from __future__ import annotations

import json

import pytest

from fpforge import synth
from fpforge.rtl.formats import FormatError
from fpforge.rtl.kinds import KINDS, make_spec
from fpforge.rtl.options import OptionError
from fpforge.synth import sweep as sw
from fpforge.synth import sweep_report
from fpforge.synth.report import print_table


def test_synth_takes_every_mx_unit(tmp_path, capsys):
    specs = [make_spec("mxq", format="fp4e2m1", block=2),
             make_spec("mxdq", in_format="fp4e2m1", block=2),
             make_spec("dot", in_format="fp4e2m1", n=4, accum="fixed", frac_bits=8)]
    records = synth.run(specs, out_dir=tmp_path, fpga=False)
    print_table(records, header={})
    written = [json.loads(p.read_text()) for p in tmp_path.glob("*/records.json")]
    assert len(written) == 1
    names = [r["name"] for r in written[0]]
    assert names == ["mxq_fp4e2m1_f32_k2_floor_rne", "mxdq_fp4e2m1_k2",
                     "mxdot_fp4e2m1_n4_fixed8_e8m23_rne"]
    for r in written[0]:
        assert r["kind"] == "unit" and r["asic"]["ge"] > 0 and r["asic"]["delay_ps"] > 0
        assert r["generic"]["transistors"] > 0 and r["generic"]["depth"] > 0
        assert r["core"] is None
    mxq, _, dot = written[0]
    # what the report says of them: lanes per format, the kind's own options
    assert mxq["formats"]["x"].startswith("2 x float32 (") and \
        mxq["formats"]["y"].startswith("2 x float4_e2m1fn (")
    assert mxq["options"] == "scale rule floor, rounding rne, saturating"
    assert dot["formats"]["a"].startswith("4 x float4_e2m1fn (") and \
        dot["formats"]["y"].startswith("float32 (")
    assert dot["options"] == ("accumulator fixed (8 fraction bits), scaled, rounding rne, "
                              "non-saturating")
    assert "mxdot_fp4e2m1_n4_fixed8_e8m23_rne" in capsys.readouterr().out


def test_mx_units_synthesise_without_resource_sharing():
    from fpforge.synth.records import design_for
    # Yosys's SAT sharing ran > 15 min on an MX unit; a scalar unit keeps it.
    assert not design_for(make_spec("mxdq", in_format="fp4e2m1", block=2)).share
    assert not design_for(make_spec("dot", in_format="fp4e2m1", n=2)).share
    assert design_for(make_spec("mul", format="fp4e2m1")).share


@pytest.mark.parametrize("values, error, says", [
    (dict(unit="mul", format="fp8e4m3", block=4), OptionError,
     "--block applies to units mxq and mxdq only, not mul"),
    (dict(unit="nope", format="fp8e4m3"), OptionError,
     "valid: " + ", ".join(KINDS)),
    (dict(unit="mxq", format="fp9"), OptionError, "MX element format must be one of"),
    (dict(unit="mxq", format="fp8e4m3", saturate=True), OptionError,
     "not mxq (its elements always saturate)"),
    (dict(unit="dot", in_format="fp8e4m3", n=65), OptionError,
     "dot length n must be an integer 1..64"),
    (dict(unit="mxdq", in_format="fp8e4m3", rounding="rtz"), OptionError, "mxdq rounds rne"),
    (dict(unit="mul", format="fp7e9"), FormatError, "unknown format 'fp7e9'"),
])
def test_bad_mx_options_are_one_line(values, error, says):
    """What ``fpforge synth`` hands synthesis is a spec: a bad option fails in building it."""
    with pytest.raises(error) as info:
        make_spec(**values)
    assert says in str(info.value) and "\n" not in str(info.value)


def test_sweep_reports_scale_rules_and_accumulators(tmp_path):
    cases = [sw.mx_case("fp4e2m1", "mxq", r, block=2, n=4) for r in ("floor", "rceil")] + \
        [sw.mx_case("fp8e4m3", "dot", v, block=2, n=4) for v in ("exact", "fixed8")]
    rows, run_dir, meta = sw.sweep(cases, out_dir=tmp_path, jobs=2)
    assert [r.status for r in rows] == ["ok"] * 4 and meta["mx block"] == 2
    assert meta["mx n"] == 4
    by = {(r.unit, r.variant): r for r in rows}
    assert all(r.ge > 0 and r.delay_ps > 0 and r.width == int(r.format[2]) for r in rows)
    # FP8 E4M3 products span 2^-18..2^17: a window 8 bits below the largest product holds far
    # fewer bits than the exact sum, so less logic (Yosys's technology-free estimate, free of
    # ABC's mapping noise). Not so for FP4, whose exact sum is narrower than the window.
    assert by[("dot", "fixed8")].transistors < by[("dot", "exact")].transistors
    text = sweep_report.markdown(rows, meta)
    assert "## Block-scaled (OCP MX) units" in text
    assert "| fp4e2m1 | 4 |" in text and "| fp8e4m3 | 8 |" in text
    assert "mxq floor" in text and "dot fixed8" in text
    assert "`fpforge synth --unit mxq --format ELEM`" in text
    assert sweep_report.plot(rows, run_dir) == [run_dir / "mx.png"]
    assert (run_dir / "mx.png").stat().st_size


@pytest.mark.parametrize("kwargs, message", [
    (dict(mx_block=0), "block must be an integer 1..256, not 0"),
    (dict(mx_n=0), "dot length n must be an integer 1..64, not 0"),
    (dict(mx_units=["nope"]), "unknown MX unit 'nope'; valid: mxq, mxdq, dot"),
    (dict(mx_elements=["fp16"]), "MX element format must be one of"),
])
def test_sweep_rejects_bad_mx_options_before_any_work(tmp_path, kwargs, message):
    with pytest.raises(OptionError) as info:
        sweep_report.run_sweep(out=tmp_path / "b", **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "b").exists()


def test_deep_job_drops_only_abcs_sat_sweep_and_ltp(tmp_path):
    from fpforge.synth.cell_library import own_library
    from fpforge.synth.scripts import asic_script
    lib = own_library(tmp_path)
    standard = asic_script(tmp_path / "d.v", "d", lib, tmp_path)
    deep = asic_script(tmp_path / "d.v", "d", lib, tmp_path, deep=True)
    # ABC's default script (with its SAT sweep) and ltp in the standard job
    assert "-script" not in standard and "\nabc -liberty" in standard and "ltp -noff" in standard
    assert "&fraig" not in deep and "ltp" not in deep and "-noabc" in deep
    # the rest of ABC's default script stays, in both of its calls
    assert deep.count("scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put") == 2


@pytest.mark.slow       # 40-60 s of Yosys; make pareto's small run takes the deep job in make test
def test_nvfp4_quantizer_synthesises_through_the_deep_job(tmp_path):
    """TE's NVFP4 quantizer (float32 dividers): ABC's SAT sweep did not finish it in 30 CPU
    minutes; the deep job maps it in under a minute. No FPGA figures, no generic depth."""
    from fpforge.synth.records import design_for
    te = make_spec("mxq", format="fp4e2m1", scale_rule="nvfp4_te", block=2)
    assert design_for(te).deep and not design_for(make_spec("mxq", format="fp4e2m1")).deep
    record, = synth.run([te], out_dir=tmp_path)          # FPGA runs asked for, not made
    assert record.asic.ge > 10_000 and record.asic.delay_ps > 10_000
    assert record.generic.depth is None and record.fpga == {}
    cases = [sw.mx_case("fp4e2m1", "mxq", v, block=2) for v in ("floor", "floor_deep")]
    rows, _, _ = sw.sweep(cases, out_dir=tmp_path, jobs=2)
    floor, deep = rows
    assert deep.module == floor.module + "_deep" and deep.depth is None and floor.depth > 0
    assert deep.ge > 0 and deep.delay_ps > 0
