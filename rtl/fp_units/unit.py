"""The frame every unit shares (:class:`Unit`: the signature from ``spec.ports()``, the spec
read-only, the latency), and the scalar units' frame (:class:`FpUnit`: decoders, pipeline cuts,
the rounder).

A scalar unit subclass only writes its exact core (``core``: decoded operands -> :class:`Raw`).

Pipeline placement: registers sit at the spec's ``cut_points`` (rtl/scalar.py CUT_POINTS) --
``decode`` after the operand decoders, ``product`` and ``align`` inside the core (a multiplier's
partial products, an adder's aligned operands: the core asks ``stager``), ``core`` after the
exact core (the raw result), ``round`` inside the rounder (after normalization); stages beyond
them are output registers. ``--stages N``
alone places core, then round, then outputs; ``--cuts`` (or ``--clock-ps``) chooses others.
``valid`` travels with the data and is cleared by reset.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..ports import CLOCK, RESET
from ..scalar import ScalarSpec
from ..spec import Spec
from .common import Operand, Raw, register, valid_chain
from .decode import Decode
from .rounder import Rounder

__all__ = ["Unit", "FpUnit"]


class Unit(wiring.Component):
    """Base of every unit component: the members of its signature are the spec's ports (``clk``
    and ``rst`` come with the sync domain of a pipelined unit). Subclasses set ``unit``."""

    unit: str = ""

    def __init__(self, spec: Spec):
        if not isinstance(spec, Spec) or spec.unit != self.unit:
            raise TypeError(f"{type(self).__name__} implements unit {self.unit!r}, not {spec!r}")
        self._spec = spec
        super().__init__({p.name: (In if p.is_input else Out)(p.width) for p in spec.ports()
                          if p.name not in (CLOCK, RESET)})

    @property
    def spec(self) -> Spec:
        return self._spec

    @property
    def latency(self) -> int:
        return self._spec.latency

    @property
    def name(self) -> str:
        return self._spec.default_name


class FpUnit(Unit):
    """Base of the scalar floating-point units. Subclasses set ``unit`` and implement ``core``."""

    # Decode ``normalize``: the core takes operands with the hidden bit set (zeros by flag).
    normalized_operands: bool = False
    # False: the core gates zero operands itself, so the decoders leave a flushed subnormal's
    # fraction in sig (Operand.sig_cleared) instead of clearing it.
    decoders_clear_flushed: bool = True

    def __init__(self, spec: ScalarSpec):
        super().__init__(spec)

    def stager(self, m: Module, point: str):
        """What a core calls at its cut ``point``: a function registering the values it is given
        (and the rounding controls with them), or None when the spec has no register there (the
        core then builds its combinational datapath unchanged)."""
        if point not in self._spec.cut_points:
            return None
        return lambda values: self.stage(m, point, values)

    def stage(self, m: Module, point: str, values: dict) -> dict:
        """``values`` and the rounding controls through the register at ``point``."""
        controls = getattr(self, "_controls", {})
        regs = register(m, True, f"c{point[0]}", {**values, **{f"ctl_{k}": v
                                                              for k, v in controls.items()}})
        self._controls = {k: regs.pop(f"ctl_{k}") for k in controls}
        return regs

    def core(self, m: Module, ops: list[Operand]) -> Raw:
        """The unit's exact core (decode -> *core* -> round); every unit class defines it."""
        raise TypeError(f"{type(self).__name__} defines no exact core")

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        cuts = spec.cut_points
        controls = {}
        if spec.has_rm:
            controls["rm"] = self.rm
        if spec.has_rbits:
            controls["rbits"] = self.rbits
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

        # Cut "decode": the decoded operands (and the rounding controls with them).
        if "decode" in cuts:
            controls = register(m, True, "s0", controls)
            ops = [registered(m, f"s0_{port}", op) for port, op in zip(spec.operands, ops)]
        # Cuts inside the core ("product", "align"): the core calls self.stage, which registers
        # its values there and the rounding controls with them.
        self._controls = controls
        raw = self.core(m, ops)
        controls = self._controls

        # Cut "core": after the exact core.
        p = register(m, "core" in cuts, "s1", {**raw.values(), **controls})
        staged = Raw(**{**raw.__dict__, **{k: p[k] for k in raw.values()}})

        rounder = Rounder(spec.out_fmt, spec.options, staged, rm=p.get("rm"),
                          rbits=p.get("rbits"), register="round" in cuts)
        m.submodules[rounder.name] = rounder

        # Stages beyond the cuts: output registers (numbered on from 3, as they always were).
        out = {"y": rounder.y, "flags": rounder.flags}
        for i in range(3, 3 + spec.stages - len(cuts)):
            out = register(m, True, f"s{i}", out)
        m.d.comb += [self.y.eq(out["y"]), self.flags.eq(out["flags"])]

        if spec.stages:
            valid_chain(m, self.valid_i, self.valid_o, spec.stages)
        return m


def registered(m: Module, prefix: str, op: Operand) -> Operand:
    """``op`` with its signals through a pipeline register; what is known statically stays."""
    fields = ("sign", "exp", "sig", "zero", "inf", "nan", "invalid")
    r = register(m, True, prefix, {f: getattr(op, f) for f in fields})
    return replace(op, **r)
