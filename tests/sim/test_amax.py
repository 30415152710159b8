"""amax: the golden model against an exact model of values (rtl/formats.py's reading: every pair
for n = 2 of fp8e4m3 and a P3109 format; blocks with NaN, infinity, subnormal and zero corners
for n = 16, 32, 64), the generated Verilog against the golden model (every pair; sampled blocks;
pipelined), a unit ordering signed values caught, and the refusals."""

from __future__ import annotations

import functools
import re
from fractions import Fraction

import numpy as np
import pytest

from fpforge.golden.model import evaluate
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from fpforge.sim.stimulus import generate
from fpforge.sim.tiers import stimulus_for
from tests.cli_run import fpforge

NV = 1 << 4


@functools.lru_cache(maxsize=None)
def _table(fmt):
    """Per code: (|value| as a Fraction, inf as a huge one, None for NaN; signaling NaN), from
    formats.py's plain-Python reading alone."""
    out = []
    for code in range(1 << fmt.width):
        cls = fmt.classify(code)
        mag = None if cls in ("nan", "snan") else Fraction(10) ** 40 if cls == "inf" else \
            abs(Fraction(fmt.code_value(code)))
        out.append((mag, cls == "snan"))
    return out


def _magnitude(fmt, code):
    return _table(fmt)[code][0]


def _expected(fmt, block, minmax):
    """(y, invalid) of one block by the exact model: the largest magnitude's code with the sign
    clear (a zero gives +0), NaN as the policy says."""
    mags = [_magnitude(fmt, int(c)) for c in block]
    invalid = any(_table(fmt)[int(c)][1] for c in block)
    nums = [(m, int(c)) for m, c in zip(mags, block) if m is not None]
    if not nums or minmax == "ieee" and len(nums) < len(mags):
        return fmt.nan_code, invalid
    top = max(m for m, _ in nums)
    code = next(c for m, c in nums if m == top) & fmt.magnitude_mask
    assert _magnitude(fmt, code) == top and not code & fmt.sign_mask
    return code, invalid


def _check(spec, x):
    out = evaluate(spec, x=x)
    y, flags = np.asarray(out["y"]), np.asarray(out["flags"])
    for i in range(len(x)):
        want = _expected(spec.fmt, x[i], spec.minmax)
        assert (int(y[i]), bool(flags[i] & NV)) == want, (spec.default_name, x[i].tolist())


@pytest.mark.parametrize("name,minmax", [("fp8e4m3", "number"), ("binary8p3se", "ieee"),
                                         ("fp8e5m2", "ieee")])
def test_every_pair_against_exact_values(name, minmax):
    fmt = resolve(name)
    a, b = np.meshgrid(np.arange(1 << fmt.width), np.arange(1 << fmt.width), indexing="ij")
    _check(make_spec("amax", format=name, n=2, minmax=minmax),
           np.stack([a.ravel(), b.ravel()], axis=1).astype(np.uint32))


@pytest.mark.parametrize("n", [16, 32, 64])
@pytest.mark.parametrize("name,minmax", [("fp8e4m3", "number"), ("fp8e5m2", "ieee"),
                                         ("fp16", "number"), ("bf16", "ieee"),
                                         ("fp6e2m3", None)])
def test_blocks_against_exact_values(n, name, minmax):
    """The bench's own blocks (corner classes, one NaN, all NaN, zeros, near magnitudes, the
    largest repeated negated), a sample of each part."""
    spec = make_spec("amax", format=name, n=n, minmax=minmax)
    parts = stimulus_for(spec)
    assert [p for p, _ in parts] == ["corners", "random"]
    rng = np.random.default_rng(n)
    x = np.concatenate([c["x"] for c in generate(spec, [[p, {"count": 600}] for p, _ in parts],
                                                 rng, 1 << 16)])
    _check(spec, x)


def test_nan_policy_and_zero_sign():
    spec = make_spec("amax", format="fp16", n=4, minmax="number")
    qnan, snan, neg0, one = 0x7E00, 0x7C01, 0x8000, 0x3C00
    x = np.array([[neg0, neg0, neg0, neg0], [qnan, qnan, qnan, qnan], [qnan, 0xBC00, 0, 1],
                  [snan, one, 0, 0]], np.uint32)
    out = evaluate(spec, x=x)
    assert np.asarray(out["y"]).tolist() == [0, 0x7E00, 0x3C00, 0x3C00]
    assert (np.asarray(out["flags"]) & NV).tolist() == [0, 0, 0, NV]
    ieee = evaluate(make_spec("amax", format="fp16", n=4, minmax="ieee"), x=x)
    assert np.asarray(ieee["y"]).tolist() == [0, 0x7E00, 0x7E00, 0x7E00]


@pytest.mark.parametrize("name,extra", [("fp8e4m3", ["--minmax", "ieee"]),
                                        ("binary8p3se", ["--stages", "1"])])
def test_verilog_every_pair_against_golden(name, extra):
    r = fpforge("verify", "--unit", "amax", "--format", name, "--n", "2", "--engine", "batch",
             *extra)
    assert r.returncode == 0 and "65,536 vectors, 0 mismatches" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name,n,extra", [
    ("fp8e4m3", 32, []),
    pytest.param("fp16", 16, ["--stages", "2"], marks=pytest.mark.slow),
    pytest.param("bf16", 64, ["--minmax", "ieee", "--stages", "6"], marks=pytest.mark.slow),
    ("fp8e5m2", 5, ["--cuts", "1,3"])])
def test_verilog_blocks_against_golden(name, n, extra):
    r = fpforge("verify", "--unit", "amax", "--format", name, "--n", str(n), "--engine", "batch",
             *extra)
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("fault", ["amax-signed", pytest.param("other-minmax",
                                                                marks=pytest.mark.slow)])
def test_fault_caught(fault):
    r = fpforge("verify", "--unit", "amax", "--format", "fp8e5m2", "--n", "2", "--engine", "batch",
             "--fault", fault)
    assert r.returncode == 1 and re.search(r"\b[1-9][\d,]* mismatches", r.stdout), r.stdout + r.stderr


def test_default_pipeline_splits_the_tree():
    """--stages alone cuts the levels into near-equal runs (the NaN select counts as one)."""
    cuts = {(n, s): make_spec("amax", n=n, stages=s).cut_points
            for n, s in ((32, 1), (32, 2), (64, 2), (2, 2), (8, 5))}
    assert cuts == {(32, 1): ("3",), (32, 2): ("2", "4"), (64, 2): ("2", "5"), (2, 2): ("1",),
                    (8, 5): ("1", "2", "3")}


@pytest.mark.parametrize("options,message", [
    (dict(n=1), "--n of amax must be an integer 2..64, not 1"),
    (dict(n=65), "--n of amax must be an integer 2..64, not 65"),
    (dict(format="fp4e2m1", minmax="ieee"), "--minmax chooses what a NaN input gives; "
                                            "float4_e2m1fn has no NaN: leave it out"),
    (dict(rounding="rtz"), "--rounding applies to units"),
])
def test_refused(options, message):
    with pytest.raises(OptionError, match="^" + message.replace("-", r"\-")
                       .replace("(", r"\(").replace(".", r"\.")):
        make_spec("amax", **options)


def test_cli_refusal_is_one_line(tmp_path):
    r = fpforge("verilog", "--unit", "amax", "--n", "65", "--out-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not list(tmp_path.iterdir())
