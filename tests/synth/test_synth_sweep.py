"""Physics sanity on real synthesis figures, the sweep's outputs, and the command lines' errors.

One small sweep (module-scoped: seven units and their cores) feeds every figure test: wider
formats cost more, flushing subnormals never costs area or logic, every figure is positive.
"""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtl.formats import CATALOG, resolve
from rtl.options import OptionError
from synth import sweep as sw
from synth.bench_ppa import NO_FLAGS_SUFFIX, flags_unconnected
from synth.flow import module_ports

ROOT = Path(__file__).resolve().parents[2]
# (format, unit) pairs whose ftz variant is synthesised beside the default one.
FTZ_CASES = [("fp8e4m3", "mul"), ("fp8e4m3", "add"), ("fp4e2m1", "mul")]
CASES = [sw.Case(resolve(f), "mul") for f in ("fp4e2m1", "fp8e4m3", "fp16")] + \
    [sw.Case(resolve(f), u, v) for f, u in FTZ_CASES for v in ("default", "ftz")]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    rows, run_dir, meta = sw.sweep(list(dict.fromkeys(CASES)),
                                   out_dir=tmp_path_factory.mktemp("sweep"), jobs=2)
    return {(r.short, r.unit, r.variant): r for r in rows}, run_dir, meta


def test_every_case_synthesised_with_positive_figures(swept):
    rows, _, meta = swept
    assert meta["skipped"] == 0 and len(rows) == len(set(CASES))
    for r in rows.values():
        assert r.status == "ok", r
        assert r.ge > 0 and r.area_um2 > 0 and r.delay_ps > 0 and r.cells > 0 and r.depth > 0
        assert r.transistors > 0
        assert r.delay_slow_ps >= r.delay_ps
    for r in rows.values():
        if r.unit == "mul":
            assert 0 < r.core_ge < r.ge and r.area_vs_core > 1


def test_wider_multiplier_costs_more_area(swept):
    rows, _, _ = swept
    fp4, fp8, fp16 = (rows[(f, "mul", "default")].ge for f in ("fp4e2m1", "fp8e4m3", "fp16"))
    assert fp16 > fp8 > fp4


@pytest.mark.parametrize("fmt, unit", FTZ_CASES)
def test_flushing_subnormals_never_adds_area(swept, fmt, unit):
    rows, _, _ = swept
    default, ftz = rows[(fmt, unit, "default")], rows[(fmt, unit, "ftz")]
    assert ftz.transistors <= default.transistors
    assert ftz.ge <= default.ge


WIDE_FTZ_CASES = [(f, u) for f in ("fp8e5m2", "bf16", "fp16") for u in ("mul", "add")]


