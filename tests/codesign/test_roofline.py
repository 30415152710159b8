"""The roofline step of fpforge pareto (docs/codesign.md): tokens/s from cost under stated
assumptions."""

from __future__ import annotations

import json

import pytest

from fpforge.codesign import roofline
from fpforge.cli import main
from fpforge.synth.cells import NAND2_AREA

ROW = {"config": "fp8e4m3 k32", "elem_a": "fp8e4m3", "scaling": "block", "block": 32,
       "accum": "fp32", "bits_per_elem": 8.25, "ge_per_mac": 800.0, "delay_ps": 8000.0,
       "qsnr_dot_db": 27.7, "minilm_qsnr_db": 20.0, "digits_acc": 0.97}
DECODER = {layer.name: layer for layer in roofline.LAYERS}


def test_the_decoder_layer_has_its_stated_gemms():
    prefill = DECODER["decoder layer, prefill"]
    by = {g[0]: g[1:] for g in roofline.gemms(prefill)}
    assert by["qkv projection"] == (1, 2048, 4096, 4096 + 2 * 8 * 128, True)
    assert by["ffn up + gate"] == (1, 2048, 4096, 2 * 14336, True)
    assert by["ffn down"] == (1, 2048, 14336, 4096, True)
    assert by["attention scores"] == (32, 2048, 128, 2048, False)
    decode = {g[0]: g[1:] for g in roofline.gemms(DECODER["decoder layer, decode b64"])}
    # each sequence's 4 query heads of a KV group against its own 2048-token cache
    assert decode["attention values"] == (64 * 8, 4, 2048, 128, False)


def test_peak_is_area_over_mac_area_times_clock():
    fig, = roofline.roofline_rows([ROW], roofline.Machine(area_mm2=10.0))
    macs = 10.0e6 / (800.0 * NAND2_AREA)
    assert fig["peak_tmacs"] == pytest.approx(macs * 125e6 / 1e12, rel=1e-3)
    assert fig["clock_mhz"] == 125.0 and fig["peak_tflops"] == pytest.approx(
        2 * fig["peak_tmacs"], rel=1e-2)


def test_decode_at_batch_1_is_memory_bound_and_prefill_compute_bound():
    small, big = (roofline.roofline_rows([ROW], roofline.Machine(area_mm2=a))[0]
                  for a in (100.0, 200.0))
    b1 = "tokens_per_s decoder layer, decode b1"
    pre = "tokens_per_s decoder layer, prefill"
    assert small[b1] == pytest.approx(big[b1], rel=1e-3)     # the weights' bytes decide
    assert big[pre] == pytest.approx(2 * small[pre], rel=1e-2)
    weights = (4096 * 6144 + 4096 * 4096 + 4096 * 2 * 14336 + 14336 * 4096) * 8.25 / 8
    assert big[b1] < 3350e9 / weights < 1.1 * big[b1]
    # a stated clock replaces each unit's own
    fig, = roofline.roofline_rows([ROW], roofline.Machine(clock_mhz=1000.0))
    assert fig["peak_tmacs"] == pytest.approx(8 * small["peak_tmacs"], rel=1e-2)


def test_the_command_writes_its_report_and_refuses_bad_assumptions(tmp_path, capsys):
    pareto = tmp_path / "pareto.json"
    pareto.write_text(json.dumps({"meta": {}, "rows": [ROW, dict(ROW, ge_per_mac=None)]}))
    assert main(["roofline", "--pareto", str(pareto), "--area-mm2", "20"]) == 0
    data = json.loads((tmp_path / "roofline.json").read_text())
    assert data["assumptions"]["area_mm2"] == 20 and len(data["formats"]) == 1
    assert "20 mm²" in (tmp_path / "roofline.md").read_text()
    capsys.readouterr()
    assert main(["roofline", "--pareto", str(pareto), "--bandwidth-gbs", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--bandwidth-gbs must be a positive number" in err and err.count("\n") == 1
    assert main(["roofline", "--pareto", str(tmp_path / "none.json")]) == 2
    assert "not a pareto.json" in capsys.readouterr().err
