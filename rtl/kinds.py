"""The registry of unit kinds, and the one set of options that describes a unit.

``KINDS`` is the only list of units in fpforge: each :class:`Kind` names its spec class (the
typed description, rtl/spec.py), the Amaranth component that implements it and the golden-model
function that says what it must compute. Both of these are named as ``module:attribute`` and
imported on first use, so this module (like every spec) stays plain Python and rtl/ never
imports golden/.

``SPEC_OPTIONS`` is the one set of options over every kind, in one spelling: the command line
adds them as ``--format``, ``--rounding``, ... (fpforge/cli/common.py), :func:`make_spec` takes
them as keywords, a spec gives them back as ``option_values()``, and the Makefile passes them as
variables. An option a kind does not take is an error that names the kinds that do.

Adding a kind: its spec class, its component, its golden function, one entry below, and tests
(docs/architecture.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from .accum import ACCUMULATORS
from .amax import AmaxSpec
from .divsqrt import ARCHS, DivSpec, SqrtSpec
from .dot import MxDotSpec
from .formats import FormatError
from .intconv import INT_OVERFLOW, F2iSpec, I2fSpec
from .func import ACCURACY, Exp2Spec, RecipSpec, RsqrtSpec
from .noncomp import MINMAX, ClassifySpec, CmpSpec, MaxSpec, MinSpec, NoncompSpec, SgnjSpec
from .multiformat import MULTI_OPTIONS, MultiFormatSpec
from .multidot import MultiDotSpec
from .mx import SCALE_RULES, VALUE_RULES, MxDequantSpec, MxQuantSpec
from .options import OptionError, Rounding, Saturation, Tininess
from .scalar import AddSpec, CvtSpec, FmaSpec, FmsSpec, MulSpec, SubSpec
from .spec import Spec

__all__ = ["Kind", "SHAPES", "KINDS", "UNITS", "BASIC_UNITS", "NONCOMP_UNITS", "SpecOption", "SPEC_OPTIONS", "kind",
           "make_spec", "spec_from_dict", "spec_argv", "build", "golden_function",
           "units_phrase", "option_flag"]


# What a kind's ports carry: one operation on scalar codes, or a block of values (ports of
# lanes; its stimulus, tiers and reports are the kind's own).
SHAPES = ("scalar", "block")


@dataclass(frozen=True)
class Kind:
    """One unit kind: ``spec`` (its class), the component and golden function that implement
    and model it (``module:attribute``, imported on first use) and a one-line summary."""

    spec: type[Spec]
    component: str
    golden: str
    summary: str

    def __post_init__(self):
        if self.shape not in SHAPES:
            raise ValueError(f"{self.spec.__name__}.SHAPE must be one of {', '.join(SHAPES)}, "
                             f"not {self.shape!r}")

    @property
    def name(self) -> str:
        return self.spec.unit

    @property
    def shape(self) -> str:
        """``scalar`` or ``block`` (SHAPES), as the spec class says."""
        return self.spec.SHAPE

    def component_class(self) -> Callable:
        return _load(self.component)

    def golden_function(self) -> Callable:
        return _load(self.golden)


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind(MulSpec, "fpforge.rtl.fp_units.mul:FpMul", "fpforge.golden.scalar:mul_unit",
         "a * b, rounded once"),
    Kind(AddSpec, "fpforge.rtl.fp_units.add:FpAdd", "fpforge.golden.scalar:add_unit",
         "a + b, rounded once"),
    Kind(SubSpec, "fpforge.rtl.fp_units.add:FpSub", "fpforge.golden.scalar:sub_unit",
         "a - b, rounded once"),
    Kind(FmaSpec, "fpforge.rtl.fp_units.fma:FpFma", "fpforge.golden.scalar:fma_unit",
         "a * b + c, rounded once"),
    Kind(FmsSpec, "fpforge.rtl.fp_units.fma:FpFms", "fpforge.golden.scalar:fms_unit",
         "a * b - c, rounded once"),
    Kind(CvtSpec, "fpforge.rtl.fp_units.cvt:FpCvt", "fpforge.golden.scalar:cvt_unit",
         "x converted into another format"),
    Kind(MxQuantSpec, "fpforge.rtl.fp_units.mxq:MxQuantizer", "fpforge.golden.mx:mxq_unit",
         "OCP MX block quantizer: a block of float32/bfloat16 values -> E8M0 scale + elements"),
    Kind(MxDequantSpec, "fpforge.rtl.fp_units.mxdq:MxDequantizer", "fpforge.golden.mx:mxdq_unit",
         "OCP MX dequantizer: E8M0 scale + elements -> float32 values"),
    Kind(MxDotSpec, "fpforge.rtl.fp_units.dot:MxDot", "fpforge.golden.dot:dot_unit",
         "OCP MX dot product: two element vectors (and their scales) -> one rounded sum"),
    Kind(MinSpec, "fpforge.rtl.fp_units.noncomp:FpMin", "fpforge.golden.noncomp:min_unit",
         "min(a, b), -0 < +0; NaN per --minmax"),
    Kind(MaxSpec, "fpforge.rtl.fp_units.noncomp:FpMax", "fpforge.golden.noncomp:max_unit",
         "max(a, b), -0 < +0; NaN per --minmax"),
    Kind(CmpSpec, "fpforge.rtl.fp_units.noncomp:FpCmp", "fpforge.golden.noncomp:cmp_unit",
         "a == b, a < b, a <= b, unordered; quiet or signaling"),
    Kind(ClassifySpec, "fpforge.rtl.fp_units.noncomp:FpClassify",
         "fpforge.golden.noncomp:classify_unit", "the RISC-V fclass mask of x"),
    Kind(SgnjSpec, "fpforge.rtl.fp_units.noncomp:FpSgnj", "fpforge.golden.noncomp:sgnj_unit",
         "a with b's sign copied, negated or xor-ed in"),
    Kind(AmaxSpec, "fpforge.rtl.fp_units.amax:FpAmax", "fpforge.golden.amax:amax_unit",
         "max |x_i| over n inputs, sign cleared; NaN per --minmax"),
    Kind(I2fSpec, "fpforge.rtl.fp_units.intconv:FpI2f", "fpforge.golden.intconv:i2f_unit",
         "an 8/16/32-bit integer rounded into the format"),
    Kind(F2iSpec, "fpforge.rtl.fp_units.intconv:FpF2i", "fpforge.golden.intconv:f2i_unit",
         "a float rounded to an 8/16/32-bit integer, saturating with invalid"),
    Kind(RecipSpec, "fpforge.rtl.fp_units.func:FpRecip", "fpforge.golden.func:recip_unit",
         "1 / x, correctly rounded or faithful (--accuracy)"),
    Kind(RsqrtSpec, "fpforge.rtl.fp_units.func:FpRsqrt", "fpforge.golden.func:rsqrt_unit",
         "1 / sqrt(x), correctly rounded or faithful (--accuracy)"),
    Kind(Exp2Spec, "fpforge.rtl.fp_units.func:FpExp2", "fpforge.golden.func:exp2_unit",
         "2 ^ x, correctly rounded or faithful (--accuracy)"),
    Kind(DivSpec, "fpforge.rtl.fp_units.divsqrt:FpDiv", "fpforge.golden.divsqrt:div_unit",
         "a / b, correctly rounded (digit recurrence, --arch comb|iter)"),
    Kind(SqrtSpec, "fpforge.rtl.fp_units.divsqrt:FpSqrt", "fpforge.golden.divsqrt:sqrt_unit",
         "sqrt(a), correctly rounded (digit recurrence, --arch comb|iter)"),
)}
UNITS = tuple(KINDS)
# The default selection of make synth and make sweep. make verify's matrix takes every kind by
# its spec (Spec.IN_MATRIX, Spec.matrix_options; sim/tiers.py).
BASIC_UNITS = ("mul", "add", "fma", "cvt")
# The kinds that do not round (docs/noncomp.md): they compare, classify or move a sign.
NONCOMP_UNITS = tuple(k for k, kd in KINDS.items() if issubclass(kd.spec, NoncompSpec))


def kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise OptionError(f"unknown unit {name!r}; valid: {', '.join(KINDS)}") from None


def build(spec: Spec):
    """The Amaranth component of ``spec`` (imports Amaranth); of a multi-lane spec, the lanes'
    wrapper around a one-lane unit per lane (rtl/fp_units/lanes.py)."""
    if not isinstance(spec, Spec):
        raise TypeError(f"spec must be a Spec ({', '.join(k.spec.__name__ for k in KINDS.values())}"
                        f"), not {spec!r}")
    if isinstance(spec, MultiFormatSpec) and spec.max_lanes > 1:
        return _load("fpforge.rtl.fp_units.lanes:Lanes")(spec)    # a unit per lane
    # A multi-format scalar unit is the kind's class with shared multi-format decoders and
    # rounder; the dot's own class takes its members (MxDot).
    if isinstance(spec, MultiFormatSpec) and not isinstance(spec, MultiDotSpec):
        from .fp_units.multiformat import multi_format_unit
        return multi_format_unit(kind(spec.unit).component_class(), spec)
    return kind(spec.unit).component_class()(spec)


def golden_function(spec: Spec) -> Callable:
    """The golden model of ``spec``'s kind: ``f(spec, inputs) -> outputs`` (imports JAX); of a
    multi-format or multi-lane spec, its members' by fmt (golden/multiformat.py)."""
    if isinstance(spec, MultiFormatSpec):
        return _load("fpforge.golden.multiformat:multi_unit")
    return kind(spec.unit).golden_function()


