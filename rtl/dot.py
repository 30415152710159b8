"""The OCP MX dot product: the typed spec of the dot unit (its accumulation: rtl/accum.py).

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the generator (rtl/fp_units/dot.py),
the export and golden/dot.py all read the dot unit's parameters from here, so the hardware and
the model cannot drift apart. docs/mx.md states the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .accum import Accumulation, Exact, accumulation
from .elements import E8M0, E8M0_BIAS, ElementFormat, elem_port, element_format
from .formats import CATALOG, FloatFormat, FormatError, Specials
from .format_names import resolve
from .options import OptionError, Rounding, Tininess, UnitOptions
from .ports import Port, clock_ports, result_ports, valid_ports
from .pipeline import Pipeline
from .spec import Spec, check_int

__all__ = ["DOT_N_RANGE", "MxDotSpec"]

DOT_N_RANGE = (1, 64)                # vector lengths of the dot unit

F32 = CATALOG["float32"]


@dataclass(frozen=True)
class MxDotSpec(Spec):
    """The MX dot-product unit: ``n`` elements of ``elem_a`` times ``n`` of ``elem_b``, summed,
    optionally times the E8M0 scales ``scale_a * scale_b`` (``scaled``), rounded once into
    ``out_fmt`` (non-saturating, a static rounding mode), summed as ``accum`` says."""

    elem_a: ElementFormat
    elem_b: ElementFormat | None = None
    n: int = 32
    scaled: bool = True
    accum: Accumulation = Exact()
    out_fmt: FloatFormat = F32
    rounding: Rounding = Rounding.RNE
    scale_fmt: FloatFormat = E8M0
    c_fmt: FloatFormat | None = None
    tininess: Tininess | None = None       # None: after rounding (UnitOptions)
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "dot"
    SHAPE: ClassVar[str] = "block"
    IN_MATRIX = False        # block stimulus of its own: its slow benches (docs/verification.md)
    OPERATION = "y = X_A * X_B * sum_i a_i * b_i, rounded once (OCP MX Dot)"
    OPTIONS = ("format", "in_format", "a_format", "b_format", "c_format", "n", "accum",
               "frac_bits", "sum_group", "frac_bits2", "scales", "scale_format", "rounding",
               "tininess", "stages", "cuts", "formats", "a_formats", "b_formats")
    # After the element decoders; after the exact products; after the accumulator, the
    # specials and the scales (the raw result); inside the rounder.
    CUT_POINTS = ("decode", "product", "sum", "round")
    DEFAULT_CUTS = ("sum", "round")
    OPTION_NOTES = {"saturate": "its result overflows to inf"}
    SEMANTICS = "docs/mx.md"

    def __post_init__(self):
        a = element_format(self.elem_a)
        object.__setattr__(self, "elem_a", a)
        object.__setattr__(self, "elem_b", a if self.elem_b is None else
                           element_format(self.elem_b))
        check_int("dot length n", self.n, *DOT_N_RANGE)
        if not isinstance(self.scaled, bool):
            raise OptionError(f"scaled must be a bool, not {self.scaled!r}")
        if not isinstance(self.accum, Accumulation):
            raise OptionError(f"dot accumulation must be an Accumulation (Exact(), Fixed(F), "
                              f"Grouped(F, g), TwoStage(F, F2)), not {self.accum!r}")
        try:
            out = resolve(self.out_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if out.specials is Specials.FNU:
            raise OptionError(f"dot output format must hold signed values, not {out.name}")
        object.__setattr__(self, "out_fmt", out)
        object.__setattr__(self, "rounding", Rounding.parse_static(self.rounding, "the dot unit"))
        object.__setattr__(self, "tininess", self.options.tininess)
        self.place_pipeline()
        object.__setattr__(self, "scale_fmt", self._checked_scale_format())
        if self.c_fmt is not None:
            object.__setattr__(self, "c_fmt", self._checked_c_format())
        self.accum.check(self)

    def _checked_c_format(self) -> FloatFormat:
        """The accumulator input c of one tensor-core step (d = a.b + c): aligned and truncated
        like the products, so only the fixed accumulator takes it."""
        if not self.accum.takes_c:
            raise OptionError("dot --c-format adds the accumulator input c to --accum fixed (c "
                              "truncated like the products, a tensor core's step); --accum "
                              f"{self.accum.accum} takes no c")
        if self.value_scales and self.accum.group is None:
            raise OptionError("dot --c-format works with E8M0 scales, --no-scales or "
                              f"--sum-group, not --scale-format {self.scale_fmt.name} alone")
        try:
            fmt = resolve(self.c_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if not fmt.signed or fmt.specials is Specials.FNU:
            raise OptionError(f"dot --c-format must be a signed float format (float32, "
                              f"bfloat16, e8m13...), not {fmt.name}")
        return fmt

    def _checked_scale_format(self) -> FloatFormat:
        try:
            fmt = resolve(self.scale_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if fmt == E8M0:
            return fmt
        if not self.scaled:
            raise OptionError("--scale-format sets the format of scale_a and scale_b; it does "
                              "not apply with --no-scales")
        if fmt.width > 8 or fmt.has_inf or not fmt.has_zero:
            raise OptionError(f"dot scale format must be float8_e8m0fnu or a format of at most "
                              f"8 bits with a zero and no infinities (float8_e4m3fn: NVFP4's "
                              f"scale, binary8p1uf, ue5m3fn...), not {fmt.name}")
        # The golden model multiplies its 64-bit window of the sum by the scales' significands:
        # exact while the product fits (a one-bit significand, a power of two, always does).
        # Grouped sums are checked group by group (Grouped.check).
        bits = self.sum_bits + 2 * fmt.precision
        if fmt.precision > 1 and bits > 64 and self.accum.group is None:
            raise OptionError(f"dot --scale-format {fmt.name}: the scaled exact sum of "
                              f"{self.elem_a.name} x {self.elem_b.name} (n = {self.n}) needs "
                              f"{bits} bits; at most 64 are supported (a shorter n, narrower "
                              f"elements or --accum fixed with fewer --frac-bits)")
        return fmt

    @property
    def groups(self) -> int:
        """Scale pairs per vector: n / sum_group (1 without groups)."""
        return 1 if self.accum.group is None else self.n // self.accum.group

    @property
    def sum_bits(self) -> int:
        """Bits of the accumulator's magnitude (as rtl/fp_units/dot.py sums): the exact frame
        or the fixed terms, plus the carries of n summands and a sign."""
        term = self.accum.term_bits(self)
        return term + (self.n - (self.c_fmt is None)).bit_length() + 1

    @property
    def value_scales(self) -> bool:
        """Scales that are numbers of a format (E4M3...) rather than E8M0 powers of two."""
        return self.scaled and self.scale_fmt != E8M0

    @classmethod
    def from_options(cls, *, format=None, in_format=None, a_format=None, b_format=None,
                     c_format=None, n=32, accum="exact", frac_bits=None, sum_group=None,
                     frac_bits2=None, scales=True, scale_format=None, rounding="rne",
                     tininess=None, stages=None, cuts=None) -> "MxDotSpec":
        """``format`` is the output (default float32); ``in_format`` the element format of both
        vectors, ``a_format`` / ``b_format`` each vector's; ``c_format`` the accumulator
        input's (none by default)."""
        a, b = a_format or in_format, b_format or in_format
        if a is None or b is None:
            raise OptionError("unit dot needs its element format(s): --in-format ELEM (both "
                              "vectors) or --a-format ELEM and --b-format ELEM")
        acc = accumulation(accum, frac_bits, sum_group, frac_bits2)
        return cls(a, b, n=n, scaled=scales, accum=acc,
                   out_fmt="float32" if format is None else format, rounding=rounding,
                   scale_fmt=E8M0 if scale_format is None else scale_format,
                   c_fmt=c_format, tininess=tininess,
                   pipeline=cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        v = {"format": self.out_fmt.name}
        if self.elem_a == self.elem_b:
            v["in_format"] = self.elem_a.name
        else:
            v |= {"a_format": self.elem_a.name, "b_format": self.elem_b.name}
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        v |= {"n": self.n} | self.accum.option_values()
        if not self.scaled:
            v["scales"] = False
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        return v | {"rounding": self.rounding.value} | self.options.tininess_option() | \
            self.pipeline_options()

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=self.rounding, tininess=self.tininess)

    @property
    def member_ident(self) -> str:
        """The element formats' words of the module name: ``fp8e4m3``, ``fp8e4m3_fp4e2m1``."""
        return self.elem_a.name if self.elem_a == self.elem_b else \
            f"{self.elem_a.name}_{self.elem_b.name}"

    def describe_formats(self) -> str:
        """``[a: 32 x fp8e4m3, b: 32 x fp8e4m3] -> y: float32``."""
        return f"[a: {self.n} x {self.elem_a.name}, b: {self.n} x {self.elem_b.name}] -> y: " \
            f"{self.out_fmt.name}"

    def member_elements(self, role: str) -> tuple[ElementFormat, ...]:
        """The element format of vector ``role`` (``a`` or ``b``) of each member: one here."""
        return (getattr(self, f"elem_{role}"),)

    @property
    def element_man_bits(self) -> tuple[int, int]:
        """Fraction bits of the decoded a and b elements (the fixed accumulator's Ma, Mb; of a
        multi-format dot, its widest member's: rtl/multidot.py)."""
        return self.elem_a.grid.man_bits, self.elem_b.grid.man_bits

    def name_parts(self) -> list[str]:
        """The module name's words after the element formats (a multi-format dot's too)."""
        parts = [f"n{self.n}", self.accum.ident, self.out_fmt.ident, self.rounding.value]
        if not self.scaled:
            parts.append("ns")
        if self.value_scales:
            parts.append(f"sc{self.scale_fmt.ident}")
        if self.c_fmt is not None:
            parts.append(f"c{self.c_fmt.ident}")
        return parts + self.options.tininess_name_parts()

    @property
    def default_name(self) -> str:
        """e.g. ``mxdot_fp8e4m3_n32_exact_e8m23_rne`` (``_ns``: no scale ports)."""
        return "_".join(["mxdot", self.member_ident, *self.name_parts(),
                         *self.pipeline.name_parts()])

    def describe(self) -> str:
        return f"dot {self.describe_formats()} {self.describe_sum()}"

    def describe_sum(self) -> str:
        """What ``describe`` says after the formats (a multi-format dot's too)."""
        g = self.accum.group
        sc = f"scale_a * scale_b ({self._scale_name}) * " if self.scaled else ""
        if g is not None:
            sc = f"per group of {g}: scale_a * scale_b ({self._scale_name}) * "
        c = "" if self.c_fmt is None else f" + c ({self.c_fmt.name}, {self.accum.c_rule})"
        return (f"= {sc}sum a_i b_i{c}; accumulator {self.accum.describe()}; rounding "
                f"{self.rounding.value}; latency {self.latency}")

    def ports(self) -> list[Port]:
        inputs = self.input_ports()
        v_in, v_out = valid_ports(self.stages, [p.name for p in inputs])
        return clock_ports(self.stages) + inputs + v_in + result_ports(self.out_fmt) + v_out

    def input_ports(self) -> list[Port]:
        """The data inputs: the vectors, their scales and c."""
        n = self.n
        out = [elem_port(port, "input", n, elem, f"vector {port}: {n} {elem.name} element codes")
               for port, elem in (("a", self.elem_a), ("b", self.elem_b))]
        g = self.groups
        per = "" if self.accum.group is None else \
            f", one per group of {self.accum.group} lanes (group j at [j*w +: w])"
        if self.value_scales:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", self.scale_fmt.width,
                                f"{self._scale_name} block scale of vector {port[-1]}{per}",
                                g, fmt=self.scale_fmt))
        elif self.scaled:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", 8, f"E8M0 block scale of vector {port[-1]}: "
                                                  f"2^({port} - {E8M0_BIAS}); 0xFF is NaN{per}",
                                g, fmt=E8M0))
        if self.c_fmt is not None:
            out.append(Port("c", "input", self.c_fmt.width, f"accumulator input, "
                            f"{self.c_fmt.name} code: y = the products' sum + c", fmt=self.c_fmt))
        return out

    @property
    def _scale_name(self) -> str:
        return self.scale_fmt.name if self.value_scales else "E8M0"

    def formats(self) -> dict[str, FloatFormat]:
        fmts = {"a": self.elem_a.grid, "b": self.elem_b.grid, "y": self.out_fmt}
        return fmts if self.c_fmt is None else fmts | {"c": self.c_fmt}

    def parameters(self) -> dict:
        acc = self.accum.option_values()
        v = {"element_a": self.elem_a.name, "element_b": self.elem_b.name, "n": self.n,
             "scaled": self.scaled, "accumulator": acc.pop("accum"),
             "frac_bits": acc.pop("frac_bits", None),
             "output": self.out_fmt.name, "rounding": self.rounding.value,
             "rounding_meaning": self.rounding.meaning, "saturate": False}
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        # acc: sum_group, frac_bits2
        return v | acc | self.options.tininess_option() | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        return [f"a element   {self.elem_a.describe()}",
                f"b element   {self.elem_b.describe()}", *self.sum_lines()]

    def sum_lines(self) -> list[str]:
        """The header's lines after the element formats (a multi-format dot's too)."""
        g = self.accum.group
        return [f"n           {self.n}; block scales "
                f"{'on scale_a, scale_b' if self.scaled else 'none'}"
                f"{f', one per {g} lanes' if g else ''}"
                f"{f' ({self._scale_name})' if self.value_scales else ''}",
                f"accumulator {self.accum.header()}",
                *([] if self.c_fmt is None else
                  [f"c format    {self.c_fmt.describe()}; c is {self.accum.c_rule}"]),
                f"y format    {self.out_fmt.describe()}",
                f"rounding    {self.rounding.value} ({self.rounding.meaning}), non-saturating",
                *self.options.tininess_lines(), *self.pipeline_lines()]
