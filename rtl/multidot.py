"""Run-time element formats on the dot unit: one MX dot over several member element formats
(docs/multiformat.md, "Dot units").

A :class:`MultiDotSpec` is the multi-format spec (rtl/multiformat.py) over dot members
(rtl/dot.py ``MxDotSpec``) that differ only in their element formats: the vector length ``n``,
the accumulation, the scales, c and the result format are the unit's. ``fmt`` selects the member
per operation, the multi-format contract: element j of ``a`` and ``b`` sits in an S-bit slot
(``a[j*S +: S]``, S the widest member's element width), a narrower member's code in the slot's
low bits and the bits above ignored; a ``fmt`` code without a member gives y = 0 and flags =
invalid. There are no ``--lanes`` or ``--simd-width``: the ports' lanes are the vector's
elements. The datapath (rtl/fp_units/dot.py) decodes every member's elements into one common
operand and shares the products, the sum and the rounder.

Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from .dot import MxDotSpec
from .elements import ElementFormat, element_format
from .multiformat import MultiFormatSpec, format_list
from .options import OptionError
from .pipeline import Pipeline
from .ports import Port

__all__ = ["MultiDotSpec"]

# What the members share, read from the first: the dot's own methods below use them.
SHARED = ("n", "accum", "scaled", "out_fmt", "rounding", "scale_fmt", "c_fmt", "tininess",
          "groups", "value_scales", "sum_bits", "_scale_name")
ELEMENT_LISTS = {"formats": "--formats", "a_formats": "--a-formats", "b_formats": "--b-formats"}


@dataclass(frozen=True)
class MultiDotSpec(MultiFormatSpec):
    """The dot unit over ``members`` (dot specs equal but for their element formats, no
    pipeline of their own), selected at run time by ``fmt`` (module docstring)."""

    members: tuple[MxDotSpec, ...]

    SHAPE: ClassVar[str] = "block"
    PARAMETERS_KEY: ClassVar[str] = "parameters"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 5
    LANE_AXIS: ClassVar[bool] = False
    IN_MATRIX: ClassVar[bool] = False
    SEMANTICS: ClassVar[str] = "docs/mx.md"
    # Member i's elements decoded with the exponent bias of member BIAS_FROM[i] (the
    # deliberately broken variant of sim/faults.py; empty: every member its own).
    BIAS_FROM: ClassVar[dict[int, int]] = {}

    def _check_members(self):
        members = self.members
        if not isinstance(members, tuple) or not members or \
                not all(isinstance(s, MxDotSpec) for s in members):
            raise OptionError(f"members must be a non-empty tuple of dot specs, not {members!r}")
        first = members[0]
        for s in members:
            if s.pipeline != Pipeline():
                raise OptionError("members carry no pipeline: the multi-format spec's pipeline "
                                  "is the unit's")
            if replace(s, elem_a=first.elem_a, elem_b=first.elem_b) != first:
                raise OptionError("every dot member takes the same --n, --accum, scales, "
                                  "--c-format and --format: only the element formats differ")
        if self.lanes is not None or self.simd_width is not None:
            raise OptionError("--lanes and --simd-width do not apply to dot: its ports' lanes "
                              "are the vector's n elements")
        self._check_once()

    # ----- construction from option values ----------------------------------------------------
    @classmethod
    def from_options(cls, kind: type[MxDotSpec], *, formats=None, a_formats=None,
                     b_formats=None, stages=None, cuts=None, **values) -> "MultiDotSpec":
        """The members' element formats from ``formats`` (a and b), ``a_formats`` and
        ``b_formats`` (each one per member or one for all); the other option values (the result
        ``format`` included) are every member's."""
        for single in ("in_format", "a_format", "b_format"):
            if values.pop(single, None) is not None:
                raise OptionError(f"--{single.replace('_', '-')} names one element format: with "
                                  f"--formats give --a-formats / --b-formats, one per member or "
                                  f"one for all")
        given = {key: v for key, v in (("formats", formats), ("a_formats", a_formats),
                                       ("b_formats", b_formats)) if v is not None}
        if "formats" not in given and len(given) < 2:
            raise OptionError("dot --a-formats and --b-formats need each other or --formats (the "
                              "members' element formats of a and b)")
        lists = {key: format_list(v, ELEMENT_LISTS[key], element_format)
                 for key, v in given.items()}
        k = len(lists["formats"]) if "formats" in lists else max(len(v) for v in lists.values())
        for key, v in lists.items():
            if len(v) not in (1, k):
                raise OptionError(f"{ELEMENT_LISTS[key]} lists {len(v)} formats: give one per "
                                  f"member ({k}) or one for all")
        a = lists.get("a_formats", lists.get("formats"))
        b = lists.get("b_formats", lists.get("formats"))
        members = tuple(kind.from_options(a_format=a[i % len(a)], b_format=b[i % len(b)],
                                          **values) for i in range(k))
        return cls(members, pipeline=kind.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        first = self.members[0]
        v = {k: x for k, x in first.option_values().items()
             if k not in ("in_format", "a_format", "b_format", "stages", "cuts")}
        if len(self.members) == 1:
            return first.option_values() | self.pipeline_options()
        a = [s.elem_a.name for s in self.members]
        b = [s.elem_b.name for s in self.members]
        if a == b:
            lists = {"formats": ",".join(a)}
        else:
            lists = {"a_formats": a[0] if len(set(a)) == 1 else ",".join(a),
                     "b_formats": b[0] if len(set(b)) == 1 else ",".join(b)}
        return lists | v | self.pipeline_options()

    # ----- the members' elements ---------------------------------------------------------------
    def member_elements(self, role: str) -> tuple[ElementFormat, ...]:
        """Each member's element format of vector ``role`` (``a`` or ``b``), by fmt."""
        return tuple(getattr(s, f"elem_{role}") for s in self.members)

    @property
    def element_man_bits(self) -> tuple[int, int]:
        """Fraction bits of the common decoded element of a and b: the widest member's
        (rtl/fp_units/mx_unit.py ``decode_element_by_fmt``)."""
        return tuple(max(e.grid.man_bits for e in self.member_elements(r)) for r in "ab")

    # ----- the contract: the dot's own, its a and b in slots, and fmt ----------------------------
    ports = MxDotSpec.ports
    describe_sum = MxDotSpec.describe_sum
    sum_lines = MxDotSpec.sum_lines
    name_parts = MxDotSpec.name_parts

    def input_ports(self) -> list[Port]:
        out = [self._element_port(p.name) if p.name in ("a", "b") else p
               for p in self.members[0].input_ports()]
        return out + ([self.fmt_port()] if self.has_fmt else [])

    def _element_port(self, role: str) -> Port:
        names = list(dict.fromkeys(e.name for e in self.member_elements(role)))
        w = self.slot_width(role)
        return Port(role, "input", w, f"vector {role}: {self.n} element codes, a "
                    f"{' or '.join(names)} code by fmt in the low bits of element i at "
                    f"{role}[i*{w} +: {w}]", self.n)

    @property
    def default_name(self) -> str:
        """e.g. ``mxdot_fp8e4m3_or_fp8e5m2_n32_exact_e8m23_rne``."""
        return "_".join(["mxdot", "_or_".join(s.member_ident for s in self.members),
                         *self.name_parts(), *self.pipeline.name_parts()])

    def describe(self) -> str:
        members = "; ".join(f"fmt {i}: {d}" for i, d in self.fmt_codes().items())
        return f"dot [{members}] {self.describe_sum()}"

    def parameters(self) -> dict:
        v = self.members[0].parameters()
        del v["element_a"], v["element_b"]
        members = [{"fmt": i, "element_a": s.elem_a.name, "element_b": s.elem_b.name}
                   for i, s in enumerate(self.members)]
        return {"members": members, "fmt_width": self.fmt_width if self.has_fmt else 0} | v | \
            self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        return self.fmt_lines() + self.sum_lines()


for _name in SHARED:
    setattr(MultiDotSpec, _name, property(lambda self, _name=_name: getattr(self.members[0], _name)))