# ----- the one set of options --------------------------------------------------------------------

@dataclass(frozen=True)
class SpecOption:
    """One option over every kind. ``flag`` is its command-line spelling; ``switch`` options
    take no value and set ``dest`` to ``not default``; ``make`` is its Makefile variable."""

    dest: str
    flag: str
    help: str
    type: type = str
    metavar: str | None = None
    choices: tuple | None = None
    switch: bool = False
    default: Any = None
    make: str = ""


SPEC_OPTIONS: tuple[SpecOption, ...] = (
    SpecOption("unit", "--unit", "the unit kind: " + ", ".join(KINDS), choices=UNITS,
               make="UNIT"),
    SpecOption("format", "--format", "the output format (mxq: the element format); also the "
               "operands' unless --in-format says otherwise. Default fp8e4m3; mxdq and dot: "
               "float32", metavar="FMT", make="FORMAT"),
    SpecOption("in_format", "--in-format", "the operands' format (cvt: the source, default "
               "float32; mxq: float32 or bfloat16; mxdq, dot: the element format)",
               metavar="FMT", make="IN_FORMAT"),
    SpecOption("a_format", "--a-format", "the format of operand a (mul, add, sub, fma, div; dot: the "
               "elements of vector a; cmp: a and b of two formats are compared by value, "
               "exactly)", metavar="FMT", make="A_FORMAT"),
    SpecOption("b_format", "--b-format", "the format of operand b", metavar="FMT",
               make="B_FORMAT"),
    SpecOption("c_format", "--c-format", "the format of operand c (fma; dot --accum fixed: the "
               "accumulator input c, d = a.b + c, a tensor core's step)", metavar="FMT",
               make="C_FORMAT"),
    SpecOption("block", "--block", "mxq, mxdq: values per block sharing one scale (default 32)",
               int, "K", make="BLOCK"),
    SpecOption("scale_rule", "--scale-rule", "mxq: shared-exponent rule (default floor, OCP MX "
               "v1.0 6.3; docs/mx.md), or an NVFP4 recipe's E4M3 block scale (mxq, mxdq: "
               "nvfp4_te, nvfp4_modelopt, nvfp4_torchao; docs/blockscale.md)",
               choices=SCALE_RULES + VALUE_RULES, make="SCALE_RULE"),
    SpecOption("scale_format", "--scale-format", "dot: the format of scale_a and scale_b "
               "(default float8_e8m0fnu; or float8_e4m3fn, NVFP4's, or any format of at most 8 bits "
               "with a zero and no infinities, multiplying the sum by its value)",
               metavar="FMT", make="SCALE_FORMAT"),
    SpecOption("n", "--n", "dot: vector length, 1..64 (default 32); amax: inputs reduced, "
               "2..64 (default 32)", int, "N", make="N"),
    SpecOption("accum", "--accum", "dot: accumulation contract (default exact: one rounding)",
               choices=ACCUMULATORS, make="ACCUM"),
    SpecOption("frac_bits", "--frac-bits", "dot --accum fixed: fraction bits below the largest "
               "product (default 24)", int, "F", make="FRAC_BITS"),
    SpecOption("sum_group", "--sum-group", "dot --accum fixed: lanes summed exactly in groups of "
               "G, each group times its own scale_a, scale_b at their exponent (a grouped "
               "tensor-core step, Blackwell's mxf4nvf4: G = 16); default: no groups", int, "G",
               make="SUM_GROUP"),
    SpecOption("frac_bits2", "--frac-bits2", "dot --accum fixed with c: a two-stage sum (AMD "
               "CDNA3's step, F2 = 31): even and odd lanes truncated to F bits apart, floored "
               "together, added to c and floored to F2 bits, then rounded; default: one stage",
               int, "F2", make="FRAC_BITS2"),
    SpecOption("scales", "--no-scales", "dot: no scale_a / scale_b inputs (unscaled vectors)",
               switch=True, default=True, make="SCALES=0"),
    SpecOption("rounding", "--rounding", "rounding mode (default rne); dynamic adds an rm input, "
               "stochastic an rbits input", choices=tuple(r.value for r in Rounding),
               make="ROUNDING"),
    SpecOption("sr_bits", "--sr-bits", "width of the rbits input per element (--rounding "
               "stochastic; default 8)", int, "N", make="SR_BITS"),
    SpecOption("saturate", "--saturate", "overflow gives +-max finite instead of inf/NaN",
               switch=True, default=False, make="SATURATE=1"),
    SpecOption("saturation", "--saturation", "a P3109 saturation mode: finite (SatFinite), "
               "propagate (SatPropagate) or none (SatNone); docs/numerics.md 4. Default: the "
               "format's own convention; --saturate is finite but for fnuz infinities (NaN)",
               choices=tuple(m.value for m in Saturation), make="SATURATION"),
    SpecOption("subnormals", "--no-subnormals", "flush subnormal inputs and results to zero (an "
               "area option; min, max, cmp, classify: a subnormal operand is a zero of its sign, "
               "as x86's DAZ, and min/max give that zero)", switch=True, default=True,
               make="SUBNORMALS=0"),
    SpecOption("tininess", "--tininess", "mul, add, sub, fma, fms, cvt, i2f, mxq, dot, div, sqrt, "
               "recip, rsqrt, exp2: when a result is tiny for the underflow flag (IEEE 754 7.5): "
               "after rounding (default; RISC-V, x86) or before (the exact value below 2^emin; "
               "Arm); a result without subnormals flushes by the same test. Stochastic rounding "
               "detects it before",
               choices=tuple(t.value for t in Tininess),
               make="TININESS"),
    SpecOption("minmax", "--minmax", "min, max, amax: what a NaN operand gives: ieee (IEEE "
               "754-2019 minimum/maximum, NaN) or number (minimumNumber/maximumNumber, the other "
               "operand(s); NaN only if all are; default, as RISC-V)", choices=tuple(MINMAX),
               make="MINMAX"),
    SpecOption("stages", "--stages", "pipeline register stages = latency in cycles (default 0: "
               "combinational)", int, "N", make="STAGES"),
    SpecOption("cuts", "--cuts", "where the pipeline registers go, among the kind's cut points "
               "(mul, add, sub, fma, fms, cvt: decode, product, align, core, round as their "
               "datapaths have them; mxq: amax, scale, round; mxdq: decode, scale, round; dot: "
               "decode, product, sum, round; amax: 1..6, after each tree level). Default: as --stages asks (scalar units: core, "
               "then round; mxq, mxdq: scale, then round; dot: sum, then round); --clock-ps "
               "chooses them", metavar="C[,C...]", make="CUTS"),
    SpecOption("int_width", "--int-width", "i2f, f2i: bits of the integer, 8, 16 or 32 "
               "(default 32)", int, "BITS", make="INT_WIDTH"),
    SpecOption("unsigned", "--unsigned", "i2f, f2i: the integer is unsigned (default: two's "
               "complement)", switch=True, default=False, make="UNSIGNED=1"),
    SpecOption("int_overflow", "--int-overflow", "f2i: what NaN gives (out of range and "
               "infinities saturate, with invalid, in both): " + "; ".join(
                   f"{k}, {v}" for k, v in INT_OVERFLOW.items()) + " (default riscv; "
               "docs/intconv.md)", metavar="|".join(INT_OVERFLOW), make="INT_OVERFLOW"),
    SpecOption("accuracy", "--accuracy", "recip, rsqrt, exp2: correct (correctly rounded in "
               "every mode; default) or faithful (one of the two neighbours of the exact value, "
               "smaller tables); formats of at most 16 bits; docs/func.md",
               choices=tuple(ACCURACY), make="ACCURACY"),
    SpecOption("formats", "--formats", "mul, add, sub, fma, fms, cvt: run-time formats, F1,F2,...: "
               "one unit whose fmt input selects member i (results in Fi; operands too unless "
               "--in-formats / --a-formats ... say otherwise), one datapath shared by the members "
               "(docs/multiformat.md); dot: the members' element formats of a and b (the result "
               "stays --format); verify --matrix: only these formats' cases",
               metavar="F1,F2,...", make="FORMATS"),
    SpecOption("in_formats", "--in-formats", "with --formats: the operands' formats, one per member "
               "or one for all (cvt: the sources, default float32)", metavar="F1,F2,...",
               make="IN_FORMATS"),
    SpecOption("a_formats", "--a-formats", "with --formats: operand a's format per member (dot: "
               "vector a's element format; --a-formats with --b-formats lists the members as "
               "pairs)",
               metavar="F1,F2,...", make="A_FORMATS"),
    SpecOption("b_formats", "--b-formats", "with --formats: operand b's format per member",
               metavar="F1,F2,...", make="B_FORMATS"),
    SpecOption("c_formats", "--c-formats", "with --formats: operand c's format per member (fma, "
               "fms)", metavar="F1,F2,...", make="C_FORMATS"),
    SpecOption("lanes", "--lanes", "packed SIMD: L lanes per port, lane 0 in the low bits, each "
               "computed independently, flags 5 bits per lane (1..64; docs/multiformat.md)", int,
               "L", make="LANES"),
    SpecOption("simd_width", "--simd-width", "packed SIMD as CVFPU's: W-bit ports holding W / "
               "width elements of the selected format (32: one fp32, two fp16, four fp8); with "
               "--lanes, L lanes of W / L bits", int, "W", make="SIMD_WIDTH"),
    SpecOption("arch", "--arch", "div, sqrt: comb (the digit recurrence unrolled, pipelined by "
               "--stages / --clock-ps at decode, early, middle, late, core, round; default) or "
               "iter (one step per cycle, valid_i/ready_o/valid_o handshake; docs/divsqrt.md)",
               choices=tuple(ARCHS), make="ARCH"),
)
_BY_DEST = {o.dest: o for o in SPEC_OPTIONS}


