"""Stimulus for the benches, keyed by kind: exhaustive ranges, named corner classes, relations
between operands, biased random, and the block kinds' structured blocks.

A stimulus is a list of parts ``[name, params]``, run in order. :func:`generate` yields chunks of
input arrays, one per data input port of the spec (``spec.inputs()``): shape (N,) for a one-lane
port, (N, lanes) for a packed bus (element i in column i, the unit's bits [i*w +: w]). Every
draw comes from the ``numpy.random.Generator`` passed in, seeded by the run's seed, so a run is
repeated exactly by it.

Parts (``PARTS``):

- every kind: ``exhaustive`` (``start``/``stop``: a range of the whole input space; every data
  input but rm and rbits, the last port's last element in the low bits of the index; ``held``:
  {port: value} held constant, a multi-format unit's fmt), ``file``
  (``path``: the vectors of a vector file, sim/vectors.py);
- scalar kinds (mul, add, sub, fma, cvt): ``corners`` (:class:`Corner` codes crossed over all
  operands), ``relations`` (operands aimed at exponent differences 0/1/large, massive
  cancellation, exact ties and just above/below, overflow and underflow thresholds, through the
  kind's real-number operation ``spec.EXACT``: exact in float64 for products and sums of
  <= 16-bit formats, a guide only for wider ones, where it only picks stimuli and never decides
  an expectation), ``random`` (``count``: biased random); ``rm`` and ``rbits`` are drawn per
  vector;
- min, max, cmp, classify, sgnj: ``corners`` (as the scalar kinds), ``random`` (``count``:
  uniform and corner codes, and b equal to a, a negated or one code away); control inputs
  (sgnj's op, cmp's signaling) uniform;
- i2f, f2i: ``corners`` (the integer range's ends, powers of two, ties at the rounding
  position), ``random`` (``count``: every binade alike, a quarter ties; f2i half uniform codes);
- mxq: ``random`` (``count`` normal blocks at magnitudes 2^+-spread), ``nonfinite`` (one inf or
  NaN per block), ``adversarial`` (``per_class`` blocks of every class of
  :func:`adversarial_blocks`); random ``rbits`` under stochastic rounding;
- mxdq: ``pairs``: every element code under each of ``scales`` (all 256 by default);
- dot: ``random`` (:func:`cancelling_rows`), ``specials`` (:func:`special_rows`), ``pairs``
  (:func:`pair_rows`: every (a_0, b_0) code pair);
- amax: ``corners`` and ``random`` (``count`` blocks of n codes; sim/stimulus/amax.py);
- a multi-format or multi-lane unit (rtl/multiformat.py): ``corners``, ``relations`` and
  ``random`` of every member, in its elements and every lane, fmt its code, the other bits
  random; ``unused`` (``count`` vectors of fmt codes with no member; sim/stimulus/multiformat.py).

By shape, one module each: base (every kind: the input space, the mode inputs, code values),
scalar, mx (quantizer and dequantizer), dot and multiformat; this package puts their parts together.
"""

from __future__ import annotations

import numpy as np

from fpforge.rtl.amax import AmaxSpec
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.intconv import F2iSpec, I2fSpec
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.noncomp import NoncompSpec
from fpforge.rtl.scalar import ScalarSpec
from fpforge.rtl.spec import Spec

from .amax import AMAX_PARTS, amax_part
from .base import exhaustive, mode_inputs, space_size, unknown_part
from .dot import DOT_PARTS, dot_part
from .intconv import INTCONV_PARTS, intconv_part
from .multiformat import MULTI_PARTS, multi_part
from .mx import DEQUANTIZER_PARTS, QUANTIZER_PARTS, dequantizer_part, quantizer_part
from .scalar import NONCOMP_PARTS, SCALAR_PARTS, noncomp_part, scalar_part

__all__ = ["PARTS", "parts_of", "generate"]


