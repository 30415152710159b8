"""What one bench run does, as one JSON-serializable value passed to the simulator process.

pytest (or the exhaustive driver) builds a :class:`BenchConfig`, the runner hands it to the
cocotb test through the environment (``FPFORGE_BENCH``), and the test writes a JSON summary
back. The spec travels as format names in the generic grammar, which resolve back to equal
formats.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from rtl.formats import resolve
from rtl.options import UnitOptions
from rtl.spec import UnitSpec

__all__ = ["BenchConfig", "spec_to_dict", "spec_from_dict", "ENV_VAR"]

ENV_VAR = "FPFORGE_BENCH"


def spec_to_dict(spec: UnitSpec) -> dict:
    return {"unit": spec.unit, "out_fmt": spec.out_fmt.generic_name,
            "in_fmts": [f.generic_name for f in spec.in_fmts],
            "rounding": spec.rounding.value, "saturate": spec.options.saturate,
            "sr_bits": spec.options.sr_bits, "subnormals": spec.subnormals,
            "stages": spec.stages, "subtract": spec.subtract}


def spec_from_dict(d: dict) -> UnitSpec:
    opts = UnitOptions(rounding=d["rounding"], saturate=d["saturate"], sr_bits=d["sr_bits"])
    return UnitSpec(d["unit"], resolve(d["out_fmt"]), tuple(resolve(f) for f in d["in_fmts"]),
                    opts, subnormals=d["subnormals"], stages=d["stages"],
                    subtract=d["subtract"])


@dataclass(frozen=True)
class BenchConfig:
    """One bench run.

    ``stimulus`` is a list of ``[kind, params]`` parts (see :mod:`sim.bench.stimulus`), run in
    order; ``seed`` drives everything random (operands, rm, rbits, bubbles) and is printed in the
    log. ``bubbles`` is the probability that a step is left empty (valid_i low, garbage data).
    ``fault`` names a deliberately wrong unit from :mod:`sim.bench.faults` (self-tests only).
    """

    spec: dict
    stimulus: list
    seed: int = 1
    lanes: int = 64
    steps: int = 4
    bubbles: float = 0.0
    fault: str | None = None
    max_report: int = 10
    batch: int = 1 << 16          # vectors per golden-model call (one compiled shape)
    report_path: str = ""
    progress_path: str = ""
    extra: dict = field(default_factory=dict)

    @classmethod
    def create(cls, spec: UnitSpec, stimulus, **kw) -> "BenchConfig":
        return cls(spec=spec_to_dict(spec), stimulus=[list(p) for p in stimulus], **kw)

    @property
    def unit_spec(self) -> UnitSpec:
        return spec_from_dict(self.spec)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "BenchConfig":
        return cls(**json.loads(text))

    def design_key(self) -> str:
        """Identifies the simulated design (what a build depends on)."""
        d = {"spec": self.spec, "lanes": self.lanes, "steps": self.steps, "fault": self.fault}
        return hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]

    def key(self) -> str:
        """Identifies the whole run."""
        return hashlib.sha1(self.to_json().encode()).hexdigest()[:10]
