"""Run-time formats and packed lanes: one scalar unit over several format members (docs/multiformat.md).

A :class:`MultiFormatSpec` is one kind (mul, add, sub, fma, fms, cvt) over a tuple of *members*:
each member is a complete single-format spec of that kind (its operand and result formats), all
with the same rounding options. The unit's ``fmt`` input selects the member per operation
(``fmt = i``: ``members[i]``); with one member there is no ``fmt`` port. Its datapath is sized
for the widest member and shared (rtl/fp_units/multiformat.py), not a multiplexer over units.

Lanes (``--lanes L``, ``--simd-width W``): each operand port carries several elements side by
side, lane 0 in the low bits, each lane computed independently, ``flags`` 5 bits per lane.

- ``--lanes L``: L lanes in every member, each a slot of the widest member's width (element j
  of port p in ``p[j*S +: S]``; a narrower member's code sits in the slot's low bits).
- ``--simd-width W`` (CVFPU's packed SIMD): member i has ``W // width_i`` lanes packed at its own
  width (element j in ``p[j*w_i +: w_i]``): one fp32, two fp16, four fp8, five fp6, eight fp4.
  Every member's operands and result must then be of one width.
- both: L lanes in slots of ``W // L`` bits (W must be a multiple of L).

Defined behaviour beyond the selected member: input bits outside its elements are ignored; the
output bits of lanes (or slot bits) it does not use are 0, and their flags are 0; a ``fmt`` value
with no member (k members, codes k .. 2^width - 1) gives y = 0 and flags = invalid (NV alone) in
every lane. Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .format_names import resolve
from .formats import FloatFormat
from .options import FLAGS_WIDTH, OptionError, UnitOptions
from .pipeline import Pipeline
from .ports import Port, clock_ports, flags_port, rbits_port, rm_port, valid_ports
from .scalar import (MULTI_OPTIONS, RoundsByOptions, ScalarSpec, rounder_lines,
                     rounder_name_parts, rounder_parameters, rounder_values)
from .spec import Spec, check_int

__all__ = ["MultiFormatSpec", "MULTI_OPTIONS", "FMT_PORT", "MAX_LANES", "MAX_SIMD_WIDTH",
           "format_list"]

FMT_PORT = "fmt"
MAX_LANES = 64
MAX_SIMD_WIDTH = 32       # a bench lane carries at most 32 bits (sim/packing.py)


def format_list(value, flag: str, parse=resolve) -> tuple:
    """``"F1,F2,..."`` (or a sequence of names or formats) as formats (``parse``: each name's
    object), in order; an empty list is an error naming ``flag`` (a member given twice is the
    spec's)."""
    if isinstance(value, str):
        names = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        names = list(value)
    else:
        raise OptionError(f"{flag} takes a comma-separated list of formats, not {value!r}")
    if not names or any(n == "" for n in names):
        raise OptionError(f"{flag} takes a comma-separated list of one or more formats, "
                          f"not {value!r}")
    return tuple(parse(n) for n in names)


@dataclass(frozen=True)
class MultiFormatSpec(RoundsByOptions, Spec):
    """One scalar kind over ``members`` (single-format specs of one kind, one UnitOptions, no
    pipeline of their own), selected at run time by ``fmt``, in ``lanes`` lanes or packed into
    ``simd_width`` bits (module docstring)."""

    members: tuple[ScalarSpec, ...]
    lanes: int | None = None
    simd_width: int | None = None
    pipeline: Pipeline = Pipeline()

    # False only in sim/faults.py's fmt-unregistered: the rounder reads the fmt input of the
    # current cycle, not the one registered with the data.
    FMT_REGISTERED: ClassVar[bool] = True
    SHAPE: ClassVar[str] = "scalar"
    PARAMETERS_KEY: ClassVar[str] = "options"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 3
    # The golden model calls each member per lane, on a lane axis it adds (False: on the ports
    # as they are, a dot's lanes being its vector's elements; rtl/multidot.py).
    LANE_AXIS: ClassVar[bool] = True

    def __post_init__(self):
        self._check_members()
        if self.lanes is not None:
            check_int("--lanes", self.lanes, 1, MAX_LANES)
        if self.simd_width is not None:
            check_int("--simd-width", self.simd_width, 2, MAX_SIMD_WIDTH)
            self._check_simd()
        self.place_pipeline()

    def _check_members(self):
        members = self.members
        if not isinstance(members, tuple) or not members or \
                not all(isinstance(s, ScalarSpec) for s in members):
            raise OptionError(f"members must be a non-empty tuple of scalar specs, not "
                              f"{members!r}")
        kind = type(members[0])
        first = members[0]
        for s in members:
            if type(s) is not kind:
                raise OptionError(f"every member must be a {first.unit} spec, not {s.unit}")
            if s.options != first.options or s.subnormals != first.subnormals:
                raise OptionError("every member takes the same rounding options and flushing")
            if s.pipeline != Pipeline():
                raise OptionError("members carry no pipeline: the multi-format spec's pipeline "
                                  "is the unit's")
        self._check_once()

    def _check_once(self):
        members = self.members
        for i, s in enumerate(members):
            if s in members[:i]:
                raise OptionError(f"the member {s.describe_formats()} is given twice (fmt "
                                  f"{members.index(s)} and {i}); each member once")

    def _check_simd(self):
        W, L = self.simd_width, self.lanes
        if L is not None:
            if W % L:
                divisors = [d for d in range(1, W + 1) if W % d == 0]
                raise OptionError(f"--lanes {L} does not divide --simd-width {W}; valid: "
                                  f"{', '.join(map(str, divisors))}")
            slot = W // L
            for s in self.members:
                wide = max(f.width for f in s.formats().values())
                if wide > slot:
                    raise OptionError(f"{s.member_ident} needs {wide}-bit lanes: wider than "
                                      f"--simd-width {W} / --lanes {L} = {slot} bits")
            return
        for s in self.members:
            widths = {f.width for f in s.formats().values()}
            if len(widths) > 1:
                raise OptionError(f"--simd-width packs each member at its own width: "
                                  f"{s.member_ident} has operands and result of "
                                  f"{', '.join(map(str, sorted(widths)))} bits; use --lanes")
            (w,) = widths
            if w > W:
                raise OptionError(f"{s.member_ident} is {w} bits wide: wider than "
                                  f"--simd-width {W}")

    # ----- construction from option values ----------------------------------------------------
    @classmethod
    def from_options(cls, kind: type[ScalarSpec], *, formats=None, in_formats=None,
                     a_formats=None, b_formats=None, c_formats=None, lanes=None,
                     simd_width=None, stages=None, cuts=None, **values) -> "MultiFormatSpec":
        """The members from ``formats`` (the results', and the operands' unless the per-operand
        lists say otherwise), each list as long as ``formats`` or of one format for all; the
        other option values as the kind takes them."""
        lists = {"in_format": in_formats, "a_format": a_formats, "b_format": b_formats,
                 "c_format": c_formats}
        if formats is not None and all(v is None for v in lists.values()) and \
                values.get("in_format") is None:
            lists["in_format"] = kind.DEFAULT_IN_FORMAT
        if formats is None:
            given = [f"--{k.replace('_', '-')}s" for k, v in lists.items() if v is not None]
            if given:
                raise OptionError(f"{', '.join(given)} need --formats (the members' result "
                                  f"formats); a single format takes --format / --in-format")
            members = (kind.from_options(**values),)
        else:
            for single in ("format", "in_format", "a_format", "b_format", "c_format"):
                if values.pop(single, None) is not None:
                    flag = f"--{single.replace('_', '-')}"
                    raise OptionError(f"{flag} names one format: with --formats (the members' "
                                      f"result formats) give " + (
                                          f"{flag}s, one per member or one for all"
                                          if single != "format" else "no --format"))
            outs = format_list(formats, "--formats")
            per = {}
            for key, value in lists.items():
                if value is None:
                    continue
                flag = f"--{key.replace('_', '-')}s"
                fmts = format_list(value, flag) if not isinstance(value, FloatFormat) else \
                    (value,)
                if len(fmts) not in (1, len(outs)):
                    raise OptionError(f"{flag} lists {len(fmts)} formats: give one per member "
                                      f"of --formats ({len(outs)}) or one for all")
                per[key] = fmts
            members = tuple(kind.from_options(
                format=out, **{k: v[i] if len(v) > 1 else v[0] for k, v in per.items()},
                **values) for i, out in enumerate(outs))
        return cls(members, lanes=lanes, simd_width=simd_width,
                   pipeline=kind.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        first = self.members[0]
        if len(self.members) == 1:
            v = {k: x for k, x in first.option_values().items()
                 if k not in ("stages", "cuts")}
        else:
            per = [s.option_values() for s in self.members]
            v = {"formats": ",".join(s.out_fmt.name for s in self.members)}
            for key in ("in_format", "a_format", "b_format", "c_format"):
                names = [p.get(key) for p in per]
                if all(n is None for n in names):
                    continue
                names = [n if n is not None else self._operand_default(s, key)
                         for n, s in zip(names, self.members)]
                v[key + "s"] = names[0] if len(set(names)) == 1 else ",".join(names)
            v |= rounder_values(first.options)
            if not first.subnormals:
                v["subnormals"] = False
            v |= first.options.tininess_option()
        if self.lanes is not None:
            v["lanes"] = self.lanes
        if self.simd_width is not None:
            v["simd_width"] = self.simd_width
        return v | self.pipeline_options()

    @staticmethod
    def _operand_default(s: ScalarSpec, key: str) -> str:
        """The format of ``key`` in member ``s`` when its option values leave it out."""
        if key == "in_format":
            return s.in_fmts[0].name
        return s.formats()[key[0]].name

    # ----- the members and their lanes ---------------------------------------------------------
    @property
    def unit(self) -> str:
        return self.members[0].unit

    @property
    def kind(self) -> type[ScalarSpec]:
        return type(self.members[0])

    @property
    def OPERATION(self) -> str:             # noqa: N802 (the Spec protocol's class attribute)
        return self.kind.OPERATION

    @property
    def OPTIONS(self) -> tuple[str, ...]:   # noqa: N802
        return self.kind.OPTIONS

    @property
    def operands(self) -> tuple[str, ...]:
        return self.members[0].operands

    @property
    def options(self) -> UnitOptions:
        return self.members[0].options

    @property
    def subnormals(self) -> bool:
        return self.members[0].subnormals

    @property
    def has_fmt(self) -> bool:
        return len(self.members) > 1

    @property
    def fmt_width(self) -> int:
        return max(1, (len(self.members) - 1).bit_length())

    def member_lanes(self, i: int) -> int:
        """How many lanes member ``i`` computes per operation."""
        if self.simd_width is not None and self.lanes is None:
            return self.simd_width // self.members[i].out_fmt.width
        return self.lanes or 1

    @property
    def max_lanes(self) -> int:
        return max(self.member_lanes(i) for i in range(len(self.members)))

    @property
    def packed(self) -> bool:
        """Lanes packed at each member's width (``--simd-width`` alone): the data ports are one
        W-bit word whose element layout depends on fmt."""
        return self.simd_width is not None and self.lanes is None

    def slot_width(self, role: str) -> int:
        """Bits of one lane of port ``role`` (operand or ``y``) when the lanes are slots."""
        if self.simd_width is not None:
            return self.simd_width // (self.lanes or 1)
        return max(s.formats()[role].width for s in self.members)

    def element(self, i: int, role: str, lane: int) -> tuple[int, int]:
        """(lowest bit, width) of member ``i``'s element in ``lane`` of port ``role``."""
        w = self.members[i].formats()[role].width
        step = w if self.packed else self.slot_width(role)
        return lane * step, w

    # ----- derived -----------------------------------------------------------------------------
    @property
    def default_name(self) -> str:
        """e.g. ``fp_mul_e4m3fn_or_e5m2_rne``, ``fp_mul_e4m3fn_rne_x4``, ``..._simd32``."""
        parts = ["fp", self.unit, "_or_".join(s.member_ident for s in self.members)]
        parts += rounder_name_parts(self.options)
        if self.lanes is not None:
            parts.append(f"x{self.lanes}")
        if self.simd_width is not None:
            parts.append(f"simd{self.simd_width}")
        return "_".join(parts + self.pipeline.name_parts())

    def describe(self) -> str:
        members = "; ".join(f"fmt {i}: {s.describe_formats()}" for i, s in
                            enumerate(self.members))
        lanes = f"; lanes {self.lanes_phrase()}" if self.max_lanes > 1 else ""
        return (f"{self.unit} [{members}]{lanes}; {self.options.describe()}; subnormals "
                f"{'kept' if self.subnormals else 'flushed'}; latency {self.latency}")

    def lanes_phrase(self) -> str:
        if self.packed:
            return ", ".join(f"{self.member_lanes(i)} ({s.out_fmt.name})"
                             for i, s in enumerate(self.members)) + \
                f" packed in {self.simd_width} bits"
        return f"{self.lanes} of {self.slot_width('y')} bits"

    # ----- the pipeline: the kind's cut points ---------------------------------------------------
    @property
    def pipeline_points(self) -> tuple[str, ...]:
        return self.members[0].pipeline_points

    @property
    def default_cuts(self) -> tuple[str, ...]:
        return self.members[0].default_cuts

    @property
    def CUT_POINTS(self) -> tuple[str, ...]:   # noqa: N802
        return self.kind.CUT_POINTS

    # ----- the contract ------------------------------------------------------------------------
    def _data_port(self, role: str, direction: str, meaning: str) -> Port:
        names = sorted({s.formats()[role].name for s in self.members},
                       key=[s.formats()[role].name for s in self.members].index)
        what = f"{meaning}, a {' or '.join(names)} code by fmt"
        if self.packed:
            return Port(role, direction, self.simd_width,
                        f"{what}; element j of fmt i at [j*w_i +: w_i] (docs/multiformat.md)")
        lanes = self.lanes or 1
        if lanes > 1:
            what += f"; element j at [j*{self.slot_width(role)} +: w]"
        return Port(role, direction, self.slot_width(role), what, lanes)

    def fmt_codes(self) -> dict[int, str]:
        return {i: s.describe_formats() for i, s in enumerate(self.members)}

    def fmt_port(self) -> Port:
        codes = "; ".join(f"{i}: {d}" for i, d in self.fmt_codes().items())
        return Port(FMT_PORT, "input", self.fmt_width, f"the member format of this operation "
                    f"({codes}; other codes: y = 0, flags = invalid)")

    def ports(self) -> list[Port]:
        out = clock_ports(self.stages)
        roles = dict(self.kind.OPERANDS)
        out += [self._data_port(p, "input", f"operand {p} ({roles[p]})") for p in self.operands]
        controls = []
        if self.has_fmt:
            controls.append(self.fmt_port())
        if self.has_rm:
            controls.append(rm_port())
        if self.has_rbits:
            controls.append(rbits_port(self.options.sr_bits, self.max_lanes))
        out += controls
        v_in, v_out = valid_ports(self.stages, [*self.operands, *(p.name for p in controls)],
                                  "y and flags")
        out += v_in
        out.append(self._data_port("y", "output", "result"))
        flags = flags_port()
        if self.max_lanes > 1:
            flags = Port("flags", "output", FLAGS_WIDTH, flags.meaning + f"; lane j at "
                         f"flags[j*{FLAGS_WIDTH} +: {FLAGS_WIDTH}]", self.max_lanes)
        return out + [flags] + v_out

    def formats(self) -> dict[str, FloatFormat]:
        """Each member's roles, keyed ``role.i`` (``a.0``, ``y.1``)."""
        return {f"{role}.{i}": f for i, s in enumerate(self.members)
                for role, f in s.formats().items()}

    def parameters(self) -> dict:
        members = [{"fmt": i, "formats": {r: f.name for r, f in s.formats().items()},
                    "lanes": self.member_lanes(i)} for i, s in enumerate(self.members)]
        return rounder_parameters(self.options, self.subnormals) | \
            {"members": members, "fmt_width": self.fmt_width if self.has_fmt else 0,
             "lanes": self.lanes, "simd_width": self.simd_width} | self.pipeline_parameters()

    def fmt_lines(self) -> list[str]:
        """The header's lines of the members, one per fmt code."""
        return [f"{'fmt ' + str(i):<12}{d}" for i, d in self.fmt_codes().items()] \
            if self.has_fmt else [f"{'formats':<12}{self.members[0].describe_formats()}"]

    def header_lines(self) -> list[str]:
        lines = self.fmt_lines()
        if self.max_lanes > 1:
            lines.append(f"{'lanes':<12}{self.lanes_phrase()}")
        return lines + rounder_lines(self.options, self.members[0].out_fmt, self.subnormals) + \
            self.pipeline_lines()
