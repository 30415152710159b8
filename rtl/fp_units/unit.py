"""The frame every unit shares (:class:`Unit`: the signature from ``spec.ports()``, the spec
read-only, the latency, the pipeline: ``cut``/``stage`` at the spec's cut points, ``outputs``),
and the scalar units' frame (:class:`FpUnit`: decoders, pipeline cuts, the rounder).

A scalar unit subclass only writes its exact core (``core``: decoded operands -> :class:`Raw`).

Pipeline placement: registers sit at the spec's ``cut_points`` (rtl/pipeline.py), which each
kind names along its datapath (``Spec.CUT_POINTS``). The scalar units: ``decode`` after the
operand decoders, ``product`` and ``align`` inside the core (a multiplier's partial products, an
adder's aligned operands: the core asks ``stager``), ``core`` after the exact core (the raw
result), ``round`` inside the rounder (after normalization). Stages beyond the cuts are output
registers (``outputs``). ``--stages N`` alone fills the kind's default order (scalar units:
core, then round); ``--cuts`` (or ``--clock-ps``) chooses others. ``valid`` travels with the
data and is cleared by reset.
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

    # ----- the pipeline ---------------------------------------------------------------------------
    def register_name(self, point: str) -> str:
        """The prefix of the registers at cut ``point``: ``s1``, ``s2`` in the default order
        (as they always were), else ``c`` and the point's initial."""
        order = self._spec.default_cuts
        return f"s{order.index(point) + 1}" if point in order else f"c{point[0]}"

    def cut(self, m: Module, point: str, values: dict) -> dict:
        """``values`` through the register at ``point`` when the spec has one there, else
        themselves."""
        return register(m, point in self._spec.cut_points, self.register_name(point), values)

    def cut_operand(self, m: Module, point: str, name: str, op: Operand) -> Operand:
        """An operand through the register at ``point`` when the spec has one there."""
        if point not in self._spec.cut_points:
            return op
        return registered(m, f"{self.register_name(point)}_{name}", op)

    def delayed(self, m: Module, values: dict, until: str) -> dict:
        """Values a later step reads (a scale input, random bits) through every cut before
        the point ``until``, so that they arrive with the data."""
        points = self._spec.pipeline_points
        for point in points[:points.index(until)]:
            values = self.cut(m, point, values)
        return values

    def stager(self, m: Module, point: str):
        """What a core calls at its cut ``point``: a function registering the values it is given
        (and the values carried with them), or None when the spec has no register there (the
        core then builds its combinational datapath unchanged)."""
        if point not in self._spec.cut_points:
            return None
        return lambda values: self.stage(m, point, values)

    def stage(self, m: Module, point: str, values: dict) -> dict:
        """``values`` and the carried values (a scalar unit's rounding controls) through the
        register at ``point``."""
        carried = getattr(self, "_carried", {})
        regs = register(m, True, self.register_name(point),
                        {**values, **{f"ctl_{k}": v for k, v in carried.items()}})
        self._carried = {k: regs.pop(f"ctl_{k}") for k in carried}
        return regs

    def outputs(self, m: Module, values: dict) -> None:
        """The output ports from ``values`` through the stages beyond the cuts (numbered on
        after the default order), and valid_o."""
        spec = self._spec
        first = 1 + len(spec.default_cuts)
        for i in range(first, first + spec.stages - len(spec.cut_points)):
            values = register(m, True, f"s{i}", values)
        m.d.comb += [getattr(self, port).eq(v) for port, v in values.items()]
        if spec.stages:
            valid_chain(m, self.valid_i, self.valid_o, spec.stages)


class FpUnit(Unit):
    """Base of the scalar floating-point units. Subclasses set ``unit`` and implement ``core``."""

    # Decode ``normalize``: the core takes operands with the hidden bit set (zeros by flag).
    normalized_operands: bool = False
    # False: the core gates zero operands itself, so the decoders leave a flushed subnormal's
    # fraction in sig (Operand.sig_cleared) instead of clearing it.
    decoders_clear_flushed: bool = True
    # The rounder's ``early_overflow`` (measured smaller in the multipliers only).
    early_overflow: bool = False

    def __init__(self, spec: ScalarSpec):
        super().__init__(spec)

    def decoded_operands(self, m: Module) -> list[Operand]:
        """Step 1: each operand port through its decoder."""
        spec, ops = self._spec, []
        for port, fmt in zip(spec.operands, spec.in_fmts):
            dec = Decode(fmt, normalize=self.normalized_operands,
                         clear_flushed=self.decoders_clear_flushed)
            m.submodules[f"dec_{port}_{fmt.ident}"] = dec
            m.d.comb += dec.code.eq(getattr(self, port))
            ops.append(Operand(sign=dec.sign, exp=dec.exp, off=dec.off, sig=dec.sig,
                               width=dec.width, exp_range=dec.exp_range, lz_max=dec.lz_max,
                               zero=dec.is_zero, inf=dec.is_inf, nan=dec.is_nan,
                               invalid=dec.is_snan, sig_cleared=dec.sig_cleared))
        return ops

    def core(self, m: Module, ops: list[Operand]) -> Raw:
        """The unit's exact core (decode -> *core* -> round); every unit class defines it."""
        raise TypeError(f"{type(self).__name__} defines no exact core")

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        cuts = spec.cut_points
        controls = self.controls()
        ops = self.decoded_operands(m)

        # Cut "decode": the decoded operands (and the rounding controls with them).
        if "decode" in cuts:
            controls = register(m, True, "s0", controls)
            ops = [registered(m, f"s0_{port}", op) for port, op in zip(spec.operands, ops)]
        # Cuts inside the core ("product", "align"): the core calls self.stage, which registers
        # its values there and the rounding controls with them.
        self._carried = controls
        raw = self.core(m, ops)
        controls = self._carried

        # Cut "core": after the exact core.
        p = self.cut(m, "core", {**raw.values(), **controls})
        staged = Raw(**{**raw.__dict__, **{k: p[k] for k in raw.values()}})

        self.outputs(m, self.rounded(m, staged, p))
        return m

    def controls(self) -> dict:
        """The control inputs that travel with the data through every cut (rm, rbits)."""
        controls = {}
        if self._spec.has_rm:
            controls["rm"] = self.rm
        if self._spec.has_rbits:
            controls["rbits"] = self.rbits
        return controls

    @property
    def frame_format(self):
        """The result format the cores size their frames for (aligned_sum's guard bits)."""
        return self._spec.out_fmt

    def rounded(self, m: Module, raw: Raw, controls: dict) -> dict:
        """Steps 3-4: the raw result through the rounder, as the output ports' values."""
        rounder = Rounder(self._spec.out_fmt, self._spec.options, raw, rm=controls.get("rm"),
                          rbits=controls.get("rbits"), register="round" in self._spec.cut_points,
                          # A register inside the rounder splits what the early test shortens:
                          # measured larger and slower there (fp16 mul, 2 stages).
                          early_overflow=self.early_overflow and
                          "round" not in self._spec.cut_points)
        m.submodules[rounder.name] = rounder
        return {"y": rounder.y, "flags": rounder.flags}


def registered(m: Module, prefix: str, op: Operand) -> Operand:
    """``op`` with its signals through a pipeline register; what is known statically stays."""
    fields = ("sign", "exp", "sig", "zero", "inf", "nan", "invalid")
    r = register(m, True, prefix, {f: getattr(op, f) for f in fields})
    return replace(op, **r)