@pytest.fixture(scope="module")
def swept_wide(tmp_path_factory):
    cases = [sw.Case(resolve(f), u, v) for f, u in WIDE_FTZ_CASES for v in ("default", "ftz")]
    rows, _, _ = sw.sweep(cases, out_dir=tmp_path_factory.mktemp("sweep_wide"), jobs=2)
    return {(r.short, r.unit, r.variant): r for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("fmt, unit", WIDE_FTZ_CASES)
def test_flushing_subnormals_never_adds_logic_wide(swept_wide, fmt, unit):
    """The generator's side: flushing never emits more logic (Yosys's technology-free
    transistor estimate of the generic gates)."""
    default, ftz = swept_wide[(fmt, unit, "default")], swept_wide[(fmt, unit, "ftz")]
    assert ftz.transistors <= default.transistors


# ABC's area mapping is not monotonic (128 equivalent rewrites of d4beb32's fp8e4m3 mul mapped
# to 306-365 GE), so this holds by measurement, not by construction: the ftz fp16 add mapped
# larger than the default one (884 vs 843 GE) until the rounder's unclamped path built its code
# as one incrementer (812).
@pytest.mark.slow
@pytest.mark.parametrize("fmt, unit", [
    ("fp8e5m2", "mul"), ("fp8e5m2", "add"), ("bf16", "mul"), ("bf16", "add"),
    ("fp16", "mul"), ("fp16", "add")])
def test_flushing_subnormals_never_adds_area_wide(swept_wide, fmt, unit):
    default, ftz = swept_wide[(fmt, unit, "default")], swept_wide[(fmt, unit, "ftz")]
    assert ftz.ge <= default.ge


def test_report_files(swept, tmp_path):
    rows, _, meta = swept
    rows = list(rows.values())
    path = sw.write_csv(rows, tmp_path / "sweep.csv")
    with open(path) as fh:
        read = list(csv.DictReader(fh))
    assert [r["module"] for r in read] == [r.module for r in rows]
    assert all(float(r["ge"]) > 0 for r in read)
    text = sw.markdown(rows, meta)
    assert "| float16 (fp16) | 16 |" in text and "## What the options cost" in text
    assert "| float8_e4m3fn | add | ftz |" in text
    assert "![area](area.png)" in text and "None: the generator accepted" in text
    paths = sw.plot(rows, tmp_path)
    assert [p.name for p in paths] == ["area.png", "delay.png", "variants.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in paths)


def test_rejected_combination_is_skipped_with_reason(monkeypatch):
    def reject(spec):
        raise OptionError(f"unit {spec.unit} cannot do that")
    monkeypatch.setattr(sw, "design_for", reject)
    case, design, reason = sw._design(sw.Case(resolve("fp8e4m3"), "mul", "ftz"))
    assert design is None and reason == "OptionError: unit mul cannot do that"


def test_cases_cover_catalog_units_and_variants():
    from rtl.formats import catalog_formats
    fmts = catalog_formats(16)
    cases = sw.cases(fmts)
    base = [c for c in cases if c.variant == "default"]
    assert len(base) == len(fmts) * 4 and len(cases) == len(set(cases))
    assert {c.variant for c in cases} == set(sw.VARIANTS)
    assert sw.Case(resolve("fp8e4m3"), "cvt").spec().in_fmts == (resolve("float32"),)


def test_flags_unconnected_wrapper_has_no_flags_port():
    from rtl.spec import UnitSpec
    from synth.records import unit_design
    d = flags_unconnected(unit_design(UnitSpec.create("mul", "fp4e2m1")))
    assert d.name == "fp_mul_e2m1fin_rne" + NO_FLAGS_SUFFIX
    assert sorted(p[2] for p in module_ports(d.verilog, d.name)) == ["a", "b", "y"]
    assert ".flags()" in d.verilog


# ----- command lines ---------------------------------------------------------------------------
def _cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=600)


@pytest.mark.parametrize("argv, listed", [
    (["--format", "fp7e9"], "float8_e4m3fn"),
    (["--format", "fp8e4m3", "--units", "mul,div"], "mul, add, fma, cvt"),
])
def test_unknown_name_one_line_exit_2_no_files(tmp_path, argv, listed):
    out = tmp_path / "build"
    p = _cli("-m", "synth", *argv, "--out", str(out))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown ") and listed in lines[0]
    assert p.stdout == "" and not out.exists()


def test_sweep_unknown_name_one_line_exit_2(tmp_path, capsys):
    assert sw.main(["--formats", "fp8e4m3,nope", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown format 'nope'" in err[0] and "bfloat16" in err[0]
    assert sw.main(["--units", "mul,sqrt", "--out", str(tmp_path / "b")]) == 2
    assert "valid: mul, add, fma, cvt" in capsys.readouterr().err
    assert sw.main(["--max-width", "2", "--out", str(tmp_path / "b")]) == 2
    assert "the narrowest is float4_e2m1fn (4 bits)" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_two_runs_at_once_do_not_clobber(tmp_path):
    out = tmp_path / "build"
    args = [sys.executable, "-m", "synth", "--units", "mul", "--no-fpga", "--no-core",
            "--out", str(out), "--format"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(args + [f], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for f in ("fp4e2m1", "fp4e2m1")]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    runs = sorted(d for d in out.iterdir() if d.is_dir())
    assert len(runs) == 2
    for d in runs:
        assert "fp_mul_e2m1fin_rne" in (d / "report.md").read_text()
        assert (d / "fp_mul_e2m1fin_rne.json").is_file()
        assert (d / "fp_mul_e2m1fin_rne" / "asic" / "asic_stat.json").is_file()


def test_committed_report_covers_every_catalog_format():
    """docs/synth (``make sweep MAX_WIDTH=32``): every catalog format x unit synthesised, with
    figures that are positive and grow with the multiplier's width."""
    with open(ROOT / "docs" / "synth" / "sweep.csv") as fh:
        rows = {(r["format"], r["unit"]): r for r in csv.DictReader(fh)
                if r["variant"] == "default"}
    for name in CATALOG:
        for unit in sw.UNITS:
            row = rows[(name, unit)]
            assert row["status"] == "ok" and float(row["ge"]) > 0 and \
                float(row["delay_ps"]) > 0, row
    mul = [float(rows[(resolve(f).name, "mul")]["ge"]) for f in ("fp4e2m1", "fp8e4m3", "fp16",
                                                                 "fp32")]
    assert mul == sorted(mul) and len(set(mul)) == len(mul)
