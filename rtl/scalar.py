"""The scalar unit kinds: mul, add, sub, fma and cvt, one operation on scalar codes each.

They share one spec shape (:class:`ScalarSpec`: an output format, one format per operand,
rounding options, subnormal flushing, pipeline stages); each kind is a small subclass naming its
operands and operation. Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

from .formats import FloatFormat
from .format_names import resolve
from .options import DEFAULT_SR_BITS, OptionError, Rounding, UnitOptions
from .ports import Port, clock_ports, rbits_port, result_ports, rm_port, valid_ports
from .pipeline import Pipeline
from .spec import Spec

__all__ = ["ScalarSpec", "MulSpec", "AddSpec", "SubSpec", "FmaSpec", "FmsSpec", "CvtSpec",
           "CUT_POINTS", "MULTI_OPTIONS", "rounder_options", "rounder_values", "rounder_name_parts", "mode_ports",
           "rounder_parameters", "rounder_lines", "RoundingControls", "RoundsByOptions"]

# Where a scalar unit can hold a pipeline register, in dataflow order (rtl/fp_units/): after the
# operand decoders; inside a multiplier, between its two partial products and their sum; inside an
# adder, after the alignment shift; after the exact core (the raw result); inside the rounder
# (after normalization). Each kind has the ones its datapath has (``ScalarSpec.CUT_POINTS``);
# ``stages`` alone places core, then round (rtl/pipeline.py).
CUT_POINTS = ("decode", "product", "align", "core", "round")

# The options of run-time formats and lanes (rtl/multiformat.py), taken by the kinds below whose
# datapath is shared across formats.
MULTI_OPTIONS = ("formats", "in_formats", "a_formats", "b_formats", "c_formats", "lanes",
                 "simd_width")
TWO_OPERAND_MULTI_OPTIONS = tuple(o for o in MULTI_OPTIONS if o != "c_formats")

DEFAULT_FORMAT = "float8_e4m3fn"       # --format when none is given (fp8e4m3)
CVT_DEFAULT_SOURCE = "float32"         # cvt's --in-format when none is given


# ----- the rounder's options, shared with every kind that rounds into a float (rtl/intconv.py) ---

def rounder_options(rounding, sr_bits, saturate, saturation, tininess) -> UnitOptions:
    """The rounder's options from their command-line values."""
    rounding = Rounding.parse(rounding)
    if sr_bits is not None and not rounding.stochastic:
        raise OptionError(f"--sr-bits sets the width of the rbits input of --rounding "
                          f"stochastic; it does not apply to --rounding {rounding.value}")
    return UnitOptions(rounding=rounding, saturate=saturate, saturation=saturation,
                       sr_bits=DEFAULT_SR_BITS if sr_bits is None else sr_bits,
                       tininess=tininess)


def rounder_values(opts: UnitOptions) -> dict:
    """The option values of ``opts`` but tininess, in canonical form."""
    v = {"rounding": opts.rounding.value}
    if opts.rounding.stochastic and opts.sr_bits != DEFAULT_SR_BITS:
        v["sr_bits"] = opts.sr_bits
    if opts.saturate:
        v["saturate"] = True
    if opts.saturation is not None:
        v["saturation"] = opts.saturation.value
    return v


def rounder_name_parts(opts: UnitOptions) -> list[str]:
    """The module name's words for ``opts``."""
    parts = [opts.rounding.value]
    if opts.rounding.stochastic and opts.sr_bits != DEFAULT_SR_BITS:
        parts.append(f"sr{opts.sr_bits}")   # rbits width is part of the interface
    if opts.saturate:
        parts.append("sat")
    if opts.saturation is not None:
        parts.append({"finite": "satfin", "propagate": "satprop",
                      "none": "satnone"}[opts.saturation.value])
    return parts + opts.tininess_name_parts()


def mode_ports(opts: UnitOptions) -> list[Port]:
    """The rounding controls' inputs: rm (dynamic), rbits (stochastic)."""
    return ([rm_port()] if opts.rounding is Rounding.DYNAMIC else []) + \
        ([rbits_port(opts.sr_bits)] if opts.rounding.stochastic else [])


