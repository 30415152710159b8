"""The OCP MX element formats, shared by the RTL and the golden model: the catalog of element
formats (the grids the shared rounder rounds to and how their codes are stored) and the E8M0 scale
codes.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the MX specs (rtl/mx.py, rtl/dot.py),
the generator and the golden model read the element formats from here. docs/mx.md states the
semantics.
"""

from __future__ import annotations

from dataclasses import dataclass

from .formats import CATALOG, FloatFormat, Specials
from .format_names import resolve
from .options import OptionError
from .ports import Port

__all__ = ["ElementFormat", "ELEMENT_FORMATS", "element_format", "OCP_FP_ELEMENTS", "E8M0",
           "E8M0_BIAS", "E8M0_NAN", "SCALE_MIN", "SCALE_MAX", "elem_port"]

E8M0 = CATALOG["float8_e8m0fnu"]
E8M0_BIAS = 127
E8M0_NAN = 0xFF
SCALE_MIN, SCALE_MAX = -127, 127     # exponents E8M0 holds (0xFF is NaN)


@dataclass(frozen=True)
class ElementFormat:
    """An MX element format: the grid the shared rounder rounds to, and how codes are stored.

    ``grid`` is a FloatFormat of the element's values. For the FP formats it is the format
    itself; for MXINT8 it is the sign-magnitude grid e1m6 (bias 1, finite) whose values are
    exactly int8 * 2^-6 for |int8| <= 127, stored as two's complement (``twos_complement``).
    INT4 is the same with e1m2: int4 * 2^-2, |int4| <= 7.
    """

    name: str
    grid: FloatFormat
    twos_complement: bool = False

    @property
    def emax(self) -> int:
        """Exponent of the largest power of two the element holds (emax_elem in OCP MX 6.3)."""
        return self.grid.emax

    @property
    def width(self) -> int:
        return self.grid.width

    @property
    def lsb_min(self) -> int:
        """Weight of the smallest nonzero element's LSB: decoded exponents are >= this."""
        return -self.grid.man_bits if self.twos_complement else \
            self.grid.emin - self.grid.man_bits

    @property
    def sig_bits(self) -> int:
        """Bits of a decoded significand: hidden bit included; an integer element's full width
        (|-128| = 128 needs MXINT8's 8 bits)."""
        return self.width if self.twos_complement else self.grid.precision

    def describe(self) -> str:
        if self.twos_complement:
            w, f = self.width, self.grid.man_bits
            top = (1 << (w - 1)) - 1
            return (f"{self.name} (int{w} two's complement x 2^-{f}, max {top}/{1 << f}, "
                    f"clamp +-{top}, emax {self.emax})")
        return f"{self.name}: {self.grid.describe()}, emax {self.emax}"

    def __str__(self) -> str:
        return self.name


def _int_grid(width: int) -> FloatFormat:
    """The sign-magnitude grid of a two's complement integer element of ``width`` bits: e1m(w-2)
    with bias 1, whose values are int * 2^-(w-2) and whose largest is (2^(w-1) - 1) * 2^-(w-2)."""
    return FloatFormat(1, width - 2, 1, Specials.FINITE)


ELEMENT_FORMATS: dict[str, ElementFormat] = {
    "fp8e4m3": ElementFormat("fp8e4m3", CATALOG["float8_e4m3fn"]),
    "fp8e5m2": ElementFormat("fp8e5m2", CATALOG["float8_e5m2"]),
    "fp6e3m2": ElementFormat("fp6e3m2", CATALOG["float6_e3m2fn"]),
    "fp6e2m3": ElementFormat("fp6e2m3", CATALOG["float6_e2m3fn"]),
    "fp4e2m1": ElementFormat("fp4e2m1", CATALOG["float4_e2m1fn"]),
    "mxint8": ElementFormat("mxint8", _int_grid(8), twos_complement=True),
    # INT4 with a symmetric scale (a float32 per-channel scale in golden/gemm.py, or E8M0 blocks)
    "int4": ElementFormat("int4", _int_grid(4), twos_complement=True),
    # AMD CDNA3's FP8 (FNUZ: bias 8 / 16, one NaN at 0x80, no -0, no inf), for its tensor core
    "fp8e4m3fnuz": ElementFormat("fp8e4m3fnuz", CATALOG["float8_e4m3fnuz"]),
    "fp8e5m2fnuz": ElementFormat("fp8e5m2fnuz", CATALOG["float8_e5m2fnuz"]),
    # P3109 elements (docs/p3109.md) under the same E8M0 scales: SatFinite, their one NaN.
    "binary8p4se": ElementFormat("binary8p4se", resolve("binary8p4se")),
    "binary8p3se": ElementFormat("binary8p3se", resolve("binary8p3se")),
    "binary4p2sf": ElementFormat("binary4p2sf", resolve("binary4p2sf")),
}
_BY_GRID = {e.grid: e for e in ELEMENT_FORMATS.values() if not e.twos_complement}
OCP_FP_ELEMENTS = ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1")   # OCP MX v1.0's FP


def element_format(spec: "str | FloatFormat | ElementFormat") -> ElementFormat:
    """Resolve an element format: a short name (fp8e4m3, ..., mxint8), a catalog name
    (float8_e4m3fn, ...) or FloatFormat of one of the OCP MX element formats."""
    if isinstance(spec, ElementFormat):
        return spec
    if isinstance(spec, str) and spec.strip().lower() in ("mxint8", "int8"):
        return ELEMENT_FORMATS["mxint8"]
    if isinstance(spec, str) and spec.strip().lower() in ("int4", "mxint4"):
        return ELEMENT_FORMATS["int4"]
    try:
        fmt = resolve(spec)
    except Exception:
        fmt = None
    if fmt is None or fmt not in _BY_GRID:
        raise OptionError(f"MX element format must be one of {', '.join(ELEMENT_FORMATS)} "
                          f"(or their catalog names), not {spec!r}")
    return _BY_GRID[fmt]


def elem_port(name: str, direction: str, count: int, elem: ElementFormat, what: str) -> Port:
    """A packed bus of ``count`` element codes (MXINT8 and INT4 carry two's complement
    integers)."""
    w = elem.width
    return Port(name, direction, w, f"{what}, element i at {name}[i*{w} +: {w}]", count,
                None if elem.twos_complement else elem.grid)
