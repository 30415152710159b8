"""No module imports another module's private name: ``from X import _name`` of one of our own
modules (fpforge's parts, a relative import, the tests' shared helpers) is a name that should be
public where it is genuinely shared, or stay where it is. Third-party private names (cocotb's)
are not ours to rename."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ("fpforge", "rtl", "golden", "sim", "synth", "tests")


def own_top_level_names() -> set[str]:
    """The top-level names our modules are imported by: fpforge, the repository's folders and
    every module or package under tests/ (on pytest's path)."""
    names = {"fpforge"} | {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    for path in (ROOT / "tests").rglob("*.py"):
        names.add(path.stem)
        names.update(part for part in path.relative_to(ROOT / "tests").parts[:-1])
    return names


def private_imports(source: str, own: set[str]) -> list[str]:
    """``from X import _name`` lines of ``source`` whose X is one of ours: "X._name" each."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        module = node.module or ""
        if node.level == 0 and module.split(".")[0] not in own:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.append(f"{'.' * node.level}{module}.{alias.name}")
    return found


def test_no_module_imports_a_private_name_of_ours():
    own = own_top_level_names()
    offenders = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            bad = private_imports(path.read_text(), own)
            if bad:
                offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_check_can_fail():
    own = own_top_level_names()
    source = ("from fpforge.golden.gemm import _quantized, emulated_matmul\n"
              "from .flow import _q\n"
              "from oracles import _helper\n"
              "from fpforge.golden import _jax\n"
              "from cocotb.handle import _GPISetAction\n"
              "from __future__ import annotations\n"
              "from fpforge.rtl import __version__\n")
    assert private_imports(source, own) == ["fpforge.golden.gemm._quantized", ".flow._q",
                                            "oracles._helper", "fpforge.golden._jax"]
