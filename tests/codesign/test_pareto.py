"""fpforge pareto: the join of synthesis cost and emulated quality (docs/codesign.md)."""

from __future__ import annotations

import csv
import json

import pytest

from fpforge.codesign import pareto, pareto_axes, pareto_report
from fpforge.golden.gemm_config import GemmConfig
from fpforge.cli import main

from tests.codesign.shared_jax_cache import compiled_as_users_do, share_jax_cache

ISSUE_COLUMNS = ("config", "elem_a", "elem_b", "scaling", "block", "scale_rule", "rounding",
                 "accum", "bits_per_elem", "qsnr_gauss_db", "qsnr_weights_db", "qsnr_dot_db",
                 "digits_acc", "digits_flips", "minilm_qsnr_db", "minilm_cos_err", "ge_per_mac",
                 "delay_ps", "on_front")


def _row(name, ge, q):
    return pareto_report.Row(name, "e", "e", "block", 32, "floor", "rne", "fp32", 8.25,
                      qsnr_dot_db=q, ge_per_mac=ge)


def test_front_keeps_exactly_the_undominated_rows():
    rows = [_row("cheap-bad", 10, 10.0), _row("dear-good", 50, 30.0),
            _row("dominated", 60, 20.0), _row("tie-on-cost-worse", 50, 25.0),
            _row("no-cost", None, 40.0), _row("middle", 20, 20.0)]
    assert pareto_report.front(rows) == [True, True, False, False, False, True]


def test_a_small_run_writes_every_report_with_the_issue_columns(tmp_path):
    config = tmp_path / "axes.json"
    config.write_text(json.dumps({"elements": ["fp4e2m1"], "block": [8],
                                  "scaling": ["block", "channel"],
                                  "accum": ["fp32", "bf16_promote128"]}))
    out = share_jax_cache(tmp_path / "out")
    (out / "pareto.png").write_text("stale")
    with compiled_as_users_do():
        assert main(["pareto", "--config", str(config), "--out", str(out), "-j", "1"]) == 0
    with open(out / "pareto.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0])[:len(ISSUE_COLUMNS)] == ISSUE_COLUMNS and len(rows) == 4
    for r in rows:
        assert float(r["ge_per_mac"]) > 0 and float(r["delay_ps"]) > 0
        assert 10 < float(r["qsnr_gauss_db"]) < 25 and 10 < float(r["qsnr_dot_db"]) < 25
        assert 0.9 < float(r["digits_acc"]) <= 1 and 3 < float(r["minilm_qsnr_db"]) < 15
        assert 10 < float(r["qsnr_weights_db"]) < 25 and float(r["minilm_topk"]) > 0.5
        assert float(r["bits_per_elem"]) == pytest.approx(
            4.0 + 8 / 8 if r["scaling"] == "block" else 4.0 + 8 / 4096, abs=1e-4)
    # promotion adds a float32 adder to the bf16 running sum's: more area per MAC
    by = {(r["scaling"], r["accum"]): float(r["ge_per_mac"]) for r in rows}
    assert by[("block", "bf16_promote128")] > by[("block", "fp32")]
    assert any(r["on_front"] == "True" for r in rows)
    data = json.loads((out / "pareto.json").read_text())
    assert len(data["rows"]) == 4 and data["meta"]["configurations"] == 4
    text = (out / "pareto.md").read_text()
    assert "**fp4e2m1" in text and "documented scores to 4 decimals" in text
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    roof = json.loads((out / "roofline.json").read_text())
    assert len(roof["formats"]) == 4 and all(f["peak_tmacs"] > 0 for f in roof["formats"])
    assert "decoder layer, decode b64" in (out / "roofline.md").read_text()


@pytest.mark.parametrize("data, says", [
    ({"elements": ["fp16"]}, "MX element format must be one of"),
    ({"accum": ["fp64"]}, "unknown accum 'fp64'; valid: fp32, bf16"),
    ({"block": [12]}, "block must be one of 8, 16, 32, 64, not 12"),
    ({"colour": ["red"]}, "a JSON object (or a list of them) with the keys elements, scaling"),
    ([{"elements": ["fp8e4m3"]}, {"scale_rule": ["nvfp5"]}], "unknown scale_rule 'nvfp5'"),
    ({"rounding": []}, "rounding must be a non-empty list"),
])
def test_bad_axes_are_one_line_exit_2_before_any_work(tmp_path, capsys, data, says):
    config = tmp_path / "axes.json"
    config.write_text(json.dumps(data))
    out = tmp_path / "out"
    assert main(["pareto", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize("preset", ["hopper_fp8", "blackwell_mxf8f6f4"])
def test_a_tensor_core_preset_is_costed_as_its_one_step_unit(preset):
    """The running sum is the unit's accumulator input c: one dot unit, no adder."""
    scaling = "channel" if preset == "hopper_fp8" else "block"
    config = GemmConfig("fp8e4m3", accum=preset, scaling=scaling)
    (role, case), = pareto.hardware_cases(config)
    spec = case.spec()
    assert role == "dot" and spec == config.accum.dot_spec("fp8e4m3")
    assert spec.c_fmt.name == "float32" and spec.n == 32
    assert spec.accum.option_values()["accum"] == "fixed"


def test_a_list_of_axes_joins_its_sweeps_and_costs_nvfp4_with_its_scale_format(tmp_path):
    """``--config`` with a list of objects: their configurations in order, once each; the NVFP4
    row's dot unit takes E4M3 scales, its bits count one E4M3 scale per 16; the grouped and
    the two-stage tensor-core steps are costed as their units."""
    config = tmp_path / "axes.json"
    config.write_text(json.dumps([{"elements": ["fp4e2m1"], "block": [16], "scaling": ["block"],
                                   "accum": ["fp32"]},
                                  {"elements": ["fp4e2m1"], "block": [16],
                                   "scale_rule": ["nvfp4_te"],
                                   "accum": ["fp32", "blackwell_mxf4nvf4"]},
                                  {"elements": ["fp4e2m1"], "block": [16],
                                   "scaling": ["block"], "accum": ["fp32"]}]))
    configs = pareto_axes.configurations(pareto_axes.Axes.from_json(config))
    assert [(c.scale_rule, pareto_axes.accum_name(c.accum)) for c in configs] == [
        ("floor", "fp32"), ("nvfp4_te", "fp32"), ("nvfp4_te", "blackwell_mxf4nvf4")]
    (_, dot), _ = pareto.hardware_cases(configs[1])
    assert dict(dot.values)["scale_format"] == "float8_e4m3fn"
    assert "scale_format" not in dict(pareto.hardware_cases(configs[0])[0][1].values)
    assert pareto_axes.bits_per_elem(configs[1]) == 4.5
    # the grouped tensor-core step: one 64-lane dot unit, a pair of E4M3 scales per 16 lanes
    [(role, step)] = pareto.hardware_cases(configs[2])
    values = dict(step.values)
    assert role == "dot" and (values["n"], values["sum_group"], values["scale_format"],
                              values["frac_bits"]) == (64, 16, "float8_e4m3fn", 35)
    cdna3 = GemmConfig("fp8e4m3fnuz", block=16, accum="cdna3_fp8", scaling="channel")
    [(role, step)] = pareto.hardware_cases(cdna3)
    assert role == "dot" and dict(step.values)["frac_bits2"] == 31
