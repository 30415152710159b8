"""golden.mx_quantize / mx_dequantize against torchao's mx_formats, gfloat and an exact model.

Where the references' conventions differ from the golden model (docs/mx.md), the tests pin the
difference itself: the affected blocks must differ in exactly the documented way. The references
are the ``mxref`` extra (pyproject.toml); without them only their tests skip, the exact model's
and the API's run.
"""

from __future__ import annotations

import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from fpforge import golden
from oracles.mx_refs import (ELEMS, EMAX, FP_ELEMS, GRID, OCP_ELEMS, RULES, code_of, elem_value,
                             gfloat_quantize_block, needs, quantize_block_exact, round_to_grid,
                             torchao_dequantize, torchao_quantize)
from fpforge.rtl.elements import ELEMENT_FORMATS, element_format
from fpforge.sim.stimulus import mx as mx_stimulus
from fpforge.sim.stimulus.mx import adversarial_blocks

TORCHAO = needs("torch", "torchao")
TORCHAO_RULES = ("floor", "ceil", "rceil", "even")    # its ScaleCalculationMode (no vllm)
GFLOAT = needs("gfloat")


def QUICK(all_elems, *quick):
    """Parameters: the ``quick`` ones in make test, the others marked slow."""
    return [e if e in quick else pytest.param(e, marks=pytest.mark.slow) for e in all_elems]


def golden_q(x, elem, rule, **kw):
    out = golden.mx_quantize(x, elem, scale_rule=rule, **kw)
    return tuple(np.asarray(a) for a in out)


def random_blocks(seed, rows, n=256):
    """Seeded float32 rows of ``n`` values, each row's magnitudes around its own binade."""
    return mx_stimulus.random_blocks(np.random.default_rng(seed), rows, n)


def rceil_log2_rounding(x_blocks, elem, g_scale, t_scale):
    """Blocks where torchao's rceil scale is one below the exact one because it computes
    ceil(log2(amax / max_elem)) in float32: the quotient is above 2^k by less than log2's
    rounding error. Returns the boolean mask of such blocks (and checks that nothing else
    differs in scale)."""
    amax = np.abs(x_blocks.astype(np.float64)).max(-1)
    mx = 127 / 64 if elem == "mxint8" else float(GRID[elem].max_finite)
    k = g_scale.astype(np.int64) - 127 - 1            # golden's scale is k + 1
    q = np.array([Fraction(float(a)) / Fraction(mx) / Fraction(2) ** int(kk)
                  for a, kk in zip(amax, k)], dtype=object)
    near = np.array([1 < v < 1 + Fraction(1, 1 << 16) for v in q])
    differ = g_scale != t_scale
    assert np.all(t_scale[differ] == g_scale[differ] - 1), "torchao rceil scale differs otherwise"
    assert np.all(near[differ]), "torchao rceil scale differs away from a power-of-two boundary"
    return differ


# ----- torchao and the exact model, on the same blocks ------------------------------------------

def _rounded(v, divisor, elem):
    r, _, _ = round_to_grid(Fraction(float(v)) / divisor, GRID[elem], saturate=True)
    return r, GRID[elem], bool(np.signbit(v))


def _tiers(elems, rules=RULES):
    """floor and rceil for every format, the other rules for two, in make test; all of it, with
    16 blocks per adversarial class, in the slow tier."""
    for elem in elems:
        for rule in rules:
            quick = rule in ("floor", "rceil") or elem in ("fp8e4m3", "fp4e2m1")
            yield pytest.param(elem, rule, 1, marks=() if quick else pytest.mark.slow)
            yield pytest.param(elem, rule, 16, marks=pytest.mark.slow)


def _quantized_case(elem, rule, per_class):
    """Seeded random blocks and every adversarial class (sim.stimulus.mx.adversarial_blocks) in
    float32, and their golden quantization: (x, class names of the adversarial rows, scale
    codes, element codes)."""
    rng = np.random.default_rng(zlib.crc32(f"{elem} {rule}".encode()))
    adv = adversarial_blocks(elem, rng, per_class=max(per_class, 8))
    names = [n for n, b in adv.items() for _ in b]
    x = np.concatenate([random_blocks(per_class, rows=8 * per_class).reshape(-1, 32)] +
                       list(adv.values()))
    gs, ge = golden_q(x, elem, rule)
    return x, names, gs[:, 0], ge


