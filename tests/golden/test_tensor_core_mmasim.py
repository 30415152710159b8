"""The tensor-core presets against MMA-Sim itself (PyPI ``mmasim`` 2.1.1), when it is installed:
it needs torch (the mxref extra) and compiles a small C++ extension on import. What is
compared: float32 bit patterns of D = A B + C for random E4M3 / E5M2 codes (NaN codes left
out: MMA-Sim writes NaN as 0x7FFFFFFF, fpforge as 0x7FC00000) and random float32 C with zeros,
over three chained instructions (K = 96): Hopper wgmma m64n8k32 (hopper_fp8), Ada mma
m16n8k32 (ada_fp8: each instruction is two steps of 16) and Blackwell tcgen05.mma
kind::mxf8f6f4 m128n8k32 with E8M0 block scales (blackwell_mxf8f6f4)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the mxref extra) is not installed")
pytest.importorskip("mmasim", reason="mmasim (the mxref extra) is not installed")

from fpforge.golden._jax import jnp  # noqa: E402
from fpforge.golden.gemm import _values_f64  # noqa: E402
from fpforge.golden.mx import decode_elements  # noqa: E402
from fpforge.golden.tensor_core import FUSED_PRESETS, exponents, fused_matmul  # noqa: E402
from fpforge.rtl.mx import element_format  # noqa: E402

TORCH = {"fp8e4m3": torch.float8_e4m3fn, "fp8e5m2": torch.float8_e5m2}
PTX = {"fp8e4m3": "e4m3", "fp8e5m2": "e5m2"}


def _codes(rng, elem, shape):
    grid = element_format(elem).grid
    ok = [c for c in range(256) if grid.classify(c) in ("zero", "subnormal", "normal")]
    return rng.choice(ok, shape).astype(np.uint8)


def _ours(ea, eb, sa, sb, c, elem, preset):
    e = element_format(elem)
    u = decode_elements(jnp.arange(256, dtype=jnp.uint32), e)
    x, v = exponents(u, e.grid.man_bits), _values_f64(e)
    k = FUSED_PRESETS[preset].group
    blocks = ea.shape[1] // k

    def split(codes):
        return codes.reshape(codes.shape[0], blocks, k).transpose(1, 0, 2).astype(np.int32)
    a, b = split(ea), split(eb)
    out = fused_matmul(v[a], x[a], sa.T, v[b], x[b], sb.T, FUSED_PRESETS[preset],
                       c=c.view(np.uint32))
    return np.asarray(out).view(np.uint32)


@pytest.mark.parametrize("elem", ["fp8e4m3", "fp8e5m2"])
@pytest.mark.parametrize("preset", ["hopper_fp8", "ada_fp8", "blackwell_mxf8f6f4"])
def test_presets_equal_mmasim_bit_for_bit(elem, preset):
    from mmasim.nv_ptx import MMA, WGMMA, TCGen05MMABlockScale
    rng = np.random.default_rng(5)
    m = {"hopper_fp8": 64, "ada_fp8": 16}.get(preset, 128)
    n, k = 8, 96
    ea, eb = _codes(rng, elem, (m, k)), _codes(rng, elem, (n, k))
    c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-20, 20, (m, n))).astype(np.float32)
    c[0, :] = 0.0
    scaled = preset == "blackwell_mxf8f6f4"
    g = FUSED_PRESETS[preset].group
    sa = rng.integers(117, 137, (m, k // g)).astype(np.uint8) if scaled else \
        np.full((m, k // g), 127, np.uint8)
    sb = rng.integers(117, 137, (n, k // g)).astype(np.uint8) if scaled else \
        np.full((n, k // g), 127, np.uint8)
    t = PTX[elem]
    if scaled:
        op = TCGen05MMABlockScale("Blackwell", f"m128n8k32.kind::mxf8f6f4.block32.f32.{t}.{t}"
                                               f".ue8m0")
    elif preset == "ada_fp8":
        op = MMA("Ada Lovelace", f"m16n8k32.f32.{t}.{t}.f32")
    else:
        op = WGMMA("Hopper", f"m64n8k32.f32.{t}.{t}")
    A = torch.from_numpy(ea).view(TORCH[elem])
    B = torch.from_numpy(np.ascontiguousarray(eb.T)).view(TORCH[elem])
    D = torch.from_numpy(c.copy())
    for step in range(k // 32):
        cols = slice(32 * step, 32 * step + 32)
        if scaled:
            alpha = torch.from_numpy(np.ascontiguousarray(sa[:, step:step + 1])).view(
                torch.float8_e8m0fnu)
            beta = torch.from_numpy(np.ascontiguousarray(sb[:, step:step + 1].T)).view(
                torch.float8_e8m0fnu)
            D = op(A[:, cols].contiguous(), B[cols, :].contiguous(), D, alpha, beta)
        else:
            D = op(A[:, cols].contiguous(), B[cols, :].contiguous(), D)
    theirs = D.numpy().view(np.uint32)
    ours = _ours(ea, eb, sa, sb, c, elem, preset)
    assert (theirs != 0).sum() > m * n // 2          # a real comparison, not of zeros
    np.testing.assert_array_equal(ours, theirs)
