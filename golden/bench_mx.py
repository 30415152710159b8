"""MX quantization throughput: the golden model against torchao's mx_formats, on the CPU.

    fpforge bench-mx [--n 4194304] [--repeat 5] [--elem fp8e4m3 ...] [--rule floor ...]

Both sides quantize the same float32 array (seeded normal values spread over many binades) into
MX blocks of 32 and return scale and element codes; the time is the best of ``--repeat`` runs
after a warm-up (the golden model's jit compile is excluded, as torchao's import is). Elements
per second and the ratio golden / torchao are printed per element format and scale rule; the
two results are also compared code for code, so a fast wrong answer cannot pass.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from . import mx_quantize

TORCH_ELEM = {"fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2", "fp6e3m2": "fp6_e3m2",
              "fp6e2m3": "fp6_e2m3", "fp4e2m1": "float4_e2m1fn_x2"}


def _best(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_bench(*, n: int = 1 << 22, repeat: int = 5, elems=("fp8e4m3", "fp4e2m1"),
              rules=("floor", "rceil")) -> int:
    """Print the table (module docstring); returns 0. Needs the mxref extra (torch, torchao)."""
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx

    rng = np.random.default_rng(0)
    rows = n // 1024
    x = (rng.standard_normal((rows, 1024)) *
         np.exp2(rng.integers(-30, 30, (rows, 1)))).astype(np.float32)
    xt = torch.from_numpy(x)
    import jax
    xj = jax.device_put(x)
    print(f"MX quantization, {x.size} float32 elements, blocks of 32, best of {repeat} "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads; jax "
          f"{jax.__version__} {jax.default_backend()})")
    print(f"{'elem':9} {'rule':6} {'golden Melem/s':>15} {'torchao Melem/s':>16} {'ratio':>6} "
          f"{'codes equal':>12}")
    worst = float("inf")
    for elem in elems:
        tdt = getattr(torch, TORCH_ELEM[elem], TORCH_ELEM[elem])
        for rule in rules:
            def golden_run():
                s, e = mx_quantize(xj, elem, scale_rule=rule)
                return s.block_until_ready(), e.block_until_ready()

            def torchao_run():
                return to_mx(xt, tdt, 32, ScaleCalculationMode(rule))

            tg = _best(golden_run, repeat)
            tt = _best(torchao_run, repeat)
            gs, ge = (np.asarray(a) for a in golden_run())
            ts, te = torchao_run()
            ts = ts.view(torch.uint8).numpy()
            te = te.view(torch.uint8).numpy()
            if elem == "fp4e2m1":
                te = np.stack([te & 0xF, te >> 4], -1).reshape(ge.shape)
            equal = np.array_equal(gs, ts) and np.array_equal(ge, te)
            ratio = tt / tg
            worst = min(worst, ratio)
            print(f"{elem:9} {rule:6} {x.size / tg / 1e6:15.1f} {x.size / tt / 1e6:16.1f} "
                  f"{ratio:6.2f} {str(equal):>12}")
    print(f"slowest golden / torchao throughput ratio: {worst:.2f} (target >= 1)")
    return 0
