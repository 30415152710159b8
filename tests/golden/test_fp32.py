"""golden/fp32.py: binary32 arithmetic on bit patterns against numpy's float32 (IEEE, round to
nearest even), on random operands across the whole exponent range, subnormals and specials."""

import jax
import numpy as np
import pytest

from fpforge.golden import fp32


def _operands(seed, n=100_000):
    rng = np.random.default_rng(seed)
    a, b = (np.clip(rng.standard_normal(n) * np.exp2(rng.integers(-150, 128, n)), -3e38, 3e38)
            .astype(np.float32) for _ in range(2))
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, 1.0],
                        np.float32)
    sa, sb = (g.ravel() for g in np.meshgrid(specials, specials))
    return np.concatenate([a, sa]), np.concatenate([b, sb])


@pytest.mark.parametrize("op, ref", [("mul", np.multiply), ("add", np.add),
                                     ("sub", np.subtract), ("div", np.divide)])
def test_against_numpy_float32(op, ref):
    a, b = _operands(7)
    with np.errstate(all="ignore"):
        want = ref(a, b).astype(np.float32)
    got = np.asarray(jax.jit(getattr(fp32, op))(a.view(np.uint32), b.view(np.uint32)))
    same = (got == want.view(np.uint32)) | (np.isnan(got.view(np.float32)) & np.isnan(want))
    assert same.all(), f"{op}: {np.count_nonzero(~same)} differ, first at {a[~same][:3]}, " \
                       f"{b[~same][:3]}"


def test_fmin_and_constants():
    a = np.array([1.0, -2.0, 3.0, -0.0], np.float32).view(np.uint32)
    b = np.array([2.0, -1.0, -4.0, 0.0], np.float32).view(np.uint32)
    got = np.asarray(fp32.fmin(a, b)).view(np.float32)
    assert got.tolist() == [1.0, -2.0, -4.0, -0.0]
    assert fp32.bits(1 / 6) == 0x3E2AAAAB
    assert fp32.FLT_MAX == np.array([np.finfo(np.float32).max]).view(np.uint32)[0]
