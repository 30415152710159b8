"""Formal equivalence of the generated Verilog against an earlier commit: ``make verify-equiv``
(:func:`run`).

``make verify`` simulates 3,328 parameter points for hours. An RTL change that is meant to keep
every unit's function (a rewrite for area, say) need not repeat that: a spec whose Verilog is
identical at ``base`` and in the working tree (byte for byte, or differing only in ``//``
comment lines and whitespace) keeps its simulation record as it stands, and one whose Verilog
differs is proven equivalent to the base's -- for every input, not a sample -- by Yosys: both
netlists flattened into one miter (identical logic merges), then ``sat -verify`` over every
output (pipelined units: temporal induction from zeroed registers). A spec that is not
equivalent fails with the counterexample Yosys found (inputs and both outputs), and the run
returns 1; it then needs ``make verify`` for its format, and a look at what changed.

The specs: every one of ``make verify``'s matrix (sim.tiers.full_matrix) and every MX unit of
the synthesis sweep (synth.sweep.mx_cases), selected by format and unit. The base tree is a
``git worktree`` under ``build/equiv/``; each tree's Verilog is written by a Python process of
its own (the two ``rtl`` packages cannot share one interpreter) running :data:`_EXPORT`, which
reads either tree's API. The summary (identical / proven / not equivalent, per unit) is written
to ``build/equiv/tree-<base>-<selection>/summary.json``, beside both trees' Verilog and the
proofs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fpforge.rtl.format_names import catalog_selection
from fpforge.rtl.kinds import BASIC_UNITS
from fpforge.rtl.options import OptionError

from .flow import run_yosys
from .sweep import MX_UNITS, split_names

__all__ = ["Check", "EQUIV_UNITS", "run", "prove", "miter_script", "export", "compare",
           "same_text", "summarize", "base_tree"]

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "equiv"
EQUIV_UNITS = BASIC_UNITS + MX_UNITS   # the matrix of make verify, the sweep's MX units

# Run inside a tree (its root first on sys.path): write the Verilog of the selected specs and
# their index. It reads the API of the tree it runs in, whichever it is, and nothing of this one:
#   packaged: fpforge.sim.tiers, fpforge.rtl.emit.verilog, fpforge.synth.sweep.mx_cases();
#   top-level packages (6df3658 and before): the same modules without ``fpforge.``;
#   oldest (5f7d1c4 and before): sim.bench.tiers, rtl.fp_units.build + Amaranth's convert,
#   synth.sweep.mx_cases() (MxCase.spec()).
# Case ids: the matrix's case_id, an MX unit's module name (the same in every tree).
_EXPORT = r"""
import importlib, json, sys
from pathlib import Path

# The tree's own layout decides the module names: a tree without an fpforge/ package must not
# import ``fpforge.*``, which the installed (editable) fpforge would answer with the working
# tree's code -- comparing the working tree with itself.
PACKAGED = (Path(sys.path[0]) / "fpforge" / "__init__.py").is_file()


def first(*modules):
    for name in modules:
        if name.startswith("fpforge.") and not PACKAGED:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if not Path(module.__file__).resolve().is_relative_to(Path(sys.path[0]).resolve()):
            raise ImportError(f"{name} came from {module.__file__}, outside the tree "
                              f"{sys.path[0]}")
        return module
    raise ImportError(f"none of {modules} in this tree")


tiers = first("fpforge.sim.tiers", "sim.tiers", "sim.bench.tiers")
case_id, full_matrix, verify_formats = tiers.case_id, tiers.full_matrix, tiers.verify_formats
try:
    verilog = first("fpforge.rtl.emit", "rtl.emit").verilog
except ImportError:
    from amaranth.back import verilog as amaranth_verilog
    build = first("rtl.fp_units").build

    def verilog(spec):
        return amaranth_verilog.convert(build(spec), name=spec.default_name, emit_src=False)
mx_cases = first("fpforge.synth.sweep", "synth.sweep").mx_cases

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
formats = verify_formats(sys.argv[2] or None)
units = set(sys.argv[3].split(",")) if sys.argv[3] else None
wanted = set(formats) if sys.argv[2] else None


def elements(spec):
    return [e for e in (getattr(spec, a, None) for a in ("elem", "elem_a", "elem_b")) if e]


specs = [(case_id(s), s) for s in full_matrix(formats)]
specs += [(s.default_name, s) for s in (c.spec() for c in mx_cases())
          if wanted is None or all(e.grid in wanted for e in elements(s))]
