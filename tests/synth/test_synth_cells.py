"""The liberty and the Verilog cell models come from one table and agree with it (no Yosys)."""

import pytest

from fpforge.synth.cells import CELL_BY_NAME, CELLS, NAND2_AREA, ge
from fpforge.synth.cells import INPUT_SLEW_NS, NLDM_TABLE, Table, arcs, timing_sense
from fpforge.synth.liberty import (cell_models_text, liberty_text, parse_liberty_areas,
                                   parse_model_areas, write_library)


def test_table_is_nangate_x1_and_ge_is_nand2():
    assert NAND2_AREA == 0.798
    assert ge(0.798) == 1.0
    assert all(c.name.endswith("_X1") for c in CELLS)
    assert len(CELL_BY_NAME) == len(CELLS)
    for c in CELLS:
        assert c.area > 0 and c.input_cap > 0 and c.rise > 0 and c.fall > 0
        assert c.source.startswith("nangate45_typ.lib " + c.name)


def test_every_input_of_every_cell_has_nldm_tables():
    have = {(a.cell, a.pin, a.related, a.timing_type): a for a in arcs()}
    # A pin that is neither positive nor negative unate has one arc of each sense, as in the
    # source library; the others one arc of the sense their function gives.
    for cell, pin in (("XOR2_X1", "A"), ("XNOR2_X1", "B"), ("MUX2_X1", "S")):
        assert sorted(a.sense for a in arcs() if (a.cell, a.related) == (cell, pin)) == \
            ["negative_unate", "positive_unate"]
    assert [a.sense for a in arcs() if (a.cell, a.related) == ("MUX2_X1", "A")] == \
        ["positive_unate"]
    assert [a.sense for a in arcs() if (a.cell, a.related) == ("NAND2_X1", "A1")] == \
        ["negative_unate"]
    for c in CELLS:
        if c.sequential:
            clk_q = have[(c.name, "Q", "CK", "rising_edge")]
            assert set(clk_q.tables) == {"cell_rise", "cell_fall", "rise_transition",
                                         "fall_transition"}
            for kind in ("setup_rising", "hold_rising"):
                assert set(have[(c.name, "D", "CK", kind)].tables) == {"rise_constraint",
                                                                       "fall_constraint"}
            continue
        for pin in c.inputs:
            arc = have[(c.name, c.output, pin, "")]
            assert set(arc.tables) == {"cell_rise", "cell_fall", "rise_transition",
                                       "fall_transition"}
            for t in arc.tables.values():
                assert len(t.values) == 3 and all(len(r) == 3 for r in t.values)


def test_one_point_summary_is_the_middle_of_the_nldm_tables():
    # CELLS.md's one-point delays (41 ps slew, about 7.6 fF: the 4th of 7 grid points) are the
    # middle entries of the sub-sampled tables, worst arc: both files come from one library.
    for c in CELLS:
        own = [a for a in arcs() if a.cell == c.name and a.timing_type in ("", "rising_edge")]
        rise = max(a.tables["cell_rise"].values[1][1] for a in own) * 1000
        fall = max(a.tables["cell_fall"].values[1][1] for a in own) * 1000
        assert (round(rise, 1), round(fall, 1)) == (c.rise, c.fall), c.name


def test_lookup_interpolates_and_extrapolates():
    t = Table((0.0, 1.0, 2.0), (0.0, 10.0, 20.0), ((0, 1, 2), (1, 2, 3), (2, 3, 4)))
    assert t.lookup(0.5, 5.0) == pytest.approx(1.0)
    assert t.lookup(2.0, 20.0) == pytest.approx(4.0)
    assert t.lookup(3.0, 30.0) == pytest.approx(6.0)     # linear beyond the grid


def test_timing_sense_read_from_function():
    assert timing_sense(CELL_BY_NAME["NAND2_X1"], "A1") == "negative_unate"
    assert timing_sense(CELL_BY_NAME["AND2_X1"], "A2") == "positive_unate"
    assert timing_sense(CELL_BY_NAME["XOR2_X1"], "A") == "non_unate"
    assert timing_sense(CELL_BY_NAME["MUX2_X1"], "S") == "non_unate"
    assert timing_sense(CELL_BY_NAME["MUX2_X1"], "B") == "positive_unate"


def test_input_slew_is_an_x1_inverter_driving_four_nand2():
    assert 0.015 < INPUT_SLEW_NS < 0.03


def test_liberty_areas_equal_table():
    assert parse_liberty_areas(liberty_text()) == {c.name: c.area for c in CELLS}


def test_model_areas_equal_liberty_areas():
    assert parse_model_areas(cell_models_text()) == parse_liberty_areas(liberty_text())


def test_liberty_carries_every_nldm_value():
    text = liberty_text()
    assert "delay_model : table_lookup;" in text and 'time_unit : "1ns";' in text
    rows = [line for line in NLDM_TABLE.read_text().splitlines()
            if line and not line.startswith(("#", "cell,"))]
    for row in rows:
        values = row.split(",")[-1].split()
        first = ", ".join(f"{float(v):g}" for v in values[:3])
        assert f'values("{first}"' in text, row[:60]


def test_model_functions_match_liberty_functions():
    # Same boolean function in both files: the liberty's spelling with ! for ~.
    text = cell_models_text()
    for c in CELLS:
        if c.sequential:
            continue
        assert f"assign {c.output} = {c.function.replace('!', '~')};" in text
        assert f'function : "{c.function}";' in liberty_text()


def test_write_library(tmp_path):
    lib, models = write_library(tmp_path)
    assert lib.read_text() == liberty_text()
    assert models.read_text() == cell_models_text()