def rounder_parameters(opts: UnitOptions, subnormals: bool) -> dict:
    """The sidecar's record of ``opts``."""
    return {"rounding": opts.rounding.value, "rounding_meaning": opts.rounding.meaning,
            "sr_bits": opts.sr_bits if opts.rounding.stochastic else None,
            "saturate": opts.saturate, "subnormals": subnormals} | \
        ({"saturation": opts.saturation.value} if opts.saturation else {}) | \
        opts.tininess_option()


def rounder_lines(opts: UnitOptions, out_fmt: FloatFormat, subnormals: bool) -> list[str]:
    """The export header's lines of ``opts`` rounding into ``out_fmt``."""
    lines = [f"rounding    {opts.rounding.value} ({opts.rounding.meaning})"]
    if opts.rounding.stochastic:
        lines.append(f"sr_bits     {opts.sr_bits} (width of rbits)")
    sat = opts.saturation_for(out_fmt)
    if sat is not None:
        lines.append(f"saturation  {sat.value} ({sat.meaning})")
    else:
        lines.append(f"saturate    {'yes: overflow gives +-max finite' if opts.saturate else 'no'}")
    lines.append("subnormals  " + ("kept" if subnormals else
                                   "flushed (subnormal inputs read as zero, tiny results "
                                   "become zero)"))
    return lines + opts.tininess_lines()


class RoundingControls:
    """The control inputs a spec's ``rounding`` asks for: rm when dynamic, rbits when
    stochastic."""

    rounding: Rounding

    @property
    def has_rm(self) -> bool:
        return self.rounding is Rounding.DYNAMIC

    @property
    def has_rbits(self) -> bool:
        return self.rounding.stochastic


class RoundsByOptions(RoundingControls):
    """The rounding controls of a spec whose ``options`` are the rounder's (UnitOptions)."""

    options: UnitOptions

    @property
    def rounding(self) -> Rounding:
        return self.options.rounding


