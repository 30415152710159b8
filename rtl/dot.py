"""The OCP MX dot product: the accumulator contracts and the typed spec of the dot unit.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the generator (rtl/fp_units/dot.py),
the export and golden/dot.py all read the dot unit's parameters from here, so the hardware and
the model cannot drift apart. docs/mx.md states the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .elements import E8M0, E8M0_BIAS, ElementFormat, elem_port, element_format
from .formats import CATALOG, FloatFormat, FormatError, Specials, resolve
from .options import OptionError, Rounding, UnitOptions
from .ports import Port, clock_ports, result_ports, valid_ports
from .pipeline import Pipeline
from .spec import Spec, check_int

__all__ = ["ACCUMULATORS", "DOT_N_RANGE", "FRAC_BITS_RANGE", "GROUP_ZERO_EXP",
           "TWO_STAGE_F2_MAX", "MxDotSpec"]

ACCUMULATORS = ("exact", "fixed")
FRAC_BITS_RANGE = (1, 55)            # fixed accumulator: fraction bits below the largest product
# The grouped accumulator (dot --sum-group): the exponent at which an all-zero group or c = 0
# stands when the largest one is chosen, 2^-139, MMA-Sim's e_zero for Blackwell's
# kind::mxf4nvf4 step (mmasim 2.1.1 nv_ptx/sim.py). A term whose scales sit far below it is
# truncated away.
GROUP_ZERO_EXP = -139
# The two-stage accumulator (dot --frac-bits2): its second stage's F2 at most (the golden model
# sums in int64: (F2 + 1)-bit terms shifted by up to 8 more, with carries).
TWO_STAGE_F2_MAX = 48
DOT_N_RANGE = (1, 64)                # vector lengths of the dot unit

F32 = CATALOG["float32"]


@dataclass(frozen=True)
class MxDotSpec(Spec):
    """The MX dot-product unit: ``n`` elements of ``elem_a`` times ``n`` of ``elem_b``, summed,
    optionally times the E8M0 scales ``scale_a * scale_b`` (``scaled``), rounded once into
    ``out_fmt`` (non-saturating, a static rounding mode) under the ``accum`` contract."""

    elem_a: ElementFormat
    elem_b: ElementFormat | None = None
    n: int = 32
    scaled: bool = True
    accum: str = "exact"
    frac_bits: int = 24
    out_fmt: FloatFormat = F32
    rounding: Rounding = Rounding.RNE
    scale_fmt: FloatFormat = E8M0
    c_fmt: FloatFormat | None = None
    sum_group: int | None = None
    frac_bits2: int | None = None
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "dot"
    SHAPE: ClassVar[str] = "block"
    OPERATION = "y = X_A * X_B * sum_i a_i * b_i, rounded once (OCP MX Dot)"
    OPTIONS = ("format", "in_format", "a_format", "b_format", "c_format", "n", "accum",
               "frac_bits", "sum_group", "frac_bits2", "scales", "scale_format", "rounding",
               "stages", "cuts")
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
        if self.accum not in ACCUMULATORS:
            raise OptionError(f"accumulator must be one of {', '.join(ACCUMULATORS)}, "
                              f"not {self.accum!r}")
        check_int("frac_bits", self.frac_bits, *FRAC_BITS_RANGE)
        try:
            out = resolve(self.out_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if out.specials is Specials.FNU:
            raise OptionError(f"dot output format must hold signed values, not {out.name}")
        object.__setattr__(self, "out_fmt", out)
        object.__setattr__(self, "rounding", Rounding.parse_static(self.rounding, "the dot unit"))
        self.place_pipeline()
        object.__setattr__(self, "scale_fmt", self._checked_scale_format())
        if self.c_fmt is not None:
            object.__setattr__(self, "c_fmt", self._checked_c_format())
        if self.sum_group is not None:
            self._check_groups()
        if self.frac_bits2 is not None:
            self._check_two_stage()

    def _checked_c_format(self) -> FloatFormat:
        """The accumulator input c of one tensor-core step (d = a.b + c): aligned and truncated
        like the products, so only the fixed accumulator takes it."""
        if self.accum != "fixed":
            raise OptionError("dot --c-format adds the accumulator input c to --accum fixed (c "
                              "truncated like the products, a tensor core's step); --accum "
                              f"{self.accum} takes no c")
        if self.value_scales and self.sum_group is None:
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
        # Grouped sums are checked group by group (_check_groups).
        bits = self.sum_bits + 2 * fmt.precision
        if fmt.precision > 1 and bits > 64 and self.sum_group is None:
            raise OptionError(f"dot --scale-format {fmt.name}: the scaled exact sum of "
                              f"{self.elem_a.name} x {self.elem_b.name} (n = {self.n}) needs "
                              f"{bits} bits; at most 64 are supported (a shorter n, narrower "
                              f"elements or --accum fixed with fewer --frac-bits)")
        return fmt

    def _check_groups(self):
        """The grouped accumulator (MMA-Sim's gst_fdpa): ``sum_group`` lanes summed exactly, each
        group times its own scales at the scales' exponent, c beside them, all truncated to F
        bits below the largest (docs/mx.md). The golden model holds a group's scaled sum in 64
        bits and the truncated terms' sum in int64: both are checked here."""
        g = self.sum_group
        check_int("sum_group", g, 1, self.n)
        if self.accum != "fixed" or not self.scaled:
            raise OptionError("dot --sum-group sums groups of lanes exactly, each at its own "
                              "scales (a tensor core's grouped step): it needs --accum fixed "
                              "and scale inputs")
        if self.n % g:
            raise OptionError(f"dot --sum-group {g} must divide the vector length n = {self.n}")
        bits = self.group_bits + 2 * self.scale_fmt.precision
        total = self.frac_bits + self.group_int_bits + self.groups.bit_length() + 1
        if bits > 64 or total > 62:
            raise OptionError(f"dot --sum-group {g}: a scaled group of {self.elem_a.name} x "
                              f"{self.elem_b.name} needs {bits} bits and the truncated sum "
                              f"{total}; at most 64 and 62 are supported (fewer --frac-bits, "
                              f"a smaller group or narrower elements)")

    def _check_two_stage(self):
        """The two-stage accumulator (MMA-Sim's gtr_fdpa, AMD CDNA3): the even and the odd
        lanes' products each truncated to F bits below their own largest and summed, the two
        sums floored to F bits below the larger, added to c in F2 + 1 bits (c floored to F),
        floored to F2 bits below the result's leading bit, rounded once (docs/mx.md)."""
        if self.accum != "fixed" or self.c_fmt is None or self.sum_group is not None or \
                self.scaled:
            raise OptionError("dot --frac-bits2 is the second stage of a two-stage sum with c "
                              "(AMD CDNA3's step): it needs --accum fixed and --c-format, "
                              "without --sum-group or scale inputs (--no-scales)")
        if self.n % 2:
            raise OptionError(f"dot --frac-bits2 sums the even and the odd lanes apart: n must "
                              f"be even, not {self.n}")
        check_int("frac_bits2", self.frac_bits2, self.frac_bits, TWO_STAGE_F2_MAX)

    @property
    def groups(self) -> int:
        """Scale pairs per vector: n / sum_group (1 without groups)."""
        return 1 if self.sum_group is None else self.n // self.sum_group

    @property
    def group_bits(self) -> int:
        """Bits of a group's exact sum (its magnitude; the exact frame plus carries)."""
        a, b = self.elem_a, self.elem_b
        frame = (a.emax + 1 - a.lsb_min) + (b.emax + 1 - b.lsb_min)
        return frame + (self.sum_group - 1).bit_length() + 1

    @property
    def group_int_bits(self) -> int:
        """Bits of a scaled group sum above its scales' exponent: the exact frame's LSB is
        2^(lsb_a + lsb_b), the scales' significand product has 2 * M fraction bits."""
        fs = self.scale_fmt
        lsb = self.elem_a.lsb_min + self.elem_b.lsb_min - 2 * fs.man_bits
        return self.group_bits + 2 * fs.precision + lsb

    @property
    def sum_bits(self) -> int:
        """Bits of the accumulator's magnitude (as rtl/fp_units/dot.py sums): the exact frame
        or the fixed terms, plus the carries of n summands and a sign."""
        a, b = self.elem_a, self.elem_b
        term = (a.emax + 1 - a.lsb_min) + (b.emax + 1 - b.lsb_min) if self.accum == "exact" \
            else self.frac_bits + 3
        return term + (self.n - (self.c_fmt is None)).bit_length() + 1

    @property
    def value_scales(self) -> bool:
        """Scales that are numbers of a format (E4M3...) rather than E8M0 powers of two."""
        return self.scaled and self.scale_fmt != E8M0

    @classmethod
    def from_options(cls, *, format=None, in_format=None, a_format=None, b_format=None,
                     c_format=None, n=32, accum="exact", frac_bits=None, sum_group=None,
                     frac_bits2=None, scales=True, scale_format=None, rounding="rne",
                     stages=None, cuts=None) -> "MxDotSpec":
        """``format`` is the output (default float32); ``in_format`` the element format of both
        vectors, ``a_format`` / ``b_format`` each vector's; ``c_format`` the accumulator
        input's (none by default)."""
        a, b = a_format or in_format, b_format or in_format
        if a is None or b is None:
            raise OptionError("unit dot needs its element format(s): --in-format ELEM (both "
                              "vectors) or --a-format ELEM and --b-format ELEM")
        if frac_bits is not None and accum != "fixed":
            raise OptionError("--frac-bits sets the width of --accum fixed; it does not apply to "
                              f"--accum {accum}")
        return cls(a, b, n=n, scaled=scales, accum=accum,
                   frac_bits=24 if frac_bits is None else frac_bits,
                   out_fmt="float32" if format is None else format, rounding=rounding,
                   scale_fmt=E8M0 if scale_format is None else scale_format,
                   c_fmt=c_format, sum_group=sum_group, frac_bits2=frac_bits2,
                   pipeline=cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        v = {"format": self.out_fmt.name}
        if self.elem_a == self.elem_b:
            v["in_format"] = self.elem_a.name
        else:
            v |= {"a_format": self.elem_a.name, "b_format": self.elem_b.name}
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        v |= {"n": self.n, "accum": self.accum}
        if self.accum == "fixed":
            v["frac_bits"] = self.frac_bits
        if self.sum_group is not None:
            v["sum_group"] = self.sum_group
        if self.frac_bits2 is not None:
            v["frac_bits2"] = self.frac_bits2
        if not self.scaled:
            v["scales"] = False
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        return v | {"rounding": self.rounding.value} | self.pipeline_options()

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=self.rounding)

    @property
    def default_name(self) -> str:
        """e.g. ``mxdot_fp8e4m3_n32_exact_e8m23_rne`` (``_ns``: no scale ports)."""
        el = self.elem_a.name if self.elem_a == self.elem_b else \
            f"{self.elem_a.name}_{self.elem_b.name}"
        acc = "exact" if self.accum == "exact" else f"fixed{self.frac_bits}"
        if self.sum_group is not None:
            acc += f"g{self.sum_group}"
        if self.frac_bits2 is not None:
            acc += f"x{self.frac_bits2}"
        parts = ["mxdot", el, f"n{self.n}", acc, self.out_fmt.ident, self.rounding.value]
        if not self.scaled:
            parts.append("ns")
        if self.value_scales:
            parts.append(f"sc{self.scale_fmt.ident}")
        if self.c_fmt is not None:
            parts.append(f"c{self.c_fmt.ident}")
        return "_".join(parts + self.pipeline.name_parts())

    def describe(self) -> str:
        acc = "exact sum, one rounding" if self.accum == "exact" else \
            f"fixed: products truncated to 2^(Emax - {self.frac_bits}), then one rounding"
        if self.sum_group is not None:
            acc = (f"grouped: exact sums of {self.sum_group} at their scales' exponent, "
                   f"truncated to 2^(Emax - {self.frac_bits}), then one rounding")
        if self.frac_bits2 is not None:
            acc = (f"two-stage: even and odd products truncated to {self.frac_bits} bits, "
                   f"floored together, added to c in {self.frac_bits2 + 1} bits, floored to "
                   f"{self.frac_bits2}, then one rounding")
        sc = f"scale_a * scale_b ({self._scale_name}) * " if self.scaled else ""
        if self.sum_group is not None:
            sc = f"per group of {self.sum_group}: scale_a * scale_b ({self._scale_name}) * "
        c = "" if self.c_fmt is None else f" + c ({self.c_fmt.name}, {self._c_rule})"
        return (f"dot [a: {self.n} x {self.elem_a.name}, b: {self.n} x {self.elem_b.name}] -> y: "
                f"{self.out_fmt.name} = {sc}sum a_i b_i{c}; accumulator {acc}; rounding "
                f"{self.rounding.value}; latency {self.latency}")

    def ports(self) -> list[Port]:
        n = self.n
        out = clock_ports(self.stages)
        names = []
        for port, elem in (("a", self.elem_a), ("b", self.elem_b)):
            out.append(elem_port(port, "input", n, elem,
                                  f"vector {port}: {n} {elem.name} element codes"))
            names.append(port)
        g = self.groups
        per = "" if self.sum_group is None else \
            f", one per group of {self.sum_group} lanes (group j at [j*w +: w])"
        if self.value_scales:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", self.scale_fmt.width,
                                f"{self._scale_name} block scale of vector {port[-1]}{per}",
                                g, fmt=self.scale_fmt))
                names.append(port)
        elif self.scaled:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", 8, f"E8M0 block scale of vector {port[-1]}: "
                                                  f"2^({port} - {E8M0_BIAS}); 0xFF is NaN{per}",
                                g, fmt=E8M0))
                names.append(port)
        if self.c_fmt is not None:
            out.append(Port("c", "input", self.c_fmt.width, f"accumulator input, "
                            f"{self.c_fmt.name} code: y = the products' sum + c", fmt=self.c_fmt))
            names.append("c")
        v_in, v_out = valid_ports(self.stages, names)
        out += v_in
        return out + result_ports(self.out_fmt) + v_out

    @property
    def _c_rule(self) -> str:
        return "floored to 2^(E - F)" if self.frac_bits2 else "truncated like a product"

    @property
    def _scale_name(self) -> str:
        return self.scale_fmt.name if self.value_scales else "E8M0"

    def formats(self) -> dict[str, FloatFormat]:
        fmts = {"a": self.elem_a.grid, "b": self.elem_b.grid, "y": self.out_fmt}
        return fmts if self.c_fmt is None else fmts | {"c": self.c_fmt}

    def parameters(self) -> dict:
        v = {"element_a": self.elem_a.name, "element_b": self.elem_b.name, "n": self.n,
             "scaled": self.scaled, "accumulator": self.accum,
             "frac_bits": self.frac_bits if self.accum == "fixed" else None,
             "output": self.out_fmt.name, "rounding": self.rounding.value,
             "rounding_meaning": self.rounding.meaning, "saturate": False}
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        if self.sum_group is not None:
            v["sum_group"] = self.sum_group
        if self.frac_bits2 is not None:
            v["frac_bits2"] = self.frac_bits2
        return v | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        acc = "exact (exact sum, one rounding)" if self.accum == "exact" else \
            f"fixed, {self.frac_bits} fraction bits (products truncated to 2^(Emax - " \
            f"{self.frac_bits}), docs/mx.md)"
        if self.sum_group is not None:
            acc = (f"grouped, {self.frac_bits} fraction bits (groups of {self.sum_group} "
                   f"summed exactly, each times its scales at their exponent; terms truncated to "
                   f"2^(Emax - {self.frac_bits}), docs/mx.md)")
        if self.frac_bits2 is not None:
            acc = (f"two-stage, {self.frac_bits} and {self.frac_bits2} fraction bits (even and "
                   f"odd products truncated apart, floored together, added to c and floored, "
                   f"docs/mx.md)")
        return [f"a element   {self.elem_a.describe()}",
                f"b element   {self.elem_b.describe()}",
                f"n           {self.n}; block scales "
                f"{'on scale_a, scale_b' if self.scaled else 'none'}"
                f"{f', one per {self.sum_group} lanes' if self.sum_group else ''}"
                f"{f' ({self._scale_name})' if self.value_scales else ''}",
                f"accumulator {acc}",
                *([] if self.c_fmt is None else
                  [f"c format    {self.c_fmt.describe()}; c is {self._c_rule}"]),
                f"y format    {self.out_fmt.describe()}",
                f"rounding    {self.rounding.value} ({self.rounding.meaning}), non-saturating",
                *self.pipeline_lines()]
