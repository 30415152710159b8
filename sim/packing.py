"""numpy <-> wide simulator values, without a Python int or a LogicArray per lane.

A transaction of K lanes of a ``w``-bit port is one ``K*w``-bit value, lane 0 in the low bits.
The simulators take and give wide values as binary strings (VPI ``vpiBinStrVal``, MSB first),
so a whole batch of transactions is converted at once: codes -> bits (numpy) -> ASCII '0'/'1'
bytes -> one ``str`` per transaction, and back. Building a Python int per lane, or letting
cocotb build a LogicArray per value, costs far more than the simulation of a small unit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_binstr", "from_binstr", "UndefinedBits"]


class UndefinedBits(ValueError):
    """An output held x or z bits."""


_TABLES: dict[int, np.ndarray] = {}
MAX_WIDTH = 32


def _chars(width: int) -> np.ndarray:
    """(2^min(width,16), min(width,16)) table: a code's ASCII binary digits, MSB first."""
    w = min(width, 16)
    if w not in _TABLES:
        codes = np.arange(1 << w, dtype=np.uint32)[:, None]
        shifts = np.arange(w - 1, -1, -1, dtype=np.uint32)
        _TABLES[w] = (((codes >> shifts) & 1) + ord("0")).astype(np.uint8)
    return _TABLES[w]


def to_binstr(codes: np.ndarray, width: int) -> list[str]:
    """(T, K) array of ``width``-bit codes -> T binary strings of K*width characters."""
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be a (transactions, lanes) array, not shape {codes.shape}")
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"width must be 1..{MAX_WIDTH}, not {width}")
    lanes = codes[:, ::-1].astype(np.uint32)
    if width <= 16:
        chars = np.take(_chars(width), lanes & ((1 << width) - 1), axis=0)
    else:   # two table look-ups: high part, then the low 16 bits
        hi = np.take(_chars(width - 16), (lanes >> 16) & ((1 << (width - 16)) - 1), axis=0)
        chars = np.concatenate([hi, np.take(_chars(16), lanes & 0xFFFF, axis=0)], axis=2)
    n = width * codes.shape[1]
    blob = chars.tobytes().decode("ascii")
    return [blob[i * n:(i + 1) * n] for i in range(codes.shape[0])]


# "x or z bits here": a code no port lane of <= 32 bits has (a 32-bit lane's all-ones code, a
# float32 NaN or int32 -1, is a value like any other).
UNDEFINED = np.uint64(1 << 32)


def from_binstr(values: list[str], width: int, lanes: int, *, undefined: str = "raise"
                ) -> np.ndarray:
    """T binary strings (K*width characters, MSB first, width <= 32) -> (T, K) uint64 codes.

    Codes holding x or z bits raise :class:`UndefinedBits`, or with ``undefined="mark"``
    become :data:`UNDEFINED` (so a checker reports them as mismatching vectors)."""
    n = width * lanes
    blob = np.frombuffer("".join(values).encode("ascii"), dtype=np.uint8)
    if blob.size != n * len(values):
        sizes = sorted({len(v) for v in values})
        raise ValueError(f"expected {n}-character values ({lanes} lanes x {width} bits), "
                         f"got lengths {sizes}")
    bits = blob - np.uint8(ord("0"))
    marks = None
    if bits.size and bits.max() > 1:
        if undefined != "mark":
            bad = sorted({chr(c) for c in np.unique(blob) if c not in (48, 49)})
            raise UndefinedBits(f"outputs hold non-binary bits {bad}")
        marks = (bits > 1).reshape(len(values), lanes, width).any(axis=2)[:, ::-1]
        bits = np.where(bits > 1, 0, bits).astype(np.uint8)
    # A matrix product with the bit weights is the fastest bits -> integer in numpy (BLAS);
    # float32 is exact up to 24 bits, float64 beyond.
    dtype = np.float32 if width <= 24 else np.float64
    weights = (2.0 ** np.arange(width - 1, -1, -1)).astype(dtype)
    value = bits.reshape(-1, width).astype(dtype) @ weights
    codes = value.astype(np.uint64).reshape(len(values), lanes)[:, ::-1]
    return codes if marks is None else np.where(marks, UNDEFINED, codes)