def option_flag(dest: str) -> str:
    return _BY_DEST[dest].flag


def units_phrase(names) -> str:
    names = list(names)
    if len(names) == 1:
        return f"unit {names[0]}"
    return f"units {', '.join(names[:-1])} and {names[-1]}"


def make_spec(unit: str, **values) -> Spec:
    """The spec of ``unit`` from option values (``SPEC_OPTIONS`` dests; None = not given).
    Raises OptionError or FormatError with one line naming what is valid."""
    cls = kind(unit).spec
    given = {k: v for k, v in values.items() if v is not None}
    unknown = sorted(set(given) - set(_BY_DEST))
    if unknown:
        raise TypeError(f"unknown spec option(s) {', '.join(unknown)}; valid: "
                        f"{', '.join(d for d in _BY_DEST if d != 'unit')}")
    for dest in given:
        if dest in cls.OPTIONS or given[dest] == _BY_DEST[dest].default and \
                _BY_DEST[dest].switch:
            continue
        takers = [k for k, kd in KINDS.items() if dest in kd.spec.OPTIONS]
        note = cls.OPTION_NOTES.get(dest)
        raise OptionError(f"{option_flag(dest)} applies to {units_phrase(takers)} only, not "
                          f"{unit}" + (f" ({note})" if note else ""))
    taken = {k: v for k, v in given.items() if k in cls.OPTIONS}
    try:
        if any(k in MULTI_OPTIONS for k in taken):      # run-time formats or lanes
            multi = MultiDotSpec if cls is MxDotSpec else MultiFormatSpec
            return multi.from_options(cls, **taken)
        return cls.from_options(**taken)
    except FormatError:
        raise
    except (TypeError, ValueError) as err:
        if isinstance(err, OptionError):
            raise
        raise OptionError(str(err)) from None


def spec_from_dict(data: dict) -> Spec:
    """The spec ``Spec.to_dict`` wrote, of whichever kind it names."""
    data = dict(data)
    return make_spec(data.pop("unit", None), **data)


def spec_argv(spec: Spec) -> list[str]:
    """The spec as command-line options (``--unit mul --format ...``), in SPEC_OPTIONS order."""
    values = spec.to_dict()
    out = []
    for opt in SPEC_OPTIONS:
        if opt.dest not in values:
            continue
        v = values[opt.dest]
        if opt.switch:
            if v != opt.default:
                out.append(opt.flag)
        else:
            out += [opt.flag, str(v)]
    return out
