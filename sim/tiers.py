"""Coverage tiers: which stimulus a unit gets, and the parameter points of each test target.

- exhaustive: every input of mul/add with operands of <= 8 bits (65,536 pairs), of cvt from
  formats of <= 16 bits, of fma with operands of <= 6 bits;
- fma with 8-bit operands: corner classes crossed, relations, and a large seeded sample
  (exhaustive only as a separate slow target);
- wider: corner classes crossed with each other, relations, biased random;
- a multi-format unit (rtl/multiformat.py): every input with every fmt code, unused ones
  included, where its one-lane members' operands are small enough for the above (8-bit mul and
  add sets, cvt sets from 16-bit formats: 2^16 input pairs times 2^fmt_width); else, and always
  in the quick tier, every member's corners, relations and biased random in its elements and
  lanes, plus vectors of the unused fmt codes (sim/stimulus/multiformat.py).

Every random part is seeded (the seed is printed in the bench log and in every mismatch report).
"""

from __future__ import annotations

import os

from fpforge.rtl.amax import AmaxSpec
from fpforge.rtl.divsqrt import DivSqrtSpec
from fpforge.rtl.formats import catalog_formats
from fpforge.rtl.func import FuncSpec
from fpforge.rtl.intconv import F2iSpec, I2fSpec
from fpforge.rtl.format_names import catalog_selection
from fpforge.rtl.kinds import KINDS, kind, make_spec
from fpforge.rtl.multiformat import FMT_PORT, MultiFormatSpec
from fpforge.rtl.noncomp import NoncompSpec
from fpforge.rtl.scalar import ScalarSpec
from fpforge.rtl.spec import MATRIX_AXES, Spec

__all__ = ["stimulus_for", "geometry", "case_id", "simulators", "FULL_MODES", "MATRIX_UNITS",
           "full_matrix", "verify_formats", "matrix_simulator", "exhaustive_tier",
           "MULTI_MATRIX", "multi_matrix"]

SAMPLE = 1 << 16          # fma 8-bit sample, and random part of the 16-bit tier
# make verify's rounding modes (rtl/spec.py MATRIX_AXES): all but P3109's StochasticB and C.
FULL_MODES = MATRIX_AXES["rounding"]


# Input bits up to which a tier is exhaustive: 2^16 vectors in the quick benches (mul, add of
# 8-bit operands, cvt from 16-bit formats; fma of 6-bit operands: 2^18).
EXHAUSTIVE_BITS = 18


def exhaustive_tier(spec: Spec) -> bool:
    """Whether every input of ``spec`` is simulated: every data input's bits (rm and rbits
    excluded, they are drawn per vector; a multi-format unit's fmt too, every code of which is
    crossed with them) sum to at most EXHAUSTIVE_BITS; a multi-lane unit never."""
    if isinstance(spec, MultiFormatSpec) and spec.max_lanes > 1:
        return False
    return input_bits(spec, (FMT_PORT,)) <= EXHAUSTIVE_BITS


def input_bits(spec: Spec, leave=()) -> int:
    return sum(p.width for p in spec.inputs() if p.name not in ("rm", "rbits", *leave))


# The unused fmt codes' vectors of a multi-format unit's tiers.
UNUSED_COUNT = 1024


def stimulus_for(spec: Spec, *, sample: int = SAMPLE, quick: bool = False) -> list:
    """The stimulus parts of ``spec``'s tier (module docstring); ``quick``: a multi-format unit's
    member parts even where its space allows every input (the quick tests)."""
    if isinstance(spec, MultiFormatSpec) and (quick or not exhaustive_tier(spec)):
        member = MX_STIMULUS["dot"] if not spec.LANE_AXIS else \
            [["corners", {}], ["relations", {"count": 4096}], ["random", {"count": sample}]]
        return member + [["unused", {"count": UNUSED_COUNT}]]
    if exhaustive_tier(spec):
        return [["exhaustive", {}]]
    if kind(spec.unit).shape == "block":
        return MX_STIMULUS[spec.unit]
    if isinstance(spec, (NoncompSpec, I2fSpec, F2iSpec)):
        return [["corners", {}], ["random", {"count": sample}]]
    if isinstance(spec, AmaxSpec):
        return AMAX_STIMULUS
    return [["corners", {}], ["relations", {"count": 4096}], ["random", {"count": sample}]]


