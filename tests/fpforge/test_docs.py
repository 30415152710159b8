"""The port tables in README.md and docs/ are what ``spec.ports()`` says (fpforge/docs.py)."""

from pathlib import Path

import pytest

from fpforge.docs import BLOCK, refresh

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_port_tables_are_current(path):
    text = path.read_text()
    assert refresh(text) == text, (f"{path.name}: a port table differs from spec.ports(); "
                                   f"regenerate with python -m fpforge.docs {path.name}")


def test_the_docs_have_port_tables_of_every_kind_shape():
    commands = [m.group("args") for p in DOCS for m in BLOCK.finditer(p.read_text())]
    units = {c.split("--unit ")[1].split()[0] for c in commands}
    assert {"fma", "mxq", "mxdq", "dot"} <= units


def test_a_stale_table_is_seen():
    stale = "<!-- fpforge ports --unit mul --format fp8e4m3 -->\n| made up |\n<!-- end -->"
    fresh = refresh(stale)
    assert fresh != stale and "| `flags` | out | 5 |" in fresh


# ----- the contract's port tables (docs/verilog-export.md), checked against ports() -----------

from fpforge.rtl.kinds import make_spec  # noqa: E402

EXPORT = (ROOT / "docs" / "verilog-export.md").read_text()
SCALAR_CASES = [make_spec(u, rounding=r, stages=s) for u in ("mul", "add", "sub", "fma", "cvt")
                for r in ("rne", "dynamic", "stochastic") for s in (0, 2)]
MX_CASES = [make_spec("mxq", format="fp4e2m1", block=4, rounding=r, stages=s)
            for r in ("rne", "stochastic") for s in (0, 1)] + \
    [make_spec("mxdq", in_format="fp8e4m3", block=4, stages=s) for s in (0, 1)] + \
    [make_spec("dot", in_format="fp6e2m3", n=4, scales=sc, stages=s)
     for sc in (True, False) for s in (0, 2)]


def _table(after: str, header: str) -> list[list[str]]:
    text = EXPORT[EXPORT.index(after):]
    lines = text[text.index(header):].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _holds(condition: str, spec) -> bool:
    rounding = getattr(spec, "rounding", None)
    tests = {"`--stages` > 0": spec.stages > 0, "always": True,
             "`--rounding dynamic`": rounding is not None and rounding.value == "dynamic",
             "`--rounding stochastic`": rounding is not None and rounding.value == "stochastic",
             "mxq, stochastic": spec.unit == "mxq" and rounding.value == "stochastic",
             "dot, unless `--no-scales`": spec.unit == "dot" and spec.scaled}
    if condition in tests:
        return tests[condition]
    return spec.unit in [u.strip() for u in condition.split(",")]


def _documented(rows, spec, unit_column) -> dict:
    ports = {}
    for row in rows:
        names, direction, width, cond = row[0], row[1], row[2], row[unit_column]
        if _holds(cond, spec):
            for name in names.replace("`", "").split(","):
                ports[name.strip()] = (direction[:2] if direction else None, width)
    return ports


@pytest.mark.parametrize("spec", SCALAR_CASES + MX_CASES, ids=lambda s: s.default_name)
def test_the_contract_tables_say_what_ports_says(spec):
    scalar = spec.unit in ("mul", "add", "sub", "fma", "cvt")
    rows = _table("## Ports", "| name | direction |") if scalar else \
        _table("MX units:", "| name | dir | width | meaning | unit |")
    documented = _documented(rows, spec, 4)
    actual = {p.name: p for p in spec.ports()}
    assert set(documented) == set(actual)
    for name, (direction, width) in documented.items():
        if direction:
            assert actual[name].direction.startswith(direction), name
        if width.isdigit():
            assert actual[name].width == int(width), name


def test_the_contract_check_can_fail():
    rows = _table("## Ports", "| name | direction |")
    spec = make_spec("mul", rounding="dynamic")
    documented = _documented([r for r in rows if not r[0].startswith("`rm`")], spec, 4)
    assert set(documented) != {p.name for p in spec.ports()}
