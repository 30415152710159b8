"""fpforge's golden model: bit-exact, integer-only JAX reference of every unit.

``evaluate(spec, **inputs)`` runs the model of any unit kind (rtl/kinds.py names each kind's
golden function): inputs and outputs are the unit's data ports, by name, as arrays of codes.
``mul``, ``add``, ``fma``, ``convert``, ``mx_quantize``, ``mx_dot`` and the rest are thin
wrappers that build the spec. Importing it enables JAX's 64-bit integers
(``jax_enable_x64``). The rules are docs/numerics.md (and docs/mx.md for the block-scaled
kinds); README.md shows the API.
"""

from __future__ import annotations

from .dot import mx_dot
from .model import evaluate
from .mx import mx_dequantize, mx_quantize
from .quantize import dequantize, fake_quantize, quantize
from .scalar import add, convert, fma, mul, sub

__all__ = ["evaluate", "mul", "add", "sub", "fma", "convert", "quantize", "dequantize",
           "fake_quantize", "mx_quantize", "mx_dequantize", "mx_dot"]
