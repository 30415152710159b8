"""amax (rtl/amax.py): the largest magnitude of n codes. The same steps as golden/amax.py:

1. each input's class from the shared decoder; its magnitude bits (the code with the sign
   cleared), 0 for a NaN under ``number`` so it never wins;
2. a balanced tree of compare-and-select over the magnitudes (the MX quantizers' block amax,
   rtl/fp_units/common.py ``max_tree``), a register after each level the pipeline cuts; the
   NaN summaries (any NaN, every input NaN, any signaling NaN) ride along;
3. the NaN policy picks the canonical NaN or the tree's result; invalid on a signaling NaN.

Magnitude bits order as the magnitudes do in every format, so the tree compares them as
unsigned integers: the min/max units' sign-magnitude order (``NoncompUnit.less``) on codes with the
sign clear.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux

from .common import max_tree
from .decode import Decode
from .noncomp import NoncompUnit

__all__ = ["FpAmax"]


class FpAmax(NoncompUnit):
    """max |x_i| over the spec's n inputs; NaN by ``--minmax``; invalid on a signaling NaN."""

    unit = "amax"

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        fmt, w = spec.fmt, spec.fmt.width
        signed = spec.ORDER == "signed"      # sim/faults.py amax-signed: a wrong order
        xs = [self.x[i * w:(i + 1) * w] for i in range(spec.n)]
        nans, snans, keys = [], [], []
        for i, x in enumerate(xs):
            dec = Decode(fmt)
            m.submodules[f"dec_x{i}"] = dec
            m.d.comb += dec.code.eq(x)
            nans.append(dec.is_nan)
            snans.append(dec.is_snan)
            key = x if signed else x[:w - fmt.signed]
            keys.append(Mux(dec.is_nan, 0, key) if spec.minmax == "number" else key)
        carried = {"any_nan": Cat(*nans).any(), "all_nan": Cat(*nans).all(),
                   "snan": Cat(*snans).any()}

        def stage(level, values):
            nonlocal carried
            regs = self.cut(m, str(level), {**{f"v{i}": v for i, v in enumerate(values)},
                                            **carried})
            carried = {k: regs[k] for k in carried}
            return [regs[f"v{i}"] for i in range(len(values))]

        greater = (lambda a, b: self.less(b, a)) if signed else None
        top = max_tree(m, keys, "amax", greater, stage)
        nan = carried["all_nan"] if spec.minmax == "number" else carried["any_nan"]
        y = Mux(nan, fmt.nan_code or 0, top[:w - fmt.signed])
        self.outputs(m, {"y": y, "flags": self.invalid(carried["snan"])})
        return m
