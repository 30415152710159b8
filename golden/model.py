"""The golden model's one entry point: what any unit must produce, by its spec's kind.

rtl/kinds.py names each kind's golden function; ``evaluate`` checks the inputs and outputs
against the spec's ports and calls it. The convenience wrappers (golden/scalar.py, quantize.py)
build a spec and come here.
"""

from __future__ import annotations

from fpforge.rtl.kinds import golden_function
from fpforge.rtl.spec import Spec

__all__ = ["evaluate"]


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
