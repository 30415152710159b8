"""Stimulus of a multi-format or multi-lane unit (rtl/multiformat.py): every member's own scalar
stimulus, placed into its elements, with the format drawn per vector (a multi-format dot,
rtl/multidot.py: every member's dot parts, each element in the low bits of its slot).

Each part of SCALAR_PARTS (``corners``, ``relations``, ``random``) is drawn for every member on
the member's own spec (sim/stimulus/scalar.py), lane by lane (each lane a different ordering of
the member's operand tuples, so a tuple stays related and the lanes differ), with ``fmt`` the
member's code. The bits outside the member's elements (a narrower member's slot bits above its
code, the lanes and packed bits it does not use) are uniform random: the unit must ignore them,
so a unit that reads them is caught. ``unused``: ``count`` vectors of uniform bits with each
``fmt`` code that has no member (y = 0 and NV in every lane, rtl/multiformat.py). The members'
vectors are shuffled together, so consecutive operations switch format (what a pipelined unit
must do without leaking state between them). ``rm`` and ``rbits`` are drawn per vector (rbits
per lane) as for every kind (sim/stimulus/base.py).
"""

from __future__ import annotations

import numpy as np

from fpforge.rtl.multiformat import FMT_PORT, MultiFormatSpec

from .base import unknown_part
from .dot import DOT_PARTS, dot_part
from .scalar import SCALAR_PARTS, scalar_part

__all__ = ["MULTI_PARTS", "multi_part", "unused_codes", "place"]

MULTI_PARTS = SCALAR_PARTS + DOT_PARTS + ("unused",)


def unused_codes(spec: MultiFormatSpec) -> list[int]:
    """The ``fmt`` codes with no member (none without a fmt port)."""
    return list(range(len(spec.members), 1 << spec.fmt_width)) if spec.has_fmt else []


def _uniform(rng, n: int, lanes: int, bits: int) -> np.ndarray:
    """n rows of ``lanes`` uniform ``bits``-bit words (uint64)."""
    return rng.integers(0, 1 << bits, (n, lanes), dtype=np.uint64, endpoint=False) \
        if bits < 64 else rng.integers(0, np.iinfo(np.uint64).max, (n, lanes), np.uint64,
                                       endpoint=True)


def place(spec: MultiFormatSpec, i: int, role: str, elements: np.ndarray,
          background: np.ndarray) -> np.ndarray:
    """Member ``i``'s codes ``elements`` (N, its lanes) written into its elements of port
    ``role`` over ``background`` (N, the port's lanes: whatever fills the other bits)."""
    out = background.astype(np.uint64)
    lanes = spec.port(role).lanes
    for j in range(elements.shape[1]):
        low, w = spec.element(i, role, j)
        col, shift = (j, 0) if lanes > 1 else (0, low)
        mask = np.uint64(((1 << w) - 1) << shift)
        out[:, col] = (out[:, col] & ~mask) | (elements[:, j].astype(np.uint64) << np.uint64(shift))
    return out


def _member_vectors(spec: MultiFormatSpec, i: int, name: str, params: dict, rng) -> dict:
    """Member ``i``'s part ``name`` in every lane, placed into the unit's ports."""
    member = spec.members[i]
    drawn = scalar_part(member, name, params, rng)
    n = len(drawn[member.operands[0]])
    lanes = spec.member_lanes(i)
    # Lane 0 as drawn, every other lane its own ordering of the same operand tuples.
    orders = [np.arange(n)] + [rng.permutation(n) for _ in range(lanes - 1)]
    out = {}
    for op in spec.operands:
        port = spec.port(op)
        elems = np.stack([np.asarray(drawn[op])[o] for o in orders], axis=1)
        out[op] = place(spec, i, op, elems, _uniform(rng, n, port.lanes, port.lane_width))
    if spec.has_fmt:
        out[FMT_PORT] = np.full((n, 1), i, np.uint64)
    return out


def _member_block(spec: MultiFormatSpec, i: int, name: str, params: dict, rng) -> dict:
    """Member ``i``'s dot part ``name`` (sim/stimulus/dot.py) on the unit's ports: each vector
    element's code in the low bits of its slot, random bits above it; scales and c as drawn."""
    member = spec.members[i]
    drawn = dot_part(member, name, params, rng)
    n = len(drawn["a"])
    out = {}
    for p, v in drawn.items():
        v = np.asarray(v).astype(np.uint64).reshape(n, -1)
        port = spec.port(p)
        if p in ("a", "b") and port.lane_width > member.port(p).lane_width:
            keep = np.uint64((1 << member.port(p).lane_width) - 1)
            v = (_uniform(rng, n, port.lanes, port.lane_width) & ~keep) | v
        out[p] = v
    if spec.has_fmt:
        out[FMT_PORT] = np.full((n, 1), i, np.uint64)
    return out


def _unused_vectors(spec: MultiFormatSpec, count: int, rng) -> dict:
    codes = unused_codes(spec)
    n = count if codes else 0
    out = {p.name: _uniform(rng, n, p.lanes, p.lane_width) for p in spec.inputs()
           if p.name not in (FMT_PORT, "rm", "rbits")}
    if spec.has_fmt:
        out[FMT_PORT] = rng.choice(np.asarray(codes or [0], np.uint64), (n, 1))
    return out


def multi_part(spec: MultiFormatSpec, name: str, params: dict, rng) -> dict:
    """Part ``name`` of a multi-format spec (module docstring): {port: (N, lanes) uint64}."""
    if name == "unused":
        pieces = [_unused_vectors(spec, int(params.get("count", 256)), rng)]
    elif not spec.LANE_AXIS and name in DOT_PARTS:     # a multi-format dot (rtl/multidot.py)
        pieces = [_member_block(spec, i, name, params, rng) for i in range(len(spec.members))]
    elif spec.LANE_AXIS and name in SCALAR_PARTS:
        pieces = [_member_vectors(spec, i, name, params, rng) for i in range(len(spec.members))]
    else:
        raise unknown_part(spec, name, MULTI_PARTS)
    out = {p: np.concatenate([piece[p] for piece in pieces]) for p in pieces[0]}
    perm = rng.permutation(len(next(iter(out.values()))))
    return {p: v[perm] for p, v in out.items()}
