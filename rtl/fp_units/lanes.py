"""Packed SIMD lanes (``--lanes``, ``--simd-width``): one scalar unit per lane, as CVFPU builds
them (docs/multiformat.md, "Lanes").

Lane j is a unit over the members that use it (``spec.member_lanes(i) > j``): that member's own
single-format unit when one member does, else a one-lane multi-format unit over the subset, its
``fmt`` remapped from the unit's. Every lane unit has the unit's pipeline, so every lane has the
unit's latency and one valid chain (lane 0's) serves them all.

The wrapper only moves bits: each lane's operand elements taken from the ports by ``fmt`` (a
multiplexer over the members' element positions when the lanes are packed at each member's
width; a fixed slot otherwise), the lane results packed by ``fmt`` (the fmt delayed by the
latency, beside the lane units' own pipelines), lanes and bits a member does not use driven 0,
flags 5 bits per lane, and a ``fmt`` code with no member: y = 0 and invalid in every lane.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import Cat, Const, Module, Signal

from ..multiformat import FMT_PORT, MultiFormatSpec
from ..options import FLAGS_WIDTH, Flag
from ..kinds import build
from .common import register
from .unit import Unit

__all__ = ["Lanes", "lane_spec"]


def lane_users(spec: MultiFormatSpec, lane: int) -> tuple[int, ...]:
    """The members (fmt codes) that compute in ``lane``."""
    return tuple(i for i in range(len(spec.members)) if spec.member_lanes(i) > lane)


def lane_spec(spec: MultiFormatSpec, lane: int):
    """The one-lane unit of ``lane``: the member's own spec when one member uses it, else a
    multi-format spec over the members that do (their order kept: fmt code i of the subset is
    its i-th user); with the unit's pipeline either way."""
    users = lane_users(spec, lane)
    if len(users) == 1:
        return replace(spec.members[users[0]], pipeline=spec.pipeline)
    return MultiFormatSpec(tuple(spec.members[i] for i in users), pipeline=spec.pipeline)


class Lanes(Unit):
    """A multi-lane MultiFormatSpec's unit: a scalar unit per lane (module docstring)."""

    def __init__(self, spec: MultiFormatSpec):
        if not isinstance(spec, MultiFormatSpec) or spec.max_lanes < 2:
            raise TypeError(f"Lanes implements multi-format specs of two or more lanes, not "
                            f"{spec!r}")
        self.unit = spec.unit
        super().__init__(spec)

    def _operand(self, m: Module, role: str, lane: int, users, width: int):
        """Lane ``lane``'s element of input ``role`` (``width`` bits, the lane unit's port): a
        fixed slice when every user's element starts at the same bit, else chosen by fmt."""
        spec, port = self._spec, getattr(self, role)
        places = {i: spec.element(i, role, lane) for i in users}
        if len({low for low, _ in places.values()}) == 1:
            low = next(iter(places.values()))[0]
            return port[low:min(low + width, len(port))]
        value = Signal(width, name=f"lane{lane}_{role}")
        with m.Switch(self.fmt):
            for i, (low, w) in places.items():
                with m.Case(i):
                    m.d.comb += value.eq(port[low:low + w])
        return value

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        k = len(spec.members)
        everyone = tuple(range(k))
        lanes = []                   # (users, lane unit) per lane
        for j in range(spec.max_lanes):
            users, sub = lane_users(spec, j), lane_spec(spec, j)
            unit = m.submodules[f"lane{j}"] = build(sub)
            for role in spec.operands:
                m.d.comb += getattr(unit, role).eq(
                    self._operand(m, role, j, users, sub.port(role).width))
            if isinstance(sub, MultiFormatSpec) and sub.has_fmt:
                if users == everyone:
                    m.d.comb += unit.fmt.eq(self.fmt)
                else:
                    with m.Switch(self.fmt):
                        for code, i in enumerate(users):
                            with m.Case(i):
                                m.d.comb += unit.fmt.eq(code)
            if spec.has_rm:
                m.d.comb += unit.rm.eq(self.rm)
            if spec.has_rbits:
                r = spec.options.sr_bits
                m.d.comb += unit.rbits.eq(self.rbits[j * r:(j + 1) * r])
            if spec.stages:
                m.d.comb += unit.valid_i.eq(self.valid_i)
            lanes.append((users, unit))
        if spec.stages:
            m.d.comb += self.valid_o.eq(lanes[0][1].valid_o)

        if not spec.has_fmt:         # one member: every lane is its, in fixed places
            m.d.comb += self.flags.eq(Cat(*(unit.flags for _, unit in lanes)))
            for j, (_, unit) in enumerate(lanes):
                low, w = spec.element(0, "y", j)
                m.d.comb += self.y[low:low + w].eq(unit.y[:w])
            return m
        if not spec.packed:          # every member in every lane: the lane units select
            slot = spec.slot_width("y")
            m.d.comb += [self.flags.eq(Cat(*(unit.flags for _, unit in lanes))),
                         self.y.eq(Cat(*(Cat(unit.y, Const(0, slot - len(unit.y)))
                                         for _, unit in lanes)))]
            return m

        # Packed members: the fmt of the operation leaving the lane units (as many registers)
        # places each lane's result and chooses which lanes' flags count.
        fmt = self.fmt
        for s in range(spec.stages):
            fmt = register(m, True, f"s{s + 1}", {"fmt": fmt})["fmt"]
        with m.Switch(fmt):
            for i in everyone:
                with m.Case(i):
                    for j in range(spec.member_lanes(i)):
                        low, w = spec.element(i, "y", j)
                        m.d.comb += self.y[low:low + w].eq(lanes[j][1].y[:w])
        # A lane of every member reports its unit's flags (invalid for a code without a
        # member, as the unit has it); another lane its unit's where the member uses it, 0
        # where it does not, invalid for a code without a member.
        flags = []
        for j, (users, unit) in enumerate(lanes):
            if users == everyone:
                flags.append(unit.flags)
                continue
            f = Signal(FLAGS_WIDTH, name=f"lane{j}_flags")
            with m.Switch(fmt):
                with m.Case(*users):
                    m.d.comb += f.eq(unit.flags)
                with m.Case(*everyone):
                    pass
                with m.Default():
                    m.d.comb += f.eq(int(Flag.NV))
            flags.append(f)
        m.d.comb += self.flags.eq(Cat(*flags))
        return m