index = {}
for cid, spec in specs:
    if units is not None and spec.unit not in units:
        continue
    (out / f"{cid}.v").write_text(verilog(spec))
    index[cid] = {"top": spec.default_name, "stages": spec.stages, "unit": spec.unit}
(out / "index.json").write_text(json.dumps(index, indent=1))
"""


@dataclass(frozen=True)
class Check:
    """One spec's verdict: ``identical``, ``equivalent``, ``different`` (with Yosys's words), or
    ``new`` (the working tree has it and the base does not: its benches check it)."""

    case: str
    unit: str
    verdict: str
    detail: str = ""


def miter_script(gold: Path, gate: Path, top: str, stages: int) -> str:
    """A Yosys script that fails (exit 1) unless ``gold`` and ``gate`` (same top and ports)
    agree on every output for every input (and, pipelined, every input sequence)."""
    lines = []
    for role, path in (("gold", gold), ("gate", gate)):
        lines += [f'read_verilog "{path.name}"', f"hierarchy -top {top}",
                  "proc; flatten; opt_clean", f"rename {top} {role}", f"design -stash {role}"]
    lines += ["design -copy-from gold -as gold gold", "design -copy-from gate -as gate gate",
              "miter -equiv -flatten -make_assert -make_outputs gold gate miter",
              "hierarchy -top miter", "opt -fast"]
    seq = " -tempinduct -set-init-zero" if stages else ""
    lines.append(f"sat -verify -prove-asserts{seq} -show-inputs -show-outputs miter")
    return "\n".join(lines) + "\n"


def prove(gold_v: str, gate_v: str, top: str, stages: int, work: Path) -> tuple[bool, str]:
    """(equivalent, Yosys's log: a refutation ends with the model found, inputs and both units'
    outputs per cycle). ``work`` holds the files of the check."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "gold.v").write_text(gold_v)
    (work / "gate.v").write_text(gate_v)
    done = run_yosys(work, miter_script(work / "gold.v", work / "gate.v", top, stages),
                     "miter.ys")
    return done.ok, done.log()


def same_text(gold: str, gate: str) -> bool:
    """Identical but for ``//`` comment lines and whitespace: no proof needed."""
    def words(text):
        return [w for line in text.splitlines() if not line.lstrip().startswith("//")
                for w in line.split()]
    return gold == gate or words(gold) == words(gate)


def export(tree: Path, out: Path, formats: str, units: str = "") -> dict:
    """Verilog of every selected spec of ``tree`` (comma-separated ``formats`` and ``units``;
    empty: all) into ``out``; returns its index."""
    code = f"import sys; sys.path.insert(0, {str(tree)!r})\n" + _EXPORT
    done = subprocess.run([sys.executable, "-c", code, str(out), formats, units], cwd=tree)
    if done.returncode != 0:
        raise ValueError(f"exporting the Verilog of {tree} failed (its traceback is above): "
                         "the commit needs [fpforge.]sim.tiers (or sim.bench.tiers).full_matrix, "
                         "[fpforge.]synth.sweep.mx_cases and [fpforge.]rtl.emit "
                         "(or rtl.fp_units.build)")
    return json.loads((out / "index.json").read_text())


def base_tree(rev: str) -> Path:
    """A worktree of ``rev`` under build/equiv/ (made once per commit)."""
    sha = _commit(rev)
    tree = OUT / f"tree-{sha[:12]}"
    if not (tree / "rtl").is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), sha], cwd=ROOT,
                       check=True, capture_output=True)
    return tree


def _commit(rev: str) -> str:
    sha = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                         cwd=ROOT, capture_output=True, text=True)
    if sha.returncode != 0:
        raise ValueError(f"base {rev!r} names no commit of this repository")
    return sha.stdout.strip()


