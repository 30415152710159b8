"""Generalized block scaling (golden/blockscale.py) against independent references: numpy
float32 + ml_dtypes models of each NVFP4 recipe, exact rational models of vLLM's and P3109's
rules, and the MX unit's golden model; with the inputs on which the recipes disagree pinned
(docs/blockscale.md, "Where the presets differ")."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fpforge import golden
from fpforge.golden.blockscale import block_dequantize, block_quantize
from fpforge.rtl.blockscale import PRESETS, preset
from fpforge.rtl.options import OptionError

from oracles import blockscale_refs as refs


# The tests quantize BLOCKS blocks of 16 or SIZE // 32 blocks of 32, so that each recipe
# compiles for one shape of each (4over6's quantizer, run op by op, for most of its time).
SIZE = 9600
BLOCKS = SIZE // 16


def _data(seed, blocks, k=16, spread=6):
    """Gaussian blocks with per-block magnitudes over 2^spread, and a few constructed ties."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((blocks, k)) * np.exp2(rng.uniform(-spread, spread, (blocks, 1)))
    return x.astype(np.float32).reshape(-1)


def _check(name, ref, x, amax=None):
    q = block_quantize(x, name) if amax is None else \
        block_quantize(x, name, tensor_amax=np.float32(amax))
    want_s, want_q = ref(x) if amax is None else ref(x, np.float32(amax))
    np.testing.assert_array_equal(np.asarray(q.scales).reshape(-1), want_s, err_msg=f"{name} scales")
    np.testing.assert_array_equal(np.asarray(q.elements).reshape(-1), want_q,
                                  err_msg=f"{name} elements")


@pytest.mark.parametrize("name, ref", [("nvfp4_te", refs.te), ("nvfp4_modelopt", refs.modelopt),
                                       ("nvfp4_torchao", refs.torchao),
                                       ("nvfp4_4over6", refs.te_4over6)])
def test_nvfp4_recipes_against_float32_references(name, ref):
    x = _data(1, BLOCKS)
    _check(name, ref, x, amax=np.abs(x).max())
    # A calibrated amax below the data's (block scales above 448: saturated, clamped or NaN).
    _check(name, ref, x, amax=np.abs(x).max() / 3)


