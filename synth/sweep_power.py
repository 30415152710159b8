"""The sweep's power column (``fpforge sweep --power [--data NAME]``, ``fpforge pareto
--power``): each synthesised unit's energy per operation (synth/power.py) on a named data set,
one executor task per unit, kept by content key like the synthesis jobs."""

from __future__ import annotations

import hashlib
import inspect
import time
from dataclasses import dataclass
from pathlib import Path

from fpforge.infra.executor import LocalExecutor, Task, digest

from .cell_library import library_for

__all__ = ["PowerRun", "measure_powers", "power_task"]


@dataclass(frozen=True)
class PowerRun:
    """What the units' power is measured on: ``vectors`` operand vectors of the data set
    ``data`` per unit, from ``stimulus(spec, data, vectors)`` (data input -> codes; with
    ``member``: ``stimulus(..., member=member)``, every unit a multi-format one). The data
    sets are codesign's (codesign/power_data.py, which synth/ does not import): the caller
    passes its ``operand_vectors``."""

    data: str
    vectors: int
    stimulus: object
    clock_ps: float | None = None    # None: each unit's default clock (power.default_clock_ps)
    member: int | None = None        # a multi-format unit's fmt held at this member (its data)


def power_task(spec, record, library, run: PowerRun) -> dict:
    """In a worker: the unit's power object (PowerFigures.to_json())."""
    from .power import measure_power
    held = {} if run.member is None else {"member": run.member}
    vectors = run.stimulus(spec, run.data, run.vectors, **held)
    return measure_power(spec, record, library, vectors, run.data, run.clock_ps).to_json()


def _sources(run: PowerRun) -> str:
    """The code that decides a power figure: the power flow's and the data sets'."""
    from . import activity, power
    files = [inspect.getsourcefile(m) for m in (power, activity)]
    files.append(inspect.getsourcefile(inspect.getmodule(run.stimulus)))
    return hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()


def measure_powers(units: dict, run: PowerRun, lib: str, liberty, run_dir: Path, jobs: int,
                   executor=None, store=None, progress=None) -> tuple[dict, dict]:
    """``units``: design name -> (spec, SynthRecord). Returns (name -> power object, how it was
    measured). A unit's key: its mapped netlist, the library, the data set, the vector count
    and the code (a re-run with the store measures only what changed)."""
    from .power import check_power, clock_for
    start = time.monotonic()
    library = library_for(lib, liberty, directory=Path(run_dir) / "lib")
    check_power(library)
    for _, record in units.values():       # a clock a unit cannot meet: refused before any work
        clock_for(record, run.clock_ps)
    code = _sources(run)
    names = list(units)
    tasks = []
    for name in names:
        spec, record = units[name]
        netlist = Path(record.directory).parent / record.asic.netlist
        tasks.append(Task(digest("power", netlist.read_text(), library.sha256, run.data,
                                 run.vectors, run.clock_ps, repr(spec), code,
                                 *(() if run.member is None else (run.member,))),
                          "fpforge.synth.sweep_power:power_task", (spec, record, library, run),
                          f"power {name} ({run.data})"))
    own = executor is None
    executor = executor or LocalExecutor(jobs)
    try:
        done = executor.run(tasks, store=store, on_done=progress)
    finally:
        if own:
            executor.close()
    meta = {"library": library.description.split(" (")[0], "data": run.data,
            "vectors": run.vectors, "seconds": round(time.monotonic() - start, 1)}
    return dict(zip(names, done)), meta
