"""Verification as a library: a design through the tiers of sim/tiers.py on an engine, with a
verdict, a decoded report and JUnit XML; every input of a design, sharded (the exhaustive runs);
and the full matrix of ``make verify``, case by case in worker processes.

``fpforge verify``, ``fpforge verify-exhaustive`` and the tests call these; nothing here parses
a command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from fpforge.rtl.multiformat import FMT_PORT
from fpforge.rtl.options import OptionError
from fpforge.rtl.spec import Spec

from .classes import merge as merge_classes
from .classes import summary_lines
from .design import Design
from .engines import EXHAUSTIVE_ENGINES, engine as get_engine
from .engines.base import BUILD_ROOT
from .stimulus.base import space_size
from .stream import Plan
from .tiers import case_id, matrix_simulator, stimulus_for
from .vectors import (FailingDump, file_disagreement, file_disagreement_lines, merge_dumps,
                      read_vectors)

__all__ = ["Verdict", "plan_for", "verify", "verify_exhaustive", "verify_matrix", "write_junit",
           "shard_range", "SHARD_ALIGN", "check_exhaustive_size", "held_fmt", "EXHAUSTIVE_MAX",
           "NATIVE_RATE"]

EXHAUSTIVE_OUT = BUILD_ROOT / "exhaustive"
# The native engine's rate, measured: ``make verify-exhaustive UNIT=mul FORMAT=fp16`` (2^32
# inputs, 2 shards on 2 idle cores) took 90.4 s, 47.5 M inputs/s (docs/verification.md).
# A run of more than EXHAUSTIVE_MAX inputs (about 24 minutes at that rate) starts only when
# asked: --limit N or --force.
NATIVE_RATE = 47.5e6
EXHAUSTIVE_MAX = 1 << 36


@dataclass
class Verdict:
    """One design's result: the engine's summary, with what was run."""

    name: str
    summary: dict = field(default_factory=dict)

    @property
    def vectors(self) -> int:
        return self.summary.get("vectors", 0)

    @property
    def mismatches(self) -> int:
        return self.summary.get("mismatches", 0)

    @property
    def ok(self) -> bool:
        return self.vectors > 0 and self.mismatches == 0 and not self.summary.get("failed") \
            and self.summary.get("complete", True)

    def explain(self) -> str:
        s = self.summary
        lines = [f"{self.name}: {'PASS' if self.ok else 'FAIL'}, {self.vectors:,} vectors, "
                 f"{self.mismatches:,} mismatches (seed {s.get('seed')}, "
                 f"{s.get('engine', '?')} engine{', ' + s['sim'] if s.get('sim') else ''})"]
        if s.get("not_compared"):
            lines.append(f"  not compared (the module has no such port): "
                         f"{', '.join(s['not_compared'])}")
        lines += ["  " + note for note in s.get("notes", [])]
        if s.get("nan") == "any":
            lines.append("  NaN: any NaN code of the format matches an expected NaN (--nan any, "
                         "as TestFloat; flags compared)")
        if s.get("file_disagrees"):
            lines += ["  " + line for line in file_disagreement_lines(s["file_disagrees"])]
        classes = summary_lines(s)
        lines += ["  " + line for line in classes or s.get("first_mismatches", [])]
        if s.get("dump"):
            d = s["dump"]
            lines.append(f"  failing vectors: {d['written']:,} of {d['failing']:,} written to "
                         f"{d['path']}")
        if s.get("failed"):
            lines.append("  " + s["failed"])
        if s.get("log"):
            lines.append(f"  log: {s['log']}")
        return "\n".join(lines)


def plan_for(spec: Spec, *, seed: int = 1, bubbles: float = 0.0, sample: int | None = None,
             max_report: int = 10, stalls: float = 0.0) -> Plan:
    """The tiers of ``spec``: every input where the space allows, else corners, relations and
    biased random (scalar kinds) or the block kinds' structured stimulus (sim/tiers.py)."""
    kw = {} if sample is None else {"sample": sample}
    return Plan(stimulus=stimulus_for(spec, **kw), seed=seed, bubbles=bubbles,
                max_report=max_report, stalls=stalls)


