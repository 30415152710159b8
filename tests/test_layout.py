"""The house rules of the layout (docs/architecture.md): each floor imports only the floors below
it. infra/ (the executor, the tool lookup) is the ground floor and imports nothing of ours; rtl/
may use it; golden/ stands on rtl/; sim/ and synth/ on rtl/ (sim/ also on golden/); codesign/ on
golden/ and synth/; only the command line (fpforge/) imports everything. rtl/ and synth/ never
reach for JAX, golden/ never for Amaranth. No import circle, even through an import inside a
function. Every part is imported by its packaged name (``fpforge.rtl``...), never as a top-level
``rtl``: two names would make two copies of a module (and two ``Spec`` classes) in one
interpreter, and the installed wheel has only the first."""

import argparse
import ast
import pathlib
import subprocess
import sys
import tomllib

from fpforge.rtl.kinds import KINDS

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The repository's folders, fpforge.<part> installed; the command line (fpforge/) is "cli" here.
PARTS = {"infra", "rtl", "golden", "sim", "synth", "codesign"}
# folder -> the parts of ours it may import (besides itself)
FLOORS = {"infra": set(),
          "rtl": {"infra"},
          "golden": {"infra", "rtl"},
          "sim": {"infra", "rtl", "golden"},
          "synth": {"infra", "rtl"},
          "codesign": {"infra", "rtl", "golden", "synth"},
          "fpforge": PARTS}
# folder -> third-party top-level names its sources must not import
FOREIGN = {"rtl": {"jax", "jaxlib"}, "synth": {"jax", "jaxlib"}, "golden": {"amaranth"}}


def imported_parts(path: pathlib.Path) -> set[str]:
    """What a source imports, at any depth: ``fpforge.<part>`` as ``<part>``, any other
    ``fpforge`` module as ``cli`` (the command line's floor), anything else by its top-level
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
            rest = rest.split(".")[0]
            parts.add(rest if rest in PARTS else "cli")
        elif head in PARTS:
            parts.add(f"top-level {head}")
        else:
            parts.add(head)
    return parts


def test_top_level_layout():
    for name in ("pyproject.toml", "Makefile", "README.md", ".ci/run", "infra", "rtl",
                 "rtl/fp_units", "sim", "golden", "synth", "codesign", "tests", "fpforge"):
        assert (ROOT / name).exists(), name


def floor_offenders(root: pathlib.Path) -> dict[str, list[str]]:
    """source -> what it imports that its floor may not: a part above it, or FOREIGN's names."""
    offenders = {}
    for folder, allowed in FLOORS.items():
        ours = (PARTS | {"cli"}) - allowed - {folder if folder != "fpforge" else "cli"}
        for path in (root / folder).rglob("*.py"):
            bad = imported_parts(path) & (ours | FOREIGN.get(folder, set()))
            if bad:
                offenders[str(path.relative_to(root))] = sorted(bad)
    return offenders


def test_each_floor_imports_only_the_floors_below():
    assert floor_offenders(ROOT) == {}


