"""What gets synthesised (Design) and what comes back (SynthRecord)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from rtl.formats import resolve
from rtl.spec import UnitSpec

from .core import core_name, core_verilog
from .flow import AsicFigures, FpgaFigures, GenericFigures
from .pnr import PnrFigures

__all__ = ["Design", "SynthRecord", "unit_design", "mx_design", "design_for", "core_design",
           "core_formats"]


@dataclass(frozen=True)
class Design:
    """One Verilog module to synthesise, with what the report should say about it."""

    name: str                   # top module name
    verilog: str                # Verilog text
    kind: str                   # "unit", "core" or "verilog"
    description: str
    formats: tuple = ()         # (role, FloatFormat.describe()) pairs
    options: str = ""
    unit: str | None = None
    stages: int = 0
    core: str | None = None     # name of the reference core design, if any
    share: bool = True          # Yosys resource sharing (flow.asic_script: off for MX units)


def core_formats(spec: UnitSpec):
    """The two product operands whose integer core is the reference of a mul or FMA, else None."""
    if spec.unit not in ("mul", "fma"):
        return None
    return spec.in_fmts[0], spec.in_fmts[1]


def unit_design(spec: UnitSpec) -> Design:
    from amaranth.back import verilog
    from rtl.fp_units import build   # the generator; imported late so synth/ imports without it

    text = verilog.convert(build(spec), name=spec.default_name, emit_src=False)
    formats = tuple((op, f.describe()) for op, f in zip(spec.operands, spec.in_fmts)) + \
        (("y", spec.out_fmt.describe()),)
    core = core_formats(spec)
    return Design(spec.default_name, text, "unit", spec.describe(), formats,
                  spec.options.describe(), spec.unit, spec.stages,
                  core_name(*core) if core else None)


def mx_design(spec) -> Design:
    """A block-scaled unit (rtl.mx: MxQuantSpec, MxDequantSpec, MxDotSpec). Its reference is no
    integer core: the report compares MX units with each other (scale rule, accumulator)."""
    from amaranth.back import verilog
    from rtl.fp_units import build
    from rtl.mx import MxDequantSpec, MxQuantSpec

    text = verilog.convert(build(spec), name=spec.default_name, emit_src=False)
    if isinstance(spec, MxQuantSpec):
        formats = (("x", f"{spec.block} x {spec.in_fmt.describe()}"), ("scale", "E8M0"),
                   ("y", f"{spec.block} x {spec.elem.describe()}"))
        options = f"scale rule {spec.scale_rule}, {spec.options.describe()}"
    elif isinstance(spec, MxDequantSpec):
        formats = (("scale", "E8M0"), ("x", f"{spec.block} x {spec.elem.describe()}"),
                   ("y", f"{spec.block} x {spec.out_fmt.describe()}"))
        options = spec.options.describe()
    else:
        formats = (("a", f"{spec.n} x {spec.elem_a.describe()}"),
                   ("b", f"{spec.n} x {spec.elem_b.describe()}"),
                   ("y", spec.out_fmt.describe()))
        options = (f"accumulator {spec.accum}"
                   + (f" ({spec.frac_bits} fraction bits)" if spec.accum == "fixed" else "")
                   + f", {'scaled' if spec.scaled else 'no scales'}, {spec.options.describe()}")
    return Design(spec.default_name, text, "unit", spec.describe(), formats, options, spec.unit,
                  spec.stages, share=False)


def design_for(spec) -> Design:
    """The Design of any unit spec: scalar (UnitSpec) or block-scaled (rtl.mx)."""
    return unit_design(spec) if isinstance(spec, UnitSpec) else mx_design(spec)


def core_design(fmt_a, fmt_b=None) -> Design:
    fmt_a = resolve(fmt_a)
    fmt_b = fmt_a if fmt_b is None else resolve(fmt_b)
    roles = (("a", fmt_a.describe()),) if fmt_a == fmt_b else \
        (("a", fmt_a.describe()), ("b", fmt_b.describe()))
    desc = (f"bare integer core: {fmt_a.precision}x{fmt_b.precision} significand product + "
            f"{fmt_a.exp_bits}/{fmt_b.exp_bits}-bit exponent add")
    return Design(core_name(fmt_a, fmt_b), core_verilog(fmt_a, fmt_b), "core", desc, roles)


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
    area_vs_core: float | None = None
    delay_vs_core: float | None = None
    library: str = ""
    tools: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)      # job -> wall seconds of its Yosys run
    cpu_seconds: dict = field(default_factory=dict)  # job -> CPU seconds of its Yosys run
    directory: str = ""

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
