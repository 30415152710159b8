"""``--cpu-durations`` (tests/conftest.py) reports, beside the run's CPU seconds, the part the
test processes spent making programs: JAX's, and the units' Verilog."""

import jax
import jax.numpy as jnp

from fpforge.rtl import emit
from fpforge.rtl.kinds import build, make_spec

from tests.conftest import BuildSeconds


def test_a_new_kernel_and_a_conversion_are_counted_and_nothing_else():
    jnp.arange(5).block_until_ready()
    seconds = BuildSeconds()
    seconds.install()
    try:
        sum(range(100_000))
        jnp.arange(5).block_until_ready()                 # compiled above: no new program
        assert seconds.total == {"jax_s": 0.0, "verilog_s": 0.0}
        jax.jit(lambda x: x * 3 + 1)(jnp.arange(5)).block_until_ready()
        assert seconds.total["jax_s"] > 0 and seconds.total["verilog_s"] == 0.0
        spec = make_spec("mul", format="fp4e2m1")
        assert "module" in emit.convert(build(spec), spec.default_name)
        assert seconds.total["verilog_s"] > 0
    finally:
        seconds.uninstall()
    assert emit.convert.__name__ == "convert" and emit.convert.__module__ == emit.__name__
