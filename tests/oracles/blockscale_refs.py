"""Independent references of the block-scaling presets: numpy float32 arithmetic (IEEE, round to
nearest even, one rounding per operation, as the recipes' CUDA and torch code) with ml_dtypes'
casts, written from the recipes' formulas (docs/blockscale.md), not from golden/.

Each returns (scale codes, element codes) for float32 x of shape (nblocks * k,) or (..., n).
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np

from fpforge.rtl.format_names import resolve

from . import exact

f32 = np.float32
E4M3, E2M1 = ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn


def _codes(v, dtype):
    return np.asarray(v).astype(dtype).view(np.uint8) & (0xF if dtype is E2M1 else 0xFF)


def _e4m3(v, saturate):
    v = np.asarray(v, f32)
    if saturate:
        v = np.where(np.isnan(v), v, np.minimum(v, f32(448)))
    codes = _codes(v, E4M3)
    return codes, codes.view(E4M3).astype(f32)


def _e2m1(y):
    return _codes(np.clip(np.asarray(y, f32), f32(-6), f32(6)), E2M1)


def _blocks(x, k):
    return np.asarray(x, f32).reshape(-1, k)


def _te_tensor_scales(amax, global_max):
    """TE's encode scale S_enc = min(6 * global_max / amax, FLT_MAX) (1.0 for amax 0 or an S_enc
    of 0) and decode scale 1 / S_enc."""
    s_enc = np.minimum(f32(6 * global_max) / f32(amax), np.finfo(f32).max)
    if amax == 0 or s_enc == 0:
        s_enc = f32(1)
    return s_enc, f32(1) / s_enc


def _te_elements(x, sf, s_dec):
    inv = np.minimum(f32(1) / (sf * s_dec), np.finfo(f32).max)
    return _e2m1(x * inv[:, None])


def te(x, amax, *, global_max=448):
    with np.errstate(all="ignore"):
        x = _blocks(x, 16)
        s_enc, s_dec = _te_tensor_scales(amax, global_max)
        bamax = np.max(np.abs(x), axis=1)
        codes, sf = _e4m3(bamax * (s_enc * f32(1 / 6)), True)
        return codes, _te_elements(x, sf, s_dec).reshape(-1)


def te_4over6(x, amax, *, global_max=256):
    with np.errstate(all="ignore"):
        x = _blocks(x, 16)
        s_enc, s_dec = _te_tensor_scales(amax, global_max)
        base = (np.max(np.abs(x), axis=1) / f32(6)) * s_enc
        out = []
        for sb in (np.minimum(base * f32(1.5), f32(448)), np.minimum(base, f32(448))):
            codes, sf = _e4m3(sb, True)
            q = _te_elements(x, sf, s_dec)
            deq = q.view(E2M1).astype(f32)
            val = ((deq * sf[:, None]) * f32(amax)) / f32(6 * global_max)
            err = np.zeros(x.shape[0], f32)
            for i in range(x.shape[1]):
                err = err + np.abs(val[:, i] - x[:, i])
            out.append((codes, q, err))
        four = out[0][2] < out[1][2]
        codes = np.where(four, out[0][0], out[1][0])
        q = np.where(four[:, None], out[0][1], out[1][1])
        return codes, q.reshape(-1)


def modelopt(x, amax):
    with np.errstate(all="ignore"):
        x = _blocks(x, 16)
        s2 = f32(amax) / f32(2688)
        sb = np.max(np.abs(x), axis=1) / (f32(6) * s2)
        sb = np.where(sb == 0, f32(1), sb)
        codes, sf = _e4m3(sb, False)
        y = x / (sf * s2)[:, None]
        q = _e2m1(y)
        q = np.where(np.isnan(y), 7, np.where(q == 8, 0, q)).astype(np.uint8)
        return codes, q.reshape(-1)


def torchao(x, amax):
    with np.errstate(all="ignore"):
        x = _blocks(x, 16)
        s2 = f32(amax) / f32(2688)
        sb = (np.max(np.abs(x), axis=1) / f32(6)) / s2
        sb = np.clip(sb, f32(2.0 ** -6), f32(448))
        codes, sf = _e4m3(sb, False)
        y = x * ((f32(1) / s2) / sf)[:, None]
        return codes, _e2m1(y).reshape(-1)


def vllm(x, elem="fp4e2m1"):
    """The bf16 trick on amax (x bf16-valued): (bits16 + (1 << 5)) & 0xFF80, floor(log2) - emax,
    E = max(0, 127 + min(e, 127)); elements x / 2^(E-127), round to nearest even, saturating."""
    fmt = resolve(elem)
    x = _blocks(x, 32)
    amax = np.max(np.abs(x), axis=1).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
    b = (amax + (1 << 5)) & 0xFF80
    out_s, out_q = [], []
    for row, bb in zip(x, b):
        e = -10**9 if bb == 0 else ((bb >> 7) & 0xFF) - 127 - fmt.emax
        E = int(max(0, 127 + min(int(e), 127)))
        out_s.append(E)
        for v in row:
            code, _ = exact.round_real(int(v < 0), abs(Fraction(float(v))) / Fraction(2) **
                                       (E - 127), fmt, "rne", True)
            out_q.append(code)
    return np.array(out_s, np.uint8), np.array(out_q, np.uint8)


def p3109_maxabs(x, elem="binary8p4se", scale="binary8p1uf", k=32):
    """ConvertToBlockMaxAbsFinite with s = Project(S) rounding up, SatFinite, and elements
    Project(X_i / s), rne, SatFinite: exact rational arithmetic."""
    fe, fs = resolve(elem), resolve(scale)
    out_s, out_q = [], []
    for row in _blocks(x, k):
        finite = [abs(Fraction(float(v))) for v in row if np.isfinite(v)]
        S = max(finite)
        code, _ = exact.round_real(0, S, fs, "rup", "finite")
        out_s.append(code)
        sv = fs.code_value(code)
        for v in row:
            if sv == 0:
                q, _ = exact.round_real(0, Fraction(0), fe, "rne", "finite")
            elif not np.isfinite(v):
                q, _ = exact.convert_float(float(v), fe, saturation="finite")
            else:
                q, _ = exact.round_real(int(v < 0), abs(Fraction(float(v))) / sv, fe, "rne",
                                        "finite")
            out_q.append(q)
    return np.array(out_s, np.uint8), np.array(out_q, np.uint8)
