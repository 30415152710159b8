"""Every kind's example specs for the tests, in one place: a new kind adds its entry here and
every generic test covers it (the protocol, the emitted ports, export and lint, golden.evaluate,
stimulus, the command line's round trips); the generic tests fail until it does.

``EXAMPLES[unit]``: option values of a combinational and a pipelined spec (and the block kinds'
NVFP4 recipes, with their tensor_amax port), between them the optional ports the kind has (rm, rbits, other operand formats, buses); the block kinds with short
buses so that a batch converts in seconds. ``SMALL[unit]``: a spec whose data inputs total at
most 16 bits, so that a test can enumerate every input.
"""

from __future__ import annotations

from fpforge.rtl.kinds import make_spec

EXAMPLES = {
    "mul": [dict(format="fp8e4m3"), dict(format="fp8e5m2", rounding="dynamic", stages=2)],
    "add": [dict(format="bf16"), dict(format="fp6e3m2", rounding="stochastic", stages=1)],
    "sub": [dict(format="fp8e4m3"), dict(format="fp16", rounding="rtz", saturate=True,
                                        stages=1)],
    "fma": [dict(format="fp8e4m3", c_format="fp16"),
            dict(format="fp4e2m1", rounding="dynamic", subnormals=False, stages=2)],
    "fms": [dict(format="fp8e5m2", c_format="bf16", rounding="rdn"),
            dict(format="fp6e2m3", rounding="stochastic", saturate=True, stages=3)],
    "cvt": [dict(format="fp8e4m3", in_format="bf16", rounding="stochastic", sr_bits=5),
            dict(format="fp32", in_format="e8m0", stages=1)],
    "mxq": [dict(format="fp4e2m1", block=2, rounding="stochastic"),
            dict(format="mxint8", in_format="bf16", block=2, scale_rule="even", stages=2),
            dict(block=2, scale_rule="nvfp4_torchao", stages=1)],
    "mxdq": [dict(in_format="fp6e2m3", block=2), dict(in_format="mxint8", block=3, stages=1),
             dict(block=2, scale_rule="nvfp4_te")],
    "dot": [dict(in_format="fp4e2m1", n=2), dict(a_format="fp8e4m3", b_format="mxint8", n=1,
                                                 accum="fixed", frac_bits=6, scales=False,
                                                 format="bf16", stages=2),
            dict(in_format="fp4e2m1", n=2, scale_format="fp8e4m3"),
            dict(in_format="fp6e3m2", n=2, accum="fixed", frac_bits=9, c_format="bf16",
                 rounding="rtz", stages=1),
            dict(a_format="int4", b_format="fp4e2m1", n=2, stages=1),
            dict(in_format="fp4e2m1", n=4, accum="fixed", frac_bits=8, sum_group=2,
                 c_format="float32", scale_format="fp8e4m3", rounding="rtz"),
            dict(in_format="fp8e4m3fnuz", n=2, accum="fixed", frac_bits=6, frac_bits2=8,
                 c_format="float32", scales=False)],
    "min": [dict(format="fp8e5m2"), dict(format="fp8e4m3", minmax="ieee", stages=1),
            dict(format="fp8e4m3fnuz", subnormals=False)],
    "max": [dict(format="binary8p3se", minmax="ieee"), dict(format="fp6e2m3", stages=2)],
    "cmp": [dict(format="fp8e5m2"), dict(format="bf16", stages=1),
            dict(a_format="fp8e4m3", b_format="binary8p3se", stages=1)],
    "classify": [dict(format="fp8e4m3"), dict(format="fp16", stages=1),
                 dict(format="fp8e5m2", subnormals=False)],
    "sgnj": [dict(format="fp8e4m3fnuz"), dict(format="fp8e5m2", stages=1)],
    "amax": [dict(format="fp8e4m3", n=5), dict(format="binary8p3se", n=8, minmax="ieee", stages=2)],
    "i2f": [dict(format="fp8e4m3", int_width=16, rounding="stochastic"),
            dict(format="bf16", unsigned=True, rounding="dynamic", stages=2)],
    "f2i": [dict(format="fp8e5m2", int_width=8, unsigned=True),
            dict(format="fp16", rounding="dynamic", int_overflow="saturate", stages=2),
            dict(format="binary8p3se", int_width=8, rounding="stochastic_c", sr_bits=3)],
    "recip": [dict(format="fp8e4m3"), dict(format="bf16", rounding="dynamic",
                                           accuracy="faithful", stages=2)],
    "rsqrt": [dict(format="fp8e5m2", rounding="rdn"), dict(format="fp6e2m3", stages=1)],
    "exp2": [dict(format="binary8p3se"), dict(format="fp8e4m3", rounding="stochastic",
                                              accuracy="faithful", stages=1)],
    "div": [dict(format="fp8e4m3", rounding="dynamic"),
            dict(format="fp8e5m2", a_format="binary8p3se", rounding="stochastic", stages=2),
            dict(format="fp6e2m3", arch="iter")],
    "sqrt": [dict(format="bf16", rounding="rup"), dict(format="fp8e4m3", stages=1),
             dict(format="fp8e5m2", rounding="dynamic", arch="iter")],
}