def verify(design: Design, *, engine: str = "cocotb", sim: str | None = None,
           plan: Plan | None = None, seed: int = 1, bubbles: float = 0.0,
           stalls: float = 0.0, vectors: str | None = None,
           dump: str | None = None) -> Verdict:
    """``design`` through ``plan`` (default: its tiers; with ``vectors``, the vectors of that
    file, sim/vectors.py) on ``engine``; ``dump``: write the failing vectors there. A vector
    file with expected results is also compared with the golden model (``file_disagrees``)."""
    vf = None
    if vectors:                       # a bad file is refused before anything is built
        vf = read_vectors(design.spec, vectors)
        plan = Plan([["file", {"path": str(Path(vectors).resolve())}]], seed=seed,
                    bubbles=bubbles, stalls=stalls)
    plan = plan or plan_for(design.spec, seed=seed, bubbles=bubbles, stalls=stalls)
    if sim is None and design.systemverilog:
        sim = "verilator"           # SystemVerilog's simulator (sim/engines/base.py)
    if dump:
        plan = replace(plan, dump=str(Path(dump).resolve()))
    eng = get_engine(engine, sim) if engine == "cocotb" else get_engine(engine)
    summary = dict(eng.verify(design, plan), notes=list(design.notes))
    if engine == "cocotb":
        summary["sim"] = eng.sim
    if vf is not None and (found := file_disagreement(design.spec, vf, design.outputs)):
        summary["file_disagrees"] = found
    return Verdict(design.label, summary)


# ----- every input, sharded ----------------------------------------------------------------------

# Shard edges fall on multiples of this, where every shard is that long at least: the gates
# engine's step (256 vectors, one per bit of a word) then starts at a multiple of 256 throughout,
# and the loop writes the index straight into words (sim/engines/gates_main.cpp) instead of
# splitting it into rows of codes first, which costs about as much as the netlist itself.
SHARD_ALIGN = 256


def shard_range(total: int, i: int, n: int) -> tuple[int, int]:
    """Shard ``i`` of ``n`` of the inputs ``[0, total)``: contiguous, in order, together the
    whole range; edges on multiples of SHARD_ALIGN unless a shard would be shorter."""
    def edge(k: int) -> int:
        at = total * k // n
        return at if k == n or total // n < SHARD_ALIGN else at - at % SHARD_ALIGN
    return edge(i), edge(i + 1)


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600),
                       ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} seconds"


def check_exhaustive_size(spec: Spec, *, limit: int = 0, force: bool = False,
                          fmt: int | None = None) -> int:
    """The number of inputs an exhaustive run of ``spec`` covers (with ``fmt`` held: one
    member's); above EXHAUSTIVE_MAX without ``limit`` or ``force``, an OptionError that states
    the count and the time it would take."""
    total = space_size(spec, held_fmt(spec, fmt))
    if limit:
        return min(total, limit)
    if total > EXHAUSTIVE_MAX and not force:
        raise OptionError(
            f"{spec.default_name} has {total:,} inputs (2^{total.bit_length() - 1}), about "
            f"{_duration(total / NATIVE_RATE)} at {NATIVE_RATE / 1e6:.1f} M inputs/s; "
            f"verify-exhaustive runs at most 2^{EXHAUSTIVE_MAX.bit_length() - 1} unasked: "
            f"--limit N for the first N, --force for all of them")
    return total


def held_fmt(spec: Spec, fmt: int | None) -> dict:
    """{fmt port: code} for an exhaustive run of one member of a multi-format unit (``--fmt``);
    {} for none. A code that selects no member is an OptionError."""
    if fmt is None:
        return {}
    members = getattr(spec, "members", ())
    if len(members) < 2:
        raise OptionError(f"--fmt holds the fmt input of a unit of several --formats; "
                          f"{spec.default_name} has none")
    if not isinstance(fmt, int) or not 0 <= fmt < len(members):
        codes = "; ".join(f"{i}: {s.out_fmt.name}" for i, s in enumerate(members))
        raise OptionError(f"--fmt {fmt} selects no member of {spec.default_name}; valid: "
                          f"{codes}")
    return {FMT_PORT: fmt}


