"""The operand data sets energy is measured on (synth/power.py), by name.

``uniform``   random codes: every bit of every operand a fair coin (the most switching).
``gaussian``  N(0, 1) values quantized to each operand's format with the golden model's
              integer-exact quantizer (round to nearest even, saturating).
``minilm``    all-MiniLM-L6-v2's own numbers (codesign/minilm.py): a Linear layer's input
              activations and weights, each tensor scaled into the operand's format (its
              largest magnitude to the format's largest finite value) and quantized as above;
              a mul takes (activation, weight) pairs, an add (activation, activation), an fma
              (activation, weight, activation).
``zeros``     idle operands: all-zero codes.

Inputs that are not operands keep their defaults: a dynamic rounding mode ``rm`` is 0 (rne),
stochastic rounding's ``rbits`` are fresh random bits every operation (what the unit needs) in
every set but ``zeros``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.options import OptionError

__all__ = ["DATA_SETS", "DEFAULT_DATA", "DEFAULT_VECTORS", "check_data", "operand_vectors"]

DATA_SETS = ("uniform", "gaussian", "minilm", "zeros")
DEFAULT_DATA = "gaussian"
DEFAULT_VECTORS = 2000


def check_data(data: str) -> None:
    if data not in DATA_SETS:
        raise OptionError(f"unknown data set {data!r}; the data sets are "
                          f"{', '.join(DATA_SETS)}")


def _uniform(rng, n: int, lanes: int, width: int) -> np.ndarray:
    words = rng.integers(0, 1 << min(width, 62), size=(n, lanes), dtype=np.int64)
    if width > 62:      # float32 and wider: the top bits from a second draw
        high = rng.integers(0, 1 << (width - 62), size=(n, lanes), dtype=np.int64)
        words = words.astype(object) | (high.astype(object) << 62)
    return words


def _codes(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """float32 values -> ``fmt`` codes, by the golden quantizer (rne, saturating)."""
    from fpforge.golden.quantize import quantize
    return np.asarray(quantize(np.asarray(values, np.float32), fmt, saturate=True)).astype(
        np.int64)


@lru_cache(maxsize=1)
def _minilm_tensors() -> tuple[np.ndarray, np.ndarray]:
    """(activations, weights), flattened float32: every Linear layer's input and weight tensor
    as the model runs the corpus and queries, each tensor divided by its largest magnitude (the
    per-tensor scaling; _scaled then maps 1 onto the format's largest value)."""
    import jax.numpy as jnp

    from . import minilm
    acts, weights = [], []

    def recording(x, w):
        for store, t in ((acts, x), (weights, w)):
            t = np.asarray(t, np.float32).ravel()
            store.append(t / (float(np.max(np.abs(t))) or 1.0))
        return jnp.matmul(x, w)
    minilm.embed(minilm.CORPUS + minilm.QUERIES, recording)
    return np.concatenate(acts), np.concatenate(weights)


def _scaled(values: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Values in [-1, 1] (each tensor over its largest magnitude) onto the format's range."""
    return (values * np.float32(float(fmt.max_finite))).astype(np.float32)


def _sample(rng, pool: np.ndarray, shape) -> np.ndarray:
    return pool[rng.integers(0, pool.size, size=shape)]


def _operand(data: str, rng, role_index: int, port, fmt: FloatFormat, n: int) -> np.ndarray:
    shape = (n, port.lanes)
    if data == "gaussian":
        return _codes(rng.standard_normal(shape).astype(np.float32), fmt)
    # minilm: activations in the first and third operand roles, weights in the second.
    acts, weights = _minilm_tensors()
    pool = weights if role_index == 1 else acts
    return _codes(_scaled(_sample(rng, pool, shape), fmt), fmt)


def operand_vectors(spec, data: str, n: int = DEFAULT_VECTORS, seed: int = 0) -> dict:
    """Data input name -> (n, lanes) integer codes (n,) for one lane, for every data input of
    ``spec``'s unit (spec.inputs()), from the data set ``data`` (DATA_SETS)."""
    check_data(data)
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise OptionError(f"the vector count must be an integer >= 2, not {n!r}")
    rng = np.random.default_rng(seed)
    formats = spec.formats()
    roles = [p.name for p in spec.inputs() if p.name in formats]
    out = {}
    for port in spec.inputs():
        if data == "zeros" or port.name == "rm":
            codes = np.zeros((n, port.lanes), dtype=np.int64)
        elif port.name not in formats or data == "uniform":
            codes = _uniform(rng, n, port.lanes, port.lane_width)
        else:
            codes = _operand(data, rng, roles.index(port.name), port, formats[port.name], n)
        out[port.name] = codes[:, 0] if port.lanes == 1 else codes
    return out
