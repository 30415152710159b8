"""The nonlinear units of a model's datapath in ``fpforge pareto``: softmax on the exp2 and
recip units, LayerNorm's 1/sqrt on the rsqrt unit (docs/codesign.md, "Nonlinear units").

A configuration (:class:`FuncConfig`) is a format of at most 16 bits and an ``--accuracy``
(correct or faithful) of the three function units. Every step that rounds goes through the
golden model of the unit that computes it (``golden.evaluate`` on its spec, integer-exact):

softmax of a row of scores s (float32, from the matrix multiplies):
  1. d = s - max(s) in float32 (the max is a selection; d is the float32 difference), rounded
     into the format by the cvt unit (saturating: a masked score is the format's most negative);
  2. u = d x log2(e), the mul unit in the format (log2(e) rounded into it);
  3. e = exp2(u), the exp2 unit;
  4. the sum of the e in float32 (an accumulator, as the GEMM's), rounded into the format by
     the cvt unit; r = recip(sum), the recip unit;
  5. p = e x r, the mul unit.
LayerNorm: mean and variance in float32; v = variance + eps rounded into the format by the cvt
unit; r = rsqrt(v), the rsqrt unit; (x - mean) x r in float32, then its weight and bias.

The cost is those units (exp2, recip, rsqrt, the format's mul and the cvt from float32)
synthesised through the deep job like every pareto unit (:func:`hardware_cases`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fpforge.rtl.format_names import SHORT_NAMES, resolve
from fpforge.rtl.formats import FormatError
from fpforge.rtl.func import ACCURACY
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError

__all__ = ["FuncConfig", "FUNC_UNITS", "parse", "hardware_cases", "softmax", "inv_sqrt",
           "measure"]

# The function units a configuration's accuracy applies to, then the plain units around them.
FUNC_UNITS = ("exp2", "recip", "rsqrt")


@dataclass(frozen=True)
class FuncConfig:
    """The nonlinear datapath's format (a catalog name, at most 16 bits) and the accuracy of
    its exp2, recip and rsqrt units."""

    fmt: str
    accuracy: str = "correct"

    def __post_init__(self):
        for unit in FUNC_UNITS:                      # the units' own one-line errors
            make_spec(unit, format=self.fmt, accuracy=self.accuracy)

    @property
    def label(self) -> str:
        short = next((k for k, v in SHORT_NAMES.items() if v == self.fmt), self.fmt)
        return f"softmax/layernorm {short} {self.accuracy}"

    def spec(self, unit: str):
        """The spec of one of the datapath's units: the function units at the accuracy, mul in
        the format, cvt from float32 into it (both saturating: see the module's step 1)."""
        if unit in FUNC_UNITS:
            return make_spec(unit, format=self.fmt, accuracy=self.accuracy)
        extra = {"in_format": "float32"} if unit == "cvt" else {}
        return make_spec(unit, format=self.fmt, saturate=True, **extra)


def parse(entry: str) -> FuncConfig:
    """``"FORMAT ACCURACY"`` (an axes file's ``nonlinear`` entry) as a FuncConfig."""
    parts = entry.split() if isinstance(entry, str) else []
    if len(parts) != 2 or parts[1] not in ACCURACY:
        raise OptionError(f"nonlinear entries are 'FORMAT ACCURACY' with ACCURACY one of "
                          f"{', '.join(ACCURACY)} (e.g. 'bf16 correct'), not {entry!r}")
    try:
        name = resolve(parts[0]).name
    except FormatError as err:
        raise OptionError(f"nonlinear {entry!r}: {err}") from None
    return FuncConfig(name, parts[1])


def hardware_cases(f: FuncConfig) -> list:
    """(role, sweep Case) of every unit of the datapath, through the deep job as the GEMM
    units (codesign/pareto.py: every row measured the same way)."""
    from fpforge.synth.sweep import Case
    out = []
    for unit in FUNC_UNITS + ("mul", "cvt"):
        values = tuple(f.spec(unit).option_values().items())
        variant = f"pareto {f.accuracy}" if unit in FUNC_UNITS else "pareto saturate"
        out.append((unit, Case(f.fmt, unit, variant, values, deep=True)))
    return out


# ----- the emulated datapath -------------------------------------------------------------------

def _run(spec, **inputs):
    from fpforge.golden import evaluate
    return evaluate(spec, want=("y",), **inputs)["y"]


def _to_format(f: FuncConfig, x):
    """float32 values into the format's codes: the cvt unit."""
    import jax.numpy as jnp
    return _run(f.spec("cvt"), x=jnp.asarray(x, jnp.float32))


def _values(f: FuncConfig, codes):
    """The format's codes as float32 values (exact: every format here fits in float32)."""
    from fpforge.golden import dequantize
    return dequantize(codes, f.fmt)


def softmax(f: FuncConfig, scores, axis: int = -1):
    """softmax of float32 ``scores`` along ``axis`` through the datapath's units (module doc)."""
    import jax.numpy as jnp
    s = jnp.moveaxis(jnp.asarray(scores, jnp.float32), axis, -1)
    d = _to_format(f, s - s.max(-1, keepdims=True))
    log2e = _to_format(f, np.float32(math.log2(math.e)))
    u = _run(f.spec("mul"), a=d, b=jnp.broadcast_to(log2e, d.shape))
    e = _run(f.spec("exp2"), x=u)
    r = _run(f.spec("recip"), x=_to_format(f, _values(f, e).sum(-1, keepdims=True)))
    p = _run(f.spec("mul"), a=e, b=jnp.broadcast_to(r, e.shape))
    return jnp.moveaxis(_values(f, p), -1, axis)


def inv_sqrt(f: FuncConfig, v):
    """1 / sqrt(v) of float32 ``v`` through the cvt and rsqrt units, as float32."""
    return _values(f, _run(f.spec("rsqrt"), x=_to_format(f, v)))


# ----- quality ---------------------------------------------------------------------------------

def measure(f: FuncConfig, jax_cache: str | None = None) -> dict:
    """Every quality figure of ``f`` (Row fields), in a worker process: the digits MLP's
    predictions through the softmax, and MiniLM with every attention softmax and LayerNorm on
    the units (its matrix multiplies in float32, so only the units' numerics differ)."""
    if jax_cache:
        import jax
        jax.config.update("jax_compilation_cache_dir", jax_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)
    from . import digits, minilm
    d = digits.evaluate_softmax(lambda z: softmax(f, z))
    out = {"digits_acc": d.accuracy, "digits_flips": d.flips,
           "digits_change_points": d.change_points, "softmax_qsnr_db": d.logit_qsnr_db}
    if minilm.available() is None:
        m = minilm.evaluate_nonlinear(lambda z: softmax(f, z), lambda v: inv_sqrt(f, v))
        out |= {"minilm_qsnr_db": m.embedding_qsnr_db, "minilm_cos_err": m.cos_err,
                "minilm_topk": m.topk_agreement}
    return {k: float(v) for k, v in out.items()}
