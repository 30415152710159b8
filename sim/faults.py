"""Deliberately wrong designs, so every bench can show that it fails.

Each fault turns a spec into a :class:`~sim.design.Design` with the spec's ports but not its
behaviour, while the reference still models the spec. A bench that reports no mismatch on these
is broken. One table for every kind; a fault that does not apply to a spec says why.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable

from fpforge.rtl import emit
from fpforge.rtl.blockscale import Arithmetic
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import Flag, OptionError, Rounding, Saturation
from fpforge.rtl.spec import Spec

from .design import Design

__all__ = ["FAULTS", "Fault", "faulty_design"]


@dataclass(frozen=True)
class Fault:
    what: str
    make: Callable[[Spec], Design]


def _ports(spec: Spec):
    return spec.ports()


def _wrapped(suffix: str, port: str, expr: Callable[[Spec], str], needs: str = ""):
    """The real unit with one output ``port`` replaced by ``expr(spec)``, a Verilog expression of
    the unit's own output (``<port>_unit``) and the inputs, as a wrapper around it; or with one
    input ``port`` driven by ``expr(spec)`` (``<port>_unit``, of the wrapper's inputs)."""
    def make(spec: Spec) -> Design:
        ports = _ports(spec)
        if needs and spec.unit != needs or not any(p.name == port for p in ports):
            raise OptionError(f"{spec.default_name} has no {port} output to force" if not needs
                              else f"the fault needs a {needs} unit, not {spec.default_name}")
        unit = spec.default_name
        top = f"{unit}_{suffix}"
        decl = [f"  {p.direction} [{p.width - 1}:0] {p.name};" for p in ports]
        conns = ", ".join(f".{p.name}({p.name + '_unit' if p.name == port else p.name})"
                          for p in ports)
        wrapper = "\n".join([f"module {top}({', '.join(p.name for p in ports)});", *decl,
                             f"  wire [{spec.port(port).width - 1}:0] {port}_unit;",
                             f"  {unit} unit({conns});",
                             f"  assign {port if not spec.port(port).is_input else port + '_unit'}"
                             f" = {expr(spec)};", "endmodule", ""])
        return Design.of(spec, name=top, text=emit.verilog(spec) + "\n" + wrapper, label=top)
    return make


def _forced_flag(flag: Flag):
    """The real unit with one flag bit forced high."""
    return _wrapped(f"force_{flag.name.lower()}", "flags",
                    lambda spec: f"flags_unit | {spec.port('flags').width}'d{int(flag)}")


def _sign_copied(spec: Spec) -> str:
    """sgnj's y with b's sign whatever op asks (fsgnj alone)."""
    w = spec.fmt.width
    return f"{{b[{w - 1}], y_unit[{w - 2}:0]}}"


# classify's mask with subnormals reported as normals.
_SUBNORMAL_AS_NORMAL = ("{y_unit[9:7], y_unit[6] | y_unit[5], 1'b0, y_unit[4:3], 1'b0, "
                        "y_unit[1] | y_unit[2], y_unit[0]}")


def _other_minmax(spec: Spec) -> dict:
    policy = spec.option_values().get("minmax")
    if policy is None:
        raise OptionError(f"other-minmax needs a min, max or amax unit of a format with NaN, not "
                          f"{spec.default_name}")
    return {"minmax": "ieee" if policy == "number" else "number"}


def _other_signedness(spec: Spec) -> dict:
    if spec.unit != "i2f":
        raise OptionError(f"i2f-other-signedness needs an i2f unit, not {spec.default_name}")
    return {"unsigned": not spec.option_values().get("unsigned", False)}


def _wrapped_around(spec: Spec) -> str:
    """f2i's y with the top bit of an invalid result flipped: an out-of-range value just past
    one end of the range wraps to the other, as a cast without saturation does."""
    n = spec.port("y").width
    return f"y_unit ^ {{flags[4], {n - 1}'d0}}"


def _zeros_ordered(spec: Spec) -> str:
    """cmp's y ordering -0 below +0 (the total order of min and max, not IEEE 754's equality):
    -0 == +0 false, -0 < +0 and -0 <= +0 true."""
    if spec.unit != "cmp" or spec.b_fmt is not None or not spec.fmt.has_neg_zero:
        raise OptionError(f"cmp-zeros-ordered needs a cmp unit of one format with -0, not "
                          f"{spec.default_name}")
    w = spec.fmt.width
    zeros = f"a[{w - 2}:0] == 0 && b[{w - 2}:0] == 0 && a[{w - 1}] != b[{w - 1}]"
    return f"({zeros}) ? {{1'b0, a[{w - 1}], a[{w - 1}], 1'b0}} : y_unit"


def _subclassed(spec: Spec, suffix: str, **attributes) -> Design:
    """The unit of ``spec`` built by a subclass of its spec class with ``attributes`` changed
    (a generator's hook, such as ``REMAINDER_STICKY``), as module ``<name>_<suffix>``."""
    other = type(type(spec).__name__ + "Fault", (type(spec),), attributes)(
        **{f.name: getattr(spec, f.name) for f in fields(spec) if f.init})
    name = f"{spec.default_name}_{suffix}"
    return Design.of(spec, name=name, text=emit.verilog(other, name), label=name)


def _no_remainder_sticky(unit: str):
    """The div or sqrt unit with the remainder's sticky bit dropped: the quotient or root
    truncated, as if the bits the recurrence did not form were zero."""
    def make(spec: Spec) -> Design:
        if spec.unit != unit:
            raise OptionError(f"the fault {unit}-no-sticky needs a {unit} unit, not "
                              f"{spec.default_name}")
        return _subclassed(spec, "no_sticky", REMAINDER_STICKY=False)
    return make


def _variant(fault: str, describe: Callable[[Spec], dict]):
    """The unit of a spec that differs from ``spec`` by the option values ``describe`` gives;
    its ports must be the same."""
    def make(spec: Spec) -> Design:
        changes = describe(spec)
        other = make_spec(spec.unit, **{**spec.option_values(), **changes})
        if [(p.name, p.width) for p in other.ports()] != [(p.name, p.width) for p in
                                                            spec.ports()]:
            raise OptionError(f"the fault {fault} changes the ports of {spec.default_name}")
        name = f"{spec.default_name}_{fault.replace('-', '_')}"
        return Design.of(spec, name=name, text=emit.verilog(other, name), label=name)
    return make


def _rounding(mode: Rounding):
    def changes(spec: Spec) -> dict:
        r = getattr(spec, "rounding", None)
        if r is None or r in (Rounding.DYNAMIC, Rounding.STOCHASTIC) or r is mode:
            raise OptionError(f"rounding {mode.value} instead needs a unit of another static "
                             f"rounding mode, not {spec.default_name}")
        return {"rounding": mode.value}
    return changes


def _stochastic_a(spec: Spec) -> dict:
    r = getattr(spec, "rounding", None)
    if r not in (Rounding.STOCHASTIC_B, Rounding.STOCHASTIC_C):
        raise OptionError(f"stochastic-a-instead needs a unit of --rounding stochastic_b or "
                          f"stochastic_c, not {spec.default_name}")
    return {"rounding": Rounding.STOCHASTIC.value}


def _saturation(mode: Saturation):
    def changes(spec: Spec) -> dict:
        options = getattr(spec, "options", None)
        if options is None or options.saturation_for(spec.out_fmt) in (None, mode):
            raise OptionError(f"saturation {mode.value} instead needs a scalar unit of another "
                              f"P3109 saturation mode, not {spec.default_name}")
        return {"saturate": False, "saturation": mode.value}
    return changes


def _wrong_clamp(spec: Spec) -> Design:
    """The quantizer of an NVFP4 recipe with one guard of its block scale changed: torchao
    without its 2^-6 floor, ModelOpt with a zero block scale left 0 instead of 1.0, TE with a
    scale cast that does not saturate (NaN beyond 448), 4over6 with TE's 448 in place of its
    256 headroom clamp."""
    scaling = getattr(spec, "scaling", None)
    if spec.unit != "mxq" or scaling is None:
        raise OptionError(f"the fault wrong-clamp needs an mxq unit of an NVFP4 --scale-rule, "
                          f"not {spec.default_name}")
    rule = scaling.rule
    if rule.arithmetic is Arithmetic.P3109:
        raise OptionError(f"the fault wrong-clamp needs an mxq unit of an NVFP4 --scale-rule, "
                          f"not {spec.default_name} (P3109's scale has no recipe clamp)")
    if rule.four_over_six:
        wrong = replace(rule, global_max=448)
    elif rule.scale_floor is not None:
        wrong = replace(rule, scale_floor=None)
    elif rule.zero_block_one:
        wrong = replace(rule, zero_block_one=False)
    else:
        wrong = replace(rule, scale_saturates=not rule.scale_saturates)
    broken = replace(scaling, rule=wrong)

    class WrongClamp(type(spec)):
        @property
        def scaling(self):
            return broken

    other = WrongClamp(**{f.name: getattr(spec, f.name) for f in fields(spec) if f.init})
    name = f"{spec.default_name}_wrong_clamp"
    return Design.of(spec, name=name, text=emit.verilog(other, name), label=name)


def _e8m0_scales(spec: Spec) -> dict:
    if not getattr(spec, "value_scales", False):
        raise OptionError(f"e8m0-scales-instead needs a dot unit of a --scale-format other "
                          f"than E8M0, not {spec.default_name}")
    return {"scale_format": "float8_e8m0fnu"}


def _fewer_frac_bits(spec: Spec) -> dict:
    frac_bits = spec.option_values().get("frac_bits")
    if frac_bits is None or frac_bits < 2:
        raise OptionError(f"frac-bits-fewer needs a dot unit of --accum fixed with --frac-bits "
                          f"2 or more, not {spec.default_name}")
    return {"frac_bits": frac_bits - 1}


def _amax_signed(spec: Spec) -> Design:
    """The amax tree built to order the codes as signed values (min/max's order)."""
    if spec.unit != "amax":
        raise OptionError(f"the fault amax-signed needs an amax unit, not {spec.default_name}")
    return _subclassed(spec, "amax_signed", ORDER="signed")


# Element formats of the same width: a unit built for the other one has the same ports.
SAME_WIDTH = {"fp8e4m3": "fp8e5m2", "fp8e5m2": "fp8e4m3", "fp6e3m2": "fp6e2m3",
              "fp6e2m3": "fp6e3m2", "mxint8": "fp8e4m3", "binary8p4se": "binary8p3se",
              "binary8p3se": "binary8p4se", "int4": "fp4e2m1"}


def _other_element(spec: Spec) -> dict:
    """The option that names a block unit's element format, set to the other one."""
    elem = getattr(spec, "elem", None)
    values = spec.option_values()
    key = next((k for k, v in values.items() if elem is not None and v == elem.name), None)
    elem = elem.name if key else None
    if elem not in SAME_WIDTH:
        raise OptionError(f"the fault other-element-format needs an mxq or mxdq spec with one "
                          f"of {', '.join(SAME_WIDTH)}, not {spec.default_name}")
    return {key: SAME_WIDTH[elem]}


def _fmt_unregistered(spec: Spec) -> Design:
    """The multi-format unit whose rounder reads the fmt input of the current cycle instead of
    the one registered with the data: only a pipelined unit switching formats shows it."""
    if not getattr(spec, "has_fmt", False) or not spec.stages:
        raise OptionError(f"the fault fmt-unregistered needs a pipelined unit of several "
                          f"--formats, not {spec.default_name}")
    return _subclassed(spec, "fmt_unregistered", FMT_REGISTERED=False)


def _faithful(spec: Spec) -> dict:
    if spec.option_values().get("accuracy") != "correct":
        raise OptionError(f"func-faithful-as-correct needs a recip, rsqrt or exp2 unit of "
                          f"--accuracy correct, not {spec.default_name}")
    return {"accuracy": "faithful"}


def _member_bias(spec: Spec) -> Design:
    """The multi-format dot whose decoder reads member 1's elements with member 0's exponent
    bias (rtl/multidot.py ``BIAS_FROM``)."""
    members = getattr(spec, "members", ())
    if spec.unit != "dot" or len(members) < 2:
        raise OptionError(f"the fault dot-member-bias needs a dot unit of two or more --formats, "
                          f"not {spec.default_name}")
    return _subclassed(spec, "member_bias", BIAS_FROM={1: 0})


def _other_member(spec: Spec) -> str:
    """A multi-format unit's fmt with its lowest bit flipped: each operation computed in
    another member's formats (or an unused code's)."""
    if not spec.has_fmt:
        raise OptionError(f"other-member needs a unit of several --formats, not "
                          f"{spec.default_name}")
    return f"fmt ^ {spec.fmt_width}'d1"


def _reads_unused_bits(spec: Spec) -> str:
    """A multi-format unit's first operand with, for each member whose elements leave bits of
    it unused, its first element's lowest bit flipped by the highest unused bit: a unit that
    reads bits the selected member does not own."""
    op = spec.operands[0]
    port = spec.port(op)
    terms = []
    for i in range(len(spec.members)):
        used = 0
        for j in range(spec.member_lanes(i)):
            low, w = spec.element(i, op, j)
            used |= ((1 << w) - 1) << low     # whole-port bits, slots and packed alike
        unused = [b for b in range(port.width) if not used >> b & 1]
        if not unused:
            continue
        select = f"fmt == {spec.fmt_width}'d{i}" if spec.has_fmt else "1'b1"
        bit = 1 << spec.element(i, op, 0)[0]
        terms.append(f"(({select}) && {op}[{unused[-1]}] ? {port.width}'d{bit} : "
                     f"{port.width}'d0)")
    if not terms:
        raise OptionError(f"reads-unused-bits needs a multi-format unit with a member narrower "
                          f"than its ports (bits it leaves unused), not {spec.default_name}")
    return " ^ ".join([op, *terms])


def _multi_input(fault: str, port: Callable[[Spec], str], expr: Callable[[Spec], str]):
    """A multi-format unit (rtl/multiformat.py) with input ``port(spec)`` driven by
    ``expr(spec)`` (a wrapper, :func:`_wrapped`)."""
    def make(spec: Spec) -> Design:
        if not hasattr(spec, "members"):
            raise OptionError(f"{fault} needs a unit of --formats or --lanes, not "
                              f"{spec.default_name}")
        expr(spec)                       # a unit it does not apply to: its own message
        return _wrapped(fault.replace("-", "_"), port(spec), expr)(spec)
    return make


def _lanes_swapped(spec: Spec) -> str:
    """y with its lanes 0 and 1 exchanged (member 0's lane width when packed)."""
    if getattr(spec, "max_lanes", 1) < 2:
        raise OptionError(f"the fault needs a unit of two or more lanes (--lanes, "
                          f"--simd-width), not {spec.default_name}")
    w, top = spec.element(0, "y", 1)[0], spec.port("y").width
    swapped = f"y_unit[{w - 1}:0], y_unit[{2 * w - 1}:{w}]"
    return "{" + (f"y_unit[{top - 1}:{2 * w}], " if top > 2 * w else "") + swapped + "}"


FAULTS = {
    "force-inexact": Fault("the unit with the inexact flag forced high", _forced_flag(Flag.NX)),
    "force-invalid": Fault("the unit with the invalid flag forced high", _forced_flag(Flag.NV)),
    "rtz-instead": Fault("the unit built for round toward zero",
                         _variant("rtz-instead", _rounding(Rounding.RTZ))),
    "rna-instead": Fault("the unit built for round to nearest, ties away",
                         _variant("rna-instead", _rounding(Rounding.RNA))),
    "stochastic-a-instead": Fault("the unit built for P3109 StochasticA (the R bits below the "
                                  "LSB plus rbits) where B or C was asked",
                                  _variant("stochastic-a-instead", _stochastic_a)),
    "satfinite-instead": Fault("the unit built for P3109 SatFinite",
                               _variant("satfinite-instead", _saturation(Saturation.FINITE))),
    "other-element-format": Fault("the block unit built for the other element format of its "
                                  "width", _variant("other-element-format", _other_element)),
    "e8m0-scales-instead": Fault("the dot unit reading its scales as E8M0 where another "
                                 "scale format was asked",
                                 _variant("e8m0-scales-instead", _e8m0_scales)),
    "frac-bits-fewer": Fault("the fixed-accumulator dot unit keeping one fraction bit fewer "
                             "(a tensor-core model's F - 1)",
                             _variant("frac-bits-fewer", _fewer_frac_bits)),
    "wrong-clamp": Fault("the NVFP4 quantizer with one guard of its block scale changed (a "
                         "floor dropped, a zero scale kept, a cast not saturating)",
                         _wrong_clamp),
    "other-minmax": Fault("the min, max or amax unit built for the other --minmax NaN policy",
                          _variant("other-minmax", _other_minmax)),
    "sgnj-copy-only": Fault("the sign-injection unit copying b's sign whatever op asks",
                            _wrapped("copy_only", "y", _sign_copied, needs="sgnj")),
    "classify-no-subnormal": Fault("the classify unit reporting subnormals as normals",
                                   _wrapped("no_subnormal", "y", lambda spec:
                                            _SUBNORMAL_AS_NORMAL, needs="classify")),
    "cmp-zeros-ordered": Fault("the cmp unit ordering -0 below +0 (unequal zeros)",
                               _wrapped("zeros_ordered", "y", _zeros_ordered, needs="cmp")),
    "amax-signed": Fault("the amax unit comparing signed values (the magnitude of the largest "
                         "input, not of the largest magnitude)", _amax_signed),
    "i2f-other-signedness": Fault("the i2f unit built for the other signedness (two's "
                                  "complement read as unsigned, or the reverse)",
                                  _variant("i2f-other-signedness", _other_signedness)),
    "f2i-wraps": Fault("the f2i unit wrapping out-of-range results around (the saturated "
                       "integer with its top bit flipped) instead of saturating",
                       _wrapped("wraps", "y", _wrapped_around, needs="f2i")),
    "func-faithful-as-correct": Fault("the recip, rsqrt or exp2 unit built for --accuracy "
                                      "faithful where correct was asked",
                                      _variant("func-faithful-as-correct", _faithful)),
    "div-no-sticky": Fault("the div unit without the remainder's sticky bit (the quotient "
                           "truncated)", _no_remainder_sticky("div")),
    "sqrt-no-sticky": Fault("the sqrt unit without the remainder's sticky bit (the root "
                            "truncated)", _no_remainder_sticky("sqrt")),
    "other-member": Fault("the multi-format unit driven with another fmt code (fmt ^ 1): each "
                          "operation in another member's formats",
                          _multi_input("other-member", lambda spec: "fmt", _other_member)),
    "reads-unused-bits": Fault("the multi-format unit reading a bit of its first operand that "
                               "the selected member leaves unused",
                               _multi_input("reads-unused-bits", lambda spec: spec.operands[0],
                                            _reads_unused_bits)),
    "lanes-swapped": Fault("the multi-lane unit with lanes 0 and 1 of y exchanged",
                           _wrapped("lanes_swapped", "y", _lanes_swapped)),
    "fmt-unregistered": Fault("the pipelined multi-format unit rounding by the fmt input of "
                              "the current cycle, not the one registered with its data",
                              _fmt_unregistered),
    "dot-member-bias": Fault("the multi-format dot decoding member 1's elements with member "
                             "0's exponent bias", _member_bias),
}


def faulty_design(spec: Spec, fault: str) -> Design:
    try:
        entry = FAULTS[fault]
    except KeyError:
        raise OptionError(f"unknown fault {fault!r}; valid: {', '.join(FAULTS)}") from None
    return entry.make(spec)
