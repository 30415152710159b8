"""Where tininess before and after rounding disagree (IEEE 754-2019 7.5), from exact values alone.

Before rounding a nonzero result is tiny when its exact value is below 2^emin; after rounding,
when that value rounded to M+1 significant bits with an unbounded exponent is. They disagree
exactly where the exact value is below 2^emin and rounds (unbounded) to 2^emin or more. Pure
Python on fractions: it shares nothing with golden/.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["round_unbounded", "exact_products", "boundary_set"]


def round_unbounded(x: Fraction, bits: int, mode: str) -> Fraction:
    """x rounded to ``bits`` significant bits, exponent unbounded (IEEE 754 7.5 "after")."""
    if x == 0:
        return x
    mag = abs(x)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    ulp = Fraction(2) ** (e - bits + 1)
    q, r = divmod(mag, ulp)
    up = {"rne": r > ulp / 2 or (r == ulp / 2 and q % 2 == 1), "rna": r >= ulp / 2,
          "rtz": False, "rup": r > 0 and x > 0, "rdn": r > 0 and x < 0}[mode]
    return (q + up) * ulp * (1 if x > 0 else -1)


def exact_products(fmt, a, b, flush=False):
    """The exact products of finite codes as fractions (None where an operand is inf or NaN);
    ``flush``: subnormal operands read as zero."""
    kinds = {c: fmt.classify(c) for c in range(1 << fmt.width)}
    finite = {c: Fraction(0 if flush and k == "subnormal" else fmt.code_value(c))
              for c, k in kinds.items() if k in ("zero", "subnormal", "normal")}
    return [finite[i] * finite[j] if i in finite and j in finite else None
            for i, j in zip(a.tolist(), b.tolist())]


def boundary_set(fmt, exact, mode: str) -> np.ndarray:
    """Where tiny-before and tiny-after disagree, counted from the exact values alone."""
    low = Fraction(2) ** fmt.emin
    return np.array([x is not None and 0 < abs(x) < low and
                     abs(round_unbounded(x, fmt.man_bits + 1, mode)) >= low for x in exact])
