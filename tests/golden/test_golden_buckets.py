"""golden/buckets.py: the element-wise units run on canonical shapes. Calls of one spec whose
arrays differ only in length (within a bucket) or in the integer dtype carrying the codes
compile once, and every output is the one the kernel gives on the arrays as they were given,
element by element, in the same dtype and shape."""

from __future__ import annotations

import numpy as np
import pytest

from fpforge import golden
from fpforge.golden import buckets, scalar
from fpforge.golden.quantize import dequantize, quantize
from fpforge.rtl.kinds import make_spec

# One spec of each module whose units run through golden/buckets.py, with rm and rbits ports,
# float32 operands read bit for bit and 32-bit codes given as int64.
SPECS = [
    make_spec("mul", format="fp8e5m2", rounding="dynamic"),
    make_spec("add", format="fp32", rounding="rna"),
    make_spec("fma", format="bf16", a_format="fp8e4m3", rounding="stochastic", sr_bits=9),
    make_spec("cvt", format="fp8e4m3", in_format="float32", rounding="stochastic_b"),
    make_spec("recip", format="bf16", rounding="dynamic", accuracy="faithful"),
    make_spec("i2f", format="fp8e4m3", int_width=16, rounding="stochastic"),
    make_spec("f2i", format="fp16", rounding="dynamic", int_overflow="saturate"),
    make_spec("cmp", a_format="fp8e4m3", b_format="binary8p3se"),
    make_spec("sgnj", format="fp8e4m3fnuz"),
]
# 0-d, a 2-D batch, one element past the smallest bucket, and two shapes that broadcast.
SHAPES = [(), (2, 3), (buckets.MIN_LENGTH + 1,), ((3, 1), (1, 4))]


def _inputs(spec, shape, seed=0) -> dict:
    """Random codes for every data input in a dtype that differs from port to port (uint8,
    int64 with bits above the 32 the units read, float32 for a float32 operand, uint16)."""
    rng = np.random.default_rng(seed)
    shapes = shape if isinstance(shape[0] if shape else None, tuple) else (shape,)
    out = {}
    for i, p in enumerate(spec.inputs()):
        s = shapes[i % len(shapes)]
        codes = rng.integers(0, 1 << p.lane_width, s, dtype=np.uint64)
        if i % 3 == 1:
            out[p.name] = codes.astype(np.int64) + (np.int64(5) << 40)
        elif p.lane_width == 32 and p.name in ("a", "b", "c", "x"):
            out[p.name] = codes.astype(np.uint32).view(np.float32)
        else:
            out[p.name] = codes.astype(np.uint8 if p.lane_width <= 8 else np.uint16
                                       if p.lane_width <= 16 else np.uint32)
    return out


def _as_given(spec, inputs: dict) -> dict:
    """What the units computed before buckets: the kernel on the arrays as given."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(buckets, "MAX_PADDED", -1)
        return golden.evaluate(spec, **inputs)


def _element(inputs: dict, index) -> dict:
    """The inputs of one element of the broadcast shape, 0-d."""
    shape = np.broadcast_shapes(*(v.shape for v in inputs.values()))
    return {k: np.broadcast_to(v, shape)[index] for k, v in inputs.items()}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.default_name)
def test_bucketed_outputs_are_the_kernels_element_by_element(spec, shape):
    inputs = _inputs(spec, shape)
    got = golden.evaluate(spec, **inputs)
    whole = _as_given(spec, inputs)
    shape = np.broadcast_shapes(*(np.shape(v) for v in inputs.values()))
    for port, y in got.items():
        assert (y.shape, y.dtype) == (shape, whole[port].dtype), port
        np.testing.assert_array_equal(np.asarray(y), np.asarray(whole[port]), err_msg=port)
    for index in np.ndindex(*shape):
        one = _as_given(spec, _element(inputs, index))
        for port, y in got.items():
            assert np.asarray(y)[index] == np.asarray(one[port]), (port, index)


def test_one_compilation_for_lengths_and_dtypes_within_a_bucket():
    spec = make_spec("mul", format="fp8e4m3", rounding="rup", saturate=True).numerics()
    rng = np.random.default_rng(1)
    codes = lambda n, dtype: rng.integers(0, 256, n).astype(dtype)  # noqa: E731
    golden.evaluate(spec, a=codes(300, np.uint8), b=codes(300, np.uint8))
    compiled = scalar._kernel._cache_size()
    for n, dtype in [(301, np.int64), (512, np.uint32), (257, np.uint8)]:
        golden.evaluate(spec, a=codes(n, dtype), b=codes(n, dtype))
        golden.evaluate(spec, a=codes(n, dtype), b=codes(1, dtype))     # broadcast
    assert scalar._kernel._cache_size() == compiled
    golden.evaluate(spec, a=codes(513, np.uint8), b=codes(513, np.uint8))   # the next bucket
    assert scalar._kernel._cache_size() == compiled + 1


def test_large_arrays_keep_their_shape_and_dtype():
    """Above MAX_PADDED nothing is copied or padded: the kernel sees the array as given."""
    n = buckets.MAX_PADDED + 1
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    y = quantize(x, "fp8e4m3")
    assert (y.shape, y.dtype) == ((n,), np.uint8)
    np.testing.assert_array_equal(np.asarray(y[-300:]),
                                  np.asarray(quantize(x[-300:], "fp8e4m3")))


def test_dequantize_reads_codes_of_any_dtype():
    codes = np.arange(256)
    want = dequantize(codes.astype(np.uint8), "fp8e5m2")
    for dtype in (np.int64, np.uint32, np.uint16):
        got = dequantize(codes.astype(dtype).reshape(16, 16), "fp8e5m2")
        assert (got.shape, got.dtype) == ((16, 16), np.float32)
        np.testing.assert_array_equal(np.asarray(got).ravel().view(np.uint32),
                                      np.asarray(want).view(np.uint32))


def test_bucket_length():
    assert [buckets.bucket_length(n) for n in (0, 1, 256, 257, 4096, 5004)] == \
        [256, 256, 256, 512, 4096, 8192]
