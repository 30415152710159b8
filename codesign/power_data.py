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

A dot unit with block scales takes its vectors as a quantizer makes them: each vector's groups
(one per scale: n / --sum-group lanes, else all n) quantized together, E8M0 scales by the MX
quantizer (golden.mx.mx_quantize, OCP's floor rule), value scales (float8_e4m3fn: NVFP4's) by
the NVFP4 recipe (golden.blockscale, torchao's, on groups of the unit's size) -- the scale
ports carry the recipe's scale codes, the element ports its element codes; ``uniform`` draws
scale codes at random like any other bits.

Inputs that are not operands keep their defaults: a dynamic rounding mode ``rm`` is 0 (rne),
stochastic rounding's ``rbits`` are fresh random bits every operation (what the unit needs) in
every set but ``zeros``.

A multi-format unit (rtl/multiformat.py) is measured with its ``fmt`` input held at one member
(``member=i``): the operands are member i's own vectors (as member i alone takes them) in member
i's elements, every other operand bit 0, so "multi-format unit running E2M1" and "the E2M1 unit"
see the same numbers.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.options import OptionError

__all__ = ["DATA_SETS", "DEFAULT_DATA", "DEFAULT_VECTORS", "check_data", "check_vectors",
           "operand_vectors"]

DATA_SETS = ("uniform", "gaussian", "minilm", "zeros")
DEFAULT_DATA = "gaussian"
DEFAULT_VECTORS = 2000


def check_data(data: str) -> None:
    """Raise OptionError for a name not in DATA_SETS, or ``minilm`` where its model is missing."""
    if data not in DATA_SETS:
        raise OptionError(f"unknown data set {data!r}; the data sets are "
                          f"{', '.join(DATA_SETS)}")
    if data == "minilm":
        from . import minilm
        why = minilm.available()
        if why is not None:
            raise OptionError(f"data set minilm: {why}")


def check_vectors(n) -> None:
    """Activity needs two operations at least: one transition."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise OptionError(f"--vectors must be at least 2, not {n!r}")


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


def _values(data: str, rng, role_index: int, shape) -> np.ndarray:
    """Unscaled float32 values of an operand role: N(0, 1), or MiniLM's (each tensor over its
    largest magnitude; block scaling makes the tensor's own scale irrelevant)."""
    if data == "gaussian":
        return rng.standard_normal(shape).astype(np.float32)
    acts, weights = _minilm_tensors()
    return _sample(rng, weights if role_index == 1 else acts, shape)


def _scaled_vectors(spec, data: str, rng, n: int) -> dict:
    """A scaled dot unit's element and scale codes from its block quantizer (module notes)."""
    from dataclasses import replace

    from fpforge.golden.blockscale import block_quantize
    from fpforge.golden.mx import mx_quantize
    from fpforge.rtl.blockscale import preset
    group = spec.n // spec.groups
    out = {}
    for index, (vector, elem) in enumerate((("a", spec.elem_a), ("b", spec.elem_b))):
        x = _values(data, rng, index, (n, spec.n))
        if spec.value_scales:
            recipe = replace(preset("nvfp4_torchao", elem.grid), block=group,
                             scale_fmt=spec.scale_fmt)
            scales, elements, _ = block_quantize(x, recipe)
        else:
            scales, elements = mx_quantize(x, elem, block=group)
        out[vector] = np.asarray(elements).astype(np.int64)
        out[f"scale_{vector}"] = np.asarray(scales).astype(np.int64).reshape(n, spec.groups)
    return out


def operand_vectors(spec, data: str, n: int = DEFAULT_VECTORS, seed: int = 0,
                    member: int | None = None) -> dict:
    """Data input name -> (n, lanes) integer codes (n,) for one lane, for every data input of
    ``spec``'s unit (spec.inputs()), from the data set ``data`` (DATA_SETS); a multi-format
    ``spec`` with ``member``: fmt held at that member (module notes)."""
    check_data(data)
    check_vectors(n)
    if member is not None:
        return _member_vectors(spec, member, data, n, seed)
    rng = np.random.default_rng(seed)
    formats = spec.formats()
    roles = [p.name for p in spec.inputs() if p.name in formats]
    scaled = (spec.unit == "dot" and spec.scaled and data in ("gaussian", "minilm"))
    out = _scaled_vectors(spec, data, rng, n) if scaled else {}
    for port in spec.inputs():
        if port.name in out:
            codes = out[port.name]
        elif data == "zeros" or port.name == "rm":
            codes = np.zeros((n, port.lanes), dtype=np.int64)
        elif port.name not in formats or data == "uniform":
            codes = _uniform(rng, n, port.lanes, port.lane_width)
        else:
            codes = _operand(data, rng, roles.index(port.name), port, formats[port.name], n)
        out[port.name] = codes[:, 0] if port.lanes == 1 else codes
    return out


def _member_vectors(spec, i: int, data: str, n: int, seed: int) -> dict:
    """A multi-format unit's inputs with ``fmt`` = ``i``: member i's own vectors in its elements
    (a dot's: the low bits of each slot; a scalar's: spec.element's bits), 0 elsewhere."""
    from fpforge.rtl.multiformat import FMT_PORT
    members = getattr(spec, "members", ())
    if len(members) < 2:
        raise OptionError(f"{spec.default_name} has no fmt input to hold at a member")
    if not isinstance(i, int) or not 0 <= i < len(members):
        raise OptionError(f"the member fmt is held at must be 0..{len(members) - 1} for "
                          f"{spec.default_name}, not {i!r}")
    lanes = spec.member_lanes(i) if spec.LANE_AXIS else 1
    own = operand_vectors(spec.members[i], data, n * lanes, seed)
    out = {}
    for port in spec.inputs():
        if port.name == FMT_PORT:
            out[port.name] = np.full(n, i, dtype=np.int64)
        elif not spec.LANE_AXIS or port.name not in spec.operands:
            out[port.name] = own[port.name][:n] if lanes > 1 else own[port.name]
        else:                      # member i's lanes at their bits of the port, 0 elsewhere
            codes = np.asarray(own[port.name], dtype=np.int64).reshape(n, lanes)
            words = np.zeros((n, port.lanes), dtype=object)
            for j in range(lanes):
                low, _ = spec.element(i, port.name, j)
                col, shift = (j, 0) if port.lanes > 1 else (0, low)
                words[:, col] = words[:, col] + (codes[:, j].astype(object) << shift)
            out[port.name] = (words[:, 0] if port.lanes == 1 else words).astype(np.int64)
    return out