def test_the_floor_check_can_fail(tmp_path):
    for folder, text in (("infra", "from fpforge.rtl.options import OptionError\n"),
                         ("rtl", "def f():\n    from fpforge.infra import executor, toolchain\n"
                                 "    from fpforge.golden import scalar\n"),
                         ("golden", "from fpforge.codesign import quality\nimport amaranth\n"),
                         ("sim", "from fpforge.synth import flow\n"
                                 "from fpforge.golden import scalar\n"),
                         ("synth", "from fpforge.sim import lint\n"),
                         ("codesign", "from fpforge.golden import gemm\nfrom fpforge import cli\n"),
                         ("fpforge", "from fpforge.codesign import pareto\nfrom . import docs\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(text)
    assert floor_offenders(tmp_path) == {"infra/m.py": ["rtl"], "rtl/m.py": ["golden"],
                                         "golden/m.py": ["amaranth", "codesign"],
                                         "sim/m.py": ["synth"], "synth/m.py": ["sim"],
                                         "codesign/m.py": ["cli"]}


# ----- no import circles -------------------------------------------------------------------------

def package_folders(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """fpforge's packages (pyproject.toml's [tool.setuptools]) -> their folders in a checkout."""
    tool = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = tool.get("package-dir", {})
    folders = {}
    for package in tool["packages"]:
        base = max((d for d in dirs if package == d or package.startswith(d + ".")), key=len,
                   default=None)
        folders[package] = root / (dirs[base] + package[len(base):].replace(".", "/")
                                   if base else package.replace(".", "/"))
    return folders


def module_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """Every module of fpforge -> the modules of fpforge it imports, at any depth (inside
    functions too), relative imports resolved. ``from package import name`` is an edge to the
    submodule ``name`` if there is one, else to the package. String references (rtl/kinds.py's
    ``module:attribute`` rows, an executor task's function) are not imports and are not counted:
    they are how the registry reaches the floors above it without importing them."""
    files = {}
    for package, folder in package_folders(root).items():
        for path in folder.glob("*.py"):
            files[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    graph = {}
    for name, path in files.items():
        package = name if path.stem == "__init__" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base
                            for alias in node.names}
        edges = set()
        for target in targets:
            while target and target not in files:      # fpforge.rtl.kinds.make_spec -> ...kinds
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of more than one module
    (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def test_no_import_circles():
    graph = module_graph(ROOT)
    assert "fpforge.infra.executor" in graph and "fpforge.codesign.pareto" in graph
    assert import_cycles(graph) == []


def test_the_cycle_finder_can_fail(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackages = ["fpforge", "fpforge.a", "fpforge.a.b"]\n'
        '[tool.setuptools.package-dir]\n"fpforge.a" = "a"\n')
    for name, text in {"fpforge/__init__.py": "",
                       "a/__init__.py": "from .x import f\n",
                       "a/x.py": "from . import y\n\ndef f():\n    return y\n",
                       # a circle through an import inside a function, from a subpackage
                       "a/y.py": "def g():\n    from .b.z import h\n",
                       "a/b/__init__.py": "",
                       "a/b/z.py": "def h():\n    from ..x import f\n",
                       "a/w.py": "import fpforge.a.y\nfrom fpforge.a import f\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = module_graph(tmp_path)
    assert graph["fpforge.a.w"] == {"fpforge.a", "fpforge.a.y"}
    assert import_cycles(graph) == [["fpforge.a.b.z", "fpforge.a.x", "fpforge.a.y"]]


# ----- one list of units, one name per part, no JAX below golden ---------------------------------

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
                 for package in sorted(FLOORS)
                 for path in (ROOT / package).rglob("*.py")
                 if path != ROOT / "rtl" / "kinds.py" for line in unit_lists(path)]
    assert offenders == []


def test_the_unit_list_scan_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('__all__ = ["mul", "add", "sub", "fma"]\nUNITS = ("mul", "add", "fma", "dot")\n')
    assert unit_lists(bad) == [2]


def test_no_source_imports_a_part_by_its_top_level_name():
    offenders = {str(path.relative_to(ROOT)): sorted(bad)
                 for folder in (*sorted(FLOORS), "tests")
                 for path in (ROOT / folder).rglob("*.py")
                 if (bad := {p for p in imported_parts(path) if p.startswith("top-level")})}
    assert offenders == {}


def test_importing_infra_rtl_and_synth_loads_no_jax():
    code = ("import sys, pkgutil, importlib\n"
            "from fpforge import infra, rtl, synth\n"
            "for pkg in (infra, rtl, synth):\n"
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
    bad.write_text("from fpforge.golden.scalar import mul\nimport jax.numpy as jnp\n"
                   "from fpforge import cli\nfrom sim import verify\n")
    assert imported_parts(bad) == {"golden", "jax", "cli", "top-level sim"}


# ----- benchmarks named after their subcommands ---------------------------------------------------

def test_every_benchmark_is_the_module_of_its_subcommand():
    """``fpforge bench-X`` runs the module bench_X.py (in the part it measures), and every
    bench_*.py is a subcommand's."""
    from fpforge.cli import parser
    sub, = (a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    commands = {c.replace("-", "_") for c in sub.choices if c.startswith("bench-")}
    modules = {path.stem for folder in FLOORS
               for path in (ROOT / folder).rglob("bench_*.py")}
    assert commands and commands == modules
