"""The golden model of a multi-format or multi-lane unit (rtl/multiformat.py): each member's own
golden function, per lane, chosen per operation by ``fmt``.

Nothing here rounds: every member is evaluated by its kind's golden function (integer-exact) on
its elements of the operand ports, and the packed results are selected by ``fmt``; the rules for
bits a member does not use and for ``fmt`` codes without a member are rtl/multiformat.py's.
"""

from __future__ import annotations

from fpforge.rtl.kinds import golden_function
from fpforge.rtl.multiformat import FMT_PORT, MultiFormatSpec
from fpforge.rtl.options import Flag

from ._jax import U64, jnp, uint_dtype

__all__ = ["multi_unit"]


def _lanes_of(spec: MultiFormatSpec, port: str, value, i: int):
    """Member ``i``'s elements of input ``port``: an array whose last axis is its lanes."""
    x = jnp.asarray(value).astype(U64)
    n = spec.member_lanes(i)
    if spec.port(port).lanes > 1:            # a lane axis already: one slot per lane
        return x[..., :n]
    low, w = zip(*(spec.element(i, port, j) for j in range(n)))
    shifts = jnp.asarray(low, U64)
    return (x[..., None] >> shifts) & jnp.asarray((1 << w[0]) - 1, U64)


def _member_ports(spec: MultiFormatSpec, inputs: dict, i: int) -> dict:
    """Member ``i``'s inputs on the ports as they are (not ``LANE_AXIS``: a dot's lanes are its
    vector's elements): each lane cut to the member's element width."""
    member = spec.members[i]
    return {p: jnp.asarray(v).astype(U64) & jnp.asarray((1 << member.port(p).lane_width) - 1,
                                                          U64)
            for p, v in inputs.items() if p != FMT_PORT}


def _member_inputs(spec: MultiFormatSpec, inputs: dict, i: int) -> dict:
    if not spec.LANE_AXIS:
        return _member_ports(spec, inputs, i)
    out = {p: _lanes_of(spec, p, inputs[p], i) for p in spec.operands}
    if spec.has_rm:
        out["rm"] = jnp.asarray(inputs["rm"])[..., None]
    if spec.has_rbits:
        rbits = jnp.asarray(inputs["rbits"])
        out["rbits"] = rbits[..., :spec.member_lanes(i)] if spec.max_lanes > 1 else \
            rbits[..., None]
    return out


def _packed(spec: MultiFormatSpec, i: int, y, flags):
    """Member ``i``'s lane results on the unit's output ports (unused bits and lanes 0)."""
    y = jnp.asarray(y).astype(U64)
    n, L = spec.member_lanes(i), spec.max_lanes
    if not spec.LANE_AXIS:
        return y, flags
    if spec.packed:
        low = jnp.asarray([spec.element(i, "y", j)[0] for j in range(n)], U64)
        y = jnp.bitwise_or.reduce(y << low, axis=-1)
    elif L > 1:
        y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, L - n)])
    else:
        y = y[..., 0]
    if flags is not None:
        flags = jnp.asarray(flags).astype(jnp.uint8)
        flags = jnp.pad(flags, [(0, 0)] * (flags.ndim - 1) + [(0, L - n)]) if L > 1 else \
            flags[..., 0]
    return y, flags


def multi_unit(spec: MultiFormatSpec, inputs: dict, want=("y", "flags")) -> dict:
    """What the multi-format unit ``spec`` gives (golden.evaluate's contract)."""
    with_flags = "flags" in want
    fmt = jnp.asarray(inputs[FMT_PORT]) if spec.has_fmt else jnp.zeros((), jnp.uint8)
    L = spec.max_lanes
    y_port, flags_port = spec.port("y"), spec.port("flags")
    shape = jnp.broadcast_shapes(*(jnp.shape(inputs[p]) if spec.port(p).lanes == 1 else
                                   jnp.shape(inputs[p])[:-1] for p in inputs))
    lane_axis = (L,) if L > 1 else ()
    y = jnp.zeros(shape + ((y_port.lanes,) if y_port.lanes > 1 else ()), U64)
    # A fmt code without a member: y = 0, invalid in every lane.
    flags = jnp.full(shape + lane_axis, int(Flag.NV), jnp.uint8)
    for i, member in enumerate(spec.members):
        member = member.numerics()
        out = golden_function(member)(member, _member_inputs(spec, inputs, i),
                                      ("y", "flags") if with_flags else ("y",))
        yi, fi = _packed(spec, i, out["y"], out.get("flags"))
        chosen = fmt == i
        y = jnp.where(chosen[..., None] if y_port.lanes > 1 else chosen, yi, y)
        if with_flags:
            flags = jnp.where(chosen[..., None] if L > 1 else chosen, fi, flags)
    outs = {"y": y.astype(uint_dtype(y_port.lane_width)), "flags": flags}
    return {p: outs[p] for p in want}