def compare(base: dict, new: dict, base_dir: Path, new_dir: Path, work: Path,
            jobs: int) -> list[Check]:
    """Each spec's verdict; the proofs' files go under ``work``/<case>."""
    lost = sorted(set(base) - set(new))
    if lost:
        raise ValueError(f"the working tree lacks {len(lost)} of the base's specs (first "
                         f"{lost[0]}): compare them by simulation")
    checks = [Check(case, info["unit"], "new") for case, info in new.items() if case not in base]
    todo = []
    for case, info in new.items():
        if case not in base:
            continue
        gold, gate = (base_dir / f"{case}.v").read_text(), (new_dir / f"{case}.v").read_text()
        if same_text(gold, gate):
            checks.append(Check(case, info["unit"], "identical"))
        else:
            todo.append((case, info, gold, gate))

    # Each proof is an executor task (fpforge.infra.executor), keyed by the two texts it compares.
    from fpforge.infra.executor import LocalExecutor, Task, digest
    tasks = [Task(digest("equiv", gold, gate, info["top"], info["stages"]),
                  "fpforge.synth.equiv:prove_case",
                  (case, info["unit"], info["top"], info["stages"], gold, gate, str(work / case)),
                  case) for case, info, gold, gate in todo]
    count = [0]

    def progress(task, check):
        count[0] += 1
        i = count[0]
        if sys.stderr.isatty():
            print(f"\r  {i}/{len(todo)} checked", end="", file=sys.stderr, flush=True)
        elif i % 200 == 0 or i == len(todo):
            print(f"  {i}/{len(todo)} checked", file=sys.stderr, flush=True)
    with LocalExecutor(jobs) as executor:
        checks += executor.run(tasks, on_done=progress)
    if todo and sys.stderr.isatty():
        print(file=sys.stderr)
    return checks


def prove_case(case: str, unit: str, top: str, stages: int, gold: str, gate: str,
               work: str) -> Check:
    """One equivalence proof (an executor task)."""
    ok, log = prove(gold, gate, top, stages, Path(work))
    tail = "\n".join(log.splitlines()[-60:])
    return Check(case, unit, "equivalent" if ok else "different", "" if ok else tail)


def summarize(checks: list[Check]) -> dict:
    units: dict = {}
    for c in checks:
        units.setdefault(c.unit, {"identical": 0, "equivalent": 0, "different": 0,
                                  "new": 0})[c.verdict] += 1
    return {"specs": len(checks), "units": units,
            "different": [c.case for c in checks if c.verdict == "different"]}


def run(base: str, formats: list | None = None, units: list | None = None,
        jobs: int = 2) -> int:
    """Compare every selected spec's Verilog in the working tree with ``base``'s (``formats``:
    default the 13 of ``make verify``; ``units``: default all of EQUIV_UNITS), print and write
    the summary. Returns 0 when every spec is identical or proven equivalent, 1 when one is not.
    Bad input (an unknown unit or format, a commit that does not exist, a base that cannot
    export its specs) raises OptionError / FormatError / ValueError in one line; all but the
    last before any export work."""
    units, formats = split_names(units or ()), split_names(formats or ())
    unknown = [u for u in units if u not in EQUIV_UNITS]
    if unknown:
        raise OptionError(f"unknown unit {unknown[0]!r}; valid: {', '.join(EQUIV_UNITS)}")
    fmt_arg, unit_arg = ",".join(formats), ",".join(units)
    catalog_selection(fmt_arg, 16, "make verify")
    tree = base_tree(base)
    t0 = time.monotonic()
    # One directory per base commit and selection: runs against other bases or parts of the
    # matrix never share (or overwrite) files.
    tag = ("_".join(formats) or "all") + ("-" + "_".join(units) if units else "")
    out = OUT / f"{tree.name}-{tag}"
    base_dir, new_dir = out / "verilog-base", out / "verilog-new"
    with ThreadPoolExecutor(max_workers=2) as pool:
        exports = [pool.submit(export, tree, base_dir, fmt_arg, unit_arg),
                   pool.submit(export, ROOT, new_dir, fmt_arg, unit_arg)]
        old, new = (e.result() for e in exports)
    checks = compare(old, new, base_dir, new_dir, out / "checks", jobs)
    summary = {"base": base, "formats": fmt_arg or "all", "units": unit_arg or "all",
               "seconds": round(time.monotonic() - t0, 1), **summarize(checks)}
    summary_path = out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=1))
    for unit, counts in sorted(summary["units"].items()):
        print(f"{unit:5s} " + "  ".join(f"{k} {v}" for k, v in counts.items()))
    for c in checks:
        if c.verdict == "different":
            print(f"NOT EQUIVALENT: {c.case}\n{c.detail}\n")
    n = {v: sum(c.verdict == v for c in checks)
         for v in ("identical", "equivalent", "different", "new")}
    new_note = f", {n['new']} new (not in the base)" if n["new"] else ""
    print(f"{len(checks)} specs against {base}: {n['identical']} identical, "
          f"{n['equivalent']} proven equivalent, {n['different']} not equivalent{new_note} "
          f"({summary['seconds']} s); {summary_path.relative_to(ROOT)}")
    return 1 if n["different"] else 0
