"""The MX units in ``make synth`` (python -m synth --units mxq,mxdq,dot) and ``make sweep``."""

from __future__ import annotations

import json

import pytest

from synth import sweep as sw
from synth.__main__ import main as synth_main


def test_make_synth_takes_every_mx_unit(tmp_path, capsys):
    assert synth_main(["--format", "fp4e2m1", "--units", "mxq,mxdq,dot", "--block", "2",
                       "--n", "4", "--accum", "fixed", "--frac-bits", "8", "--no-fpga",
                       "--out", str(tmp_path)]) == 0
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*/records.json")]
    assert len(records) == 1
    names = [r["name"] for r in records[0]]
    assert names == ["mxq_fp4e2m1_f32_k2_floor_rne", "mxdq_fp4e2m1_k2",
                     "mxdot_fp4e2m1_n4_fixed8_e8m23_rne"]
    for r in records[0]:
        assert r["kind"] == "unit" and r["asic"]["ge"] > 0 and r["asic"]["delay_ps"] > 0
        assert r["generic"]["transistors"] > 0 and r["generic"]["depth"] > 0
    assert "mxdot_fp4e2m1_n4_fixed8_e8m23_rne" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--format", "fp8e4m3", "--units", "mul", "--block", "4"], "--block applies to units mxq"),
    (["--format", "fp8e4m3", "--units", "nope"], "valid: mul, add, fma, cvt, mxq, mxdq, dot"),
    (["--format", "fp9", "--units", "mxq"], "MX element format must be one of"),
    (["--format", "fp8e4m3", "--units", "mxq", "--saturate"], "do not apply to unit mxq"),
    (["--format", "fp8e4m3", "--units", "dot", "--n", "5"], "dot length n must be one of"),
    (["--format", "fp8e4m3", "--units", "mxdq", "--rounding", "rtz"], "mxdq rounds rne"),
])
def test_bad_mx_options_are_one_line(argv, says, tmp_path, capsys):
    assert synth_main(argv + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert not any(tmp_path.iterdir())         # no run directory, no partial report


def test_sweep_reports_scale_rules_and_accumulators(tmp_path):
    cases = [sw.MxCase("fp4e2m1", "mxq", r, block=2, n=4) for r in ("floor", "rceil")] + \
        [sw.MxCase("fp8e4m3", "dot", v, block=2, n=4) for v in ("exact", "fixed8")]
    rows, run_dir, meta = sw.sweep(cases, out_dir=tmp_path, jobs=2)
    assert [r.status for r in rows] == ["ok"] * 4 and meta["mx block"] == 2
    by = {(r.unit, r.variant): r for r in rows}
    assert all(r.ge > 0 and r.delay_ps > 0 and r.width == int(r.format[2]) for r in rows)
    # FP8 E4M3 products span 2^-18..2^17: a window 8 bits below the largest product holds far
    # fewer bits than the exact sum, so less logic (Yosys's technology-free estimate, free of
    # ABC's mapping noise). Not so for FP4, whose exact sum is narrower than the window.
    assert by[("dot", "fixed8")].transistors < by[("dot", "exact")].transistors
    text = sw.markdown(rows, meta)
    assert "## Block-scaled (OCP MX) units" in text
    assert "| fp4e2m1 | 4 |" in text and "| fp8e4m3 | 8 |" in text
    assert "mxq floor" in text and "dot fixed8" in text
    assert sw.plot(rows, run_dir) == [run_dir / "mx.png"] and (run_dir / "mx.png").stat().st_size


def test_sweep_command_line_rejects_bad_mx_options(capsys):
    assert sw.main(["--mx-block", "0"]) == 2
    assert sw.main(["--mx-units", "nope"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: block must be an integer 1..256, not 0",
                   "error: unknown MX unit 'nope'; valid: mxq, mxdq, dot"]


def test_make_synth_passes_the_mx_variables():
    import subprocess
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(["make", "-n", "synth", "FORMAT=fp4e2m1", "UNIT=dot", "N=8",
                          "ACCUM=fixed", "FRAC_BITS=8", "FPGA=0"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    assert "--units dot" in out and "--n 8 --accum fixed --frac-bits 8" in out
    assert "--no-fpga" in out and "--block" not in out and "--scale-rule" not in out
    plain = subprocess.run(["make", "-n", "synth", "FORMAT=fp4e2m1", "UNIT=mxq", "BLOCK=16",
                            "SCALE_RULE=rceil"], cwd=root, check=True, capture_output=True,
                           text=True).stdout
    assert "--block 16 --scale-rule rceil" in plain and "--no-fpga" not in plain
