"""The frame every unit shares: ports from the UnitSpec, decoders, pipeline cuts, the rounder.

A unit subclass only writes its exact core (``core``: decoded operands -> :class:`Raw`).

Pipeline placement for ``stages`` = N: the first register follows the exact core (the raw
result), the second sits inside the rounder (after normalization), the third on the outputs;
further stages add output registers (for retiming by the synthesis tool). ``valid`` travels with
the data and is cleared by reset.
"""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..spec import UnitSpec
from .common import Operand, Raw, register, valid_chain
from .decode import Decode
from .rounder import FLAGS_WIDTH, Rounder

__all__ = ["FpUnit"]


class FpUnit(wiring.Component):
    """Base of the floating-point units. Subclasses set ``unit`` and implement ``core``."""

    unit: str = ""
    # Decode ``normalize``: the core takes operands with the hidden bit set (zeros by flag).
    normalized_operands: bool = False
    # False: the core gates zero operands itself, so the decoders leave a flushed subnormal's
    # fraction in sig (Operand.sig_cleared) instead of clearing it.
    decoders_clear_flushed: bool = True

    def __init__(self, spec: UnitSpec):
        if not isinstance(spec, UnitSpec):
            raise TypeError(f"spec must be a UnitSpec, not {spec!r}")
        if spec.unit != self.unit:
            raise ValueError(f"{type(self).__name__} implements unit {self.unit!r}, "
                             f"not {spec.unit!r}")
        self._spec = spec
        members = {op: In(fmt.width) for op, fmt in zip(spec.operands, spec.in_fmts)}
        if spec.has_rm:
            members["rm"] = In(3)
        if spec.has_rbits:
            members["rbits"] = In(spec.options.sr_bits)
        if spec.stages:
            members["valid_i"] = In(1)
        members["y"] = Out(spec.out_fmt.width)
        members["flags"] = Out(FLAGS_WIDTH)
        if spec.stages:
            members["valid_o"] = Out(1)
        super().__init__(members)

    @property
    def spec(self) -> UnitSpec:
        return self._spec

    @property
    def latency(self) -> int:
        return self._spec.stages

    @property
    def name(self) -> str:
        return self._spec.default_name

    def core(self, m: Module, ops: list[Operand]) -> Raw:
        """The unit's exact core (decode -> *core* -> round); every unit class defines it."""
        raise TypeError(f"{type(self).__name__} defines no exact core")

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        ops = []
        for port, fmt in zip(spec.operands, spec.in_fmts):
            dec = Decode(fmt, normalize=self.normalized_operands,
                         clear_flushed=self.decoders_clear_flushed)
            m.submodules[f"dec_{port}_{fmt.ident}"] = dec
            m.d.comb += dec.code.eq(getattr(self, port))
            ops.append(Operand(sign=dec.sign, exp=dec.exp, off=dec.off, sig=dec.sig,
                               width=dec.width, exp_range=dec.exp_range, lz_max=dec.lz_max,
                               zero=dec.is_zero, inf=dec.is_inf, nan=dec.is_nan,
                               invalid=dec.is_snan, sig_cleared=dec.sig_cleared))
        raw = self.core(m, ops)

        # Cut 1: after the exact core.
        values = raw.values()
        if spec.has_rm:
            values["rm"] = self.rm
        if spec.has_rbits:
            values["rbits"] = self.rbits
        p = register(m, spec.stages >= 1, "s1", values)
        staged = Raw(**{**raw.__dict__, **{k: p[k] for k in raw.values()}})

        rounder = Rounder(spec.out_fmt, spec.options, staged, rm=p.get("rm"),
                          rbits=p.get("rbits"), register=spec.stages >= 2)
        m.submodules[rounder.name] = rounder

        # Cut 3 and beyond: output registers.
        out = {"y": rounder.y, "flags": rounder.flags}
        for i in range(3, spec.stages + 1):
            out = register(m, True, f"s{i}", out)
        m.d.comb += [self.y.eq(out["y"]), self.flags.eq(out["flags"])]

        if spec.stages:
            valid_chain(m, self.valid_i, self.valid_o, spec.stages)
        return m