# The block units' tiers: their input spaces are far beyond exhaustive (sim/stimulus/).
MX_STIMULUS = {
    "mxq": [["adversarial", {}], ["nonfinite", {"count": 64}], ["random", {"count": 512}]],
    "mxdq": [["pairs", {}]],
    "dot": [["specials", {"count": 256}], ["pairs", {}], ["random", {"count": 2048}]],
}
# amax beyond every pair of an 8-bit format: structured blocks (sim/stimulus/amax.py).
AMAX_STIMULUS = [["corners", {"count": 4096}], ["random", {"count": 8192}]]


def geometry(sim: str, vectors: int = 1 << 16) -> dict:
    """Lanes x steps per transaction: Icarus pays per lane and per step alike; Verilator's
    compile time grows with lanes, its run time hardly with steps (one lane x 1024 steps
    against 4 x 256, build + run of a matrix case, measured: 8-bit fma 9.9 s vs 11.2, fp16 mul
    8.3 vs 10.0, fp16 fma 10.5 vs 14.4)."""
    if sim == "verilator":
        return {"lanes": 1, "steps": 1024}
    return {"lanes": 16, "steps": 16 if vectors >= 4096 else 4}


def case_id(spec: Spec) -> str:
    """A readable pytest id: ``mul-float8_e4m3fn-rne`` plus options (the function kinds: their
    accuracy after the unit; div and sqrt: iter; a multi-format unit: its members' formats
    joined by ``+``, ``mul-float8_e4m3fn+float8_e5m2-rne``, then its lanes; kinds that do not
    round, the integer conversions and block kinds: their module name)."""
    if isinstance(spec, MultiFormatSpec):
        m = spec.members[0]
        lanes = ([f"x{spec.lanes}"] if spec.lanes is not None else []) + \
            ([f"simd{spec.simd_width}"] if spec.simd_width is not None else [])
        return "-".join([spec.unit, _members_id(spec.members), *_option_parts(m, spec)[:1],
                         *lanes, *_option_parts(m, spec)[1:]])
    if not isinstance(spec, ScalarSpec):
        return spec.default_name
    return "-".join([spec.unit, *([spec.accuracy] if isinstance(spec, FuncSpec) else []),
                     _formats_id(spec), *_option_parts(spec, spec)])


def _plain(fmt) -> str:
    return fmt.with_subnormals(True).name     # flushing is its own part of the id


def _formats_id(spec: ScalarSpec) -> str:
    ins, out = spec.in_fmts, spec.out_fmt
    return _plain(out) if all(f == out for f in ins) else f"{_plain(ins[0])}-to-{_plain(out)}"


def _members_id(members) -> str:
    """The members' formats: results joined by ``+``, after their one source if they share it."""
    if all(all(f == s.out_fmt for f in s.in_fmts) for s in members):
        return "+".join(_plain(s.out_fmt) for s in members)
    sources = {s.in_fmts for s in members}
    if len(sources) == 1:
        (src,) = sources
        return f"{_plain(src[0])}-to-" + "+".join(_plain(s.out_fmt) for s in members)
    return "+".join(_formats_id(s) for s in members)


def _option_parts(spec: ScalarSpec, unit: Spec) -> list[str]:
    """The rounding mode, then the options that differ from the defaults and the pipeline of
    ``unit`` (``spec`` itself, or the multi-format unit it is a member of)."""
    parts = [spec.rounding.value]
    if spec.options.saturate:
        parts.append("sat")
    if not spec.subnormals:
        parts.append("ftz")
    if not spec.options.tininess_is_default:
        parts.append(f"tininess-{spec.options.tininess.value}")
    if isinstance(spec, DivSqrtSpec) and spec.arch != "comb":
        parts.append(spec.arch)
    if unit.stages:
        parts.append(f"s{unit.stages}")
    if unit.cuts:
        parts.append("cut-" + "-".join(unit.cuts))
    return parts


