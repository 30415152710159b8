"""The digit-recurrence kinds: div (a / b) and sqrt (sqrt(a)), correctly rounded.

Both are scalar kinds (:class:`~.scalar.ScalarSpec`: formats, rounding, saturation, subnormals,
tininess) whose exact core is a radix-2 digit recurrence: it gives a raw result (enough quotient
or root bits, plus a sticky bit from the remainder) to the one shared rounder. ``arch`` chooses
how the recurrence is built (docs/divsqrt.md):

- ``comb``: every step unrolled, one combinational datapath with cut points inside the
  recurrence (after a quarter, a half and three quarters of its digits), so ``--stages`` and
  ``--clock-ps`` pipeline it;
- ``iter``: one step reused over cycles behind a handshake (``valid_i`` and ``ready_o`` in the
  input direction, ``valid_o`` out), as HardFloat's divSqrtRecFN_small and CVFPU's DIVSQRT
  block; its latency is fixed by the format and stated in the header and the sidecar.

Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .options import FLAGS_MEANING, FLAGS_WIDTH, OptionError
from .ports import CLOCK, READY_OUT, RESET, VALID_IN, VALID_OUT, Port
from .scalar import ScalarSpec

__all__ = ["DivSqrtSpec", "DivSpec", "SqrtSpec", "ARCHS", "ITER_REFUSAL"]

# --arch: how the recurrence is built (module docstring).
ARCHS = {"comb": "unrolled recurrence, combinational (pipelined by --stages / --clock-ps)",
         "iter": "one recurrence step per clock cycle behind a valid/ready handshake"}
ITER_REFUSAL = ("--arch iter reuses one recurrence step over cycles behind a handshake; "
                "--stages, --cuts and --clock-ps pipeline --arch comb only")

_DZ_MEANING = FLAGS_MEANING.replace("divide_by_zero is always 0",
                                    "divide_by_zero: a finite non-zero a over a zero b")


@dataclass(frozen=True)
class DivSqrtSpec(ScalarSpec):
    """A div or sqrt unit: a scalar spec and its architecture (``ARCHS``)."""

    arch: str = "comb"

    # Cut points: after the decoders, after a quarter, a half and three quarters of the
    # recurrence's digits, after the recurrence (the raw result), inside the rounder.
    CUT_POINTS = ("decode", "early", "middle", "late", "core", "round")
    DEFAULT_CUTS = ("middle", "core", "early", "late", "round", "decode")
    OPTIONS = ScalarSpec.OPTIONS + ("arch",)
    # The sticky bit is the remainder's "not zero"; False only in sim/faults.py's broken unit.
    REMAINDER_STICKY: ClassVar[bool] = True

    def __post_init__(self):
        if self.arch not in ARCHS:
            raise OptionError(f"--arch must be one of {', '.join(ARCHS)}, not {self.arch!r}")
        if self.arch == "iter" and (self.pipeline.stages or self.pipeline.cuts):
            raise OptionError(ITER_REFUSAL)
        super().__post_init__()

    @classmethod
    def from_options(cls, *, arch=None, **values) -> "DivSqrtSpec":
        spec = super().from_options(**values)
        return cls(spec.out_fmt, spec.in_fmts, spec.options, subnormals=spec.subnormals,
                   pipeline=spec.pipeline, arch="comb" if arch is None else arch)

    @classmethod
    def matrix_options(cls, fmt):
        """make verify: the scalar kinds' crossing for comb, tininess before rounding once, and
        iter in every rounding mode (its handshake is its own; it has no stages, saturation and
        flushing are the rounder's)."""
        comb = super().matrix_options(fmt)
        return comb + [{"format": fmt, "rounding": "rne", "tininess": "before"}] + \
            [{"format": fmt, "rounding": rounding, "arch": "iter"}
             for rounding in cls.matrix_axes(fmt)["rounding"]]

    def option_values(self) -> dict:
        v = super().option_values()
        return v | ({"arch": self.arch} if self.arch != "comb" else {})

    # ----- the recurrence ----------------------------------------------------------------------
    @property
    def guard_bits(self) -> int:
        """Exact bits the recurrence keeps below the result's LSB: the rounder's guard bits
        (the round bit and one for tininess after rounding, or a stochastic mode's R or R+1)."""
        return max(self.rounding.exact_bits(self.options.sr_bits), 2)

    @property
    def digits(self) -> int:
        """Quotient or root bits the recurrence forms, one per step (docs/divsqrt.md)."""
        raise NotImplementedError

    @property
    def iterative(self) -> bool:
        return self.arch == "iter"

    @property
    def handshake(self) -> bool:
        """Whether the unit decides when it takes an input (ready_o) and delivers (valid_o)."""
        return self.iterative

    @property
    def pipeline_points(self) -> tuple[str, ...]:
        return () if self.iterative else self.CUT_POINTS

    @property
    def pipeline_refusal(self) -> str | None:
        """Why --clock-ps cannot pipeline this spec (synth/pipeline.py), if it cannot."""
        return ITER_REFUSAL if self.iterative else None

    @property
    def latency(self) -> int:
        """Cycles from the edge that takes an operation to valid_o (iter: one step per digit
        and one to load the operands), else the pipeline's stages."""
        return self.digits + 1 if self.iterative else self.pipeline.stages

    # ----- the contract ------------------------------------------------------------------------
    @property
    def default_name(self) -> str:
        return super().default_name + ("_iter" if self.iterative else "")

    def ports(self) -> list[Port]:
        out = [p if p.name != "flags" else Port("flags", "output", FLAGS_WIDTH, _DZ_MEANING)
               for p in super().ports()]
        if not self.iterative:
            return out
        data = ", ".join(p.name for p in out if p.is_input)
        return ([Port(CLOCK, "input", 1, "clock; registers update on the rising edge"),
                 Port(RESET, "input", 1, "synchronous reset, active high: drops the operation "
                                         "in flight")] + [p for p in out if p.is_input] +
                [Port(VALID_IN, "input", 1, f"offers this cycle's {data} as an operation; "
                                            "taken on an edge where ready_o is high"),
                 Port(READY_OUT, "output", 1, "the unit takes an operation on this edge "
                                              "(idle; high again with valid_o)")] +
                [p for p in out if not p.is_input] +
                [Port(VALID_OUT, "output", 1, f"y and flags are the result of the operation "
                                              f"taken {self.latency} cycles before; high for "
                                              f"one cycle")])

    def parameters(self) -> dict:
        return super().parameters() | {"arch": self.arch, "digits": self.digits} | \
            ({"latency_cycles": self.latency, "interval_cycles": self.latency}
             if self.iterative else {})

    def header_lines(self) -> list[str]:
        lines = super().header_lines() + [
            f"arch        {self.arch} ({ARCHS[self.arch]}); {self.digits} digits, radix 2"]
        if self.iterative:
            lines.append(f"handshake   valid_i/ready_o in, valid_o out: a result "
                         f"{self.latency} cycles after its operation is taken, one "
                         f"operation per {self.latency} cycles")
        return lines

    def describe(self) -> str:
        return super().describe() + f"; arch {self.arch}"


@dataclass(frozen=True)
class DivSpec(DivSqrtSpec):
    unit: ClassVar[str] = "div"
    OPERANDS = (("a", "dividend"), ("b", "divisor"))
    OPERATION = "y = a / b"
    EXACT = staticmethod(lambda a, b: a / b)

    @property
    def digits(self) -> int:
        # a/b of normalized significands lies in (1/2, 2): the quotient's leading one is at
        # bit k or k - 1, and k = P + G keeps P + G bits below it either way.
        return self.out_fmt.precision + self.guard_bits + 1


@dataclass(frozen=True)
class SqrtSpec(DivSqrtSpec):
    unit: ClassVar[str] = "sqrt"
    OPERANDS = (("a", "radicand"),)
    OPERATION = "y = sqrt(a)"
    EXACT = staticmethod(lambda a: a ** 0.5)
    OPTIONS = tuple(o for o in DivSqrtSpec.OPTIONS if o not in ("a_format", "b_format"))

    @property
    def radicand_bits(self) -> int:
        """c: the normalized significand's leading one, at an even bit (sqrt halves it)."""
        p = self.in_fmts[0].precision
        return p - 1 + (p - 1) % 2

    @property
    def digits(self) -> int:
        # The root's leading one is at bit k exactly (the radicand lies in [2^2k, 2^(2k+2))).
        return max(self.out_fmt.precision - 1 + self.guard_bits, self.radicand_bits // 2) + 1
