"""fms (a * b - c, one rounding) is fma with c negated, for every c whose negation is a code
(fnuz formats have no -0): checked over every operand triple of 4- and 6-bit formats in every
static rounding mode, and on random 8-bit triples. fma itself is checked against SoftFloat,
MPFR and an exact model (test_golden_vs_*)."""

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec

MODES = ("rne", "rtz", "rdn", "rup", "rna", "rod")


def triples(width, n=None, seed=0):
    if n is None:
        return [g.ravel().astype(np.uint32) for g in np.meshgrid(*[np.arange(1 << width)] * 3,
                                                                 indexing="ij")]
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 1 << width, n).astype(np.uint32) for _ in range(3)]


SAMPLED = ("fp8e4m3", "fp8e5m2fnuz", "bf16")


def cases():
    """Every mode on the exhaustive formats; on the sampled ones, make test runs each mode in
    one of them (mode i in format i mod 3: each format twice), the others in make test-all."""
    for rounding in MODES:
        for fmt in ("fp4e2m1", "fp6e3m2"):
            yield pytest.param(fmt, None, rounding, id=f"{rounding}-{fmt}-None")
        for j, fmt in enumerate(SAMPLED):
            kept = MODES.index(rounding) % len(SAMPLED) == j
            yield pytest.param(fmt, 1 << 16, rounding, id=f"{rounding}-{fmt}-65536",
                               marks=() if kept else pytest.mark.slow)


@pytest.mark.parametrize("fmt,n,rounding", list(cases()))
def test_fms_is_fma_with_c_negated(fmt, n, rounding):
    f = resolve(fmt)
    a, b, c = triples(f.width, n)
    keep = np.ones(len(c), bool) if f.has_neg_zero else (c & np.uint32(f.magnitude_mask)) != 0
    a, b, c = a[keep], b[keep], c[keep]
    spec = make_spec("fms", format=fmt, rounding=rounding)
    got = golden.evaluate(spec, a=a, b=b, c=c)
    y, flags = golden.fma(a, b, c ^ np.uint32(f.sign_mask), fmt, rounding=rounding)
    np.testing.assert_array_equal(np.asarray(got["y"]), np.asarray(y))
    np.testing.assert_array_equal(np.asarray(got["flags"]), np.asarray(flags))
