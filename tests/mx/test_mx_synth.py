"""python -m synth.mx: every MX unit maps through the ASIC flow and reports its figures."""

from __future__ import annotations

import json

import pytest

from synth import mx


@pytest.mark.slow
def test_every_mx_unit_synthesizes(tmp_path, capsys):
    assert mx.main(["--elem", "fp4e2m1", "--block", "2", "--n", "4", "--out",
                    str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "records.json").read_text())
    assert [r["module"] for r in rows] == [s.default_name for s in mx.mx_specs("fp4e2m1", 2, 4)]
    assert all(r["ge"] > 0 and r["cells"] > 0 and r["delay_ps"] > 0 for r in rows)
    table = capsys.readouterr().out
    assert table.count("\n") == len(rows) + 2


def test_bad_element_is_one_line(capsys):
    assert mx.main(["--elem", "fp9"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
