"""The emulated matrix multiply's speed against the float32 stand-in ML tools use.

    fpforge bench-gemm [--size 1024] [--repeat 5]

Both sides take the same two float32 matrices (seeded normal values) of size x size and block
them into MXFP8 (E4M3 elements, blocks of 32 along K, floor scales). The baseline is
fake-quantize + float32 ``jnp.matmul``: quantize-dequantize both operands (the golden MX
quantizer and dequantizer) and one float32 matrix multiply. The emulation is
``emulated_matmul`` with exact block sums and each float accumulator, and with every tensor-core
preset (MMA-Sim's models: Hopper, Ada, Blackwell kind::mxf8f6f4 and kind::mxf4nvf4, CDNA3) on
the elements and scales its instruction takes: what the hardware computes, bit for bit. Times
are the median of ``--repeat`` runs after a warm-up (jit compiles excluded). Each emulation's
first rows are checked against the dot unit's integer model, so a fast wrong answer cannot
pass. Each row prints its ratio to the baseline; the last lines, each target's ratio and
whether it is within 10x.
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

# (label, configuration): two accumulators of dot units' block results, and every tensor-core
# preset (golden/tensor_core.py) on the elements and scales its instruction takes.
ROWS = (
    ("exact blocks, float32 running sum (rne)",
     GemmConfig("fp8e4m3", block=32, accum=Accumulator())),
    ("exact blocks, bf16 running sum, float32 every 128",
     GemmConfig("fp8e4m3", block=32, accum=Accumulator("bfloat16", promote_every=128))),
    ("Hopper FP8 tensor core (MMA-Sim; per-channel scales)",
     GemmConfig("fp8e4m3", block=32, accum="hopper_fp8", scaling="channel")),
    ("Ada FP8 tensor core (MMA-Sim; per-channel scales)",
     GemmConfig("fp8e4m3", block=16, accum="ada_fp8", scaling="channel")),
    ("Blackwell kind::mxf8f6f4 (MMA-Sim; MXFP8 block scales)",
     GemmConfig("fp8e4m3", block=32, accum="blackwell_mxf8f6f4")),
    ("Blackwell kind::mxf4nvf4 (MMA-Sim; MXFP4 block scales)",
     GemmConfig("fp4e2m1", block=32, accum="blackwell_mxf4nvf4")),
    ("CDNA3 FP8 MFMA (MMA-Sim; E4M3 FNUZ, per-channel scales)",
     GemmConfig("fp8e4m3fnuz", block=16, accum="cdna3_fp8", scaling="channel")),
)


def _bits_checked(config: GemmConfig, a, b, y) -> bool:
    """Whether the emulation's first rows ``y[:CHECK_ROWS]`` are the dot unit's integer model's
    (a tensor core: its chain of steps on the dot unit)."""
    accum = config.accum
    ea, sa, eb, sb = quantized_codes(config, a[:CHECK_ROWS], b, (None, None))
    if isinstance(accum, FusedAccumulator):
        spec = accum.dot_spec(config.elem_a, config.elem_b, config.scale_fmt)
        want = chained_steps(accum, ea, sa, eb, sb,
                             lambda inputs: dot_unit(spec, inputs, want=("y",))["y"])
        want = want.view(np.float32).reshape(CHECK_ROWS, -1)
    else:
        want = np.asarray(matmul_codes(ea, sa, eb, sb, config=config, via_float64=False))
    return np.array_equal(y[:CHECK_ROWS].view(np.uint32), want.view(np.uint32))


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
    print(f"{'computation':68} {'seconds':>8} {'x fake-quant':>13} {'bits checked':>13}")
    print(f"{'fake-quantize + float32 jnp.matmul (baseline)':68} {base:8.3f} {1.0:13.2f} "
          f"{'-':>13}")
    targeted = {}           # the targets: the float32 accumulator and each tensor core
    for label, config in ROWS:
        accum = config.accum
        t = timed(lambda: emulated_matmul(a, b, config), repeat)[0]
        equal = _bits_checked(config, a, b, np.asarray(emulated_matmul(a, b, config)))
        ratio = t / base
        if accum == Accumulator():
            targeted["float32 accumulator"] = ratio
        elif isinstance(accum, FusedAccumulator):
            targeted[label.split(" (")[0]] = ratio
        print(f"{'emulated: ' + label:68} {t:8.3f} {ratio:13.2f} {str(equal):>13}")
    print(f"emulated / fake-quant time (target <= {TARGET_RATIO:g} each):")
    for name, r in targeted.items():
        print(f"  {name:64} {r:6.2f}  {'met' if r <= TARGET_RATIO else 'NOT met'}")
    print(f"bits checked: the first {CHECK_ROWS} rows against the dot unit's integer model (the "
          f"tensor cores: their steps on the dot unit with input c)")
    return 0