# Multi-format units (docs/multiformat.md): run-time formats selected by the fmt port, fixed
# lanes and packed SIMD lanes, on the kinds that take --formats; each adds the fmt port (and
# per-lane flags, rm and rbits) to the generic tests' coverage.
MULTI_FORMAT = {
    "mul": [dict(formats="fp8e4m3,fp8e5m2"),
            dict(formats="fp16,fp8e4m3", simd_width=16, rounding="dynamic", stages=1),
            dict(format="fp8e5m2", lanes=2, rounding="stochastic", sr_bits=3)],
    "add": [dict(formats="fp8e4m3,binary8p3se,fp4e2m1", saturate=True, stages=2)],
    "fma": [dict(formats="fp8e4m3,fp8e5m2", c_formats="bf16", rounding="rtz")],
    "cvt": [dict(formats="fp8e4m3,fp8e5m2", in_formats="float32", rounding="stochastic")],
    "dot": [dict(formats="fp8e4m3,fp4e2m1", n=2, stages=1)],
}
for _unit, _cases in MULTI_FORMAT.items():
    EXAMPLES[_unit] = EXAMPLES[_unit] + _cases

SMALL = {
    "mul": dict(format="fp4e2m1"),
    "add": dict(format="fp4e2m1", rounding="dynamic"),
    "sub": dict(format="fp4e2m1", rounding="stochastic", sr_bits=3),
    "fma": dict(format="fp4e2m1"),
    "fms": dict(format="fp4e2m1", rounding="rup"),
    "cvt": dict(format="fp4e2m1", in_format="fp8e4m3"),
    "mxq": dict(format="fp4e2m1", in_format="bfloat16", block=1, rounding="stochastic",
                sr_bits=2),
    "mxdq": dict(in_format="fp6e2m3", block=1),
    "dot": dict(in_format="fp4e2m1", n=1, scales=False),
    "min": dict(format="fp8e5m2"),
    "max": dict(format="fp8e5m2", minmax="ieee"),
    "cmp": dict(format="fp6e2m3"),
    "classify": dict(format="fp8e4m3"),
    "sgnj": dict(format="fp6e3m2"),
    "amax": dict(format="fp8e5m2", n=2),
    "i2f": dict(format="fp8e5m2", int_width=8),
    "f2i": dict(format="fp8e4m3", int_width=8),
    "recip": dict(format="fp8e4m3"),
    "rsqrt": dict(format="fp6e3m2", rounding="dynamic"),
    "exp2": dict(format="fp8e5m2"),
    "div": dict(format="fp8e4m3"),
    "sqrt": dict(format="fp8e4m3", rounding="rdn"),
}


def specs(unit: str | None = None) -> list:
    """The example specs of ``unit`` (default: of every kind)."""
    return [make_spec(u, **values) for u, cases in EXAMPLES.items()
            if unit in (None, u) for values in cases]


def small(unit: str):
    return make_spec(unit, **SMALL[unit])