def simulators() -> list[str]:
    """Both simulators, or only the one SIM names."""
    sim = os.environ.get("SIM", "").strip().lower()
    return [sim] if sim else ["icarus", "verilator"]


def matrix_simulator(spec: Spec) -> str:
    """``make verify``'s simulator for one case when ``SIM`` names none: Icarus for input spaces
    of up to 16 bits, run exhaustively (cvt from 16-bit formats, 8-bit mul/add: it compiles in
    a second and ran them faster), Verilator for the rest, where its run time repays its ~6 s
    build (measured per case: 8-bit fma 13 s against 77 s on Icarus, fp16 fma 11 s against
    52 s, fp16 add 12 s against 24 s)."""
    return "icarus" if input_bits(spec) <= 16 else "verilator"


def verify_formats(names=None) -> list:
    """The formats of ``make verify``: every catalog format of <= 16 bits, or those of
    ``names`` (a list or comma-separated, e.g. ``VERIFY_FORMATS=fp8e4m3,fp16``), in catalog
    order."""
    return catalog_selection(names, 16, "make verify")


# The kinds of make verify's matrix, in registry order: each says its own cases (Spec.IN_MATRIX,
# Spec.matrix_options), so a kind enters it by its registry row.
MATRIX_UNITS = tuple(k for k, kd in KINDS.items() if kd.spec.IN_MATRIX)


def full_matrix(formats=None) -> list[Spec]:
    """Every catalog format of <= 16 bits (or ``formats``) x every kind of MATRIX_UNITS x that
    kind's option variants in the format (``Spec.matrix_options``: mul, add, fma, cvt every
    rounding mode x saturating or not x subnormals kept or flushed x 0 and 2 stages; min, max
    both NaN policies; ...), then the multi-format units of :func:`multi_matrix` whose members
    are all among those formats (``make verify``)."""
    singles = [make_spec(unit, **values)
               for fmt in (catalog_formats(16) if formats is None else formats)
               for unit in MATRIX_UNITS
               for values in kind(unit).spec.matrix_options(fmt)]
    return singles + multi_matrix(formats)


# make verify's multi-format units (docs/multiformat.md): the OCP FP8 pair and the f8f6f4 set
# of the tensor cores' MMA (FP8, FP6, FP4 operands), for each of these kinds (cvt from the
# given source), every rounding mode of the matrix x 0 and 2 stages.
MULTI_SETS = (("fp8e4m3", "fp8e5m2"), ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1"))
MULTI_MATRIX = (("mul", {}), ("add", {}), ("fma", {}), ("cvt", {"in_formats": "bf16"}),
                ("cvt", {"in_formats": "float32"}))
MULTI_STAGES = (0, 2)


def multi_matrix(formats=None) -> list[Spec]:
    """The multi-format cases of make verify (MULTI_SETS x MULTI_MATRIX x FULL_MODES x
    MULTI_STAGES): cvt from bfloat16 for the FP8 pair (every input), from float32 for the
    f8f6f4 set; with ``formats``, only the sets whose members are all among them."""
    from fpforge.rtl.format_names import resolve
    chosen = None if formats is None else set(formats)
    out = []
    for k, members in enumerate(MULTI_SETS):
        fmts = [resolve(f) for f in members]
        if chosen is not None and not set(fmts) <= chosen:
            continue
        for unit, extra in MULTI_MATRIX:
            if unit == "cvt" and extra["in_formats"] != ("bf16", "float32")[k]:
                continue
            out += [make_spec(unit, formats=",".join(members), rounding=mode, stages=stages,
                              **extra)
                    for mode in FULL_MODES for stages in MULTI_STAGES]
    return out
