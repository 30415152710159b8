"""The operands of an emulated matrix multiply, quantized as a recipe quantizes them.

Along K, by the configuration's scaling (golden/gemm_config.py): OCP MX blocks with one E8M0
scale each (``mx_quantize``), one E8M0 scale per row or per tensor (``channel_quantize``), a
float32 scale per row or per tensor (the symmetric scale of an INT8, INT4 or FP8 recipe), or a
value rule's two levels (NVFP4's E4M3 block scales under a float32 tensor scale,
golden/blockscale.py). Besides the codes, each operand's Q(x): what its codes and every scale
stand for, by the recipe's own float32 arithmetic (the straight-through estimator's values).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from fpforge.rtl.elements import element_format

from . import fp32
from ._jax import jax, jnp
from .blockscale import block_dequantize, block_quantize, finite_amax
from .fp32 import array_bits, array_floats
from .gemm_config import FLOAT_SCALINGS, GemmConfig
from .mx import channel_quantize, float_scaled_quantize, mx_dequantize, mx_quantize

__all__ = ["seeded_bits", "quantized_codes", "QuantizedOperand", "quantized_operand",
           "float_scales", "operand_quantize"]


def seeded_bits(seed: int, shape_a, shape_b):
    """Random bits for a stochastic rounding of both operands: a function of the seed and the
    shapes, so a configuration's results repeat (pass rbits_a / rbits_b for fresh bits)."""
    key = jax.random.key(seed)
    return tuple(jax.random.bits(jax.random.fold_in(key, i), shape, jnp.uint32)
                 for i, shape in enumerate((tuple(shape_a), tuple(shape_b))))


def quantized_codes(config: GemmConfig, a, b, rbits):
    """(element codes, scales per block) of a along K and of b.T along K."""
    qa = quantized_operand(a, config.elem_a, config, rbits[0])
    qb = quantized_operand(b.T, config.elem_b or config.elem_a, config, rbits[1])
    return qa.elements, qa.scales, qb.elements, qb.scales


class QuantizedOperand(NamedTuple):
    scales: jnp.ndarray        # (rows, K / block) scale codes: E8M0, or the value rule's format
    elements: jnp.ndarray      # (rows, K) element codes
    values: jnp.ndarray        # (rows, K) float32: Q(x), what the codes and every scale stand for


def quantized_operand(x, elem: str, config: GemmConfig, rbits=None) -> QuantizedOperand:
    """x (rows, K) quantized along K as ``config`` quantizes an operand, with Q(x): the values
    the dot units see times the scales they do not (a float32 scale per row or tensor, a value
    rule's second level), by the same float32 arithmetic the recipe's dequantizer uses. Q(x)
    is the straight-through estimator's and the tensor QSNR's."""
    x = jnp.asarray(x, jnp.float32)
    if config.value_scaled:
        scaling = config.quant_spec(elem).scaling
        amax = array_floats(finite_amax(array_bits(x)))
        q = block_quantize(x, scaling, tensor_amax=amax, rbits=rbits)
        return QuantizedOperand(q.scales, q.elements,
                                block_dequantize(q, scaling, tensor_amax=amax))
    scales, elements = operand_quantize(x, elem, config, rbits)
    values = mx_dequantize(scales, elements, elem, config.block)
    if config.scaling in FLOAT_SCALINGS:
        scale = array_bits(_float_scale(x, elem, config))[:, None]
        values = array_floats(fp32.mul(array_bits(values), scale))
    return QuantizedOperand(scales, elements, values)


def float_scales(config: GemmConfig, a, b):
    """The float32 scales of a's rows and b's columns (``_f32`` scalings), each (rows,)."""
    fa = _float_scale(a, config.elem_a, config)
    fb = _float_scale(b.T, config.elem_b or config.elem_a, config)
    return fa, fb


def _float_scale(x, elem: str, config: GemmConfig):
    """RN32(amax / max_elem) per row (channel_f32) or for the whole tensor, broadcast to the
    rows; 1 where amax is 0 or not finite (the elements then carry the zeros or NaNs)."""
    return _float_scale_of(jnp.asarray(x, jnp.float32),
                           max_elem=fp32.bits(float(element_format(elem).grid.max_finite)),
                           whole=config.scaling == "tensor_f32")


@functools.partial(jax.jit, static_argnames=("max_elem", "whole"))
def _float_scale_of(x, *, max_elem: int, whole: bool):
    """On bit patterns through the integer-exact IEEE division: XLA turns a division by a
    constant into a multiplication by its rounded reciprocal, and flushes subnormals. Integer
    arithmetic only, so compiled as one program it gives the bits op-by-op evaluation does."""
    mag = array_bits(x) & 0x7FFF_FFFF
    amax = jnp.max(mag) if whole else jnp.max(mag, axis=-1)
    scale = fp32.div(amax, max_elem)
    scale = jnp.where((amax < 0x7F80_0000) & (scale != 0), scale, fp32.bits(1.0))
    return array_floats(jnp.broadcast_to(scale, x.shape[:1]))


def operand_quantize(x, elem: str, config: GemmConfig, rbits=None):
    """(scales, elements) of x (rows, K) under config's E8M0 scaling: one E8M0 scale per block
    of ``block`` along K, per row, or per tensor (repeated for each block); with a float32
    scale (``_f32``), unit E8M0 scales and the elements of x / scale. A value rule's blocks come
    from ``quantized_operand``."""
    spec = config.quant_spec(elem)
    blocks = x.shape[1] // config.block
    if config.scaling in FLOAT_SCALINGS:
        return float_scaled_quantize(x, _float_scale(x, elem, config), rbits, spec=spec,
                                     blocks=blocks)
    if config.scaling == "block":
        return mx_quantize(x, elem, block=config.block, scale_rule=config.scale_rule,
                           rounding=config.rounding, rbits=rbits)
    return channel_quantize(x, rbits, spec=spec, blocks=blocks, whole=config.scaling == "tensor")