@pytest.mark.parametrize("elem,rule,per_class", list(_tiers(ELEMS)))
def test_quantize_matches_exact_model(elem, rule, per_class):
    """The exact Fraction model: bit-exact on per_class blocks of each adversarial class."""
    x, names, gs, ge = _quantized_case(elem, rule, per_class)
    n_random = len(x) - len(names)
    picks = [n_random + i for i, n in enumerate(names) if i % max(per_class, 8) < per_class]
    assert len(picks) == per_class * len(set(names))
    for i in picks:
        s, codes = quantize_block_exact(x[i], elem, rule)
        assert (int(gs[i]), list(ge[i].astype(int))) == (s, codes), names[i - n_random]


@TORCHAO
@pytest.mark.parametrize("elem,rule,per_class", list(_tiers(FP_ELEMS, TORCHAO_RULES)))
def test_quantize_matches_torchao(elem, rule, per_class):
    """torchao (FP elements): bit-exact, except two documented differences checked here in
    their exact form: blocks with scale code 0 (2^-127), where torchao divides by 2^-126
    (floor, ceil, even: its float32 scale is clamped to the smallest normal) or by 1 (rceil:
    its reciprocal for code 0 is 1.0); and rceil blocks where torchao's float32
    ceil(log2(amax / max_elem)) loses a quotient just above a power of two."""
    x, _, gs, ge = _quantized_case(elem, rule, per_class)
    ts, te = torchao_quantize(x, elem, rule)
    ts = ts[:, 0]
    tiny = gs == 0
    differ = rceil_log2_rounding(x, elem, gs, ts) if rule == "rceil" else np.zeros(len(x), bool)
    np.testing.assert_array_equal(gs[~differ], ts[~differ])
    same = ~differ & ~tiny
    np.testing.assert_array_equal(ge[same], te[same])
    # Scale code 0: torchao's elements are the exact rounding at its divisor.
    assert tiny.sum() >= 8
    divisor = Fraction(1) if rule == "rceil" else Fraction(2) ** -126
    want = np.array([[code_of(*_rounded(v, divisor, elem)) for v in row] for row in x[tiny]])
    np.testing.assert_array_equal(te[tiny], want)


@TORCHAO
@pytest.mark.parametrize("rule", ["floor", pytest.param("rceil", marks=pytest.mark.slow)])
@pytest.mark.parametrize("elem", FP_ELEMS)
def test_bfloat16_matches_torchao(elem, rule):
    import torch
    x = torch.from_numpy(random_blocks(9, rows=16)).to(torch.bfloat16)
    gx = x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    gs, ge = golden_q(gx, elem, rule)
    ts, te = torchao_quantize(x.to(torch.float32).numpy(), elem, rule, bf16=True)
    np.testing.assert_array_equal(gs, ts)
    np.testing.assert_array_equal(ge, te)


def _nonfinite_case():
    """Four rows of four blocks, and the same rows with an inf in block 0 of row 0, a NaN in block
    1 of row 1, and -inf and NaN in block 2 of row 2."""
    x = random_blocks(3, rows=4, n=128)
    y = x.copy()
    y[0, 5], y[1, 40], y[2, 70], y[2, 71] = np.inf, np.nan, -np.inf, np.nan
    return x, y


@pytest.mark.parametrize("elem", QUICK(FP_ELEMS, "fp8e4m3", "fp4e2m1"))
def test_nonfinite_blocks(elem):
    """inf or NaN in a block: golden gives scale 0xFF and NaN elements (0 without a NaN code);
    other blocks are untouched."""
    x, y = _nonfinite_case()
    gs, ge = golden_q(y, elem, "floor")
    ref_s, ref_e = golden_q(x, elem, "floor")
    bad = np.zeros(gs.shape, bool)
    bad[0, 0] = bad[1, 1] = bad[2, 2] = True
    assert np.all(gs[bad] == 0xFF)
    np.testing.assert_array_equal(gs[~bad], ref_s[~bad])
    nan_code = element_format(elem).grid.nan_code or 0
    ebad = np.repeat(bad, 32, axis=1)
    assert np.all(ge[ebad] == nan_code)
    np.testing.assert_array_equal(ge[~ebad], ref_e[~ebad])


@TORCHAO
@pytest.mark.parametrize("elem", QUICK(FP_ELEMS, "fp8e4m3", "fp4e2m1"))
def test_nonfinite_blocks_in_torchao(elem):
    """torchao agrees on NaN blocks' scale (0xFF); an infinity gives it the finite scale
    2^(128 - emax) (floor) where golden gives 0xFF."""
    _, y = _nonfinite_case()
    ts, _ = torchao_quantize(y, elem, "floor")
    assert ts[1, 1] == 0xFF and ts[2, 2] == 0xFF
    assert ts[0, 0] == 127 + 128 - EMAX[elem]


