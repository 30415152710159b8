"""The liberty and the Verilog cell models come from one table and agree with it (no Yosys)."""

import re

import pytest

from fpforge.synth.cells import CELL_BY_NAME, CELLS, NAND2_AREA, ge
from fpforge.synth.liberty import (EDGES, STA_SCALE, cell_models_text, liberty_text, parse_liberty_areas,
                           parse_model_areas, write_library)


def test_table_is_nangate_x1_and_ge_is_nand2():
    assert NAND2_AREA == 0.798
    assert ge(0.798) == 1.0
    assert all(c.name.endswith("_X1") for c in CELLS)
    assert len(CELL_BY_NAME) == len(CELLS)
    for c in CELLS:
        assert c.area > 0 and c.input_cap > 0 and c.rise > 0 and c.fall > 0
        assert c.source.startswith("nangate45_typ.lib " + c.name)


def test_liberty_areas_equal_table():
    assert parse_liberty_areas(liberty_text()) == {c.name: c.area for c in CELLS}


@pytest.mark.parametrize("edge", EDGES)
def test_model_areas_equal_liberty_areas(edge):
    assert parse_model_areas(cell_models_text(edge)) == parse_liberty_areas(liberty_text())


@pytest.mark.parametrize("edge", EDGES)
def test_model_delays_are_the_tables_edge(edge):
    text = cell_models_text(edge)
    pick = min if edge == "fast" else max
    for c in CELLS:
        body = text[text.index(f"module {c.name} "):]
        body = body[:body.index("endmodule")]
        delays = re.findall(r"\) = \((\d+), (\d+)\);", body)
        arcs = 1 if c.sequential else len(c.inputs)
        assert len(delays) == arcs, c.name
        want = str(round(pick(c.rise, c.fall) * STA_SCALE))
        assert all(d == (want, want) for d in delays), c.name


def test_liberty_delays_equal_table():
    text = liberty_text()
    for c in CELLS:
        block = text[text.index(f"cell({c.name})"):]
        block = block[:block.index("\n  cell(")] if "\n  cell(" in block else block
        rises = re.findall(r'cell_rise\(delay_1x1\) \{[^}]*values\("([0-9.]+)"\)', block)
        falls = re.findall(r'cell_fall\(delay_1x1\) \{[^}]*values\("([0-9.]+)"\)', block)
        arcs = 1 if c.sequential else len(c.inputs)
        assert [float(x) for x in rises] == [c.rise] * arcs, c.name
        assert [float(x) for x in falls] == [c.fall] * arcs, c.name


def test_model_functions_match_liberty_functions():
    # Same boolean function in both files: the liberty's spelling with ! for ~.
    text = cell_models_text("fast")
    for c in CELLS:
        if c.sequential:
            continue
        assert f"assign {c.output} = {c.function.replace('!', '~')};" in text
        assert f'function : "{c.function}";' in liberty_text()


def test_write_library(tmp_path):
    lib, models = write_library(tmp_path)
    assert lib.read_text() == liberty_text()
    assert set(models) == set(EDGES)
    for edge, path in models.items():
        assert path.read_text() == cell_models_text(edge)
