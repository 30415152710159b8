"""The emulated matrix multiply's speed against the float32 stand-in ML tools use.

    fpforge bench-gemm [--size 1024] [--repeat 5]

Both sides take the same two float32 matrices (seeded normal values) of size x size and block
them into MXFP8 (E4M3 elements, blocks of 32 along K, floor scales). The baseline is
fake-quantize + float32 ``jnp.matmul``: quantize-dequantize both operands (the golden MX
quantizer and dequantizer) and one float32 matrix multiply. The emulation is
``emulated_matmul`` with exact block sums and each float accumulator, and with Hopper's FP8
tensor-core step (MMA-Sim's model, per-channel scales): what the hardware computes, bit for
bit. Times are the median of ``--repeat`` runs after a warm-up (jit compiles excluded). The
emulation's first rows are checked against the dot unit's integer model, so a fast wrong
answer cannot pass.
"""

from __future__ import annotations

import numpy as np

from .bench_golden import timed
from .dot import dot_unit
from .gemm import emulated_matmul, matmul_codes
from .gemm_config import Accumulator, GemmConfig
from .gemm_operands import quantized_codes
from .mx import mx_dequantize, mx_quantize
from .tensor_core import FusedAccumulator, chained_steps

TARGET_RATIO = 10.0
CHECK_ROWS = 16


def run_bench(*, size: int = 1024, repeat: int = 5) -> int:
    """Print the table (module docstring); returns 0."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    a = jax.device_put(rng.standard_normal((size, size)).astype(np.float32))
    b = jax.device_put(rng.standard_normal((size, size)).astype(np.float32))

    def fake_quant():
        qa = mx_dequantize(*mx_quantize(a, "fp8e4m3", block=32), "fp8e4m3", 32)
        qb = mx_dequantize(*mx_quantize(b.T, "fp8e4m3", block=32), "fp8e4m3", 32)
        return jnp.matmul(qa, qb.T)

    base = timed(fake_quant, repeat)[0]
    print(f"{size} x {size} x {size}, MXFP8 E4M3 blocks of 32, median of {repeat} (jax "
          f"{jax.__version__} {jax.default_backend()}, {jax.device_count()} device)")
    print(f"{'computation':62} {'seconds':>8} {'x fake-quant':>13} {'bits checked':>13}")
    print(f"{'fake-quantize + float32 jnp.matmul (baseline)':62} {base:8.3f} {1.0:13.2f} "
          f"{'-':>13}")
    targeted = {}           # the two targets: the float32 accumulator and Hopper's step
    for label, config in (
            ("exact blocks, float32 running sum (rne)",
             GemmConfig("fp8e4m3", block=32, accum=Accumulator())),
            ("exact blocks, bf16 running sum, float32 every 128",
             GemmConfig("fp8e4m3", block=32, accum=Accumulator("bfloat16", promote_every=128))),
            ("Hopper FP8 tensor core (MMA-Sim; per-channel scales)",
             GemmConfig("fp8e4m3", block=32, accum="hopper_fp8", scaling="channel"))):
        accum = config.accum
        t = timed(lambda: emulated_matmul(a, b, config), repeat)[0]
        y = np.asarray(emulated_matmul(a, b, config))
        ea, sa, eb, sb = quantized_codes(config, a[:CHECK_ROWS], b, (None, None))
        if isinstance(accum, FusedAccumulator):
            spec = accum.dot_spec(config.elem_a)
            want = chained_steps(accum, ea, sa, eb, sb,
                                 lambda inputs: dot_unit(spec, inputs, want=("y",))["y"])
            want = want.view(np.float32).reshape(CHECK_ROWS, -1)
        else:
            want = np.asarray(matmul_codes(ea, sa, eb, sb, config=config, via_float64=False))
        equal = np.array_equal(y[:CHECK_ROWS].view(np.uint32), want.view(np.uint32))
        ratio = t / base
        if accum == Accumulator():
            targeted["float32 accumulator"] = ratio
        elif isinstance(accum, FusedAccumulator):
            targeted["Hopper FP8 step"] = ratio
        print(f"{'emulated: ' + label:62} {t:8.3f} {ratio:13.2f} {str(equal):>13}")
    ratios = ", ".join(f"{name} {r:.2f}" for name, r in targeted.items())
    print(f"emulated / fake-quant time: {ratios} (target <= {TARGET_RATIO:g} each); bits "
          f"checked: the first {CHECK_ROWS} rows against the dot unit's integer model (the "
          f"tensor core: its steps on the dot unit with input c)")
    return 0

