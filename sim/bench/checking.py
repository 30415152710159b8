"""The reference and checker halves of a bench, free of cocotb: both engines share them.

The cocotb bench (:mod:`sim.bench.tb`) and the native Verilator engine (:mod:`sim.bench.native`)
differ only in how vectors reach the RTL; what the RTL must produce (the golden model, in
fixed-size batches) and how a result is judged (an in-order checker with an injected compare and
decoded mismatch reports) is this module.
"""

from __future__ import annotations

import json
import os

import numpy as np

from rtl.spec import UnitSpec
from sim.bench.report import bit_exact, mismatch_lines

__all__ = ["golden_expected", "Checker", "progress_record", "summary_record", "write_json",
           "raise_on_failure"]


def golden_expected(spec: UnitSpec, inputs: dict, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """(y, flags) of the golden model for ``inputs`` (at most ``batch`` vectors), as uint32.

    Inputs are padded to ``batch``: one array shape per spec, so JAX compiles once per run."""
    import golden   # here: only the reference needs JAX
    n = len(inputs[spec.operands[0]])
    if n > batch:
        raise ValueError(f"{n} vectors do not fit a golden batch of {batch}")
    args = {k: np.concatenate([v, np.zeros(batch - n, v.dtype)]) for k, v in inputs.items()}
    y, flags = golden.evaluate(spec, *[args[op] for op in spec.operands],
                               rm=args.get("rm"), rbits=args.get("rbits"))
    return np.asarray(y)[:n].astype(np.uint32), np.asarray(flags)[:n].astype(np.uint32)


class Checker:
    """In-order comparison with an injected ``compare(exp_y, exp_flags, y, flags) -> mask``.

    ``check`` takes the vectors' inputs (for reports), their number ``index0`` of the first one
    in the run, and the expected and produced codes."""

    def __init__(self, spec: UnitSpec, compare=bit_exact, max_report: int = 10):
        self.spec, self.compare, self.max_report = spec, compare, max_report
        self.vectors = 0
        self.mismatches = 0
        self.lines: list[str] = []

    def check(self, inputs: dict, index0: int, exp_y: np.ndarray, exp_flags: np.ndarray,
              y: np.ndarray, flags: np.ndarray):
        n = len(exp_y)
        y, flags = y[:n], flags[:n]
        bad = np.flatnonzero(self.compare(exp_y, exp_flags, y, flags))
        self.vectors += n
        if bad.size:
            self.mismatches += int(bad.size)
            room = self.max_report - len(self.lines) // 2
            if room > 0:
                sel = bad[:room]
                self.lines += mismatch_lines(self.spec, {k: v[sel] for k, v in inputs.items()},
                                             exp_y[sel], exp_flags[sel], y[sel], flags[sel],
                                             index0 + sel, room)


def raise_on_failure(checker, name: str, seed: int):
    """End a bench: fail with the decoded first mismatches, or when nothing was checked.
    ``checker``: anything with ``vectors``, ``mismatches`` and report ``lines``."""
    if checker.mismatches:
        raise AssertionError(f"{checker.mismatches} of {checker.vectors} vectors mismatch "
                             f"({name}, seed {seed}); first ones:\n" +
                             "\n".join(checker.lines))
    if checker.vectors == 0:
        raise AssertionError("the stimulus produced no vectors")


def progress_record(checker: Checker, elapsed_s: float, done: bool = False) -> dict:
    """What a progress file holds (the exhaustive driver's progress bar reads it)."""
    record = {"vectors": checker.vectors, "mismatches": checker.mismatches,
              "elapsed_s": elapsed_s}
    return {**record, "done": True} if done else record


def summary_record(checker: Checker, cfg, elapsed_s: float, **extra) -> dict:
    """A bench run's JSON summary: what ran, what was found, how fast; ``extra`` per engine."""
    spec = checker.spec
    return {"spec": spec.default_name, "describe": spec.describe(), "seed": cfg.seed,
            "stimulus": cfg.stimulus, "fault": cfg.fault, "vectors": checker.vectors,
            "mismatches": checker.mismatches, "first_mismatches": checker.lines,
            "elapsed_s": elapsed_s,
            "vectors_per_s": checker.vectors / max(elapsed_s, 1e-9), **extra}


def write_json(path: str, data: dict):
    """Write ``data`` to ``path`` (nothing when empty) atomically: the exhaustive driver's
    progress bar reads these files while the bench writes them."""
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)