@TORCHAO
def test_dequantize_matches_torchao():
    """Every element code under random scales (and the NaN scale): torchao multiplies in float32,
    which is one correct rounding of the exact product, as the golden model's rounder is."""
    rng = np.random.default_rng(11)
    for elem in FP_ELEMS:
        n = 1 << element_format(elem).width
        codes = np.tile(np.arange(n, dtype=np.uint8), 64 * 32 // n).reshape(64, 32)
        if elem == "fp8e5m2":                     # torchao casts inf/NaN elements as float32 does
            codes = np.where(np.isin(codes & 0x7F, [0x7C, 0x7D, 0x7E, 0x7F]), 0, codes)
        scales = rng.integers(0, 256, (64, 1)).astype(np.uint8)
        scales[:4, 0] = [0, 1, 254, 255]
        g = np.asarray(golden.mx_dequantize(scales, codes, elem)).view(np.uint32)
        t = torchao_dequantize(scales, codes, elem).view(np.uint32)
        gnan, tnan = np.isnan(g.view(np.float32)), np.isnan(t.view(np.float32))
        np.testing.assert_array_equal(gnan, tnan, err_msg=elem)
        np.testing.assert_array_equal(g[~gnan], t[~tnan], err_msg=elem)


# ----- the exact model and gfloat ---------------------------------------------------------------

@GFLOAT
@pytest.mark.parametrize("elem", OCP_ELEMS)
def test_matches_gfloat(elem):
    """gfloat's compute_scale_amax + saturating encode is the OCP floor rule. MXINT8: gfloat's
    int8 reaches -128 (-2.0) where the golden model clamps symmetrically to -127."""
    blocks = adversarial_blocks(elem, np.random.default_rng(6), per_class=4)
    x = np.concatenate([b for n, b in blocks.items()] + [random_blocks(1, 8, 32)])
    gs, ge = golden_q(x, elem, "floor")
    minus128 = 0
    for i, row in enumerate(x):
        s, codes = gfloat_quantize_block(row, elem)
        assert s == gs[i, 0]
        codes = np.asarray(codes) & 0xFF
        if elem == "mxint8":
            d = codes != ge[i]
            assert np.all((codes[d] == 0x80) & (ge[i][d] == 0x81))
            minus128 += d.sum()
            codes = np.where(d, 0x81, codes)
        np.testing.assert_array_equal(codes, ge[i])
    if elem == "mxint8":
        assert minus128 > 0, "the adversarial blocks should reach -128 in gfloat"


@GFLOAT
@pytest.mark.parametrize("elem", QUICK(OCP_ELEMS, "fp8e4m3", "mxint8"))
def test_stochastic_matches_gfloat(elem):
    """golden's stochastic rounding (round away when frac_R + rbits carries) is gfloat's
    StochasticFastest: frac + rbits * 2^-R >= 1."""
    rng = np.random.default_rng(12)
    x = random_blocks(2, 6, 64)
    rbits = rng.integers(0, 256, x.shape)
    gs, ge = golden_q(x, elem, "floor", rounding="stochastic", rbits=rbits)
    rne_s, rne_e = golden_q(x, elem, "floor")
    for i in range(x.shape[0]):
        for j in range(0, x.shape[1], 32):
            s, codes = gfloat_quantize_block(x[i, j:j + 32], elem, "stochastic",
                                             rbits[i, j:j + 32])
            assert s == gs[i, j // 32]
            np.testing.assert_array_equal(np.asarray(codes) & 0xFF, ge[i, j:j + 32])
    assert (ge != rne_e).any()


# ----- API, limits, errors ----------------------------------------------------------------------

@pytest.mark.parametrize("elem", QUICK(ELEMS, "fp8e5m2", "mxint8", "int4"))
def test_roundtrip_and_limits(elem):
    """Element codes that are representable come back exactly; the largest element decodes to
    max_elem * X; saturation keeps the sign; MXINT8 never produces -128 (INT4 -8)."""
    e = element_format(elem)
    int_min = 1 << (e.width - 1)          # an integer element's most negative code
    codes = np.array([c for c in range(1 << e.width) if not (e.twos_complement and c == int_min)
                      and (e.twos_complement or e.grid.classify(c) not in ("nan", "snan", "inf"))],
                     dtype=np.uint8)
    codes = np.resize(codes, (len(codes) + 31) // 32 * 32).reshape(-1, 32)
    codes[:, 0] = int_min - 1 if e.twos_complement else e.grid.max_finite_code
    scales = np.full((codes.shape[0], 1), 127 + 3, np.uint8)
    x = np.asarray(golden.mx_dequantize(scales, codes, elem))
    vals = np.array([[float(elem_value(int(c), elem)) * 8 for c in row] for row in codes])
    np.testing.assert_array_equal(x, vals.astype(np.float32))
    s, back = golden_q(x, elem, "floor")
    assert np.all(s == 130)
    same = np.where(vals == 0, 0, back) == np.where(vals == 0, 0, codes)
    assert same.all()
    # E8M0 overflow: MXINT8 (emax 0) under ceil wants 2^128 for amax > 2^127; clamped to 2^127
    # the elements saturate symmetrically (INT4 likewise, to +-7).
    if e.twos_complement:
        big = np.full((1, 32), 3.4e38, np.float32)
        big[0, 1::2] *= -1
        s, q = golden_q(big, elem, "ceil")
        assert s[0, 0] == 254 and np.all(q[0, ::2] == int_min - 1)
        assert np.all(q[0, 1::2] == int_min + 1)


def test_shapes_and_block_parameter():
    x = random_blocks(4, 6, 64).reshape(2, 3, 64)
    s, e = golden_q(x, "fp8e4m3", "floor", block=16)
    assert s.shape == (2, 3, 4) and s.dtype == np.uint8
    assert e.shape == (2, 3, 64) and e.dtype == np.uint8
    s1, e1 = golden_q(x.reshape(-1, 16), "fp8e4m3", "floor", block=16)
    np.testing.assert_array_equal(s.reshape(-1), s1.reshape(-1))
    np.testing.assert_array_equal(e.reshape(-1), e1.reshape(-1))
    s2, e2, f = golden.mx_quantize(x, "fp8e4m3", block=16, return_flags=True)
    assert np.asarray(f).shape == x.shape and (np.asarray(f) & 1).any()


@TORCHAO
def test_block_16_matches_torchao():
    x = random_blocks(4, 6, 64)
    s, e = golden_q(x, "fp8e4m3", "floor", block=16)
    ts, te = torchao_quantize(x, "fp8e4m3", "floor", block=16)
    np.testing.assert_array_equal(s, ts)
    np.testing.assert_array_equal(e, te)


def test_errors():
    x = np.zeros((2, 32), np.float32)
    with pytest.raises(ValueError, match=r"^MX element format must be one of fp8e4m3, fp8e5m2, "
                       r"fp6e3m2, fp6e2m3, fp4e2m1, mxint8, int4, fp8e4m3fnuz, fp8e5m2fnuz, "
                       r"binary8p4se, binary8p3se, binary4p2sf \(or their catalog names\), not "
                       r"'fp16'$"):
        golden.mx_quantize(x, "fp16")
    with pytest.raises(ValueError, match=r"^scale rule must be one of floor, ceil, rceil, even, "
                       r"vllm, nvfp4_te, nvfp4_modelopt, nvfp4_torchao, nvfp4_4over6, p3109_maxabs, "
                       r"not 'round'$"):
        golden.mx_quantize(x, "fp8e4m3", scale_rule="round")
    with pytest.raises(ValueError, match=r"^mx_quantize makes E8M0-scaled blocks; the nvfp4_te "
                       r"recipe is golden.blockscale.block_quantize"):
        golden.mx_quantize(x, "fp4e2m1", scale_rule="nvfp4_te")
    with pytest.raises(ValueError, match=r"^block must be an integer 1\.\.256, not 0$"):
        golden.mx_quantize(x, "fp8e4m3", block=0)
    with pytest.raises(ValueError, match=r"^block must be an integer 1\.\.256, not 0$"):
        golden.mx_dequantize(np.zeros((2, 1), np.uint8), x.astype(np.uint8), "fp8e4m3", block=0)
    with pytest.raises(ValueError, match=r"^the MX quantizer takes a static rounding mode or "
                       r"stochastic, not 'dynamic'$"):
        golden.mx_quantize(x, "fp8e4m3", rounding="dynamic")
    with pytest.raises(ValueError, match=r"^the last axis of x \(shape \(2, 32\)\) must be a "
                       r"multiple of the block size 24$"):
        golden.mx_quantize(x, "fp8e4m3", block=24)
    with pytest.raises(TypeError, match=r"^mx_quantize takes float32 or bfloat16 arrays, not "
                       r"float16$"):
        golden.mx_quantize(x.astype(np.float16), "fp8e4m3")
    with pytest.raises(ValueError, match=r"^rbits is needed by, and only by, the stochastic "
                       r"roundings$"):
        golden.mx_quantize(x, "fp8e4m3", rounding="stochastic")
    assert set(ELEMENT_FORMATS) == set(ELEMS)
    assert element_format("float8_e4m3fn").name == "fp8e4m3"
    assert "int8 two's complement" in element_format("mxint8").describe()