def _exhaustive_engine(name: str):
    if name not in EXHAUSTIVE_ENGINES:
        raise ValueError(f"unknown exhaustive engine {name!r}; valid: "
                         f"{', '.join(EXHAUSTIVE_ENGINES)}")
    return get_engine(name)


def _exhaustive_shard(design: Design, plan: Plan, exe: str, progress_path: str,
                      engine: str = "native") -> dict:
    """One shard of an exhaustive run, on the built model (an executor task)."""
    return _exhaustive_engine(engine).verify(design, plan, exe=Path(exe),
                                             progress_path=progress_path)


def verify_exhaustive(design: Design, *, shards: int = 0, shard: tuple[int, int] | None = None,
                      limit: int = 0, force: bool = False, seed: int = 1, progress: bool = True,
                      log=print, executor=None, store=None, dump: str | None = None,
                      fmt: int | None = None, engine: str = "native") -> Verdict:
    """Every input of ``design`` (the first ``limit`` only, if given) on the native engine
    (Verilator) or ``engine="gates"`` (Yosys's gate netlist, no handshake),
    cut into ``shards`` contiguous shards run in parallel (one simulator process each, one
    build), or only ``shard`` = (i, N). Writes the merged summary under build/sim/exhaustive/.
    More than EXHAUSTIVE_MAX inputs is refused before any work unless ``limit`` or ``force``.
    ``dump``: the failing vectors of every shard, in order, to that file (sim/vectors.py).
    ``fmt``: a multi-format unit's member code, held on its fmt input (every input of that
    member, and the bits its elements leave, docs/multiformat.md).
    """
    eng = _exhaustive_engine(engine)
    spec = design.spec
    held = held_fmt(spec, fmt)
    total = check_exhaustive_size(spec, limit=limit, force=force, fmt=fmt)
    # one member's run: its own summary and progress files, the one build of the unit
    label = design.label + (f".fmt{fmt}" if held else "")
    record = label + ("" if engine == "native" else f".{engine}")   # its files: one per engine
    nshards = shard[1] if shard else (shards or os.cpu_count() or 1)
    mine = [shard[0]] if shard else list(range(nshards))
    simulator = {"verilator": "Verilator", "yosys": "Yosys's gate netlist"}[eng.simulator]
    log(f"exhaustive {label}: {spec.describe()}" +
        (f"; fmt held at {fmt} ({spec.members[fmt].describe_formats()})" if held else "") +
        f"\n  {total:,} inputs, {nshards} "
        f"shard(s), running {', '.join(map(str, mine))}; {engine} engine ({simulator}), "
        f"{eng.lanes} lanes, seed {seed}")
    t_build = time.perf_counter()
    exe = eng.build(design)
    log(f"  built in {time.perf_counter() - t_build:.1f} s: {exe.parent}")
    EXHAUSTIVE_OUT.mkdir(parents=True, exist_ok=True)
    plans, progress_paths = {}, {}
    for i in mine:
        lo, hi = shard_range(total, i, nshards)
        plans[i] = Plan([["exhaustive", {"start": lo, "stop": hi, **({"held": held} if held
                                                                     else {})}]],
                        seed=seed, batch=1 << 20,
                        max_report=20, dump=f"{Path(dump).resolve()}.shard{i}" if dump else "")
        progress_paths[i] = EXHAUSTIVE_OUT / f"{record}.shard{i}of{nshards}.progress.json"
        progress_paths[i].unlink(missing_ok=True)
    want = sum(shard_range(total, i, nshards)[1] - shard_range(total, i, nshards)[0]
               for i in mine)
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    # Each shard is an executor task (fpforge.infra.executor; default: one local thread per shard,
    # each driving its simulator process), keyed by the built model, the range and the seed.
    from fpforge.infra.executor import LocalExecutor, Task, digest
    model = hashlib.sha256(Path(exe).read_bytes()).hexdigest()
    tasks = [Task(digest("exhaustive", model, plans[i].to_dict(), seed),
                  "fpforge.sim.verify:_exhaustive_shard",
                  (design, plans[i], str(exe), str(progress_paths[i]), engine),
                  f"{label} shard {i}/{nshards}") for i in mine]
    own = executor is None
    executor = executor or LocalExecutor(len(mine))
    with ThreadPoolExecutor(1) as waiter:
        running = waiter.submit(executor.run, tasks, store=store)
        if progress:
            _progress_bar({0: running}, progress_paths, want, t0)
        try:
            results = dict(zip(mine, running.result()))
        finally:
            if own:
                executor.close()
    wall = time.perf_counter() - t0
    # CPU seconds per vector predict the rate on an idle machine; wall time on a shared one
    # mostly measures the other processes.
    cpu = _cpu_seconds() - cpu0
    vectors = sum(r["vectors"] for r in results.values())
    mismatches = sum(r["mismatches"] for r in results.values())
    for i, r in results.items():
        lo, hi = shard_range(total, i, nshards)
        log(f"  shard {i}/{nshards} [{lo:#x}, {hi:#x}): {r['vectors']:,} vectors, "
            f"{r['mismatches']} mismatches, {r['vectors_per_s']:,.0f} vectors/s (golden model "
            f"{r['golden_s']:.0f} s)")
    first = [line for r in results.values() for line in r.get("first_mismatches", [])]
    merged = {"spec": label, "describe": spec.describe(), "inputs": total,
              "shards": nshards, "ran": mine, "vectors": vectors, "mismatches": mismatches,
              "complete": vectors == want, "wall_s": wall, "vectors_per_s": vectors / wall,
              "engine": engine, "sim": eng.simulator,
              "lanes": eng.lanes, "seed": seed,
              "load_average": os.getloadavg(), "cpu_s": cpu, "first_mismatches": first[:20],
              "not_compared": list(design.absent), "notes": list(design.notes),
              **({"failed": "; ".join(f"shard {i}: {r['failed']}" for i, r in results.items()
                                      if r.get("failed"))}
                 if any(r.get("failed") for r in results.values()) else {}),
              "per_shard": {str(i): {k: r.get(k) for k in ("vectors", "mismatches",
                                                             "vectors_per_s", "golden_s",
                                                             "simulator_cpu_s")}
                            for i, r in results.items()},
              **merge_classes(list(results.values()))}
    if dump:
        merged["dump"] = merge_dumps(Path(dump).resolve(), FailingDump(dump, spec, label),
                                     [(r["dump"]["path"], r["dump"]["failing"])
                                      for r in results.values()])
    name = record + (f".shard{mine[0]}of{nshards}" if shard else "")
    out = EXHAUSTIVE_OUT / f"{name}.json"
    out.write_text(json.dumps(merged, indent=1))
    log(f"{label}: {vectors:,} of {want:,} vectors, {mismatches} mismatches, {wall:.1f} s, "
        f"{vectors / wall:,.0f} vectors/s ({cpu:.1f} CPU s: "
        f"{vectors / max(cpu, 1e-9) / 1e6:.2f} M vectors per CPU second), load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} -> {out}")
    return Verdict(label, merged)


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished simulator processes."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _progress_bar(futures, paths, want, t0):
    """A progress bar over all shards, fed by their progress files."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*cols, refresh_per_second=2) as bar:
        task = bar.add_task("vectors", total=want, rate="")
        while not all(f.done() for f in futures.values()):
            done = bad = 0
            for p in paths.values():
                try:
                    rec = json.loads(Path(p).read_text())
                except (OSError, ValueError):
                    continue
                done += rec.get("vectors", 0)
                bad += rec.get("mismatches", 0)
            rate = done / max(time.perf_counter() - t0, 1e-9)
            bar.update(task, completed=done, rate=f"{rate / 1e6:.2f} M/s, {bad} mismatches")
            time.sleep(0.5)


# ----- the matrix --------------------------------------------------------------------------------

def _matrix_case(spec_dict: dict, sim: str | None, seed: int) -> tuple[str, dict]:
    """One matrix case, in a worker process: the spec's own unit on its simulator."""
    from fpforge.rtl.kinds import spec_from_dict
    spec = spec_from_dict(spec_dict)
    s = sim or matrix_simulator(spec)
    v = verify(Design.of(spec, label=case_id(spec)), sim=s, seed=seed)
    return case_id(spec), v.summary


