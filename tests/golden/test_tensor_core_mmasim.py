"""The tensor-core presets against MMA-Sim itself (PyPI ``mmasim`` 2.1.1), when it is installed:
it needs torch (the mxref extra) and compiles a small C++ extension on import. What is
compared: float32 bit patterns of D = A B + C for random E4M3 / E5M2 codes (NaN codes left
out: MMA-Sim writes NaN as 0x7FFFFFFF, fpforge as 0x7FC00000) and random float32 C with zeros,
over three chained instructions (K = 96): Hopper wgmma m64n8k32 (hopper_fp8), Ada mma
m16n8k32 (ada_fp8: each instruction is two steps of 16) and Blackwell tcgen05.mma
kind::mxf8f6f4 m128n8k32 with E8M0 block scales (blackwell_mxf8f6f4)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (the mxref extra) is not installed")
pytest.importorskip("mmasim", reason="mmasim (the mxref extra) is not installed")

from fpforge.golden._jax import jnp  # noqa: E402
from fpforge.golden.gemm import code_values_f64  # noqa: E402
from fpforge.golden.mx import decode_elements  # noqa: E402
from fpforge.golden.tensor_core import (FUSED_PRESETS, exponents, fused_matmul,  # noqa: E402
                                        step_dtype)
from fpforge.rtl.elements import element_format  # noqa: E402

TORCH = {"fp8e4m3": torch.float8_e4m3fn, "fp8e5m2": torch.float8_e5m2}
PTX = {"fp8e4m3": "e4m3", "fp8e5m2": "e5m2"}


def _codes(rng, elem, shape):
    grid = element_format(elem).grid
    ok = [c for c in range(256) if grid.classify(c) in ("zero", "subnormal", "normal")]
    return rng.choice(ok, shape).astype(np.uint8)


def _chain(op, ea, eb, c, type_a, type_b, scales=lambda step: ()):
    """MMA-Sim's D = A B + C over chained instructions of 32 products: (M, K) and (N, K) codes,
    ``scales(step)`` the instruction's scale arguments; the float32 bits of D."""
    A = torch.from_numpy(ea).view(type_a)
    B = torch.from_numpy(np.ascontiguousarray(eb.T)).view(type_b)
    D = torch.from_numpy(c.copy())
    for step in range(ea.shape[1] // 32):
        cols = slice(32 * step, 32 * step + 32)
        D = op(A[:, cols].contiguous(), B[cols, :].contiguous(), D, *scales(step))
    return D.numpy().view(np.uint32)


def _ours(ea, eb, sa, sb, c, elem, preset):
    e = element_format(elem)
    u = decode_elements(jnp.arange(256, dtype=jnp.uint32), e)
    acc = FUSED_PRESETS[preset]
    # the element values in the dtype the emulation forms products in (golden/gemm.py's _fused)
    x, v = exponents(u, e.grid.man_bits), code_values_f64(e).astype(step_dtype(acc, e, e))
    k = acc.group
    blocks = ea.shape[1] // k

    def split(codes):
        return codes.reshape(codes.shape[0], blocks, k).transpose(1, 0, 2).astype(np.int32)
    a, b = split(ea), split(eb)
    out = fused_matmul(v[a], x[a], sa.T, v[b], x[b], sb.T, acc, c=c.view(np.uint32))
    return np.asarray(out).view(np.uint32)


# make test: each preset once and each element format (Hopper and Blackwell on E4M3, Ada on
# E5M2); the other three pairs, the same steps on the other format, in make test-all.
@pytest.mark.parametrize("preset, elem", [
    pytest.param(p, e, id=f"{p}-{e}", marks=() if (p, e) in {
        ("hopper_fp8", "fp8e4m3"), ("ada_fp8", "fp8e5m2"),
        ("blackwell_mxf8f6f4", "fp8e4m3")} else pytest.mark.slow)
    for p in ("hopper_fp8", "ada_fp8", "blackwell_mxf8f6f4") for e in ("fp8e4m3", "fp8e5m2")])
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

    def scales(step):
        if not scaled:
            return ()
        alpha = torch.from_numpy(np.ascontiguousarray(sa[:, step:step + 1]))
        beta = torch.from_numpy(np.ascontiguousarray(sb[:, step:step + 1].T))
        return alpha.view(torch.float8_e8m0fnu), beta.view(torch.float8_e8m0fnu)
    theirs = _chain(op, ea, eb, c, TORCH[elem], TORCH[elem], scales)
    ours = _ours(ea, eb, sa, sb, c, elem, preset)
    assert (theirs != 0).sum() > m * n // 2          # a real comparison, not of zeros
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("block,stype", [(32, "ue8m0"), (16, "ue4m3"), (16, "ue8m0")])
def test_mxf4nvf4_equals_mmasim_bit_for_bit(block, stype):
    """Blackwell tcgen05.mma kind::mxf4nvf4 m128n8k64 (blackwell_mxf4nvf4), three chained
    instructions: every E2M1 code, all-zero groups and rows (their terms at e_zero = -139),
    E8M0 scales down to 2^-127 and E4M3 scales with subnormals and zeros."""
    from fpforge.golden.gemm import scale_values_f64
    from fpforge.golden.tensor_core import grouped_fused_matmul
    from fpforge.rtl.formats import CATALOG
    from mmasim.nv_ptx import TCGen05MMABlockScale
    rng = np.random.default_rng(9 + block)
    m, n, k = 128, 8, 192
    ea, eb = rng.integers(0, 16, (m, k)), rng.integers(0, 16, (n, k))
    ea[1], ea[2, :16], eb[3, 16:48] = 0, 0, 0          # zero rows and groups
    if stype == "ue8m0":
        sa = rng.integers(100, 150, (m, k // block))
        sb = rng.integers(100, 150, (n, k // block))
        sa[0], sb[5, 0] = rng.integers(0, 8, k // block), 0     # tiny scales where c = 0
        fmt, tdt = CATALOG["float8_e8m0fnu"], torch.float8_e8m0fnu
    else:
        sa, sb = rng.integers(0, 0x7F, (m, k // block)), rng.integers(0, 0x7F, (n, k // block))
        sa[6, :2], sb[6, 1] = 0, 3                               # zero and subnormal scales
        fmt, tdt = CATALOG["float8_e4m3fn"], torch.float8_e4m3fn
    sa, sb = sa.astype(np.uint8), sb.astype(np.uint8)
    c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-20, 20, (m, n))).astype(np.float32)
    c[0, :] = 0.0

    def packed(e):                  # two E2M1 codes per byte, element 2i in the high nibble
        return torch.from_numpy(((e[:, 0::2] << 4) | e[:, 1::2]).astype(np.uint8))
    op = TCGen05MMABlockScale("Blackwell", f"m128n8k64.kind::mxf4nvf4.block{block}.f32.e2m1"
                                           f".e2m1.{stype}")
    A, B = packed(ea), packed(eb)
    D = torch.from_numpy(c.copy())
    per = 64 // block
    for step in range(k // 64):
        cols, s = slice(32 * step, 32 * step + 32), slice(per * step, per * step + per)
        alpha = torch.from_numpy(np.ascontiguousarray(sa[:, s])).view(tdt)
        beta = torch.from_numpy(np.ascontiguousarray(sb[:, s].T)).view(tdt)
        D = op(A[:, cols].contiguous(), B[:, cols].T.contiguous(), D, alpha, beta)
    theirs = D.numpy().view(np.uint32)
    v = np.asarray(code_values_f64(element_format("fp4e2m1")))

    def blocks(e):
        return v[e].reshape(e.shape[0], -1, block).transpose(1, 0, 2)

    def ours(acc):
        return np.asarray(grouped_fused_matmul(
            blocks(ea), scale_values_f64(jnp.asarray(sa.T), fmt), blocks(eb),
            scale_values_f64(jnp.asarray(sb.T), fmt), acc, fmt.emin,
            c=c.view(np.uint32))).view(np.uint32)
    preset = FUSED_PRESETS["blackwell_mxf4nvf4"]
    assert (theirs != 0).sum() > m * n // 2
    np.testing.assert_array_equal(ours(preset), theirs)
    # the comparison can fail: the step with mxf8f6f4's F = 25
    assert (ours(replace(preset, accum=replace(preset.accum, frac_bits=25))) != theirs).sum() > 0


# The mixed bf8 x fp8 instruction runs both formats; fp8 x fp8 in make test-all.
@pytest.mark.parametrize("ta,tb", [pytest.param("fp8", "fp8", marks=pytest.mark.slow),
                                   ("bf8", "fp8")])
def test_cdna3_fp8_equals_mmasim_bit_for_bit(ta, tb):
    """AMD CDNA3 v_mfma_f32_16x16x32 fp8/bf8 (cdna3_fp8: two steps of 16 per instruction),
    three chained instructions (K = 96), every finite FNUZ code, random float32 C with zeros."""
    from fpforge.golden.tensor_core import two_stage_matmul
    from mmasim.amd import MFMA
    elem = {"fp8": "fp8e4m3fnuz", "bf8": "fp8e5m2fnuz"}
    tdt = {"fp8": torch.float8_e4m3fnuz, "bf8": torch.float8_e5m2fnuz}
    rng = np.random.default_rng(11)
    m, n, k = 16, 16, 96
    ea = rng.choice([c for c in range(256) if c != 0x80], (m, k)).astype(np.uint8)
    eb = rng.choice([c for c in range(256) if c != 0x80], (n, k)).astype(np.uint8)
    ea[1, :], eb[2, 8:24] = 0, 0
    c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-20, 20, (m, n))).astype(np.float32)
    c[0, :] = 0.0
    op = MFMA("CDNA3", f"f32_16x16x32_{ta}_{tb}")
    theirs = _chain(op, ea, eb, c, tdt[ta], tdt[tb])

    def split(codes, name):
        e = element_format(name)
        u = decode_elements(jnp.arange(256, dtype=jnp.uint32), e)
        x, v = np.asarray(exponents(u, e.grid.man_bits)), np.asarray(code_values_f64(e))
        idx = codes.reshape(codes.shape[0], k // 16, 16).transpose(1, 0, 2).astype(np.int32)
        return v[idx], x[idx]
    (va, xa), (vb, xb) = split(ea, elem[ta]), split(eb, elem[tb])
    unit = np.full((k // 16, 1), 127, np.uint8)

    def ours(acc):
        return np.asarray(two_stage_matmul(va, xa, unit, vb, xb, unit, acc,
                                           c=c.view(np.uint32))).view(np.uint32)
    preset = FUSED_PRESETS["cdna3_fp8"]
    assert (theirs != 0).sum() > m * n // 2
    np.testing.assert_array_equal(ours(preset), theirs)
    # the comparison can fail: F = 23 in the halves
    assert (ours(replace(preset, accum=replace(preset.accum, frac_bits=23))) != theirs).sum() > 0
