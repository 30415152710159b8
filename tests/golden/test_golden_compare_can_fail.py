"""The comparisons can fail: perturbed results fed to the same helper the real tests use."""

from __future__ import annotations

import numpy as np
import pytest

from oracles import compare, exact
from oracles.references import softfloat_apply
from oracles.vectors import pairs, all_codes

NAME = "float6_e2m3fn"


def _expected():
    a, b = pairs(all_codes(NAME))
    return (a, b), exact.apply("mul", a, b, fmts=(NAME,) * 3)


def _fails(expected, got, **kw):
    (a, b), _ = _expected()
    with pytest.raises(pytest.fail.Exception) as err:
        compare.assert_match(expected, got, NAME, [("a", a, NAME), ("b", b, NAME)],
                             label="perturbed", **kw)
    return str(err.value)


def test_identical_results_pass():
    (a, b), expected = _expected()
    compare.assert_match(expected, (expected[0].copy(), expected[1].copy()), NAME,
                         [("a", a, NAME), ("b", b, NAME)], label="identical")


def test_one_flipped_lsb_is_reported():
    _, expected = _expected()
    codes = expected[0].copy()
    codes[1234] ^= 1
    msg = _fails(expected, (codes, expected[1]))
    assert "1 of 4096 results differ" in msg and "expected" in msg


def test_one_flipped_flag_is_reported():
    _, expected = _expected()
    flags = expected[1].copy()
    i = int(np.flatnonzero(flags & exact.UF)[0])
    flags[i] ^= exact.UF
    assert "1 of 4096" in _fails(expected, (expected[0], flags))
    # ... unless the caller asked to compare codes only.
    (a, b), _ = _expected()
    compare.assert_match(expected, (expected[0], flags), NAME, [("a", a, NAME), ("b", b, NAME)],
                         label="codes only", flags=False)


def test_a_truncating_rounder_is_caught():
    (a, b), expected = _expected()
    truncated = exact.apply("mul", a, b, fmts=(NAME,) * 3, rounding="rtz")
    msg = _fails(expected, truncated)
    assert "results differ" in msg


def test_both_nan_does_not_hide_a_number_for_a_nan():
    a, b = pairs(np.array([0x7E00, 0x3C00], np.int64))     # fp16 NaN, 1.0
    expected = softfloat_apply("mul", a, b, fmts=("float16",) * 3)
    got = (np.where(expected[0] == 0x7E00, 0x3C00, expected[0]), expected[1])
    with pytest.raises(pytest.fail.Exception):
        compare.assert_match(expected, got, "float16", [("a", a, "float16"), ("b", b, "float16")],
                             label="nan vs number", nan="both")
    # A different NaN code is accepted under "both" but not under "exact".
    other_nan = (np.where(expected[0] == 0x7E00, 0xFE01, expected[0]), expected[1])
    compare.assert_match(expected, other_nan, "float16",
                         [("a", a, "float16"), ("b", b, "float16")], label="nan", nan="both")
    with pytest.raises(pytest.fail.Exception):
        compare.assert_match(expected, other_nan, "float16",
                             [("a", a, "float16"), ("b", b, "float16")], label="nan", nan="exact")


def test_check_candidate_catches_a_wrong_candidate(monkeypatch):
    """The full path the suites use, with a candidate that rounds to nearest away instead."""
    (a, b), expected = _expected()

    def wrong(op, *operands, fmts, rounding="rne", **kw):
        return exact.apply(op, *operands, fmts=fmts, rounding="rna")

    monkeypatch.setitem(compare.CANDIDATES, "wrong", wrong)
    with pytest.raises(pytest.fail.Exception) as err:
        compare.check_candidate("wrong", "mul", (a, b), (NAME,) * 3, expected, label="rna")
    assert "wrong mul" not in str(err.value) and "wrong rna" in str(err.value)
