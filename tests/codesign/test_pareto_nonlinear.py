"""fpforge pareto's nonlinear rows (codesign/nonlinear.py, docs/codesign.md "Nonlinear units"):
softmax and LayerNorm's 1/sqrt on the exp2, recip and rsqrt units, their quality through the
units' golden models, their cost from the same synthesis as the GEMM units."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest

from fpforge.cli import main
from fpforge.codesign import digits, minilm, nonlinear, pareto
from fpforge.codesign.pareto_report import Row
from fpforge.golden import dequantize, evaluate, quantize
from fpforge.rtl.kinds import make_spec

CORRECT = nonlinear.FuncConfig("float8_e4m3fn", "correct")
FAITHFUL = nonlinear.FuncConfig("float8_e4m3fn", "faithful")


@pytest.fixture(scope="module")
def figures():
    """Both accuracies' quality figures, as the pareto's workers measure them."""
    return {f.accuracy: nonlinear.measure(f) for f in (CORRECT, FAITHFUL)}


def test_the_units_are_costed_from_their_own_synthesis(tmp_path):
    rows = [Row(f.label, f.fmt, f.fmt, "", 0, "", "rne", "float32", 8.0, accuracy=f.accuracy)
            for f in (CORRECT, FAITHFUL)]
    pareto.nonlinear_cost([CORRECT, FAITHFUL], rows, tmp_path, 2)
    for r in rows:
        parts = (r.exp2_ge, r.recip_ge, r.rsqrt_ge)
        # the mul and the cvt come on top of the three function units
        assert all(g > 0 for g in parts) and r.func_ge > sum(parts) and r.delay_ps > 0
    (role, case), *_ = nonlinear.hardware_cases(FAITHFUL)
    assert role == "exp2" and dict(case.values)["accuracy"] == "faithful" and case.deep
    # correct keeps the rounder's bits: a larger exp2 table than faithful's (307 vs 229 GE)
    assert rows[0].exp2_ge > rows[1].exp2_ge


def test_the_softmax_is_the_units_golden_steps_and_close_to_float32():
    """Step by step through golden.evaluate on each unit's spec, independently of the
    module's helpers; and within the error bound of its roundings of the exact softmax."""
    f = nonlinear.FuncConfig("bfloat16", "correct")
    s = np.random.default_rng(0).standard_normal((8, 12)).astype(np.float32) * 4
    got = np.asarray(nonlinear.softmax(f, s))
    sat = dict(saturate=True)
    d = quantize(s - s.max(-1, keepdims=True), "bf16", **sat)
    log2e = quantize(np.float32(np.log2(np.e)), "bf16")
    mul = make_spec("mul", format="bf16", **sat)
    u = evaluate(mul, a=d, b=np.broadcast_to(log2e, d.shape))["y"]
    e = evaluate(make_spec("exp2", format="bf16"), x=u)["y"]
    total = quantize(np.asarray(dequantize(e, "bf16")).sum(-1, keepdims=True), "bf16", **sat)
    r = evaluate(make_spec("recip", format="bf16"), x=total)["y"]
    p = evaluate(mul, a=e, b=np.broadcast_to(r, e.shape))["y"]
    np.testing.assert_array_equal(got, np.asarray(dequantize(p, "bf16")))
    d = s - s.max(-1, keepdims=True)
    exact = np.exp(d.astype(np.float64))
    exact /= exact.sum(-1, keepdims=True)
    # each rounding is half a bf16 ulp (2^-9 relative); d's and u's errors grow by |d| in exp
    assert np.all(np.abs(got - exact) <= 2.0 ** -8 * (4 + 2 * np.abs(d)) * exact)
    v = np.array([0.25, 2.0, 3.0, 1e-3], np.float32)
    rs = np.asarray(nonlinear.inv_sqrt(f, v))
    assert np.all(np.abs(rs * np.sqrt(v) - 1) <= 2.0 ** -8)


def test_correct_and_faithful_units_give_different_measured_quality(figures):
    c, f = figures["correct"], figures["faithful"]
    assert 30 < f["softmax_qsnr_db"] < c["softmax_qsnr_db"] < 50
    if minilm.available() is None:
        assert 10 < f["minilm_qsnr_db"] < c["minilm_qsnr_db"] < 40
        assert c["minilm_cos_err"] < f["minilm_cos_err"]


def test_a_broken_exp2_changes_the_measured_quality(figures):
    """The deliberately broken variant: the exp2 unit rounding toward zero instead of to
    nearest. The same emulation on it measures a lower softmax QSNR than the correct unit."""
    class RtzExp2(nonlinear.FuncConfig):
        def spec(self, unit):
            if unit == "exp2":
                return make_spec("exp2", format=self.fmt, rounding="rtz")
            return super().spec(unit)

    broken = digits.evaluate_softmax(
        lambda z: nonlinear.softmax(RtzExp2(CORRECT.fmt, CORRECT.accuracy), z))
    assert broken.logit_qsnr_db < figures["correct"]["softmax_qsnr_db"] - 0.2   # 38.5 vs 39.1


@pytest.mark.parametrize("entry, says", [
    ("fp32 correct", "unit exp2 takes formats of at most 16 bits; float32 has 32"),
    ("bf16 best", "nonlinear entries are 'FORMAT ACCURACY' with ACCURACY one of correct, "
                  "faithful (e.g. 'bf16 correct'), not 'bf16 best'"),
    ("fp99 correct", "nonlinear 'fp99 correct': unknown format 'fp99'"),
])
def test_bad_nonlinear_axes_are_one_line_exit_2_before_any_work(tmp_path, capsys, entry, says):
    config = tmp_path / "axes.json"
    config.write_text(json.dumps({"nonlinear": [entry]}))
    out = tmp_path / "out"
    assert main(["pareto", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.slow
def test_a_run_with_nonlinear_rows_reports_them_beside_the_gemm_rows(tmp_path):
    config = tmp_path / "axes.json"
    config.write_text(json.dumps({"elements": ["fp4e2m1"], "block": [8], "scaling": ["block"],
                                  "accum": ["bf16"],
                                  "nonlinear": ["fp8e4m3 correct", "fp8e4m3 faithful"]}))
    out = tmp_path / "out"
    assert main(["pareto", "--config", str(config), "--out", str(out), "-j", "2"]) == 0
    with open(out / "pareto.csv") as fh:
        rows = list(csv.DictReader(fh))
    gemm, *funcs = rows
    assert gemm["accuracy"] == "" and float(gemm["ge_per_mac"]) > 0
    assert [r["config"] for r in funcs] == ["softmax/layernorm fp8e4m3 correct",
                                            "softmax/layernorm fp8e4m3 faithful"]
    for r in funcs:
        assert r["ge_per_mac"] == "" and float(r["func_ge"]) > float(r["exp2_ge"]) > 0
        assert 0.9 < float(r["digits_acc"]) <= 1 and float(r["softmax_qsnr_db"]) > 30
    data = json.loads((out / "pareto.json").read_text())
    assert data["meta"]["nonlinear"] == 2 and data["meta"]["configurations"] == 1
    assert {f.name for f in dataclasses.fields(Row)} == set(data["rows"][1])
    text = (out / "pareto.md").read_text()
    assert "## Nonlinear units: softmax and LayerNorm" in text
    assert len(json.loads((out / "roofline.json").read_text())["formats"]) == 1
