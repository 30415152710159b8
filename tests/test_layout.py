"""The house rules of the layout: rtl/ and synth/ never reach for golden/ or JAX."""

import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = {"golden", "jax", "jaxlib"}


def imported_roots(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_top_level_layout():
    for name in ("pyproject.toml", "Makefile", "README.md", ".ci/run", "rtl", "rtl/fp_units",
                 "sim", "golden", "synth", "tests"):
        assert (ROOT / name).exists(), name


def test_rtl_and_synth_sources_do_not_import_golden_or_jax():
    offenders = {}
    for package in ("rtl", "synth"):
        for path in (ROOT / package).rglob("*.py"):
            bad = imported_roots(path) & FORBIDDEN
            if bad:
                offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_importing_rtl_and_synth_loads_no_jax():
    code = ("import sys, pkgutil, importlib, rtl, synth\n"
            "for pkg in (rtl, synth):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'jax', 'golden'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_checker_sees_a_forbidden_import(tmp_path):
    # The AST scan must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("from golden.ops import mul\nimport jax.numpy as jnp\n")
    assert imported_roots(bad) & FORBIDDEN == {"golden", "jax"}