@dataclass(frozen=True)
class ScalarSpec(RoundsByOptions, Spec):
    """Which scalar unit, in which formats, with which options.

    ``in_fmts`` holds one format per operand (``OPERANDS``); ``subnormals=False`` flushes
    subnormals of every operand and of the result (an area option).
    """

    out_fmt: FloatFormat
    in_fmts: tuple[FloatFormat, ...]
    options: UnitOptions = field(default_factory=UnitOptions)
    subnormals: bool = True
    # Cut points (CUT_POINTS) other than the default placement of ``stages`` are chosen by
    # ``--clock-ps`` (synth/pipeline.py) or given with ``--cuts``.
    pipeline: Pipeline = Pipeline()

    SHAPE: ClassVar[str] = "scalar"
    # Operand ports and what each one is, in order.
    OPERANDS: ClassVar[tuple[tuple[str, str], ...]]
    # The operation on real numbers (floats or numpy arrays of them): the benches' stimulus
    # uses it to aim operands at ties and thresholds.
    EXACT: ClassVar[Callable]
    OPTIONS: ClassVar[tuple[str, ...]] = ("format", "in_format", "a_format", "b_format",
                                          "rounding", "sr_bits", "saturate", "saturation",
                                          "subnormals", "tininess",
                                          "stages", "cuts")
    PARAMETERS_KEY: ClassVar[str] = "options"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 3
    # The operands' format when none is given (None: the result's).
    DEFAULT_IN_FORMAT: ClassVar[str | None] = None
    # The pipeline cut points this kind's datapath has (of CUT_POINTS).
    CUT_POINTS: ClassVar[tuple[str, ...]] = ("decode", "core", "round")
    DEFAULT_CUTS: ClassVar[tuple[str, ...]] = ("core", "round")

    def __post_init__(self):
        n = len(self.OPERANDS)
        if not isinstance(self.in_fmts, tuple) or len(self.in_fmts) != n:
            raise OptionError(f"unit {self.unit} takes {n} operand format(s) "
                              f"({', '.join(self.operands)}), not {self.in_fmts!r}")
        self.place_pipeline()
        if isinstance(self.options, dict):
            object.__setattr__(self, "options", UnitOptions(**self.options))
        if not isinstance(self.options, UnitOptions):
            raise OptionError(f"options must be UnitOptions, not {self.options!r}")
        if not isinstance(self.subnormals, bool):
            raise OptionError(f"subnormals must be a bool, not {self.subnormals!r}")

        # Flushing is a property of the formats the hardware sees: subnormals=False flushes all
        # of them; True leaves each format as given (an ``_ftz`` format stays flushed).
        def fmt(f):
            f = resolve(f)
            return f if self.subnormals else f.with_subnormals(False)
        object.__setattr__(self, "out_fmt", fmt(self.out_fmt))
        object.__setattr__(self, "in_fmts", tuple(fmt(f) for f in self.in_fmts))
        if self.options.saturation is not None and not self.out_fmt.has_zero:
            raise OptionError(f"--saturation needs a result format with a zero (P3109's Mlo); "
                              f"{self.out_fmt.name} has none: use --saturate")

    # ----- construction from option values ----------------------------------------------------
    @classmethod
    def from_options(cls, *, format=None, in_format=None, a_format=None, b_format=None,
                     c_format=None, rounding="rne", sr_bits=None, saturate=False,
                     saturation=None, subnormals=True, tininess=None, stages=None,
                     cuts=None) -> "ScalarSpec":
        """``format`` is the output format and the operand format unless ``in_format`` (or
        per-operand formats) say otherwise."""
        out = resolve(DEFAULT_FORMAT if format is None else format)
        base = resolve(in_format) if in_format is not None else out
        given = {"a": a_format, "b": b_format, "c": c_format}
        fmts = tuple(resolve(given[p]) if given.get(p) is not None else base
                     for p in cls._operand_names())
        opts = rounder_options(rounding, sr_bits, saturate, saturation, tininess)
        return cls(out, fmts, opts, subnormals=subnormals,
                   pipeline=cls.pipeline_from_options(stages, cuts))

    @classmethod
    def _operand_names(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in cls.OPERANDS)

    def option_values(self) -> dict:
        v = {"format": self.out_fmt.name}
        if len(set(self.in_fmts)) == 1:
            if self.in_fmts[0] != self.out_fmt:
                v["in_format"] = self.in_fmts[0].name
        else:
            v |= {f"{p}_format": f.name for p, f in zip(self.operands, self.in_fmts)}
        v |= rounder_values(self.options)
        if not self.subnormals:
            v["subnormals"] = False
        return v | self.options.tininess_option() | self.pipeline_options()

    # ----- derived -----------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[str, ...]:
        return self._operand_names()

    @property
    def member_ident(self) -> str:
        """The formats' words of the module name: ``e4m3fn``, ``e4m3fn_e5m2_to_bf16``."""
        ins = self.in_fmts
        if all(f == self.out_fmt for f in ins):
            return self.out_fmt.ident
        return "_".join(f.ident for f in ins) + "_to_" + self.out_fmt.ident

    @property
    def default_name(self) -> str:
        """Module name that carries its parameters, e.g. ``fp_mul_e4m3fn_rne``."""
        return "_".join(["fp", self.unit, self.member_ident] + rounder_name_parts(self.options)
                        + self.pipeline.name_parts())

    def describe_formats(self) -> str:
        """``[a: float8_e4m3fn, b: float8_e4m3fn] -> y: float8_e4m3fn``."""
        ins = ", ".join(f"{p}: {f.name}" for p, f in zip(self.operands, self.in_fmts))
        return f"[{ins}] -> y: {self.out_fmt.name}"

    def describe(self) -> str:
        return (f"{self.unit} {self.describe_formats()}; {self.options.describe()}; "
                f"subnormals {'kept' if self.subnormals else 'flushed'}; latency {self.latency}")

    # ----- the contract ------------------------------------------------------------------------
    def ports(self) -> list[Port]:
        out = clock_ports(self.stages)
        for (port, role), fmt in zip(self.OPERANDS, self.in_fmts):
            out.append(Port(port, "input", fmt.width, f"operand {port} ({role}), {fmt.name} code",
                            fmt=fmt))
        controls = mode_ports(self.options)
        out += controls
        v_in, v_out = valid_ports(self.stages, [*self.operands, *(p.name for p in controls)],
                                  "y and flags")
        out += v_in
        return out + result_ports(self.out_fmt) + v_out

    def formats(self) -> dict[str, FloatFormat]:
        return {**dict(zip(self.operands, self.in_fmts)), "y": self.out_fmt}

    def parameters(self) -> dict:
        return rounder_parameters(self.options, self.subnormals) | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        lines = [f"{role + ' format':<12}{fmt.describe()}" for role, fmt in self.formats().items()]
        return lines + rounder_lines(self.options, self.out_fmt, self.subnormals) + \
            self.pipeline_lines()


