"""amax: the largest magnitude of n codes of one format, |x_i| with its sign cleared.

The reduction a quantizer's per-tensor scale starts from (NVFP4's and FP8's recipes). It does
not round: it picks one input's magnitude. -0 and +0 have magnitude 0 and give +0. NaN inputs as
``--minmax`` says, as the min/max kinds read it (rtl/noncomp.py MINMAX): ``ieee`` (IEEE 754-2019
maximum: any NaN gives NaN) or ``number`` (maximumNumber: NaNs are ignored, all NaN gives NaN);
invalid on a signaling NaN either way. The datapath is a balanced tree of compare-and-select
(ceil(log2 n) levels); its cut points are the levels, named by number. Plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .formats import FloatFormat
from .format_names import resolve
from .noncomp import MINMAX
from .options import OptionError
from .pipeline import Pipeline
from .ports import Port, clock_ports, flags_port, valid_ports
from .spec import Spec

__all__ = ["AmaxSpec", "AMAX_N", "MAX_LEVELS"]

DEFAULT_FORMAT = "float8_e4m3fn"
AMAX_N = (2, 64)                    # the inputs a unit may reduce
DEFAULT_N = 32                      # an MX block
MAX_LEVELS = 6                      # tree levels of 64 inputs


@dataclass(frozen=True)
class AmaxSpec(Spec):
    """max |x_i| over ``n`` codes of ``fmt``; ``minmax`` the NaN policy (formats with NaN)."""

    fmt: FloatFormat
    n: int = DEFAULT_N
    minmax: str = "number"
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "amax"
    SHAPE: ClassVar[str] = "scalar"     # one result per operation; x is a bus of n lanes
    OPERATION = "y = max_i |x_i| (sign cleared)"
    OPTIONS = ("format", "n", "minmax", "stages", "cuts")
    OPTION_NOTES = {"rounding": "it does not round", "saturate": "it does not round",
                    "subnormals": "it reads codes as they are"}
    PARAMETERS_KEY: ClassVar[str] = "options"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 4
    # After tree level 1, 2, ...: level k holds ceil(n / 2^k) partial maxima.
    CUT_POINTS = tuple(str(k) for k in range(1, MAX_LEVELS + 1))
    # What the tree orders: magnitudes. sim/faults.py's amax-signed orders signed values.
    ORDER: ClassVar[str] = "magnitude"

    def __post_init__(self):
        object.__setattr__(self, "fmt", resolve(self.fmt))
        lo, hi = AMAX_N
        if not isinstance(self.n, int) or isinstance(self.n, bool) or not lo <= self.n <= hi:
            raise OptionError(f"--n of amax must be an integer {lo}..{hi}, not {self.n!r}")
        if self.minmax not in MINMAX:
            raise OptionError(f"--minmax must be one of {', '.join(MINMAX)}, not "
                              f"{self.minmax!r}")
        self.place_pipeline()

    @classmethod
    def from_options(cls, *, format=None, n=None, minmax=None, stages=None,
                     cuts=None) -> "AmaxSpec":
        fmt = resolve(DEFAULT_FORMAT if format is None else format)
        if minmax is not None and not fmt.has_nan:
            raise OptionError(f"--minmax chooses what a NaN input gives; {fmt.name} has no NaN: "
                              f"leave it out")
        return cls(fmt, DEFAULT_N if n is None else n, minmax or "number",
                   cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        return {"format": self.fmt.name, "n": self.n} | \
            ({"minmax": self.minmax} if self.fmt.has_nan else {}) | self.pipeline_options()

    @classmethod
    def matrix_axes(cls, fmt):
        """n = 2 (every pair of an 8-bit format) and 32; both NaN policies; 0 and 2 stages."""
        return {"n": (2, DEFAULT_N), **({"minmax": tuple(MINMAX)} if fmt.has_nan else {}),
                **super().matrix_axes(fmt)}

    # ----- the pipeline ------------------------------------------------------------------------
    @property
    def levels(self) -> int:
        return (self.n - 1).bit_length()

    @property
    def pipeline_points(self) -> tuple[str, ...]:
        return self.CUT_POINTS[:self.levels]

    @property
    def default_cuts(self) -> tuple[str, ...]:
        """``stages`` alone: k registers split the levels (and the NaN select after them) into
        k + 1 near-equal runs; then the remaining levels, last first."""
        points, k = self.pipeline_points, min(self.pipeline.stages, self.levels)
        even = [points[round(i * (len(points) + 1) / (k + 1)) - 1] for i in range(1, k + 1)]
        return tuple(dict.fromkeys(even + [p for p in reversed(points) if p not in even]))

    # ----- the contract ------------------------------------------------------------------------
    @property
    def default_name(self) -> str:
        return "_".join(["fp_amax", self.fmt.ident, f"n{self.n}",
                         *([self.minmax] if self.fmt.has_nan else []),
                         *self.pipeline.name_parts()])

    def describe(self) -> str:
        return (f"amax [x: {self.n} x {self.fmt.name}] -> y: {self.fmt.name}"
                + (f"; NaN {self.minmax}" if self.fmt.has_nan else "") +
                f"; latency {self.latency}")

    def ports(self) -> list[Port]:
        w = self.fmt.width
        x = Port("x", "input", w, f"the inputs, {self.n} {self.fmt.name} codes, element i at "
                 f"x[i*{w} +: {w}]", self.n, self.fmt)
        v_in, v_out = valid_ports(self.stages, ["x"])
        y = Port("y", "output", w, f"max |x_i|, {self.fmt.name} code, sign bit clear (-0 and "
                 f"+0 give +0)", fmt=self.fmt)
        flags = flags_port("; only invalid is raised: an input is a signaling NaN")
        return clock_ports(self.stages) + [x] + v_in + [y, flags] + v_out

    def formats(self) -> dict[str, FloatFormat]:
        return {"x": self.fmt, "y": self.fmt}

    def parameters(self) -> dict:
        return {"n": self.n} | ({"minmax": self.minmax} if self.fmt.has_nan else {}) | \
            self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        lines = [f"{'format':<12}{self.fmt.describe()}", f"{'n':<12}{self.n}"]
        if self.fmt.has_nan:
            lines.append(f"{'minmax':<12}{self.minmax} ({MINMAX[self.minmax]})")
        return lines + [f"{'tree':<12}{self.levels} level(s) of compare-and-select"] + \
            self.pipeline_lines()
