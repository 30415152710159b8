"""The golden model's results, pinned bit for bit: a seeded corpus through every public entry
point (mul, add, sub, fma, convert, quantize, dequantize, fake_quantize, mx_quantize,
mx_dequantize, mx_dot), hashed group by group.

The digests are those of commit 5f7d1c4, before golden/ was rebuilt on rtl/'s specs
(docs/architecture.md): a refactor of the model, of its rounder or of the specs it reads must
leave every result, dtype and shape as it was. The per-group digests are in
golden_digest_5f7d1c4.txt beside this file, so a failure names the groups that moved. A change
of results that is meant (a bug fixed) gets a new file, named after its commit, from
``python tests/golden/test_golden_digest.py``, and that commit's BASE, TOTAL and GROUPS.

Most groups are computed op by op (``jax.disable_jit``): the same model code, without XLA
compiling a kernel per spec, which was most of this test's time. The first group of each entry
point and one in JIT_EVERY besides go through the jitted kernels (the product path), and must
give the same pinned digests. About half the CPU of jitting every group; make test-all also
runs every group jitted.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import sys
from pathlib import Path

import jax
import ml_dtypes
import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.format_names import resolve
from fpforge.rtl.elements import element_format

BASE = "5f7d1c4"
TOTAL = "b1ac3da459facdd8b860f6d6830e421fad4f4eece7fd608998fdb117c73c56ea"
GROUPS = 469
DIGESTS = Path(__file__).with_name(f"golden_digest_{BASE}.txt")

SEED = 20261202
N = 4096                       # values per scalar group
SCALAR_FORMATS = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e4m3b11fnuz",
                  "float6_e2m3fn", "float4_e2m1fn", "float8_e8m0fnu", "float16", "bfloat16",
                  "float32", "e5m3", "fp16_ftz"]
ALL_MODES = ["float8_e4m3fn", "float16", "float6_e2m3fn", "float8_e8m0fnu"]   # every mode
MODES = ["rne", "rtz", "rdn", "rup", "rna", "rod"]
QUANTIZE_FORMATS = ["fp8e4m3", "fp8e5m2", "fp6e2m3", "fp4e2m1", "e8m0", "bf16", "fp16"]
ELEMS = ["fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1", "mxint8"]
MX_RULES = {"floor": (32, 8), "ceil": (32,), "rceil": (32,), "even": (32,)}   # rule: blocks
# float32 values every ML-API group sees first: zeros, infinities, NaN, float32 subnormals, the
# top of float32 and of fp8e4m3 / fp8e5m2 (448, 464 the tie past it, 480, 57344), FP4's 6 and a
# value between its steps, and two powers of two near the FP8 subnormals.
ML_SPECIALS = [0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 3.4e38, 448, 464, 480, 57344,
               6, 6.5, 2 ** -9, 2 ** -10]


# ----- the corpus ---------------------------------------------------------------------------------

def _codes(rng, width: int, n: int) -> np.ndarray:
    """n uniform codes of ``width`` bits as uint32 (drawn as uint64: the stream is pinned)."""
    return rng.integers(0, 1 << width, n, dtype=np.uint64).astype(np.uint32)


def _width(fmt: str) -> int:
    return resolve(fmt).width


def corpus():
    """Yield ``(group name, outputs)`` in the pinned order: one seeded stream feeds every group,
    so neither the order nor any draw may change."""
    rng = np.random.default_rng(SEED)
    yield from _scalar_groups(rng)
    yield from _mixed_groups(rng)
    x32 = yield from _ml_groups(rng)
    yield from _mx_groups(rng, x32[:1024].reshape(8, 128))
    yield from _dot_groups(rng)


def _scalar_groups(rng):
    for fmt in SCALAR_FORMATS:
        a, b, c = (_codes(rng, _width(fmt), N) for _ in range(3))
        for mode in (MODES if fmt in ALL_MODES else ["rne", "rdn"]):
            yield f"mul {fmt} {mode}", golden.mul(a, b, fmt, rounding=mode)
            yield f"add {fmt} {mode}", golden.add(a, b, fmt, rounding=mode)
            yield f"sub {fmt} {mode}", golden.sub(a, b, fmt, rounding=mode)
            yield f"fma {fmt} {mode}", golden.fma(a, b, c, fmt, rounding=mode)
        yield f"mul {fmt} sat", golden.mul(a, b, fmt, saturate=True)
        yield f"add {fmt} sat rup", golden.add(a, b, fmt, rounding="rup", saturate=True)
        rm = rng.integers(0, 8, N).astype(np.uint32)           # reserved codes 5..7 included
        yield f"mul {fmt} dynamic", golden.mul(a, b, fmt, rounding="dynamic", rm=rm)
        yield f"fma {fmt} dynamic", golden.fma(a, b, c, fmt, rounding="dynamic", rm=rm)
        rb = _codes(rng, 8, N)
        yield f"add {fmt} stochastic", golden.add(a, b, fmt, rounding="stochastic", rbits=rb)
        rb12 = _codes(rng, 12, N)
        yield f"mul {fmt} stochastic12", golden.mul(a, b, fmt, rounding="stochastic", rbits=rb12,
                                                    sr_bits=12)
        for src in (("float32", "float8_e5m2") if fmt in ALL_MODES else ("float16",)):
            x = _codes(rng, _width(src), N)
            for mode in ("rne", "rod"):
                yield f"cvt {src}->{fmt} {mode}", golden.convert(x, src, fmt, rounding=mode)
            yield f"cvt {src}->{fmt} sat", golden.convert(x, src, fmt, saturate=True)
            yield f"cvt {src}->{fmt} sr", golden.convert(x, src, fmt, rounding="stochastic",
                                                         rbits=rb)


def _mixed_groups(rng):
    """Operands of different formats."""
    a8, b8 = _codes(rng, 8, N), _codes(rng, 8, N)
    c16 = _codes(rng, 16, N)
    yield "mul mixed", golden.mul(a8, b8, "fp8e4m3", "fp8e5m2", "bfloat16")
    yield "add mixed", golden.add(a8, c16, "fp8e4m3", "float16", "float16", rounding="rtz")
    yield "fma mixed", golden.fma(a8, b8, c16, "fp8e4m3", "fp8e5m2", "float16", "float16")
    yield "fma mixed f32", golden.fma(a8, b8, _codes(rng, 32, N), "fp8e4m3", "fp8e4m3",
                                      "float32", "float32", rounding="rdn")


def _ml_groups(rng):
    """The ML API on float arrays; returns the float32 values (the MX groups reuse them)."""
    x32 = (rng.standard_normal(N) * np.exp2(rng.integers(-30, 30, N))).astype(np.float32)
    x32[:len(ML_SPECIALS)] = ML_SPECIALS
    for fmt in QUANTIZE_FORMATS:
        yield f"quantize {fmt}", golden.quantize(x32, fmt)
        yield f"quantize {fmt} flags", golden.quantize(x32, fmt, saturate=True, return_flags=True)
        yield f"fake_quantize {fmt}", golden.fake_quantize(x32, fmt)
        yield f"fake_quantize {fmt} sr", golden.fake_quantize(x32, fmt, rounding="stochastic",
                                                              rbits=_codes(rng, 8, N))
        yield f"dequantize {fmt}", golden.dequantize(_codes(rng, _width(fmt), N), fmt)
    yield "quantize bf16 in", golden.quantize(_narrowed(x32, ml_dtypes.bfloat16), "fp8e4m3")
    yield "quantize f16 in", golden.quantize(_narrowed(x32, np.float16), "fp6e3m2")
    return x32


def _narrowed(x, dtype):
    # Values past the narrow type's range become inf, and NaN stays NaN: meant, not a warning.
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def _mx_groups(rng, blocks):
    """Eight rows of 128 of the ML values (specials included) as MX blocks."""
    for elem in ELEMS:
        for rule, sizes in MX_RULES.items():
            for k in sizes:
                yield f"mxq {elem} {rule} k{k}", golden.mx_quantize(
                    blocks, elem, block=k, scale_rule=rule, return_flags=True)
        yield f"mxq {elem} bf16", golden.mx_quantize(_narrowed(blocks, ml_dtypes.bfloat16), elem)
        yield f"mxq {elem} rtz", golden.mx_quantize(blocks, elem, rounding="rtz")
        yield f"mxq {elem} sr", golden.mx_quantize(
            blocks, elem, rounding="stochastic", rbits=_codes(rng, 8, 1024).reshape(8, 128),
            return_flags=True)
        scales, elements = golden.mx_quantize(blocks, elem)
        yield f"mxdq {elem}", golden.mx_dequantize(scales, elements, elem)
        # Any scale (the NaN one included) and any element code, sNaN and inf among them.
        scales = _codes(rng, 8, 32).astype(np.uint8).reshape(32, 1)
        mask = (1 << element_format(elem).width) - 1
        elements = (_codes(rng, 8, 1024) & mask).astype(np.uint8).reshape(32, 32)
        yield f"mxdq {elem} any", golden.mx_dequantize(scales, elements, elem)


def _dot_groups(rng):
    """64 vectors of 32 elements per pair, every element format against itself and FP4 (FP4
    against fp8e4m3), under random scales with the unit, zero, NaN and top scale codes."""
    for ea in ELEMS:
        for eb in (ea, "fp4e2m1") if ea != "fp4e2m1" else (ea, "fp8e4m3"):
            a = _codes(rng, element_format(ea).width, 64 * 32).astype(np.uint8).reshape(64, 32)
            b = _codes(rng, element_format(eb).width, 64 * 32).astype(np.uint8).reshape(64, 32)
            sa, sb = _codes(rng, 8, 64).astype(np.uint8), _codes(rng, 8, 64).astype(np.uint8)
            sa[:4] = [127, 0, 255, 254]
            pair = f"dot {ea}x{eb}"
            yield f"{pair} exact", golden.mx_dot(a, b, ea, eb, scales_a=sa, scales_b=sb)
            yield f"{pair} noscale", golden.mx_dot(a, b, ea, eb)
            yield f"{pair} fixed24", golden.mx_dot(a, b, ea, eb, scales_a=sa, scales_b=sb,
                                                  accum="fixed")
            yield f"{pair} fixed6 rtz", golden.mx_dot(a, b, ea, eb, accum="fixed", frac_bits=6,
                                                     rounding="rtz")
            yield f"{pair} bf16 rdn", golden.mx_dot(a[:, :8], b[:, :8], ea, eb,
                                                   out_fmt="bfloat16", rounding="rdn")
            yield f"{pair} n4 fp8", golden.mx_dot(a[:, :4], b[:, :4], ea, eb, out_fmt="fp8e4m3",
                                                 rounding="rod")


# ----- how the groups are computed ---------------------------------------------------------------

# The first group of each entry point, by its place in the pinned order (the test checks the
# names), computed through the model's jitted kernels; so is every JIT_EVERY-th group.
JITTED_FIRSTS = {0: "mul float8_e4m3fn rne", 1: "add float8_e4m3fn rne",
                 2: "sub float8_e4m3fn rne", 3: "fma float8_e4m3fn rne",
                 30: "cvt float32->float8_e4m3fn rne", 300: "quantize fp8e4m3",
                 302: "fake_quantize fp8e4m3", 304: "dequantize fp8e4m3",
                 337: "mxq fp8e4m3 floor k32", 345: "mxdq fp8e4m3",
                 397: "dot fp8e4m3xfp8e4m3 exact"}
JIT_EVERY = 32
FIRST_GROUPS = [JITTED_FIRSTS[i] for i in range(4)]


def jitted(index: int) -> bool:
    return index in JITTED_FIRSTS or index % JIT_EVERY == 0


def evaluated(groups, jitted_groups: dict):
    """The groups of ``groups`` (the corpus generator), each computed as it is drawn: through
    the jitted kernels where ``jitted`` says so (``jitted_groups[index] = name``), else op by op
    under ``jax.disable_jit``. The stream of draws is the same either way."""
    for index in itertools.count():
        with contextlib.nullcontext() if jitted(index) else jax.disable_jit():
            group = next(groups, None)
        if group is None:
            return
        if jitted(index):
            jitted_groups[index] = group[0]
        yield group


# ----- digests ------------------------------------------------------------------------------------

def group_digest(outputs) -> str:
    """SHA-256 over each output's dtype, shape and bytes, in order (a single array or a tuple)."""
    h = hashlib.sha256()
    for a in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
        a = np.ascontiguousarray(np.asarray(a))
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    return h.hexdigest()