def test_mx_vllm_against_its_bf16_rule():
    x = _data(2, SIZE // 32, k=32).astype(ml_dtypes.bfloat16).astype(np.float32)   # vLLM's inputs
    _check("mx_vllm", refs.vllm, x)


def test_p3109_maxabs_against_exact_arithmetic():
    x = _data(3, SIZE // 32, k=32, spread=30)
    x[:5] = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    _check("p3109_maxabs", refs.p3109_maxabs, x)


MX_PRESETS = [("mx_floor", "floor"), ("mx_ceil", "ceil"), ("mx_even", "even"),
              ("mx_rceil", "rceil"), ("mx_vllm", "vllm")]
MX_ELEMS = ["fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1"]


def _mx_preset_cases():
    """make test: mx_rceil (the claim about TE's rceil) on every element format, each other
    preset on one (preset i on format i); the other pairs, the same rules on another format,
    in make test-all."""
    return [pytest.param(elem, name, rule, id=f"{elem}-{name}-{rule}",
                         marks=() if rule == "rceil" or i == j else pytest.mark.slow)
            for j, elem in enumerate(MX_ELEMS) for i, (name, rule) in enumerate(MX_PRESETS)]


@pytest.mark.parametrize("elem, name, rule", _mx_preset_cases())
def test_mx_presets_are_the_mx_units_rules(name, rule, elem):
    """On finite data the MX presets equal the mxq unit's scale rules bit for bit (TE's rceil,
    a float32 product with fl(1/max), is the exact rceil for every float element format; the
    mxq unit's vllm rule is the mx_vllm preset in hardware)."""
    x = _data(4, SIZE // 32, k=32, spread=40)
    x[::97] = 0
    q = block_quantize(x, name, elem=elem)
    scales, elems = golden.mx_quantize(x.reshape(-1, 32), elem, scale_rule=rule)
    np.testing.assert_array_equal(np.asarray(q.scales).reshape(-1), np.asarray(scales).reshape(-1))
    np.testing.assert_array_equal(np.asarray(q.elements), np.asarray(elems).reshape(-1))


def test_tiles_take_the_tile_maximum():
    from dataclasses import replace
    tiled = replace(preset("nvfp4_te"), tile=True)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((32, 48)).astype(np.float32)
    q = block_quantize(w, tiled)
    assert np.asarray(q.scales).shape == (2, 3)
    # Each tile's scale is the 1 x 16 rule's scale of a block holding the tile's amax.
    amax = np.abs(w).max()
    for i in range(2):
        for j in range(3):
            tile = w[16 * i:16 * i + 16, 16 * j:16 * j + 16]
            probe = np.zeros(SIZE, np.float32)         # the first block holds it
            probe[0] = np.abs(tile).max()
            want = block_quantize(probe, "nvfp4_te", tensor_amax=amax).scales
            assert int(np.asarray(q.scales)[i, j]) == int(np.asarray(want).reshape(-1)[0])


def test_dequantize_inverts_up_to_the_rounding():
    x = _data(6, BLOCKS)
    for name in PRESETS:
        q = block_quantize(x, name, tensor_amax=np.abs(x).max()) if \
            PRESETS[name].tensor_scale else block_quantize(x.reshape(-1), name)
        y = np.asarray(block_dequantize(q, name, tensor_amax=np.abs(x).max()))
        qsnr = 10 * np.log10((x.astype(np.float64) ** 2).sum() / ((y - x) ** 2).sum())
        assert qsnr > (15 if "fp4" in name or "vllm" in name else 25), name


def test_unknown_preset_and_bad_parameters():
    with pytest.raises(OptionError, match="^unknown block-scaling preset 'nvfp5'; valid: "
                                          "mx_floor, mx_ceil, mx_rceil, mx_even, mx_vllm, "
                                          "nvfp4_te, nvfp4_modelopt, nvfp4_torchao, "
                                          "nvfp4_4over6, p3109_maxabs$"):
        preset("nvfp5")
    with pytest.raises(ValueError, match="multiple of the block size 16"):
        block_quantize(np.zeros(20, np.float32), "nvfp4_te")


# ----- where the recipes disagree (pinned; docs/blockscale.md) ---------------------------------

def _one_block(values, name, amax):
    """The first block's scale and first element codes, the block put before zero blocks (each
    block's codes depend on that block and the given tensor amax alone) to make SIZE values."""
    x = np.zeros(SIZE, np.float32)
    x[:len(values)] = values
    q = block_quantize(x, name, tensor_amax=np.float32(amax))
    return int(np.asarray(q.scales).reshape(-1)[0]), [int(c) for c in
                                                       np.asarray(q.elements)[:len(values)]]


RECIPES = ("nvfp4_te", "nvfp4_modelopt", "nvfp4_torchao")


def test_an_all_zero_block():
    """Scale 0 (TE), 1.0 = 0x38 (ModelOpt), 2^-6 = 0x08 (torchao's floor)."""
    got = {n: _one_block([], n, 10.0)[0] for n in RECIPES}
    assert got == {"nvfp4_te": 0x00, "nvfp4_modelopt": 0x38, "nvfp4_torchao": 0x08}


def test_negative_zero():
    """-0.0 is code 0x8 where the cast keeps the sign (TE, torchao), 0x0 in ModelOpt."""
    got = {n: _one_block([1.0, -0.0], n, 6.0)[1][1] for n in RECIPES}
    assert got == {"nvfp4_te": 0x8, "nvfp4_modelopt": 0x0, "nvfp4_torchao": 0x8}


def test_a_tiny_block():
    """A block far below the tensor's amax: its scale underflows to 0 in TE and ModelOpt (whose
    elements then saturate), torchao floors it at 2^-6."""
    got = {n: _one_block([0.001, -0.0005, 0.0, -0.0], n, 1000.0) for n in RECIPES}
    assert got["nvfp4_te"] == (0x00, [0x7, 0xF, 0x0, 0x8])
    assert got["nvfp4_modelopt"] == (0x00, [0x7, 0xF, 0x7, 0x7])
    assert got["nvfp4_torchao"] == (0x08, [0x0, 0x8, 0x0, 0x8])


def test_a_subnormal_block_scale():
    """An fp32 block scale between 2^-10 and 2^-6 is an E4M3 subnormal (2^-8) in TE and
    ModelOpt; torchao's floor makes it 2^-6."""
    got = {n: _one_block([0.01, 0.004], n, 1000.0) for n in RECIPES}
    assert got["nvfp4_te"] == got["nvfp4_modelopt"] == (0x02, [0x7, 0x5])
    assert got["nvfp4_torchao"] == (0x08, [0x3, 0x1])


def test_a_block_scale_tie():
    """amax / bamax put the exact block scale at 368, halfway between E4M3's 352 and 384: TE's
    and ModelOpt's float32 sequences reach 368.0 and tie to even (384); torchao's two divisions
    give 367.99997 and round to 352."""
    amax = np.array([0x41D74524], np.uint32).view(np.float32)[0]
    bamax = np.array([0x41B0D439], np.uint32).view(np.float32)[0]
    got = {n: _one_block([bamax], n, amax)[0] for n in RECIPES}
    assert got == {"nvfp4_te": 0x7C, "nvfp4_modelopt": 0x7C, "nvfp4_torchao": 0x7B}


@pytest.mark.parametrize("amax, sf_value, x, modelopt, torchao", [
    (51.89953, 288.0, 13.901661, 0x4, 0x5),
    (86.28074, 208.0, 23.3677, 0x6, 0x5),
    (81.515465, 60.0, 1.3646562, 0x1, 0x2),
])
def test_element_ties(amax, sf_value, x, modelopt, torchao):
    """x / (sf * s2) against x * ((1 / s2) / sf): one float32 ulp apart at an E2M1 tie."""
    s2 = np.float32(amax) / np.float32(2688)
    bamax = np.float32(sf_value) * np.float32(6) * s2     # a block whose scale is sf_value
    for name, want in (("nvfp4_modelopt", modelopt), ("nvfp4_torchao", torchao)):
        sf, codes = _one_block([bamax, x], name, amax)
        assert ml_dtypes.float8_e4m3fn(sf_value).view(np.uint8) == sf, name
        assert codes[1] == want, name


def test_an_infinite_block_under_rceil_and_floor():
    """TE's rceil saturates: an infinity gives scale 0xFE and saturated elements; the OCP rule
    (mx_floor, the mxq unit) gives the NaN scale 0xFF and NaN elements."""
    x = np.zeros(SIZE, np.float32)             # the first block of 32, then zero blocks
    x[:3] = [np.inf, -1.0, 2.0]
    te = block_quantize(x, "mx_rceil")
    assert int(np.asarray(te.scales)[0]) == 0xFE
    assert [int(c) for c in np.asarray(te.elements)[:3]] == [0x7E, 0x80, 0x00]
    ocp = block_quantize(x, "mx_floor")
    assert int(np.asarray(ocp.scales)[0]) == 0xFF
    assert set(int(c) for c in np.asarray(ocp.elements)[:32]) == {0x7F}


# ----- torchao itself (the mxref extra) ---------------------------------------------------------

def test_nvfp4_torchao_against_torchao():
    """golden's nvfp4_torchao against torchao's own nvfp4_quantize (two-level, its Python path),
    scales and every element code, on Gaussian blocks over a wide range plus zero, tiny and
    negative-zero blocks. Runs when the mxref extra (torch, torchao) is installed."""
    torch = pytest.importorskip("torch", reason="needs torch, torchao (pip install -e '.[mxref]')")
    pytest.importorskip("torchao", reason="needs torch, torchao (pip install -e '.[mxref]')")
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    x = _data(8, BLOCKS, spread=12)
    x[:16] = 0.0
    x[16:32] = np.float32(1e-7) * np.arange(16, dtype=np.float32)
    x[32:48] = -0.0
    x[48] = 1.0
    amax = np.float32(np.abs(x).max())
    t = torch.from_numpy(x.reshape(1, -1))
    scales, packed = nvfp4_quantize(t, 16, per_tensor_amax_to_scale(torch.tensor(amax)))
    packed = packed.view(torch.uint8).numpy().reshape(-1)
    codes = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(-1)
    q = block_quantize(x, "nvfp4_torchao", tensor_amax=amax)
    np.testing.assert_array_equal(np.asarray(q.scales).reshape(-1),
                                  scales.view(torch.uint8).numpy().reshape(-1))
    np.testing.assert_array_equal(np.asarray(q.elements), codes)


def test_power_of_two_rule_with_e4m3_scales():
    """MXFP4 blocks with E4M3 scales (a power-of-two rule in another scale format, AMD
    gfx1250's): inside E4M3's powers of two (2^-9 .. 2^8) the same elements as E8M0 and the same
    scale value; below, the scale stays 2^-9 (code 0x01) and the elements are x * 2^9 rounded
    (ml_dtypes, exact in float64, within E2M1's range); an all-zero block gets 2^-9 too; a block
    with a NaN gets E4M3's NaN scale."""
    from dataclasses import replace
    from fpforge.rtl.formats import CATALOG
    e4m3 = CATALOG["float8_e4m3fn"]
    scaling = replace(preset("mx_floor", elem="fp4e2m1"), name="mx_floor_e4m3", scale_fmt=e4m3)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((SIZE // 32, 32)) * np.exp2(rng.integers(-6, 9, (SIZE // 32, 1)))
         ).astype(np.float32)
    q, ref = block_quantize(x, scaling), block_quantize(x, "mx_floor", elem="fp4e2m1")
    assert np.array_equal(np.asarray(q.elements), np.asarray(ref.elements))
    value = np.asarray(q.scales).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert np.array_equal(value, np.exp2(np.asarray(ref.scales).astype(np.float64) - 127))
    tiny = (rng.standard_normal((SIZE // 32, 32)) * 2.0 ** -14).astype(np.float32)
    tiny[0] = 0
    tiny[1, 3] = np.nan
    q = block_quantize(tiny, scaling)
    scales = np.asarray(q.scales)
    assert list(scales[0]) == [0x01] and scales[1, 0] == 0x7F and all(scales[2:, 0] == 0x01)
    want = (tiny[2:].astype(np.float64) * 2.0 ** 9).astype(ml_dtypes.float4_e2m1fn)
    assert np.array_equal(np.asarray(q.elements)[2:], want.view(np.uint8))
    with pytest.raises(OptionError, match="divisor emax"):
        replace(preset("mx_rceil"), scale_fmt=e4m3)
