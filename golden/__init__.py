"""fpforge's golden model: bit-exact, integer-only JAX reference of every unit.

Importing it enables JAX's 64-bit integers (``jax_enable_x64``). See docs/numerics.md for the
rules and docs/golden.md for the API.
"""

from .mx import mx_dequantize, mx_dot, mx_quantize
from .ops import add, convert, evaluate, fma, mul, sub
from .quantize import dequantize, fake_quantize, quantize

__all__ = ["mul", "add", "sub", "fma", "convert", "evaluate", "quantize", "dequantize",
           "fake_quantize", "mx_quantize", "mx_dequantize", "mx_dot"]
