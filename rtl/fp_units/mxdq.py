"""mxdq: the OCP MX dequantizer. Same contract as golden/mx.py ``mxdq_unit``, the same steps.

    scale, x (k element codes) -> decode each element -> exponent + (scale - 127)
        -> the one Rounder into float32 (rne; exact unless it overflows or underflows)

Ports (element i of a packed bus at bits [i*w +: w]):

    scale  in   8              E8M0 code of X = 2^(scale - 127); 0xFF (NaN) makes the block NaN
    x      in   k * elem_width element codes, element i at x[i*w +: w]
    y      out  k * 32         float32 codes, element i at y[i*32 +: 32]

Pipeline cut points (rtl/mx.py ``MxDequantSpec.CUT_POINTS``): ``decode`` after the element
decoders (the scale code registered with them), ``scale`` after the scale's exponent is added
(the raw values), ``round`` inside each rounder; ``stages`` alone fills scale, then round, then
output registers. The value-scale recipes register their outputs only.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, signed, unsigned

from ..elements import E8M0_BIAS, E8M0_NAN
from .binary32 import Binary32
from .common import Raw
from .decode import Decode
from .mx_unit import decode_element
from .rounder import Rounder
from .unit import Unit
from .value_scale import dequantize_factor

__all__ = ["MxDequantizer"]


class MxDequantizer(Unit):
    """The MX dequantizer of an :class:`~rtl.mx.MxDequantSpec` (ports: module docstring)."""

    unit = "mxdq"

    def elaborate(self, platform):
        if self._spec.value_scaled:
            return self._value_scaled()
        m = Module()
        spec = self._spec
        k, elem, w = spec.block, spec.elem, spec.elem.width
        scale = self.delayed(m, {"scale": self.scale}, until="scale")["scale"]
        scale_nan = Signal(name="scale_nan")
        m.d.comb += scale_nan.eq(scale == E8M0_NAN)
        ops, cut1 = [], {"nan_scale": scale_nan}
        for i in range(k):
            op = decode_element(m, self.x[i * w:(i + 1) * w], elem, f"dec_x{i}")
            op = self.cut_operand(m, "decode", f"x{i}", op)
            # X * P_i only moves the exponent: the scale code adds to the element's field.
            e = Signal(unsigned(len(op.exp) + 9), name=f"exp{i}")
            m.d.comb += e.eq(op.exp + scale)
            ops.append(op)
            cut1 |= {f"sign{i}": op.sign, f"exp{i}": e, f"sig{i}": op.sig, f"zero{i}": op.zero,
                     f"inf{i}": op.inf, f"nan{i}": op.nan, f"invalid{i}": op.invalid}
        p = self.cut(m, "scale", cut1)
        ys = []
        for i, op in enumerate(ops):
            lo, hi = op.exp_range
            raw = Raw(sign=p[f"sign{i}"], exp=p[f"exp{i}"], off=op.off - E8M0_BIAS,
                      sig=p[f"sig{i}"], width=op.width, exp_range=(lo, hi + E8M0_NAN),
                      lz_max=op.lz_max, sticky=0, zero=p[f"zero{i}"],
                      inf=p[f"inf{i}"], nan=p[f"nan{i}"] | p["nan_scale"],
                      invalid=p[f"invalid{i}"])
            rnd = Rounder(spec.out_fmt, spec.options, raw,
                          register="round" in spec.cut_points)
            m.submodules[f"round_y{i}"] = rnd
            ys.append(rnd.y)
        self.outputs(m, {"y": Cat(*ys)})
        return m

    def _value_scaled(self):
        """An NVFP4 recipe: each element's float32 value times the block's factor, in the
        recipe's order (value_scale.py); ``stages`` registers the output."""
        if self._spec.scale_fmt.precision == 1:
            return self._power_of_two_scaled()
        m = Module()
        spec = self._spec
        k, w, s = spec.block, spec.elem.width, spec.scaling
        factor = dequantize_factor(m, s, self.scale, getattr(self, "tensor_amax", None))
        f = Binary32(m, "el")
        ys = [f.mul(f.widen(self.x[i * w:(i + 1) * w], s.elem, f"v{i}"), factor, f"y{i}")
              for i in range(k)]
        self.outputs(m, {"y": Cat(*ys)})
        return m

    def _power_of_two_scaled(self):
        """P3109's Binary8p1uf scale has a one-bit significand: RN(x_i * scale) only adds the
        scale's exponent before one rounding into float32 (as the float32 multiply: a zero scale
        gives a signed zero, inf x 0 NaN, a NaN scale NaN)."""
        m = Module()
        spec = self._spec
        k, elem, w, sfmt = spec.block, spec.elem, spec.elem.width, spec.scale_fmt
        sc = Decode(sfmt)
        m.submodules.dec_scale = sc
        m.d.comb += sc.code.eq(self.scale)
        ys = []
        for i in range(k):
            op = decode_element(m, self.x[i * w:(i + 1) * w], elem, f"dec_x{i}")
            e = Signal(signed(12), name=f"exp{i}")
            m.d.comb += e.eq(op.exp + sc.exp)
            (lo, hi), (slo, shi) = op.exp_range, sc.exp_range
            inf_zero = op.inf & sc.is_zero
            raw = Raw(sign=op.sign, exp=e, off=op.off + sc.off, sig=op.sig, width=op.width,
                      exp_range=(lo + slo, hi + shi), lz_max=op.lz_max, sticky=0,
                      zero=op.zero | sc.is_zero, inf=op.inf & ~sc.is_zero,
                      nan=op.nan | sc.is_nan | inf_zero, invalid=op.invalid | inf_zero)
            rnd = Rounder(spec.out_fmt, spec.options, raw)
            m.submodules[f"round_y{i}"] = rnd
            ys.append(rnd.y)
        self.outputs(m, {"y": Cat(*ys)})
        return m
