"""Pipelining to a clock: the fewest stages, and the fewest registers, that meet a clock period.

A unit can hold a register at each of its kind's cut points (``spec.pipeline_points``,
rtl/pipeline.py: a scalar unit's after the decoders, between a multiplier's partial products and
their sum, after an adder's alignment shift, after the exact core, inside the rounder; a block
unit's along its own datapath, e.g. dot's decode, product, sum, round). For a clock period P,
:func:`pipeline_for`
synthesises the unit with no register, then every placement of one register, then of two, and
so on -- each mapped for P (flow.run_job: ABC's delay target, tightened until OpenSTA agrees) --
and keeps, among the placements with the fewest stages that meet P on the load-aware timer, the
one with the fewest flip-flops (then the least area). "Meets P" means every path group does
(input to register, register to register, register to output, input to output; inputs arrive
and outputs leave at the clock edge: synth/sta.py): the unit can sit between registered
neighbours at that clock.

A search, not a delay model: each candidate is what ``make synth`` would report for it. The
search stops at the first number of stages that meets P, so it synthesises 1 + C(n, 1) + ...
placements up to that number (n = 3 to 5 cut points: at most 8 to 32).
A variant whose datapath has no cut points (the NVFP4 and P3109 recipes of mxq and mxdq, whose
stages are output registers) is refused.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path

from fpforge.rtl.options import OptionError
from fpforge.rtl.pipeline import Pipeline
from fpforge.rtl.spec import Spec

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, new_run_dir, run
from .cell_library import check_library, library_for
from .records import SynthRecord

__all__ = ["Candidate", "PipelineChoice", "pipeline_for", "placements", "check_pipelinable"]


def check_pipelinable(spec: Spec) -> None:
    refusal = getattr(spec, "pipeline_refusal", None)
    if refusal:
        raise OptionError(refusal)
    if not spec.pipeline_points:
        raise OptionError(f"--clock-ps places pipeline registers at a unit's cut points; "
                          f"{spec.default_name} has none (its stages are output registers): "
                          f"give it --stages")


def placements(spec: Spec, stages: int) -> list[Spec]:
    """``spec`` with registers at every choice of ``stages`` cut points."""
    return [replace(spec, pipeline=Pipeline(stages, cuts))
            for cuts in combinations(spec.pipeline_points, stages)]


@dataclass(frozen=True)
class Candidate:
    """One placement as synthesised for the clock."""

    spec: Spec
    record: SynthRecord

    @property
    def registers(self) -> int:
        return self.record.asic.registers

    @property
    def delay_ps(self) -> float:
        return self.record.asic.delay_ps

    def describe(self) -> str:
        cuts = ", ".join(self.spec.cut_points) or "none"
        return (f"{self.spec.stages} stage(s), registers after {cuts}: {self.delay_ps:.0f} ps, "
                f"{self.registers} flip-flops, {self.record.asic.ge:.0f} GE")


@dataclass(frozen=True)
class PipelineChoice:
    clock_ps: float
    chosen: Candidate
    tried: tuple[Candidate, ...]     # every placement synthesised, in search order

    @property
    def spec(self) -> Spec:
        return self.chosen.spec

    def report(self) -> list[str]:
        r = self.chosen.record.asic
        lines = [f"{self.spec.default_name}: {self.spec.stages} stage(s) meet {self.clock_ps:g} ps "
                 f"({1e6 / self.clock_ps:.0f} MHz); latency {self.spec.latency}, "
                 f"{self.chosen.registers} flip-flops, {r.ge:.0f} GE"]
        lines += [f"  {group}: {p['delay_ps']:.0f} ps ({p['startpoint']} -> {p['endpoint']})"
                  for group, p in r.paths.items()]
        lines += ["  tried: " + c.describe() for c in self.tried]
        return lines


def _register_overhead(lib: str, liberty) -> tuple[float, str]:
    """The library's register overhead (ps) and its flip-flop, read before any run directory
    exists (its generated files go to a scratch directory)."""
    import tempfile
    check_library(lib, liberty)
    with tempfile.TemporaryDirectory() as scratch:
        library = library_for(lib, liberty, directory=Path(scratch))
        return library.register_overhead_ps, library.dff


def pipeline_for(spec: Spec, clock_ps: float, *, out_dir=DEFAULT_OUT_DIR,
                 jobs=DEFAULT_JOBS, lib: str = "fpforge", liberty=None) -> PipelineChoice:
    """The placement of ``spec``'s pipeline registers that meets ``clock_ps`` with the fewest
    stages, then flip-flops, then area, on library ``lib`` (or the user's ``liberty``). Raises
    OptionError when no placement meets it."""
    check_pipelinable(spec)
    if not clock_ps > 0:
        raise OptionError(f"--clock-ps must be a positive clock period in ps, not {clock_ps!r}")
    floor, dff = _register_overhead(lib, liberty)
    if clock_ps <= floor:
        raise OptionError(f"--clock-ps {clock_ps:g}: a register alone needs {floor:g} ps "
                          f"({dff} clock-to-Q and setup); give a longer period")
    run_dir = new_run_dir(out_dir, f"clock{clock_ps:g}_{spec.default_name}")
    try:
        return _search(spec, clock_ps, Path(run_dir), out_dir, jobs, lib, liberty)
    except OptionError:
        shutil.rmtree(run_dir, ignore_errors=True)    # a refused clock leaves nothing behind
        raise


def _search(spec: Spec, clock_ps: float, run_dir: Path, out_dir, jobs, lib,
            liberty) -> PipelineChoice:
    tried: list[Candidate] = []
    for stages in range(len(spec.pipeline_points) + 1):
        specs = placements(spec, stages)
        records = run(specs, out_dir=out_dir, jobs=jobs, fpga=False, cores=False,
                      run_dir=run_dir / f"stages{stages}", delay_target_ps=clock_ps,
                      lib=lib, liberty=liberty)
        found = [Candidate(s, r) for s, r in zip(specs, records)]
        tried += found
        meeting = [c for c in found if c.delay_ps <= clock_ps]
        if meeting:
            best = min(meeting, key=lambda c: (c.registers, c.record.asic.ge))
            return PipelineChoice(clock_ps, best, tuple(tried))
    best = min(tried, key=lambda c: c.delay_ps)
    raise OptionError(f"no placement of pipeline registers in {spec.default_name} meets "
                      f"{clock_ps:g} ps: the fastest, {best.describe()}; fpforge cuts a unit "
                      f"at {', '.join(spec.pipeline_points)} only")


# ----- the table of docs/synth/clock.md -----------------------------------------------------------
TABLE_FORMATS = ("fp8e4m3", "bf16", "fp16")
TABLE_UNITS = ("mul", "add", "fma")
TABLE_CLOCKS_GHZ = (2.0, 1.5, 1.0, 0.75, 0.5)


def clock_table(*, out_dir=DEFAULT_OUT_DIR, jobs=DEFAULT_JOBS) -> str:
    """Markdown: for each format x unit, the stages and area that meet each clock (or the
    fastest placement when none does)."""
    from fpforge.rtl.kinds import make_spec
    head = " | ".join(f"{g:g} GHz ({1000 / g:.0f} ps)" for g in TABLE_CLOCKS_GHZ)
    rows = [f"| format | unit | {head} |", "|---|---|" + "---|" * len(TABLE_CLOCKS_GHZ)]
    for fmt in TABLE_FORMATS:
        for unit in TABLE_UNITS:
            cells = []
            for ghz in TABLE_CLOCKS_GHZ:
                try:
                    c = pipeline_for(make_spec(unit, format=fmt), 1000 / ghz, out_dir=out_dir,
                                     jobs=jobs).chosen
                    where = ", ".join(c.spec.cut_points) or "–"
                    cells.append(f"{c.spec.stages} ({where}): {c.record.asic.ge:.0f} GE, "
                                 f"{c.registers} FF")
                except OptionError:
                    cells.append("not reached")
            rows.append(f"| {fmt} | {unit} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