@dataclass(frozen=True)
class MulSpec(ScalarSpec):
    unit: ClassVar[str] = "mul"
    OPTIONS = ScalarSpec.OPTIONS + TWO_OPERAND_MULTI_OPTIONS
    CUT_POINTS = ("decode", "product", "core", "round")
    OPERANDS = (("a", "multiplicand"), ("b", "multiplier"))
    OPERATION = "y = a * b"
    EXACT = staticmethod(lambda a, b: a * b)


@dataclass(frozen=True)
class AddSpec(ScalarSpec):
    unit: ClassVar[str] = "add"
    OPTIONS = ScalarSpec.OPTIONS + TWO_OPERAND_MULTI_OPTIONS
    CUT_POINTS = ("decode", "align", "core", "round")
    OPERANDS = (("a", "augend"), ("b", "addend"))
    OPERATION = "y = a + b"
    EXACT = staticmethod(lambda a, b: a + b)


@dataclass(frozen=True)
class SubSpec(ScalarSpec):
    unit: ClassVar[str] = "sub"
    OPTIONS = ScalarSpec.OPTIONS + TWO_OPERAND_MULTI_OPTIONS
    CUT_POINTS = ("decode", "align", "core", "round")
    OPERANDS = (("a", "minuend"), ("b", "subtrahend"))
    OPERATION = "y = a - b"
    EXACT = staticmethod(lambda a, b: a - b)
    IN_MATRIX = False        # add's datapath with b's sign flipped: make verify runs add


@dataclass(frozen=True)
class FmaSpec(ScalarSpec):
    unit: ClassVar[str] = "fma"
    CUT_POINTS = ("decode", "product", "align", "core", "round")
    OPERANDS = (("a", "multiplicand"), ("b", "multiplier"), ("c", "addend"))
    OPERATION = "y = a * b + c (one rounding)"
    EXACT = staticmethod(lambda a, b, c: a * b + c)
    OPTIONS = ScalarSpec.OPTIONS + ("c_format",) + MULTI_OPTIONS


@dataclass(frozen=True)
class FmsSpec(ScalarSpec):
    unit: ClassVar[str] = "fms"
    CUT_POINTS = ("decode", "product", "align", "core", "round")
    OPERANDS = (("a", "multiplicand"), ("b", "multiplier"), ("c", "subtrahend"))
    OPERATION = "y = a * b - c (one rounding)"
    EXACT = staticmethod(lambda a, b, c: a * b - c)
    OPTIONS = ScalarSpec.OPTIONS + ("c_format",) + MULTI_OPTIONS
    IN_MATRIX = False        # fma's datapath with c's sign flipped: make verify runs fma


@dataclass(frozen=True)
class CvtSpec(ScalarSpec):
    unit: ClassVar[str] = "cvt"
    DEFAULT_IN_FORMAT = CVT_DEFAULT_SOURCE      # the sources of --formats' members, too
    OPERANDS = (("x", "value to convert"),)
    OPERATION = "y = x (format conversion)"
    EXACT = staticmethod(lambda x: x)
    OPTIONS = tuple(o for o in ScalarSpec.OPTIONS if o not in ("a_format", "b_format")) + \
        tuple(o for o in MULTI_OPTIONS if o not in ("a_formats", "b_formats", "c_formats"))

    @classmethod
    def matrix_options(cls, fmt):
        """Into ``fmt`` from the widest catalog format it can come from: fp16 (bf16 into fp16)."""
        src = "float16" if fmt.name != "float16" else "bfloat16"
        return [{**v, "in_format": src} for v in super().matrix_options(fmt)]

    @classmethod
    def from_options(cls, *, in_format=None, **values) -> "CvtSpec":
        """``in_format`` is the source format (default float32)."""
        return super().from_options(
            in_format=CVT_DEFAULT_SOURCE if in_format is None else in_format, **values)

    def option_values(self) -> dict:
        v = super().option_values()
        # The source is always written: its default (float32) is not the output format.
        if "in_format" not in v:
            v = {"format": v.pop("format"), "in_format": self.in_fmts[0].name, **v}
        return v
