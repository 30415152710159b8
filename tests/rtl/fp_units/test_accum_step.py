"""What a new accumulation step costs: one class (rtl/accum.py's kind), one RTL method
(``MxDot.ACCUMULATE``), one golden function (golden/dot.py ``SUMS``) and this test.

The example step lives here alone: ``TruncatedFixed(F)`` is the fixed accumulator whose sum is
then truncated toward zero to F + 1 significant bits (an accumulator register of F + 1 bits
after normalisation) before the one rounding; the bits it drops raise inexact like the
products' truncation. Registered in both tables for the test's duration, its unit is simulated
in Icarus against its golden model, beside the plain ``Fixed(F)`` it differs from.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pytest
from amaranth.hdl import Fragment, Mux, Signal
from jax import lax

from fpforge import golden
from fpforge.golden import dot as golden_dot
from fpforge.rtl.accum import Accumulation, Fixed
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.fp_units import build
from fpforge.rtl.fp_units.common import lzc
from fpforge.rtl.fp_units.dot import MxDot
from fpforge.sim.stimulus.dot import accumulator_codes, mixed_rows

from tests.rtl.fp_units.rtl_check import assert_exact
from tests.rtl.fp_units.test_mx_dot_rtl import dot_inputs


@dataclass(frozen=True)
class TruncatedFixed(Fixed):
    """``Fixed``, then the sum truncated toward zero to ``frac_bits`` + 1 significant bits."""

    @property
    def ident(self) -> str:
        return f"fixed{self.frac_bits}t"

    def describe(self) -> str:
        return super().describe().replace(", then one rounding",
                                          f", the sum truncated to {self.frac_bits + 1} bits, "
                                          "then one rounding")


def truncated_fixed_step(self, m, acc: TruncatedFixed, prods, nonzero, c):
    """The RTL: the fixed step's magnitude with its bits below the leading one's F + 1 cut."""
    s = self._fixed_step(m, acc, prods, nonzero, c)
    neg, mag, exp, lo, hi = s.sig
    W = len(mag)
    lz, zero = lzc(m, mag, "norm_lzc")
    cut = Signal(range(W + 1), name="norm_cut")
    kept = Signal(W, name="norm_kept")
    lost = Signal(name="norm_lost")
    m.d.comb += [cut.eq(Mux(~zero & (W - lz > acc.frac_bits + 1),
                            W - lz - (acc.frac_bits + 1), 0)),
                 kept.eq((mag >> cut) << cut), lost.eq(s.lost | (kept != mag))]
    return s._replace(sig=(neg, kept, exp, lo, hi), lost=lost)


def truncated_fixed_sum(acc: TruncatedFixed, t, spec):
    """The golden model: the same cut on the fixed sum's integer magnitude."""
    s = golden_dot.SUMS[Fixed](acc, t, spec)
    lead = 63 - lax.clz(s.sig).astype(jnp.int32)                   # -1 for a zero sum
    cut = jnp.maximum(lead - acc.frac_bits, 0).astype(jnp.uint64)
    kept = (s.sig >> cut) << cut
    return s._replace(sig=kept, lost=s.lost | (kept != s.sig))


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(MxDot.ACCUMULATE, TruncatedFixed, truncated_fixed_step)
    monkeypatch.setitem(golden_dot.SUMS, TruncatedFixed, truncated_fixed_sum)


@pytest.mark.parametrize("c_fmt", [None, "float32"])
def test_a_new_step_in_rtl_and_golden(registered, c_fmt):
    specs = [MxDotSpec("fp8e4m3", n=8, accum=acc, scaled=c_fmt is None, c_fmt=c_fmt,
                       rounding="rne") for acc in (Fixed(6), TruncatedFixed(6))]
    assert specs[1].default_name.startswith("mxdot_fp8e4m3_n8_fixed6t_")
    assert "the sum truncated to 7 bits" in specs[1].describe()
    rows = mixed_rows("fp8e4m3", "fp8e4m3", 8, 21, rows=256)
    inputs = dot_inputs(specs[0], rows)
    if c_fmt is not None:
        inputs["c"] = accumulator_codes(specs[0], *rows[:2], None, None,
                                        np.random.default_rng(5)).astype(np.uint32)
    assert_exact(specs, inputs)
    plain, cut = (golden.evaluate(s, **inputs) for s in specs)
    assert (np.asarray(plain["y"]) != np.asarray(cut["y"])).any()


def test_an_unregistered_step_is_refused():
    spec = MxDotSpec("fp8e4m3", n=4, accum=TruncatedFixed(6))
    with pytest.raises(TypeError, match=r"^MxDot.ACCUMULATE has no method for TruncatedFixed$"):
        Fragment.get(build(spec), None)
    # JAX appends a note on its filtered traceback after a line break
    with pytest.raises(TypeError, match=r"^golden/dot.py SUMS has no function for "
                                        r"TruncatedFixed(\n|$)"):
        golden.evaluate(spec, a=np.zeros((1, 4), np.uint8), b=np.zeros((1, 4), np.uint8),
                        scale_a=np.full(1, 127, np.uint8), scale_b=np.full(1, 127, np.uint8))


def test_a_step_that_leaves_out_part_of_the_protocol_cannot_be_built():
    """The base names what every step defines (ident, option values, describe, header, term
    bits); a step without one of them fails when it is made, not when a unit asks it."""
    @dataclass(frozen=True)
    class Nameless(Accumulation):
        accum = "nameless"

        def option_values(self):
            return {"accum": "nameless"}

        def describe(self):
            return "no ident"

        def header(self):
            return "no ident"

        def term_bits(self, spec):
            return 1
    with pytest.raises(TypeError, match=r"abstract class Nameless with abstract method ident$"):
        Nameless()
