"""The Spec protocol: one typed, validated description of a unit, whatever its kind.

Every unit kind (rtl/kinds.py lists them) has a frozen dataclass spec deriving from :class:`Spec`.
The generator (rtl/fp_units), the Verilog export, the golden model, the benches and synthesis
all take a Spec and ask it the same questions:

- ``unit``: the kind's name; ``latency``, ``default_name``, ``describe()``;
- ``pipeline``: how it is pipelined (rtl/pipeline.py), apart from what it computes:
  ``numerics()`` is the spec without it, what the golden model computes and caches on;
- ``ports()``: the port contract (rtl/ports.py), from which every port list derives;
- ``formats()``: the number format of each role (operands and result), ``parameters()``: the
  options as data (the export sidecar's ``options`` / ``parameters``);
- ``option_values()`` / ``from_options()``: the spec as the command line's option values (one
  spelling: rtl/kinds.py ``SPEC_OPTIONS``), hence ``to_dict()``; back from it and to
  command-line arguments through the registry: ``kinds.spec_from_dict``, ``kinds.spec_argv``;
- ``matrix_options(fmt)``: the option values of each case ``make verify`` runs for the kind in
  one format (sim/tiers.py ``full_matrix``), so a kind enters the matrix by its registry row.

Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import ClassVar

from .formats import FloatFormat
from .options import OptionError, Rounding
from .pipeline import Pipeline, parse_cuts
from .ports import Port

__all__ = ["Spec", "check_int", "MATRIX_AXES"]

# make verify's option axes, each crossed for a kind that takes the option, in this nesting
# order (the last varies fastest). Rounding: every mode but P3109's StochasticB and C, which
# differ from StochasticA only in the rounder's carry and run in make verify-p3109.
MATRIX_AXES: dict[str, tuple] = {
    "rounding": tuple(m.value for m in Rounding
                      if m not in (Rounding.STOCHASTIC_B, Rounding.STOCHASTIC_C)),
    "saturate": (False, True),
    "subnormals": (True, False),
    "stages": (0, 2),
}


def check_int(name: str, value, lo: int, hi: int | None = None):
    if not isinstance(value, int) or isinstance(value, bool) or value < lo or \
            (hi is not None and value > hi):
        bound = f"an integer {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        raise OptionError(f"{name} must be {bound}, not {value!r}")


class Spec:
    """What every unit kind's spec offers (see the module docstring). Subclasses are frozen
    dataclasses with a ``pipeline`` field (call ``place_pipeline()`` in ``__post_init__``) and
    define the methods that raise here."""

    unit: ClassVar[str]
    SHAPE: ClassVar[str]                         # "scalar" or "block" (rtl/kinds.py SHAPES)
    OPERATION: ClassVar[str]                     # "y = a * b" ...: the sidecar's ``operation``
    # The command-line options (rtl/kinds.py SPEC_OPTIONS) the kind takes, and why some others
    # do not apply where that is worth saying.
    OPTIONS: ClassVar[tuple[str, ...]]
    OPTION_NOTES: ClassVar[dict[str, str]] = {}
    PARAMETERS_KEY: ClassVar[str] = "parameters"  # the sidecar key of parameters()
    SEMANTICS: ClassVar[str | None] = None        # the docs page of its numerics, if its own
    HEADER_WIDTH_COLUMN: ClassVar[int] = 5        # digits of the header's port-width column
    # Where the kind's datapath can hold a pipeline register, in dataflow order, and the order
    # in which ``stages`` alone fills them (rtl/pipeline.py).
    CUT_POINTS: ClassVar[tuple[str, ...]] = ()
    DEFAULT_CUTS: ClassVar[tuple[str, ...]] = ()

    pipeline: Pipeline

    # ----- what a kind defines ---------------------------------------------------------------
    def ports(self) -> list[Port]:
        raise NotImplementedError(f"{type(self).__name__} defines no ports()")

    def formats(self) -> dict[str, FloatFormat]:
        """The format of each operand role and of the result (``y``)."""
        raise NotImplementedError(f"{type(self).__name__} defines no formats()")

    def parameters(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} defines no parameters()")

    def header_lines(self) -> list[str]:
        """The export header's lines that describe this kind's formats and options."""
        raise NotImplementedError(f"{type(self).__name__} defines no header_lines()")

    @property
    def default_name(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no default_name")

    def describe(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} defines no describe()")

    def option_values(self) -> dict:
        """The command-line option values that build this spec again, in canonical form:
        ``kinds.make_spec(spec.unit, **spec.option_values()) == spec``."""
        raise NotImplementedError(f"{type(self).__name__} defines no option_values()")

    @classmethod
    def from_options(cls, **values) -> "Spec":
        """The spec from command-line option values (only those the kind takes, see OPTIONS;
        a missing one takes its default)."""
        raise NotImplementedError(f"{cls.__name__} defines no from_options()")

    # ----- make verify's matrix -----------------------------------------------------------------
    # False leaves the kind to its own benches (a variant of another matrix kind, or a block
    # kind whose structured stimulus is its own slow test).
    IN_MATRIX: ClassVar[bool] = True

    @classmethod
    def matrix_axes(cls, fmt: FloatFormat) -> dict[str, tuple]:
        """The option values make verify crosses for this kind in ``fmt``: each of
        MATRIX_AXES the kind takes; a kind adds its own options' values (min/max: --minmax)."""
        return {o: v for o, v in MATRIX_AXES.items() if o in cls.OPTIONS}

    @classmethod
    def matrix_options(cls, fmt: FloatFormat) -> list[dict]:
        """make verify's cases of this kind in ``fmt``: option values for ``kinds.make_spec``
        (``format`` included), the axes crossed in order; [] when the kind is not in the matrix
        or has no meaning in ``fmt``."""
        if not cls.IN_MATRIX:
            return []
        axes = cls.matrix_axes(fmt)
        return [{"format": fmt, **dict(zip(axes, values))}
                for values in itertools.product(*axes.values())]

    # ----- the pipeline --------------------------------------------------------------------------
    @classmethod
    def pipeline_from_options(cls, stages=None, cuts=None) -> Pipeline:
        """``--stages`` and ``--cuts`` as a Pipeline: cuts alone ask one stage each."""
        cuts = () if cuts is None else parse_cuts(cuts, cls.CUT_POINTS, cls.unit)
        return Pipeline(len(cuts) if stages is None else stages, cuts)

    def place_pipeline(self) -> None:
        """Check ``pipeline`` against this spec's cut points and spell its default placement
        by stages alone (what ``__post_init__`` calls)."""
        if not isinstance(self.pipeline, Pipeline):
            raise OptionError(f"pipeline must be a Pipeline, not {self.pipeline!r}")
        object.__setattr__(self, "pipeline", self.pipeline.placed(
            self.pipeline_points, self.default_cuts, self.unit))

    @property
    def pipeline_points(self) -> tuple[str, ...]:
        """The cut points this spec's datapath has (a kind's variant may have fewer)."""
        return self.CUT_POINTS

    @property
    def default_cuts(self) -> tuple[str, ...]:
        """The order in which ``stages`` alone places registers on this spec's datapath."""
        return tuple(c for c in self.DEFAULT_CUTS if c in self.pipeline_points)

    @property
    def stages(self) -> int:
        return self.pipeline.stages

    @property
    def latency(self) -> int:
        return self.pipeline.stages

    @property
    def cuts(self) -> tuple[str, ...]:
        """The cut points when not the default placement of ``stages``, else ()."""
        return self.pipeline.cuts

    @property
    def cut_points(self) -> tuple[str, ...]:
        """Where the pipeline registers are; stages beyond them are output registers."""
        return self.pipeline.cut_points(self.default_cuts)

    def pipeline_options(self) -> dict:
        """The pipeline's option values (``option_values``' last entries)."""
        return {"stages": self.stages} | ({"cuts": ",".join(self.cuts)} if self.cuts else {})

    def pipeline_parameters(self) -> dict:
        """The sidecar's record of cuts that are not the default placement."""
        return {"cuts": list(self.cuts)} if self.cuts else {}

    def pipeline_lines(self) -> list[str]:
        """The header's pipeline line, when the cuts are not the default placement."""
        return [self.pipeline.describe()] if self.cuts else []

    def numerics(self) -> "Spec":
        """What the unit computes: the spec without its pipeline."""
        return replace(self, pipeline=Pipeline())

    # ----- shared ------------------------------------------------------------------------------

    def inputs(self) -> list[Port]:
        """The data inputs (what stimulus drives): every input but clock, reset and valid."""
        return [p for p in self.ports() if p.is_input and not p.is_control]

    def outputs(self) -> list[Port]:
        """The data outputs (what a bench compares)."""
        return [p for p in self.ports() if not p.is_input and not p.is_control]

    def port(self, name: str) -> Port:
        for p in self.ports():
            if p.name == name:
                return p
        raise KeyError(f"{self.default_name} has no port {name!r}; its ports: "
                       f"{', '.join(p.name for p in self.ports())}")

    def to_dict(self) -> dict:
        """The spec as JSON-ready data: its unit and option values."""
        return {"unit": self.unit, **self.option_values()}
