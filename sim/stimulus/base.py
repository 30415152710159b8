"""What every kind's stimulus shares: the whole input space (:func:`exhaustive`), the per-vector
mode inputs (``rm``, ``rbits``) and the values of a small format's codes."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.spec import Spec

__all__ = ["space_size", "exhaustive", "index_layout", "IndexChunk", "index_fields", "MODE_PORTS",
           "mode_inputs", "value_table", "code_values",
           "unknown_part"]


def _fields(spec: Spec, held=()) -> list[tuple[str, int, int]]:
    """(port, lanes, lane width) of the inputs the exhaustive space spans (rm and rbits are
    drawn per vector instead; ``held`` ports are constant)."""
    return [(p.name, p.lanes, p.lane_width) for p in spec.inputs()
            if p.name not in MODE_PORTS and p.name not in held]


def index_layout(spec: Spec) -> list[tuple[str, int, int]]:
    """(port, lanes, lane width) of the fields of the exhaustive index, the last in its low
    bits (:func:`exhaustive`; the native simulator splits an index the same way)."""
    return _fields(spec)


def space_size(spec: Spec, held=()) -> int:
    """Number of distinct input tuples (rm and rbits not counted), with the ports ``held``
    constant (a multi-format unit's fmt: one member's space)."""
    return 1 << sum(lanes * w for _, lanes, w in _fields(spec, held))


def exhaustive(spec: Spec, start: int, stop: int, held=None, *,
               narrow: bool = False) -> dict[str, np.ndarray]:
    """Input tuples number ``start`` .. ``stop - 1`` of the whole input space: the last port's
    last element in the low bits of the index; ``held``: {port: value} held constant. Codes
    are uint32, or with ``narrow`` in the narrowest unsigned dtype of their port's lane width
    (the golden model reads uint16 operands in half the time of uint32 ones)."""
    held = held or {}
    dtypes = {p.name: _narrowest(p.lane_width) if narrow else np.uint32 for p in spec.inputs()}
    # A space of at most 2^32 inputs (every 16-bit binary operation) is indexed in uint32: each
    # field is one shift and one mask, and no uint64 index array is written (10x faster).
    dt = np.uint32 if stop <= 1 << 32 else np.uint64
    idx = np.arange(start, stop, dtype=dt)
    out, shift = {}, 0
    for port, lanes, w in reversed(_fields(spec, held)):
        cols = []
        for _ in range(lanes):
            if shift >= 8 * idx.itemsize:     # above the index (--limit of a larger space)
                field = np.zeros(len(idx), dtypes[port])
            else:
                field = idx >> dt(shift) if shift else idx
            # the mask, unless the bits above the field are none or the dtype drops them
            if shift + w < 8 * idx.itemsize and w < 8 * np.dtype(dtypes[port]).itemsize:
                field = field & dt((1 << w) - 1)
            cols.append(field.astype(dtypes[port], copy=False))
            shift += w
        out[port] = cols[0] if lanes == 1 else np.stack(cols[::-1], axis=1)
    out |= {port: np.full(len(idx), value, dtypes[port]) for port, value in held.items()}
    return {port: out[port] for port, _, _ in _fields(spec) if port in out}


class IndexChunk(Mapping):
    """Input tuples ``start`` .. ``stop - 1`` of the whole space (:func:`exhaustive`, narrow),
    drawn only when a port is read: where the simulator and the golden model both split the
    index themselves (the native engine's exhaustive runs), only a mismatch's report, classes
    and dump read the inputs."""

    def __init__(self, spec: Spec, start: int, stop: int):
        self.spec, self.start, self.stop = spec, start, stop
        self._codes: dict | None = None

    def __len__(self) -> int:
        return len(index_layout(self.spec))

    def __iter__(self):
        return (port for port, _, _ in index_layout(self.spec))

    def __getitem__(self, port: str) -> np.ndarray:
        if self._codes is None:
            self._codes = exhaustive(self.spec, self.start, self.stop, narrow=True)
        return self._codes[port]

    @property
    def vectors(self) -> int:
        return self.stop - self.start


def index_fields(spec: Spec, idx, xp=np) -> dict:
    """The ports' codes of the uint32 index array ``idx`` of the array module ``xp`` (numpy or
    jax.numpy: the golden model splits the index inside its compiled program), narrow, as
    :func:`exhaustive` splits it."""
    out, shift = {}, 0
    for port, lanes, w in reversed(index_layout(spec)):
        cols = []
        for _ in range(lanes):
            field = (idx >> shift) & ((1 << w) - 1) if shift < 32 else xp.zeros_like(idx)
            cols.append(field.astype(_narrowest(w)))
            shift += w
        out[port] = cols[0] if lanes == 1 else xp.stack(cols[::-1], axis=1)
    return {port: out[port] for port, _, _ in index_layout(spec)}


def _narrowest(bits: int):
    return next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if bits <= 8 * t().itemsize)


MODE_PORTS = ("rm", "rbits")


def mode_inputs(spec: Spec, rng: np.random.Generator, n: int,
                rm_values=None) -> dict[str, np.ndarray]:
    """Per-vector ``rm`` (every code the port can carry, reserved ones included, or only
    ``rm_values``: the codes a user's module defines) and ``rbits`` (uniform), for the ports the
    spec has."""
    out = {}
    for p in spec.inputs():
        if p.name == "rm" and rm_values is not None:
            out[p.name] = rng.choice(np.asarray(rm_values, np.uint32), n)
        elif p.name in MODE_PORTS:
            shape = (n,) if p.lanes == 1 else (n, p.lanes)
            out[p.name] = rng.integers(0, 1 << p.lane_width, shape,
                                       dtype=np.uint64).astype(np.uint32)
    return out


@functools.lru_cache(maxsize=None)
def value_table(fmt: FloatFormat) -> np.ndarray:
    """float64 value of every code of a <= 16-bit format (exact); NaN for NaNs."""
    codes = np.arange(1 << fmt.width, dtype=np.int64)
    M = fmt.man_bits
    mag = codes & fmt.magnitude_mask
    e, f = mag >> M, mag & ((1 << M) - 1)
    sub = (e == 0) & (fmt.specials is not Specials.FNU)
    sig = np.where(sub, f if fmt.has_subnormals else 0, f + (1 << M)).astype(np.float64)
    v = np.ldexp(sig, (np.where(sub, 1, e) - fmt.bias - M).astype(np.int32))
    v = np.where(codes & fmt.sign_mask, -v, v)
    cls = [fmt.classify(c) for c in range(1 << fmt.width)]   # once per format
    cls = np.array(cls)
    v = np.where(cls == "inf", np.copysign(np.inf, v), v)
    return np.where((cls == "nan") | (cls == "snan"), np.nan, v)


def code_values(fmt: FloatFormat, codes: np.ndarray) -> np.ndarray:
    """float64 values of codes of a <= 16-bit format (NaN for NaNs)."""
    return value_table(fmt)[np.asarray(codes, dtype=np.int64)]


def unknown_part(spec: Spec, name: str, parts: tuple[str, ...]) -> ValueError:
    """The error for a part that ``spec``'s kind does not have; ``parts``: the kind's own."""
    return ValueError(f"unknown stimulus part {name!r} for unit {spec.unit}; valid: "
                      f"{', '.join(('exhaustive', *parts))}")