def digests(groups) -> dict[str, str]:
    out = {}
    for name, outputs in groups:
        if name in out:
            raise ValueError(f"the corpus names group {name!r} twice")
        out[name] = group_digest(outputs)
    return out


def total_digest(groups: dict[str, str]) -> str:
    """One SHA-256 over every group's ``name=digest`` line, sorted by name."""
    return hashlib.sha256("".join(f"{k}={v}\n" for k, v in sorted(groups.items())).encode()
                          ).hexdigest()


def format_digests(groups: dict[str, str]) -> str:
    """The data file: ``digest  name`` lines (sha256sum's layout) sorted by name."""
    return "".join(f"{v}  {k}\n" for k, v in sorted(groups.items()))


def read_digests(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            digest, name = line.split("  ", 1)
            out[name] = digest
    return out


def assert_unchanged(got: dict[str, str], base: dict[str, str]):
    """Fail naming every group whose digest moved, went missing or is new."""
    if total_digest(got) == total_digest(base):
        return
    moved = sorted(k for k in got.keys() & base.keys() if got[k] != base[k])
    lines = [f"golden results differ from {BASE} in {len(moved)} of {len(base)} groups"
             f" (total {total_digest(got)}, pinned {TOTAL}):"]
    lines += [f"  changed   {k}" for k in moved]
    lines += [f"  missing   {k}" for k in sorted(base.keys() - got.keys())]
    lines += [f"  new       {k}" for k in sorted(got.keys() - base.keys())]
    pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture(scope="module")
def base() -> dict[str, str]:
    return read_digests(DIGESTS)


# ----- tests --------------------------------------------------------------------------------------

def test_pinned_file_is_the_base_digest(base):
    assert len(base) == GROUPS and total_digest(base) == TOTAL


def test_golden_results_are_unchanged(base):
    jitted_groups = {}
    assert_unchanged(digests(evaluated(corpus(), jitted_groups)), base)
    # every entry point went through its jitted kernels, at the places JITTED_FIRSTS names
    assert {i: jitted_groups[i] for i in JITTED_FIRSTS} == JITTED_FIRSTS
    assert {n.split()[0] for n in JITTED_FIRSTS.values()} == {n.split()[0] for n in base}


@pytest.mark.slow
def test_every_group_through_the_jitted_kernels_is_unchanged(base):
    """The whole corpus as users run it, every group jitted (make test-all; make test pins the
    jitted kernels of every entry point and one group in JIT_EVERY, the rest op by op)."""
    assert_unchanged(digests(corpus()), base)


@pytest.mark.xla_defaults
def test_the_first_groups_as_users_compile_them(base):
    """make test compiles the golden model without XLA's optimisation passes (tests/conftest.py);
    users compile with them. The first groups (mul, add, sub and fma, through the jitted
    kernels) compiled under XLA's defaults give the pinned digests too; make test-all runs
    every test under the defaults."""
    got = digests(itertools.islice(corpus(), len(FIRST_GROUPS)))
    assert got == {k: base[k] for k in FIRST_GROUPS}


def test_one_flipped_result_fails_naming_its_group(base):
    """The digest notices one bit of one output, and the failure names that group only."""
    name, (y, flags) = next(corpus())
    assert name == "mul float8_e4m3fn rne" and group_digest((y, flags)) == base[name]
    y = np.array(y)
    y[1234] ^= 1
    got = dict(base, **{name: group_digest((y, flags))})
    assert got[name] != base[name] and total_digest(got) != TOTAL
    with pytest.raises(pytest.fail.Exception) as err:
        assert_unchanged(got, base)
    head, *named = str(err.value).splitlines()
    assert f"in 1 of {GROUPS} groups" in head and named == [f"  changed   {name}"]


def test_dtype_and_shape_are_part_of_the_digest():
    codes = np.arange(8, dtype=np.uint8)
    assert len({group_digest(codes), group_digest(codes.astype(np.uint16)),
                group_digest(codes.reshape(2, 4)), group_digest((codes, codes))}) == 4


if __name__ == "__main__":
    # The data file of the current tree: python tests/golden/test_golden_digest.py > FILE
    groups = digests(corpus())
    sys.stdout.write(f"# golden results: {len(groups)} groups, total {total_digest(groups)} "
                     "(tests/golden/test_golden_digest.py)\n")
    sys.stdout.write(format_digests(groups))
