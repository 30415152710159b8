"""The sweep's opt-in kinds (``--unit extra``, docs/synth/sweep.md): every scalar kind beyond
mul, add, fma, cvt has a row, the kinds' own trades (div/sqrt --arch iter, the function units'
--accuracy faithful) a variant row, and a --unit / --formats choice narrows the whole sweep.
One tiny sweep through the command line (fp8e4m3: div comb and iter, f2i, cmp) checks that the
rows are synthesised with real figures and that nothing else is.
"""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from fpforge.rtl.kinds import BASIC_UNITS, KINDS
from fpforge.rtl.options import OptionError
from fpforge.synth import sweep as sw
from fpforge.synth import sweep_report

ROOT = Path(__file__).resolve().parents[2]
FP8 = "float8_e4m3fn"


def test_extra_group_covers_every_other_scalar_kind():
    scalar = {u for u, k in KINDS.items() if k.shape == "scalar"}
    assert set(sw.EXTRA_UNITS) == scalar - set(BASIC_UNITS) - {"sub", "fms"}
    labels = {(c.unit, c.variant) for c in sw.plan(**sw.selection("fp8e4m3", "extra"))}
    assert labels == {(u, "default") for u in sw.EXTRA_UNITS} | \
        {(u, "iter") for u in ("div", "sqrt")} | \
        {(u, "faithful") for u in ("recip", "rsqrt", "exp2")}
    assert sw.case("fp16", "exp2", "faithful").spec().accuracy == "faithful"
    assert sw.case("bf16", "div", "iter").spec().arch == "iter"


def test_default_selection_is_unchanged_by_the_extra_kinds():
    assert sw.selection() == {"formats": None, "units": None}
    assert {c.unit for c in sw.plan(mx=False)} == set(BASIC_UNITS)


def test_unit_choice_narrows_variants_and_block_units():
    cases = sw.plan(**sw.selection("fp8e4m3", "div,f2i"))
    assert [c.label for c in cases] == [f"{FP8} div default", f"{FP8} f2i default",
                                        f"{FP8} div iter"]
    both = sw.plan(**sw.selection("fp4e2m1", "mul,mxdq"))
    assert [c.label for c in both] == ["float4_e2m1fn mul default", "fp4e2m1 mxdq default"]


def test_a_rejected_combination_is_a_skipped_row_with_its_reason():
    case_, design, reason = sw._design(sw.case("fp32", "exp2"))
    assert design is None and reason == ("OptionError: unit exp2 takes formats of at most 16 "
                                         "bits; float32 has 32")


def test_unknown_unit_names_the_groups():
    with pytest.raises(OptionError, match=r"^unknown unit 'cbrt'; valid: .* or a group: "
                                          r"basic, extra, all$"):
        sw.plan(units="extra,cbrt")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep_kinds")
    done = subprocess.run([sys.executable, "-m", "fpforge", "sweep", "--unit", "div,f2i,cmp",
                           "--formats", "fp8e4m3", "--jobs", "2", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    run_dir, = out.iterdir()
    return run_dir


def test_tiny_sweep_synthesises_exactly_the_chosen_rows(tiny):
    with open(tiny / "sweep.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["format"], r["unit"], r["variant"]) for r in rows] == \
        [(FP8, "div", "default"), (FP8, "f2i", "default"), (FP8, "cmp", "default"),
         (FP8, "div", "iter")]
    for r in rows:
        assert r["status"] == "ok", r
        assert float(r["ge"]) > 0 and float(r["delay_ps"]) > 0 and int(r["cells"]) > 0, r
    text = (tiny / "sweep.md").read_text()
    assert "| float8_e4m3fn (fp8e4m3) | 8 |" in text
    assert "*iter* (div, sqrt): one recurrence" in text
    assert f"*cmp*: {KINDS['cmp'].summary}" in text and f"*f2i*: {KINDS['f2i'].summary}" in text
    assert f"*amax*: {KINDS['amax'].summary}" not in text
    assert "## Block-scaled" not in text


def test_report_names_a_skipped_row_and_why(tiny):
    rows = sweep_report.read_csv(tiny / "sweep.csv")
    reason = "OptionError: unit exp2 takes formats of at most 16 bits; float32 has 32"
    skipped = sw.Row("float32", "fp32", 32, "exp2", "default", "", "skipped", reason)
    meta = {"cases": 1, "designs": 0, "cores": 0, "skipped": 1, "wall seconds": 0,
            "verilog seconds": 0, "yosys cpu seconds": 0, "jobs": 1, "load before": (0, 0, 0),
            "load after": (0, 0, 0), "library": "", "yosys": "", "amaranth": "", "rtl": ""}
    text = sweep_report.markdown(rows + [skipped], meta)
    assert f"- float32 exp2 (default): {reason}" in text
