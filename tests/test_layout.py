"""The house rules of the layout (docs/architecture.md): rtl/ imports nothing from the floors
above it (sim/, synth/, golden/, the fpforge/ command line); rtl/ and synth/ never reach for
golden/ or JAX; golden/ never for Amaranth. Every part is imported by its packaged name
(``fpforge.rtl``...), never as a top-level ``rtl``: two names would make two copies of a module
(and two ``Spec`` classes) in one interpreter, and the installed wheel has only the first."""

import ast
import pathlib
import subprocess
import sys

from fpforge.rtl.kinds import KINDS

ROOT = pathlib.Path(__file__).resolve().parents[1]
PARTS = {"rtl", "golden", "sim", "synth"}      # the repository's folders, fpforge.<part> installed
# folder -> the parts (fpforge.<part>, or a third-party top-level name) its sources must not import
RULES = {"rtl": {"golden", "jax", "jaxlib", "sim", "synth", "cli"},
         "synth": {"golden", "jax", "jaxlib", "sim", "cli"},
         "golden": {"amaranth", "sim", "synth", "cli"},
         "sim": {"cli"}}


def imported_parts(path: pathlib.Path) -> set[str]:
    """What a source imports: ``fpforge.<part>`` as ``<part>``, anything else by its top-level
    name, and a bare top-level ``rtl``/``sim``/... as ``top-level <name>``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{alias.name}" if node.module == "fpforge" else node.module
                      for alias in node.names]
    parts = set()
    for name in names:
        head, _, rest = name.partition(".")
        if head == "fpforge":
            parts.add(rest.split(".")[0] or "fpforge")
        elif head in PARTS:
            parts.add(f"top-level {head}")
        else:
            parts.add(head)
    return parts


def test_top_level_layout():
    for name in ("pyproject.toml", "Makefile", "README.md", ".ci/run", "rtl", "rtl/fp_units",
                 "sim", "golden", "synth", "tests", "fpforge"):
        assert (ROOT / name).exists(), name


def test_each_floor_imports_only_the_floors_below():
    offenders = {}
    for package, forbidden in RULES.items():
        for path in (ROOT / package).rglob("*.py"):
            bad = imported_parts(path) & forbidden
            if bad:
                offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


KIND_NAMES = set(KINDS)


def unit_lists(path: pathlib.Path) -> list[int]:
    """Lines where a tuple, list, set or dict spells out four or more unit kinds."""
    tree = ast.parse(path.read_text())
    exported = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and
                any(getattr(t, "id", "") == "__all__" for t in n.targets)}
    lines = []
    for node in ast.walk(tree):
        if id(node) in exported:
            continue            # the names a module exports, not a list of units
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else \
            node.keys if isinstance(node, ast.Dict) else []
        if len({e.value for e in elts if isinstance(e, ast.Constant)} & KIND_NAMES) >= 4:
            lines.append(node.lineno)
    return lines


def test_the_registry_is_the_only_list_of_units():
    """Outside rtl/kinds.py no source spells out the kinds: everything asks KINDS (or names
    BASIC_UNITS, the one default selection)."""
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for package in ("rtl", "golden", "sim", "synth", "fpforge")
                 for path in (ROOT / package).rglob("*.py")
                 if path != ROOT / "rtl" / "kinds.py" for line in unit_lists(path)]
    assert offenders == []


def test_the_unit_list_scan_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('__all__ = ["mul", "add", "sub", "fma"]\nUNITS = ("mul", "add", "fma", "dot")\n')
    assert unit_lists(bad) == [2]


def test_no_source_imports_a_part_by_its_top_level_name():
    offenders = {str(path.relative_to(ROOT)): sorted(bad)
                 for folder in ("rtl", "golden", "sim", "synth", "fpforge", "tests")
                 for path in (ROOT / folder).rglob("*.py")
                 if (bad := {p for p in imported_parts(path) if p.startswith("top-level")})}
    assert offenders == {}


def test_importing_rtl_and_synth_loads_no_jax():
    code = ("import sys, pkgutil, importlib\n"
            "from fpforge import rtl, synth\n"
            "for pkg in (rtl, synth):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(m for m in sys.modules\n"
            "             if m.split('.')[0] == 'jax' or m.startswith('fpforge.golden')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_checker_sees_a_forbidden_import(tmp_path):
    # The AST scan must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("from fpforge.golden.ops import mul\nimport jax.numpy as jnp\n"
                   "from fpforge import cli\nfrom sim import verify\n")
    assert imported_parts(bad) == {"golden", "jax", "cli", "top-level sim"}
