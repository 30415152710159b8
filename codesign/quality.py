"""What a configuration's arithmetic does to numbers: QSNR at the tensor and dot-product level.

QSNR (quantization signal-to-noise ratio) = 10 log10(sum x^2 / sum (x - Q(x))^2) in float64,
over the whole sample (docs/codesign.md). Q is always the emulated hardware: the MX quantizer
and dequantizer for a tensor (with the scales the dot units do not apply: float32 per row or
tensor, a two-level recipe's second level), ``emulated_matmul`` for dot products.
"""

from __future__ import annotations

import numpy as np

from fpforge.golden.gemm import emulated_matmul
from fpforge.golden.gemm_config import GemmConfig
from fpforge.golden.gemm_operands import quantized_operand

__all__ = ["qsnr_db", "tensor_qsnr_db", "gauss_qsnr_db", "dot_qsnr_db", "GAUSS_SAMPLES"]

GAUSS_SAMPLES = 1 << 22
ROW = 1024                      # tensors are quantized as rows of 1024 along their last axis


def qsnr_db(x, y) -> float:
    """10 log10(sum x^2 / sum (x - y)^2), in float64; inf when y equals x, nan when x is 0
    or y holds a NaN or infinity where x does not."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if not np.isfinite(y).all():
        return float("nan")
    noise = float(np.sum((x - y) ** 2))
    signal = float(np.sum(x ** 2))
    if signal == 0:
        return float("nan")
    return float("inf") if noise == 0 else 10 * np.log10(signal / noise)


def quantize_dequantize(x, config: GemmConfig, elem=None):
    """x (rows, K) through the operand side of ``config``: its scaling (blocks along K, or one
    scale per row), scale rule and element rounding, then back to float32."""
    return quantized_operand(x, elem or config.elem_a, config).values


def tensor_qsnr_db(x, config: GemmConfig) -> float:
    """The QSNR of a tensor quantized along its last axis (a multiple of the block)."""
    x = np.asarray(x, np.float32)
    return qsnr_db(x, quantize_dequantize(x, config))


def gauss_qsnr_db(config: GemmConfig, samples: int = GAUSS_SAMPLES, seed: int = 0) -> float:
    """QSNR on N(0, 1) values: ``samples`` of them (2^22), fixed seed, rows of 1024."""
    x = np.random.default_rng(seed).standard_normal((samples // ROW, ROW)).astype(np.float32)
    return tensor_qsnr_db(x, config)


def dot_qsnr_db(config: GemmConfig, k: int, pairs: int = 64 * 64, seed: int = 0) -> float:
    """QSNR of dot products of length ``k`` of N(0, 1) float32 vectors through the emulated
    hardware, against their exact values (float64 sums of the float32 products: exact to
    2^-53 relative, far below any format's noise). 64 x 64 products by default."""
    rng = np.random.default_rng(seed)
    m = n = int(round(pairs ** 0.5))
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    return qsnr_db(exact, emulated_matmul(a, b, config))
