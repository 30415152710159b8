"""The cost of flexibility (codesign/flexibility.py): a real synthesis of a multi-format unit and
its members, the issue's claim that the shared datapath costs less than separate units, the
fixed-accumulator dot rows, and the energy per operation with fmt held at each member."""

import csv
import json

import pytest

from fpforge.codesign.flexibility import (DOT_N, FIXED_DOT_N, FIXED_FRAC_BITS, REPORT_FILES,
                                         SETS, FlexSet, cases, run_flexibility)

FIXED = (("accum", "fixed"), ("frac_bits", FIXED_FRAC_BITS))
VECTORS = 16


def test_the_sets_and_their_rows():
    names = {s.name for s in SETS}
    assert names == {"OCP FP8", "f8f6f4", "E4M3 + NVFP4", "CVFPU"}
    rows = {(c.set_name, c.unit, c.layout): c for c in cases()}
    simd = rows[("CVFPU", "mul", "simd 32")]
    assert [(f, n) for f, n, _ in simd.members] == \
        [("fp32", 1), ("fp16", 2), ("bf16", 2), ("fp8e4m3", 4), ("fp8e5m2", 4)]
    dots = [c for c in cases() if c.unit == "dot"]
    assert {(c.set_name, c.n, c.accum) for c in dots} == \
        {(s.name, n, a) for s in SETS if "dot" in s.units
         for n, a in ((DOT_N, "exact"), (FIXED_DOT_N, "fixed"))}
    nvfp4 = [c for c in dots if c.set_name == "E4M3 + NVFP4"]
    for c in nvfp4:
        assert ("scale_format", "float8_e4m3fn") in c.multi
        # every member alone under the multi-format unit's own dot options
        shared = [kv for kv in c.multi if kv[0] != "formats"]
        assert all(set(shared) <= set(m) for _, _, m in c.members)
    fixed, = [c for c in nvfp4 if c.accum == "fixed"]
    assert set(FIXED) <= set(fixed.multi)


@pytest.fixture(scope="module")
def ocp_fp8(tmp_path_factory):
    """The OCP FP8 mul, and a 2-element dot under the fixed accumulator (small: the test's
    own n), with energy."""
    out = tmp_path_factory.mktemp("flexibility")
    (out / "flexibility.md").write_text("stale")
    rows = run_flexibility(out, 2, sets=(FlexSet("OCP FP8", ("fp8e4m3", "fp8e5m2"), "both",
                                                 units=("mul", "dot"),
                                                 dot_rows=(("fixed", 2, FIXED),)),),
                           energy=True, vectors=VECTORS)
    return out, rows


def test_a_shared_datapath_costs_less_than_its_members_apart(ocp_fp8):
    _, (row, _) = ocp_fp8
    assert row.module == "fp_mul_e4m3fn_or_e5m2_rne_deep"
    n_e4m3, ge_e4m3, _ = row.members["fp8e4m3"]
    n_e5m2, ge_e5m2, _ = row.members["fp8e5m2"]
    assert row.sum_ge == pytest.approx(ge_e4m3 + ge_e5m2)
    assert row.largest_ge == max(ge_e4m3, ge_e5m2)
    # One datapath for both: more than either alone, less than both apart.
    assert row.largest_ge < row.ge < row.sum_ge
    assert row.vs_sum == pytest.approx(row.ge / row.sum_ge, abs=1e-3)


def test_the_fixed_accumulator_dot_row(ocp_fp8):
    _, (_, dot) = ocp_fp8
    assert (dot.unit, dot.n, dot.accum) == ("dot", 2, "fixed")
    assert dot.module == f"mxdot_fp8e4m3_or_fp8e5m2_n2_fixed{FIXED_FRAC_BITS}_e8m23_rne_deep"
    assert dot.ge > 0 and all(ge > 0 for _, ge, _ in dot.members.values())


def test_energy_per_member_with_fmt_held(ocp_fp8):
    """Each row's multi-format unit measured once per member (fmt held, that member's operands)
    beside the member alone: real figures, so E4M3's and E5M2's differ on either side."""
    out, rows = ocp_fp8
    for row in rows:
        assert list(row.energy) == ["fp8e4m3", "fp8e5m2"]
        (m4, a4), (m5, a5) = row.energy.values()
        assert min(m4, a4, m5, a5) > 0
        assert m4 != m5 and a4 != a5
    meta = json.loads((out / "flexibility.json").read_text())["meta"]["energy"]
    assert (meta["data"], meta["vectors"]) == ("gaussian", VECTORS)
    text = (out / "flexibility.md").read_text()
    mul = rows[0]
    m4, a4 = mul.energy["fp8e4m3"]
    assert "## Energy per operation, per member" in text
    assert f"| OCP FP8 | mul | one lane |  |  | fp8e4m3 | {m4:.4f} | {a4:.4f} |" in text


def test_the_report_files(ocp_fp8):
    out, (row, dot) = ocp_fp8
    assert all((out / f).stat().st_size > 0 for f in REPORT_FILES)
    text = (out / "flexibility.md").read_text()
    assert "stale" not in text and f"| OCP FP8 | mul | one lane |  |  | {row.ge:.1f} |" in text
    assert f"| OCP FP8 | dot | one lane | 2 | fixed | {dot.ge:.1f} |" in text
    with open(out / "flexibility.csv") as fh:
        line, dot_line = list(csv.DictReader(fh))
    assert float(line["ge"]) == row.ge and line["members"].startswith("fp8e4m3:1:")
    assert (dot_line["n"], dot_line["accum"]) == ("2", "fixed")
    assert line["energy"].split()[0] == "fp8e4m3:%s:%s" % row.energy["fp8e4m3"]