def matrix_tasks(specs: list[Spec], sim: str | None, seed: int) -> list:
    """One executor task per matrix case, keyed by what its verdict depends on: the spec, the
    simulator, the seed, the RTL and the bench sources."""
    from fpforge.infra.executor import Task, digest
    from fpforge.rtl.emit import source_digest
    here = Path(__file__).parent
    benches = digest(*[f.read_text() for f in sorted(here.rglob("*.py"))])
    return [Task(digest("verify", s.to_dict(), sim, seed, source_digest(), benches),
                 "fpforge.sim.verify:_matrix_case", (s.to_dict(), sim, seed), case_id(s))
            for s in specs]


def verify_matrix(specs: list[Spec], *, sim: str | None = None, jobs: int = 2, seed: int = 1,
                  junit: str | None = None, log=print, executor=None,
                  store=None) -> list[Verdict]:
    """Every spec's unit through its tiers (cocotb; each on the faster simulator for its kind
    unless ``sim`` names one), through ``executor`` (fpforge.infra.executor; default: ``jobs`` local
    threads, each case its own simulator process); ``store`` keeps verdicts by content key;
    JUnit XML to ``junit``."""
    from fpforge.infra.executor import LocalExecutor
    tasks = matrix_tasks(specs, sim, seed)
    done = []

    def report(task, result):
        name, summary = result
        v = Verdict(name, summary)
        done.append(v)
        log(f"[{len(done)}/{len(tasks)}] {'PASS' if v.ok else 'FAIL'} {name}: {v.vectors:,} "
            f"vectors, {v.mismatches} mismatches")
        if not v.ok:
            log(v.explain())
    own = executor is None
    executor = executor or LocalExecutor(jobs, processes=True)   # a cocotb run per process
    try:
        results = executor.run(tasks, store=store, on_done=report)
    finally:
        if own:
            executor.close()
    verdicts = [Verdict(name, summary) for name, summary in results]
    if junit:
        write_junit(junit, verdicts)
    return verdicts


def write_junit(path, verdicts: list[Verdict], suite: str = "fpforge verify") -> Path:
    """JUnit XML: one test case per verdict, a failure with the decoded mismatches."""
    root = ET.Element("testsuites")
    s = ET.SubElement(root, "testsuite", name=suite, tests=str(len(verdicts)),
                      failures=str(sum(not v.ok for v in verdicts)),
                      time=f"{sum(v.summary.get('elapsed_s', 0) or 0 for v in verdicts):.3f}")
    for v in verdicts:
        case = ET.SubElement(s, "testcase", classname=suite, name=v.name,
                             time=f"{v.summary.get('elapsed_s', 0) or 0:.3f}")
        props = ET.SubElement(case, "properties")
        for key in ("vectors", "mismatches", "seed", "engine", "sim"):
            if key in v.summary:
                ET.SubElement(props, "property", name=key, value=str(v.summary[key]))
        if not v.ok:
            fail = ET.SubElement(case, "failure",
                                 message=f"{v.mismatches} of {v.vectors} vectors mismatch")
            fail.text = v.explain()
        elif v.summary.get("not_compared"):
            ET.SubElement(case, "system-out").text = \
                f"not compared: {', '.join(v.summary['not_compared'])}"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path
