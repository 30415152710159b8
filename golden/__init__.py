"""fpforge's golden model: bit-exact, integer-only JAX reference of every unit.

``evaluate(spec, **inputs)`` runs the model of any unit kind (rtl/kinds.py names each kind's
golden function): inputs and outputs are the unit's data ports, by name, as arrays of codes.
``mul``, ``add``, ``fma``, ``convert``, ``mx_quantize``, ``mx_dot`` and the rest are thin
wrappers that build the spec. Importing it enables JAX's 64-bit integers
(``jax_enable_x64``). The rules are docs/numerics.md (and docs/mx.md for the block-scaled
kinds); README.md shows the API.
"""

from __future__ import annotations

from fpforge.rtl.kinds import golden_function
from fpforge.rtl.spec import Spec

from .dot import mx_dot
from .mx import mx_dequantize, mx_quantize
from .ops import add, convert, fma, mul, sub
from .quantize import dequantize, fake_quantize, quantize

__all__ = ["evaluate", "mul", "add", "sub", "fma", "convert", "quantize", "dequantize",
           "fake_quantize", "mx_quantize", "mx_dequantize", "mx_dot"]


def evaluate(spec: Spec, /, *, want=None, **inputs) -> dict:
    """What the unit ``spec`` describes must produce: ``{output port: array}``.

    ``inputs`` are the unit's data input ports by name (``spec.inputs()``: ``a``, ``b``, ``rm``,
    ``rbits``, ``x``, ``scale``, ...), each an array of codes; a port of L lanes is an array
    whose last axis is L (a one-lane port has no lane axis), and the leading axes broadcast.
    Outputs follow the same rule, codes in the narrowest unsigned dtype of their format, flags
    uint8 in RISC-V fflags order. ``want`` names the outputs to compute (default: all of them;
    leaving flags out compiles their logic away).
    """
    if not isinstance(spec, Spec):
        raise TypeError(f"spec must be a Spec, not {spec!r}")
    ports = {p.name for p in spec.inputs()}
    missing, extra = sorted(ports - set(inputs)), sorted(set(inputs) - ports)
    if missing or extra:
        raise ValueError(f"{spec.default_name} takes the inputs {', '.join(sorted(ports))}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; {', '.join(extra)} it does not have" if extra else ""))
    outputs = [p.name for p in spec.outputs()]
    want = tuple(outputs if want is None else want)
    unknown = sorted(set(want) - set(outputs))
    if unknown:
        raise ValueError(f"{spec.default_name} has no output {', '.join(unknown)}; its outputs: "
                         f"{', '.join(outputs)}")
    # The model computes the spec's numerics: its jitted kernels, static on the spec, are then
    # one compilation for a unit however it is pipelined.
    return golden_function(spec)(spec.numerics(), inputs, want)