# ----- the parts of each kind --------------------------------------------------------------------

# Spec class -> (its parts, the function that makes one); "exhaustive" is every kind's.
_PARTS = {
    ScalarSpec: (SCALAR_PARTS, scalar_part),
    NoncompSpec: (NONCOMP_PARTS, noncomp_part),
    MxQuantSpec: (QUANTIZER_PARTS, quantizer_part),
    MxDequantSpec: (DEQUANTIZER_PARTS, dequantizer_part),
    MxDotSpec: (DOT_PARTS, dot_part),
    AmaxSpec: (AMAX_PARTS, amax_part),
    I2fSpec: (INTCONV_PARTS, intconv_part),
    F2iSpec: (INTCONV_PARTS, intconv_part),
    MultiFormatSpec: (MULTI_PARTS, multi_part),
}
PARTS = ("exhaustive", "file") + tuple(dict.fromkeys(p for parts, _ in _PARTS.values() for p in parts))


def _kind_parts(spec: Spec):
    for cls in type(spec).__mro__:
        if cls in _PARTS:
            return _PARTS[cls]
    return (), None


def parts_of(spec: Spec) -> tuple[str, ...]:
    """The stimulus parts ``spec``'s kind has."""
    return ("exhaustive",) + _kind_parts(spec)[0]


def _shaped(spec: Spec, arrays: dict) -> dict:
    """The port-shape convention: (N,) for one lane, (N, lanes) for a bus."""
    out = {}
    for p in spec.inputs():
        if p.name not in arrays:
            continue
        v = np.asarray(arrays[p.name])
        if p.lanes == 1 and v.ndim == 2:
            v = v[:, 0]
        if v.ndim != (1 if p.lanes == 1 else 2) or (p.lanes > 1 and v.shape[1] != p.lanes):
            raise ValueError(f"stimulus for {p.name} has shape {v.shape}; the port has "
                             f"{p.lanes} lane(s)")
        out[p.name] = v
    return out


def _dtype(port):
    """Codes of up to 32 bits as uint32 (the engines' own), a wider packed word as uint64."""
    return np.uint64 if port.lane_width > 32 else np.uint32


def generate(spec: Spec, parts: list, rng: np.random.Generator, chunk: int, rm_values=None, *,
             narrow: bool = False):
    """Yield dicts of input arrays (``spec.inputs()``) of at most ``chunk`` vectors, for every
    part of ``parts`` in order; ``rm``, where drawn, from ``rm_values`` only if given;
    ``narrow``: the exhaustive part's codes in their narrowest dtypes (``exhaustive``)."""
    for name, params in parts:
        if name == "exhaustive":
            held = {p: int(v) for p, v in params.get("held", {}).items()}
            start = int(params.get("start", 0))
            stop = int(params.get("stop", space_size(spec, held)))
            for s in range(start, stop, chunk):
                piece = exhaustive(spec, s, min(stop, s + chunk), held, narrow=narrow)
                yield piece | mode_inputs(spec, rng, min(stop, s + chunk) - s, rm_values)
            continue
        if name == "file":              # a vector file (sim/vectors.py): --vectors FILE
            from ..vectors import file_chunks
            for piece in file_chunks(spec, params["path"], chunk):
                m = len(next(iter(piece.values())))
                yield piece | {p: v for p, v in mode_inputs(spec, rng, m).items()
                               if p not in piece}
            continue
        _, make = _kind_parts(spec)
        if make is None:
            raise unknown_part(spec, name, ())
        full = _shaped(spec, make(spec, name, params, rng))
        n = len(next(iter(full.values())))
        for s in range(0, n, chunk):
            piece = {p: np.asarray(v[s:s + chunk]).astype(_dtype(spec.port(p)))
                     for p, v in full.items()}
            m = len(next(iter(piece.values())))
            yield piece | {p: v for p, v in mode_inputs(spec, rng, m, rm_values).items()
                           if p not in piece}