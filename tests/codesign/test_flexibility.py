"""The cost of flexibility (codesign/flexibility.py): a real synthesis of a multi-format unit and
its members, and the issue's claim that the shared datapath costs less than separate units."""

import csv

import pytest

from fpforge.codesign.flexibility import (DOT_N, REPORT_FILES, SETS, FlexSet, cases,
                                         run_flexibility)


def test_the_sets_and_their_rows():
    names = {s.name for s in SETS}
    assert names == {"OCP FP8", "f8f6f4", "E4M3 + NVFP4", "CVFPU"}
    rows = {(c.set_name, c.unit, c.layout): c for c in cases()}
    simd = rows[("CVFPU", "mul", "simd 32")]
    assert [(f, n) for f, n, _ in simd.members] == \
        [("fp32", 1), ("fp16", 2), ("bf16", 2), ("fp8e4m3", 4), ("fp8e5m2", 4)]
    nvfp4 = rows[("E4M3 + NVFP4", "dot", "one lane")]
    assert ("scale_format", "float8_e4m3fn") in nvfp4.multi and ("n", DOT_N) in nvfp4.multi


@pytest.fixture(scope="module")
def ocp_fp8_mul(tmp_path_factory):
    out = tmp_path_factory.mktemp("flexibility")
    (out / "flexibility.md").write_text("stale")
    rows = run_flexibility(out, 2, sets=(FlexSet("OCP FP8", ("fp8e4m3", "fp8e5m2"), "both",
                                                 units=("mul",)),))
    return out, rows


def test_a_shared_datapath_costs_less_than_its_members_apart(ocp_fp8_mul):
    _, (row,) = ocp_fp8_mul
    assert row.module == "fp_mul_e4m3fn_or_e5m2_rne_deep"
    n_e4m3, ge_e4m3, _ = row.members["fp8e4m3"]
    n_e5m2, ge_e5m2, _ = row.members["fp8e5m2"]
    assert row.sum_ge == pytest.approx(ge_e4m3 + ge_e5m2)
    assert row.largest_ge == max(ge_e4m3, ge_e5m2)
    # One datapath for both: more than either alone, less than both apart.
    assert row.largest_ge < row.ge < row.sum_ge
    assert row.vs_sum == pytest.approx(row.ge / row.sum_ge, abs=1e-3)


def test_the_report_files(ocp_fp8_mul):
    out, (row,) = ocp_fp8_mul
    assert all((out / f).stat().st_size > 0 for f in REPORT_FILES)
    text = (out / "flexibility.md").read_text()
    assert "stale" not in text and f"| OCP FP8 | mul | one lane | {row.ge:.1f} |" in text
    with open(out / "flexibility.csv") as fh:
        (line,) = list(csv.DictReader(fh))
    assert float(line["ge"]) == row.ge and line["members"].startswith("fp8e4m3:1:")
