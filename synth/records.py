"""What gets synthesised (Design) and what comes back (SynthRecord)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from fpforge.rtl.format_names import resolve
from fpforge.rtl.ports import Port
from fpforge.rtl.spec import Spec

from .core import MulCore, core_name
from .flow import AsicFigures, FpgaFigures, GenericFigures
from .pnr import PnrFigures

__all__ = ["Design", "SynthRecord", "design_for", "core_design", "core_formats",
           "options_text", "signature_ports"]


@dataclass(frozen=True)
class Design:
    """One Verilog module to synthesise, with its ports and what the report should say."""

    name: str                   # top module name
    verilog: str                # Verilog text
    kind: str                   # "unit", "core" or "verilog"
    description: str
    formats: tuple = ()         # (role, FloatFormat.describe()) pairs
    options: str = ""
    unit: str | None = None
    stages: int = 0
    core: str | None = None     # name of the reference core design, if any
    share: bool = True          # Yosys resource sharing (scripts.asic_script: off for MX units)
    # What the FPGA batch top and the place-and-route wrapper instantiate it by: a unit's
    # spec.ports(), a component's signature. Without them it is synthesised for ASIC only.
    ports: tuple[Port, ...] = ()
    # Map for this worst-path delay (ps; a registered design's clock period) instead of area.
    delay_target_ps: float | None = None
    deep: bool = False          # float32 datapaths with dividers (scripts.asic_script's deep job)


CORE_UNITS = ("mul", "fma")     # the kinds whose integer product core synth/core.py builds


def core_formats(spec: Spec):
    """The two product operands whose integer core is the reference of a mul or FMA, else None
    (also for a multi-format unit: no one member's core is its reference)."""
    if spec.unit not in CORE_UNITS or not hasattr(spec, "in_fmts"):
        return None
    return spec.in_fmts[0], spec.in_fmts[1]


def options_text(spec: Spec) -> str:
    """The report's options line: the kind's own choices where it has them (scale rule,
    accumulator, NaN policy, a function's accuracy), then its rounder's options
    (``spec.options``, every kind that rounds has them)."""
    p = spec.parameters()
    words = []
    if "scale_rule" in p:
        words.append(f"scale rule {p['scale_rule']}")
    if "accumulator" in p:
        words.append(f"accumulator {p['accumulator']}" +
                     (f" ({p['frac_bits']} fraction bits)" if p["frac_bits"] is not None else ""))
        words.append("scaled" if p["scaled"] else "no scales")
    if "minmax" in p:
        words.append(f"minmax {p['minmax']}")
    if "accuracy" in p:
        words.append(f"accuracy {p['accuracy']}")
    options = getattr(spec, "options", None)
    return ", ".join(words + ([options.describe()] if options is not None else []))


def design_for(spec: Spec, *, deep: bool | None = None, name: str | None = None) -> Design:
    """The Design of any unit spec, its Verilog from the one emitter (rtl.emit). ``deep``
    (default: the NVFP4 units, whose float32 datapaths divide) picks the flow's deep job;
    ``name`` renames the top module (the same unit synthesised both ways)."""
    from fpforge.rtl.emit import verilog   # imports Amaranth: late, so synth/ imports without it

    ports = tuple(spec.ports())
    lanes = {p.name: p.lanes for p in ports}
    formats = tuple((role, (f"{lanes[role]} x " if lanes.get(role, 1) > 1 else "") +
                     fmt.describe()) for role, fmt in spec.formats().items())
    core = core_formats(spec)
    # Yosys's SAT resource sharing ran for over 15 minutes on an MX unit (k lanes, each with
    # an element rounder) without finishing: off where a port has lanes (scripts.asic_script).
    if deep is None:
        deep = getattr(spec, "has_tensor_amax", False)
    name = spec.default_name if name is None else name
    return Design(name, verilog(spec, name), "unit", spec.describe(), formats,
                  options_text(spec), spec.unit, spec.stages,
                  core_name(*core) if core else None,
                  share=all(p.lanes == 1 for p in ports), ports=ports, deep=deep)


def signature_ports(component) -> tuple[Port, ...]:
    """The ports of an Amaranth component (a reference core, say), from its signature."""
    from amaranth.hdl import Shape
    from amaranth.lib import wiring
    return tuple(Port(name, "input" if m.flow is wiring.In else "output",
                      Shape.cast(m.shape).width, f"{name} of {type(component).__name__}")
                 for name, m in component.signature.members.items())


def core_design(fmt_a, fmt_b=None) -> Design:
    from fpforge.rtl.emit import convert

    fmt_a = resolve(fmt_a)
    fmt_b = fmt_a if fmt_b is None else resolve(fmt_b)
    roles = (("a", fmt_a.describe()),) if fmt_a == fmt_b else \
        (("a", fmt_a.describe()), ("b", fmt_b.describe()))
    desc = (f"bare integer core: {fmt_a.precision}x{fmt_b.precision} significand product + "
            f"{fmt_a.exp_bits}/{fmt_b.exp_bits}-bit exponent add")
    core, name = MulCore(fmt=fmt_a, b_fmt=fmt_b), core_name(fmt_a, fmt_b)
    return Design(name, convert(core, name), "core", desc, roles,
                  ports=signature_ports(core))


@dataclass
class SynthRecord:
    """Every figure of one design, as written to its JSON file."""

    name: str
    kind: str
    description: str
    formats: dict
    options: str
    unit: str | None
    stages: int
    generic: GenericFigures
    asic: AsicFigures
    fpga: dict = field(default_factory=dict)     # target -> FpgaFigures
    fmax: dict = field(default_factory=dict)     # target -> PnrFigures (PNR=1 only)
    core: str | None = None
    delay_target_ps: float | None = None         # mapped for this delay (None: for area)
    area_vs_core: float | None = None
    delay_vs_core: float | None = None
    library: str = ""
    tools: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)      # job -> wall seconds of its Yosys run
    cpu_seconds: dict = field(default_factory=dict)  # job -> CPU seconds of its Yosys run
    directory: str = ""
    power: dict | None = None      # synth/power.py PowerFigures.to_json() (with --power)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "SynthRecord":
        data = dict(data)
        data["generic"] = GenericFigures(**data["generic"])
        data["asic"] = AsicFigures(**data["asic"])
        data["fpga"] = {t: FpgaFigures(**f) for t, f in data["fpga"].items()}
        data["fmax"] = {t: PnrFigures(**f) for t, f in data.get("fmax", {}).items()}
        return cls(**data)
