"""The synthesis sweep: area and delay of every unit in every catalog format, and what the
options cost (``fpforge sweep``, ``make sweep``; :func:`run_sweep`).

Cases: each format x each unit (mul, add, fma in the format; cvt from float32) with the default
options (rne, subnormals kept, non-saturating), plus option variants -- subnormals flushed
(no-subnormals), saturating, dynamic rounding (``rm`` input), stochastic rounding (``rbits``
input) -- on a few formats; and the block-scaled (OCP MX) units per element format -- the
quantizer under each scale rule, the dequantizer, the dot product under each accumulator -- at a
small block and vector length (``mx_block``, ``mx_n``; default 8) so the sweep stays short: the
scale rule costs the same logic per block whatever k is, and the element logic grows with k.
Every case is a unit, a variant label and the option values that build its spec
(rtl.kinds.make_spec). A combination the generator rejects is skipped and listed with its
reason. Verilog is generated in worker processes and every Yosys run is its own process
(``jobs`` of each at once); the FPGA runs are off unless ``fpga``.

Writes into a fresh run directory under ``out``: ``sweep.csv`` (one row per case),
``sweep.md`` (tables), ``area.png``, ``delay.png``, ``variants.png``, ``mx.png``, plus the
per-design JSON, ``report.md`` and Yosys files of :func:`synth.run_designs`.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

from fpforge.rtl.formats import CATALOG, FloatFormat, FormatError, catalog_formats, resolve
from fpforge.rtl.kinds import BASIC_UNITS, KINDS, make_spec
from fpforge.rtl.elements import ELEMENT_FORMATS, element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES
from fpforge.rtl.options import OptionError
from fpforge.rtl.scalar import ScalarSpec
from fpforge.rtl.spec import Spec

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, SynthError, new_run_dir, run_designs
from .records import core_design, core_formats, design_for

__all__ = ["Case", "Row", "SCALAR_UNITS", "MX_UNITS", "SWEEP_UNITS", "VARIANTS", "MX_VARIANTS",
           "P3109_FORMATS",
           "case", "mx_case", "cases", "mx_cases", "plan", "sweep", "run_sweep",
           "split_names", "write_csv", "read_csv", "markdown", "plot"]

CVT_FROM = "float32"
# The report's two tables: scalar units get a row per format, the block-scaled (OCP MX) units a
# row per element format.
SCALAR_UNITS = tuple(u for u, k in KINDS.items() if issubclass(k.spec, ScalarSpec))
MX_UNITS = tuple(u for u in KINDS if u not in SCALAR_UNITS)
# What the sweep synthesises unless told: sub is add with b's sign flipped, and costs the same.
SWEEP_UNITS = BASIC_UNITS
# Option variants: name -> option values (rtl.kinds.make_spec). "default" is the base case.
VARIANTS = {
    "default": {},
    "no-subnormals": {"subnormals": False},
    "saturate": {"saturate": True},
    "dynamic": {"rounding": "dynamic"},
    "stochastic": {"rounding": "stochastic"},
}
VARIANT_FORMATS = ("fp8e4m3", "fp16", "bf16")
# Beside the catalog formats, P3109's minimum conformance set (docs/p3109.md), filed after them:
# Binary8p4se and Binary8p3se against OCP E4M3 / E5M2, Binary4p2sf against E2M1, the scale
# format Binary8p1uf against E8M0 (Binary8p4sf and Binary8p3sf are the catalog's fnuz formats).
P3109_FORMATS = ("binary8p4se", "binary8p3se", "binary4p2sf", "binary8p1uf")
VARIANT_UNITS = ("mul", "add")
# The files that decide the generated hardware (the CLI and export do not).
HARDWARE_SOURCES = ("rtl/fp_units", "rtl/formats.py", "rtl/options.py", "rtl/spec.py",
                    "rtl/scalar.py", "rtl/elements.py", "rtl/mx.py", "rtl/dot.py",
                    "rtl/accum.py", "rtl/kinds.py", "rtl/ports.py", "rtl/emit.py")
REPORT_FILES = ("sweep.md", "sweep.csv", "area.png", "delay.png", "variants.png", "mx.png")
MX_BLOCK = 8
NVFP4_RULES = tuple(r for r in VALUE_RULES if r.startswith("nvfp4_"))
MX_N = 8
# MX variants per unit -> option values: the quantizer's scale rules, the dot product's
# accumulators.
MX_VARIANTS = {
    # The NVFP4 quantizers compute in float32 (a multiplier per element, dividers per block):
    # they take the flow's deep job (synth/flow.py), and so does floor_deep, the MX floor
    # quantizer again, the one same-flow point to set them against (docs/blockscale.md, Cost).
    "mxq": {**{rule: {"scale_rule": rule} for rule in SCALE_RULES},
            "p3109_maxabs": {"scale_rule": "p3109_maxabs"},
            **{rule: {"scale_rule": rule} for rule in NVFP4_RULES},
            "floor_deep": {"scale_rule": "floor"}},
    "mxdq": {"default": {}, "p3109_maxabs": {"scale_rule": "p3109_maxabs"}},
    "dot": {"exact": {"accum": "exact"}, "fixed24": {"accum": "fixed", "frac_bits": 24},
            "fixed8": {"accum": "fixed", "frac_bits": 8},
            "e4m3": {"accum": "exact", "scale_format": "float8_e4m3fn"}},
}
# The value-scaled variants (docs/blockscale.md) on their recipes' element formats only.
VARIANT_ELEMENTS = {"e4m3": ("fp4e2m1",),
                    "p3109_maxabs": ("binary8p4se", "binary8p3se", "binary4p2sf"),
                    **{v: ("fp4e2m1",) for v in (*NVFP4_RULES, "floor_deep")}}
# Variants synthesised by the deep job although their design is not deep (a renamed module).
DEEP_FLOW_VARIANTS = ("floor_deep",)


def _mx_variants(unit: str) -> dict:
    return MX_VARIANTS.get(unit, {"default": {}})


@dataclass(frozen=True)
class Case:
    """One unit to synthesise: the format its row is filed under (a catalog format, or an MX
    element format), the unit, the variant's label and the option values of its spec."""

    fmt: str
    unit: str
    variant: str = "default"
    values: tuple = ()          # (option, value) pairs: rtl.kinds.make_spec(unit, **values)
    deep: bool = False          # through the deep job (synth/flow.py), under its own name

    def spec(self) -> Spec:
        return make_spec(self.unit, **dict(self.values))

    def design(self):
        """The case's Design; a deep or DEEP_FLOW_VARIANTS case under its own module name."""
        spec = self.spec()
        if self.deep or self.variant in DEEP_FLOW_VARIANTS:
            return design_for(spec, deep=True, name=f"{spec.default_name}_deep")
        return design_for(spec)

    @property
    def mx(self) -> bool:
        return self.unit in MX_UNITS

    @property
    def label(self) -> str:
        return f"{self.fmt} {self.unit} {self.variant}"

    @property
    def row_format(self) -> tuple[str, str, int]:
        """(format, short name, bits) of the case's row."""
        if self.mx:
            return self.fmt, self.fmt, element_format(self.fmt).width
        fmt = resolve(self.fmt)
        return fmt.name, _short(fmt), fmt.width


def case(fmt, unit: str, variant: str = "default") -> Case:
    """A scalar unit in ``fmt`` (cvt: into it from float32) with ``variant``'s options."""
    name = resolve(fmt).name
    values = {"format": name, **({"in_format": CVT_FROM} if unit == "cvt" else {}),
              **VARIANTS[variant]}
    return Case(name, unit, variant, tuple(values.items()))


def mx_case(elem, unit: str, variant: str = "default", block: int = MX_BLOCK,
            n: int = MX_N) -> Case:
    """An MX unit on elements ``elem``: mxq's ``format`` is its element format; mxdq's and
    dot's ``format`` is their float32 result, the element their ``in_format``."""
    name = element_format(elem).name
    takes = KINDS[unit].spec.OPTIONS
    values = {"format" if unit == "mxq" else "in_format": name,
              **{k: v for k, v in (("block", block), ("n", n)) if k in takes},
              **_mx_variants(unit)[variant]}
    return Case(name, unit, variant, tuple(values.items()))


def mx_cases(elems=tuple(ELEMENT_FORMATS), units=MX_UNITS, block=MX_BLOCK,
             n=MX_N) -> list[Case]:
    """Every element format x MX unit x its variants."""
    return [mx_case(e, u, v, block, n) for e in elems for u in units for v in _mx_variants(u)
            if element_format(e).name in VARIANT_ELEMENTS.get(v, (element_format(e).name,))]


def cases(formats, units=SWEEP_UNITS, variant_formats=VARIANT_FORMATS,
          variant_units=VARIANT_UNITS, variants=tuple(VARIANTS)) -> list[Case]:
    """Every format x unit with default options, then the variants (formats in catalog order)."""
    out = [case(f, u) for f in formats for u in units]
    out += [case(f, u, v) for f in variant_formats for u in variant_units
            for v in variants if v != "default"]
    return list(dict.fromkeys(out))


def _design(case_: Case) -> tuple:
    """In a worker process: the case's Verilog, or why the generator rejects it."""
    try:
        return case_, case_.design(), None
    except (FormatError, OptionError, ValueError) as err:
        return case_, None, f"{type(err).__name__}: {' '.join(str(err).split())}"


def designs_for(cases_: list[Case], jobs: int, executor=None) -> list[tuple]:
    """Generate every case's Verilog through ``executor`` (default: ``jobs`` local Python
    processes: Amaranth's own Yosys makes each conversion take seconds)."""
    from fpforge.executor import LocalExecutor, Task, digest
    from fpforge.rtl.emit import source_digest
    tasks = [Task(digest("verilog", repr(c), source_digest()), "fpforge.synth.sweep:_design",
                  (c,), repr(c)) for c in dict.fromkeys(cases_)]
    own = executor is None
    executor = executor or LocalExecutor(jobs, processes=True)
    try:
        done = dict(zip((t.args[0] for t in tasks), executor.run(tasks)))
    finally:
        if own:
            executor.close()
    return [done[c] for c in cases_]



@dataclass
class Row:
    """One line of sweep.csv."""

    format: str
    short: str
    width: int
    unit: str
    variant: str
    module: str
    status: str               # "ok" or "skipped"
    reason: str = ""
    ge: float | None = None
    area_um2: float | None = None
    delay_ps: float | None = None
    cells: int | None = None
    depth: int | None = None
    core: str = ""
    core_ge: float | None = None
    area_vs_core: float | None = None
    delay_vs_core: float | None = None
    # Yosys's technology-free estimate (stat -tech cmos on the generic gates): how much logic
    # the generator emits, free of ABC's non-monotonic area mapping.
    transistors: int | None = None


def _short(fmt: FloatFormat) -> str:
    from fpforge.rtl.formats import SHORT_NAMES
    base = fmt.with_subnormals(True).name
    names = [s for s, c in SHORT_NAMES.items() if c == base]
    return names[0] if names else base


def sweep(cases_: list[Case], *, out_dir=DEFAULT_OUT_DIR, jobs=DEFAULT_JOBS, fpga=False,
          liberty=None, run_dir=None, executor=None, store=None,
          progress=None) -> tuple[list[Row], Path, dict]:
    """Synthesise every case (and the integer cores of the mul / fma cases); one Row per case."""
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(out_dir, "sweep")
    start = time.monotonic()
    load0 = os.getloadavg()
    rtl = _rtl_revision()      # before generating: the RTL may change while Yosys runs
    built = designs_for(cases_, jobs, executor)
    gen_seconds = time.monotonic() - start
    designs, seen = [], set()
    for _, design, _ in built:
        if design is None or design.name in seen:
            continue
        seen.add(design.name)
        designs.append(design)
    cores = {}
    for c, design, _ in built:
        if design is not None and design.core and design.core not in cores:
            cores[design.core] = core_design(*core_formats(c.spec()))
    records = run_designs(designs + list(cores.values()), liberty=liberty, run_dir=run_dir,
                          jobs=jobs, fpga=fpga, tag="sweep", executor=executor, store=store,
                          progress=progress) if designs else []
    by_name = {r.name: r for r in records}
    rows = []
    for c, design, reason in built:
        row = Row(*c.row_format, c.unit, c.variant,
                  design.name if design else "", "ok" if design else "skipped", reason or "")
        if design is not None:
            r = by_name[design.name]
            core = by_name.get(r.core) if r.core else None
            row.ge, row.area_um2 = r.asic.ge, r.asic.area_um2
            row.delay_ps = r.asic.delay_ps
            row.cells, row.depth = r.asic.cells, r.generic.depth
            row.transistors = r.generic.transistors
            if core is not None:
                row.core, row.core_ge = core.name, core.asic.ge
            row.area_vs_core, row.delay_vs_core = r.area_vs_core, r.delay_vs_core
        rows.append(row)
    meta = {"cases": len(cases_), "designs": len(designs), "cores": len(cores),
            "skipped": sum(r.status != "ok" for r in rows),
            "verilog seconds": round(gen_seconds, 1),
            "wall seconds": round(time.monotonic() - start, 1),
            "yosys cpu seconds": round(sum(sum(r.cpu_seconds.values()) for r in records), 1),
            "load before": load0, "load after": os.getloadavg(), "jobs": jobs,
            "library": records[0].library if records else "",
            "yosys": records[0].tools.get("yosys", "") if records else "",
            "amaranth": records[0].tools.get("amaranth", "") if records else "",
            "rtl": rtl}
    if any(c.mx for c in cases_):
        sizes = {k: v for c in cases_ if c.mx for k, v in c.values if k in ("block", "n")}
        meta |= {"mx block": sizes.get("block", MX_BLOCK), "mx n": sizes.get("n", MX_N)}
    return rows, run_dir, meta


def _rtl_revision() -> str:
    """The commit the RTL came from, and whether rtl/ had uncommitted changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *HARDWARE_SOURCES],
                               cwd=root, check=True, capture_output=True,
                               text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"git {sha}" + (" + uncommitted changes in the generator" if dirty else "")


# ----- outputs ------------------------------------------------------------------------------
def write_csv(rows: list, path: Path) -> Path:
    """Dataclass rows (sweep's Row, or another report's) as CSV, None as an empty cell."""
    names = [f.name for f in fields(type(rows[0]) if rows else Row)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            w.writerow(["" if getattr(r, n) is None else getattr(r, n) for n in names])
    return Path(path)


def read_csv(path: Path) -> list[Row]:
    """Rows back from a sweep.csv (to redraw the plots without synthesising again)."""
    kinds = {f.name: f.type for f in fields(Row)}

    def value(name, text):
        if text == "":
            return "" if kinds[name] == "str" else None
        if kinds[name] == "int" or kinds[name] == "int | None":
            return int(text)
        if kinds[name] == "float | None":
            return float(text)
        return text
    with open(path, newline="") as fh:
        return [Row(**{k: value(k, v) for k, v in rec.items()}) for rec in csv.DictReader(fh)]


def _cell(r: Row | None) -> str:
    if r is None:
        return "–"
    if r.status != "ok":
        return "skipped"
    ps = "–" if r.delay_ps is None else f"{r.delay_ps:.0f}"
    return f"{r.ge:.0f} / {ps}"


def _pct(new, base) -> str:
    if new is None or base is None or base == 0:
        return "–"
    return f"{100 * (new - base) / base:+.0f} %"


def markdown(rows: list[Row], meta: dict) -> str:
    mx_rows = [r for r in rows if r.unit in MX_UNITS]
    rows = [r for r in rows if r.unit not in MX_UNITS]
    units = list(dict.fromkeys(r.unit for r in rows))
    base = {(r.format, r.unit): r for r in rows if r.variant == "default"}
    fmts = list(dict.fromkeys(r.format for r in rows if r.variant == "default"))
    la, lb = meta["load before"], meta["load after"]
    out = ["# fpforge synthesis sweep", "",
           f"- **yosys**: {meta['yosys']}; **amaranth**: {meta['amaranth']}",
           f"- **cells**: {meta['library'].split(' at ')[0]}",
           f"- **RTL**: {meta['rtl']}",
           f"- **cases**: {meta['cases']} ({meta['designs']} synthesised, {meta['skipped']} "
           f"skipped) plus {meta['cores']} bare integer cores",
           f"- **time**: {meta['wall seconds']:.0f} s wall ({meta['verilog seconds']:.0f} s of it "
           f"Verilog generation), {meta['yosys cpu seconds']:.0f} s Yosys CPU, {meta['jobs']} "
           f"processes at a time; load average {la[0]:.1f} before, {lb[0]:.1f} after (2-core "
           f"machine shared with other work: wall time is inflated)", "",
           "Each cell: **area in GE** (NAND2_X1 = 1) **/ critical path in ps** (OpenSTA, "
           "load-aware over the NanGate45 cells' NLDM tables; boundary in docs/synth/timing.md). Default options: "
           "round to nearest even, subnormals kept, non-saturating, combinational, exception "
           f"flags computed. mul, add and fma take and give the row's format; cvt converts "
           f"from {CVT_FROM}. *core*: the bare integer core of mul (significand product + "
           "exponent add), the floor any multiplier pays. Treat ps as relative, and "
           "differences below about 10 % as noise: ABC's area mapping is not monotonic (a unit "
           "with less logic can map larger).", "",
           "![area](area.png)", "", "![delay](delay.png)", ""]
    if units:
        out += ["| format | bits | " + " | ".join(f"{u} GE / ps" for u in units) +
                " | mul core GE |", "|---|---:|" + "---:|" * (len(units) + 1)]
    for f in fmts:
        any_row = base[next((f, u) for u in units if (f, u) in base)]
        core = base.get((f, "mul"))
        core_ge = "–" if core is None or core.core_ge is None else f"{core.core_ge:.0f}"
        name = f if any_row.short == f else f"{f} ({any_row.short})"
        out.append(f"| {name} | {any_row.width} | " +
                   " | ".join(_cell(base.get((f, u))) for u in units) + f" | {core_ge} |")
    var = [r for r in rows if r.variant != "default"]
    if var:
        out += ["", "## What the options cost", "",
                "Against the same unit with default options. *no-subnormals*: subnormal "
                "inputs and results flushed to zero; *saturate*: overflow gives ±max finite; "
                "*dynamic*: "
                "the rounding mode comes from a 3-bit `rm` input (RISC-V frm); *stochastic*: "
                "rounding with an 8-bit random `rbits` input.", "",
                "![variants](variants.png)", "",
                "| format | unit | variant | GE | ps | ΔGE | Δps |",
                "|---|---|---|---:|---:|---:|---:|"]
        for r in var:
            b = base.get((r.format, r.unit))
            if r.status != "ok":
                out.append(f"| {r.format} | {r.unit} | {r.variant} | skipped | | | |")
                continue
            ps = "–" if r.delay_ps is None else f"{r.delay_ps:.0f}"
            out.append(f"| {r.format} | {r.unit} | {r.variant} | {r.ge:.0f} | {ps} | "
                       f"{_pct(r.ge, b.ge if b else None)} | "
                       f"{_pct(r.delay_ps, b.delay_ps if b else None)} |")
    if mx_rows:
        out += mx_markdown(mx_rows, meta)
    skipped = [r for r in rows + mx_rows if r.status != "ok"]
    out += ["", "## Skipped combinations", ""]
    out += [f"- {r.format} {r.unit} ({r.variant}): {r.reason}" for r in skipped] or \
        ["None: the generator accepted every combination."]
    out += ["", "Figures per case, with cells and logic depth: `sweep.csv`. Regenerate with "
            "`make sweep` (`fpforge sweep`).", ""]
    return "\n".join(out)


def mx_markdown(rows: list[Row], meta: dict) -> list[str]:
    """The block-scaled units: one row per element format, a column per unit and variant."""
    cols = [(u, v) for u in MX_UNITS for v in _mx_variants(u)
            if any(r.unit == u and r.variant == v for r in rows)]
    by = {(r.format, r.unit, r.variant): r for r in rows}
    elems = list(dict.fromkeys(r.format for r in rows))
    block, n = meta.get("mx block", MX_BLOCK), meta.get("mx n", MX_N)
    out = ["", "## Block-scaled (OCP MX) units", "",
           f"Per element format, GE / ps. *mxq*: quantizer of a block of k = {block} float32 "
           "values into one E8M0 scale + k elements (rne, saturating), under each scale rule "
           "(floor: OCP MX v1.0 6.3; ceil; rceil: NVIDIA's 2^ceil(log2(amax / max_elem)); even: "
           "floor after rounding amax to the element's precision; vllm: vLLM's 1.75 threshold, "
           f"docs/mx.md). *mxdq*: dequantizer of k = "
           f"{block} elements to float32. *dot*: N = {n} element products with their two E8M0 "
           "scales into float32, rne; *exact*: exact sum, one rounding; *fixedF*: products "
           "truncated to F fraction bits below the largest, then one rounding (docs/mx.md). "
           "The OCP block is k = 32: the per-block scale logic stays, the per-element logic "
           "grows 4x (`fpforge synth --unit mxq --format ELEM` for k = 32). Value scales "
           "(docs/blockscale.md), on their recipes' elements only: *p3109_maxabs*: P3109's "
           "maximum-magnitude Binary8p1uf scale; *dot e4m3*: the exact dot product with "
           "NVFP4's E4M3 block scales; *mxq nvfp4_te | nvfp4_modelopt | nvfp4_torchao | "
           "nvfp4_4over6*: the NVFP4 quantizers (E4M3 scale, float32 tensor_amax input; every "
           "float32 operation of the recipe in hardware, dividers included), synthesised by the "
           "flow's deep job (ABC without its SAT sweep, which does not finish on dividers; no "
           "generic depth): compare them with *mxq floor_deep*, the MX floor quantizer through "
           "the same job, not with the other columns (docs/blockscale.md).", "",
           "![mx](mx.png)", "",
           "| element | bits | " + " | ".join(f"{u} {v}" if v != "default" else u
                                             for u, v in cols) + " |",
           "|---|---:|" + "---:|" * len(cols)]
    for e in elems:
        width = next(r.width for r in rows if r.format == e)
        out.append(f"| {e} | {width} | " +
                   " | ".join(_cell(by.get((e, u, v))) for u, v in cols) + " |")
    return out


def plot(rows: list[Row], directory: Path) -> list[Path]:
    """area.png, delay.png (grouped bars per format and unit) and variants.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    mx_rows = [r for r in rows if r.unit in MX_UNITS and r.status == "ok"]
    rows = [r for r in rows if r.unit not in MX_UNITS]
    paths = [plot_mx(mx_rows, directory)] if mx_rows else []
    base = [r for r in rows if r.variant == "default"]
    if not base:
        return paths
    fmts = list(dict.fromkeys(r.format for r in base))
    units = list(dict.fromkeys(r.unit for r in base))
    by = {(r.format, r.unit): r for r in base}
    colors = dict(zip(SWEEP_UNITS, ("tab:blue", "tab:orange", "tab:green", "tab:purple")))
    for key, title, ylabel in (("ge", "Area by format and unit", "area (GE, log scale)"),
                               ("delay_ps", "Critical path by format and unit",
                                "delay (ps, fixed-delay NanGate45 cells)")):
        fig, ax = plt.subplots(figsize=(12, 5.2), dpi=100)
        width = 0.8 / max(1, len(units))
        for i, u in enumerate(units):
            xs, ys = [], []
            for j, f in enumerate(fmts):
                r = by.get((f, u))
                v = getattr(r, key) if r is not None and r.status == "ok" else None
                if v is not None:
                    xs.append(j + (i - (len(units) - 1) / 2) * width)
                    ys.append(v)
            ax.bar(xs, ys, width, label=u, color=colors.get(u))
        if key == "ge":
            from matplotlib.ticker import FuncFormatter, LogLocator
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            mul_x = (units.index("mul") - (len(units) - 1) / 2) * width if "mul" in units else 0
            cores = [(j + mul_x, by[(f, "mul")].core_ge) for j, f in enumerate(fmts)
                     if (f, "mul") in by and by[(f, "mul")].core_ge]
            if cores:
                ax.scatter([x for x, _ in cores], [g for _, g in cores], marker="_",
                           s=220, linewidths=2.5, color="black", zorder=3,
                           label="mul integer core")
        ax.set_xticks(range(len(fmts)))
        first = {f: by[next((f, u) for u in units if (f, u) in by)] for f in fmts}
        ax.set_xticklabels([f"{first[f].short} ({first[f].width} b)" for f in fmts], fontsize=9,
                           rotation=25, ha="right", rotation_mode="anchor")
        ax.set_ylabel(ylabel)
        ax.set_title(title + " (cvt from float32; rne, subnormals, flags)")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(ncol=len(units) + 1, fontsize=9, loc="upper left")
        fig.tight_layout()
        path = directory / ("area.png" if key == "ge" else "delay.png")
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)

    var = [r for r in rows if r.variant != "default" and r.status == "ok"]
    if var:
        groups = list(dict.fromkeys((r.format, r.unit) for r in var))
        names = ["default"] + list(dict.fromkeys(r.variant for r in var))
        allrows = {(r.format, r.unit, r.variant): r for r in rows if r.status == "ok"}
        fig, axes = plt.subplots(2, 1, figsize=(12, 8), dpi=100)
        width = 0.8 / len(names)
        cmap = plt.get_cmap("tab10")
        for ax, key, ylabel in ((axes[0], "ge", "area (GE)"), (axes[1], "delay_ps", "delay (ps)")):
            for i, v in enumerate(names):
                xs, ys, labels = [], [], []
                for j, (f, u) in enumerate(groups):
                    r = allrows.get((f, u, v))
                    if r is not None and getattr(r, key) is not None:
                        xs.append(j + (i - (len(names) - 1) / 2) * width)
                        ys.append(getattr(r, key))
                        b = allrows.get((f, u, "default"))
                        labels.append("" if v == "default" or b is None
                                      else _pct(getattr(r, key), getattr(b, key)).replace(" ", ""))
                bars = ax.bar(xs, ys, width, label=v, color=cmap(i))
                ax.bar_label(bars, labels=labels, fontsize=6.5, rotation=90, padding=2)
            ax.margins(y=0.12)
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([f"{_short_of(rows, f)}\n{u}" for f, u in groups], fontsize=9)
            ax.set_ylabel(ylabel)
            ax.grid(axis="y", alpha=0.3)
        axes[0].set_title("Area of the options")
        axes[1].set_title("Critical path of the options")
        axes[0].legend(fontsize=9, loc="upper left")
        fig.tight_layout()
        path = directory / "variants.png"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_mx(rows: list[Row], directory: Path) -> Path:
    """mx.png: area per element format of each MX unit and variant (grouped bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [(u, v) for u in MX_UNITS for v in _mx_variants(u)
            if any(r.unit == u and r.variant == v for r in rows)]
    elems = list(dict.fromkeys(r.format for r in rows))
    by = {(r.format, r.unit, r.variant): r for r in rows}
    fig, ax = plt.subplots(figsize=(12, 5.2), dpi=100)
    width = 0.8 / max(1, len(cols))
    cmap = plt.get_cmap("tab20")     # up to 20 unit variants keep their own colours
    for i, (u, v) in enumerate(cols):
        xs, ys = [], []
        for j, e in enumerate(elems):
            r = by.get((e, u, v))
            if r is not None and r.ge is not None:
                xs.append(j + (i - (len(cols) - 1) / 2) * width)
                ys.append(r.ge)
        ax.bar(xs, ys, width, label=u if v == "default" else f"{u} {v}", color=cmap(i))
    ax.set_xticks(range(len(elems)))
    ax.set_xticklabels(elems)
    # log: the NVFP4 quantizers (float32 dividers) are some 25x the MX ones
    ax.set_yscale("log")
    ax.set_ylabel("area (GE, log scale)")
    ax.set_title("Block-scaled units by element format (quantizer per scale rule, dot per "
                 "accumulator)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(ncol=4, fontsize=8, loc="upper left")
    fig.tight_layout()
    path = Path(directory) / "mx.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _short_of(rows, fmt_name) -> str:
    return next(r.short for r in rows if r.format == fmt_name)


# ----- the sweep from plain values ------------------------------------------------------------
def split_names(names) -> list[str]:
    """A list of names; one string may hold several, comma-separated."""
    if isinstance(names, str):
        names = names.split(",")
    return [n for n in (str(x).strip() for x in names) if n]


def plan(*, formats=None, units=None, max_width: int = 16, variant_formats=VARIANT_FORMATS,
         variant_units=VARIANT_UNITS, variants=None, mx: bool = True, mx_elements=None,
         mx_units=None, mx_block: int = MX_BLOCK, mx_n: int = MX_N) -> list[Case]:
    """The sweep's cases, every name and size checked first: an unknown one raises OptionError
    or FormatError in one line naming what is valid, before any work.

    ``formats``: default every catalog format of at most ``max_width`` bits and the P3109
    conformance set (``P3109_FORMATS``); ``units``: default
    mul, add, fma, cvt; the ``variants`` (default all) on ``variant_formats`` x
    ``variant_units``; with ``mx``, the MX units ``mx_units`` (default all) on ``mx_elements``
    (default all) at block ``mx_block`` and dot length ``mx_n``."""
    fmts = split_names(formats) if formats is not None else \
        [f.name for f in catalog_formats(max_width)] + \
        [resolve(f).name for f in P3109_FORMATS if resolve(f).width <= max_width]
    units = split_names(units) if units is not None else list(SWEEP_UNITS)
    bad = [u for u in units + split_names(variant_units) if u not in SCALAR_UNITS]
    if bad:
        raise OptionError(f"unknown unit {bad[0]!r}; valid: {', '.join(SCALAR_UNITS)}")
    variants = split_names(variants) if variants is not None else list(VARIANTS)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise OptionError(f"unknown variant {bad[0]!r}; valid: {', '.join(VARIANTS)}")
    if not fmts and formats is None:
        narrowest = min(CATALOG.values(), key=lambda f: f.width)
        raise OptionError(f"no catalog format of at most --max-width {max_width} bits; "
                          f"the narrowest is {narrowest.name} ({narrowest.width} bits)")
    if not fmts or not units:
        raise OptionError("no format or no unit selected")
    todo = cases([resolve(f) for f in fmts], units,
                 [resolve(f) for f in split_names(variant_formats)], split_names(variant_units),
                 variants)
    if not mx:
        return todo
    mx_units = split_names(mx_units) if mx_units is not None else list(MX_UNITS)
    bad = [u for u in mx_units if u not in MX_UNITS]
    if bad:
        raise OptionError(f"unknown MX unit {bad[0]!r}; valid: {', '.join(MX_UNITS)}")
    elems = [element_format(e).name for e in
             (split_names(mx_elements) if mx_elements is not None else ELEMENT_FORMATS)]
    extra = mx_cases(elems, mx_units, mx_block, mx_n)
    if extra:       # a bad mx_block / mx_n fails here, before any work: one spec per unit
        for u in mx_units:
            next(c for c in extra if c.unit == u).spec()
    return todo + extra


def run_sweep(*, formats=None, units=None, max_width: int = 16,
              variant_formats=VARIANT_FORMATS, variant_units=VARIANT_UNITS, variants=None,
              mx: bool = True, mx_elements=None, mx_units=None, mx_block: int = MX_BLOCK,
              mx_n: int = MX_N, liberty=None, out=DEFAULT_OUT_DIR, jobs: int = DEFAULT_JOBS,
              fpga: bool = False, publish=None, executor=None, resume: bool = False) -> int:
    """``make sweep``: plan the cases (:func:`plan`, whose errors are raised before any work),
    synthesise them into a fresh run directory under ``out``, write sweep.csv, sweep.md and
    the plots there (and copy them to ``publish``, if given), print the main table. Returns 0,
    or 1 when a Yosys run failed (its error printed). ``executor`` (fpforge.executor) runs the
    Yosys jobs; ``resume``: keep every job's result by content key under ``out/results`` and
    take the ones already there (an interrupted sweep, run again, does only what is missing)."""
    from fpforge.executor import ProgressBar, ResultStore
    todo = plan(formats=formats, units=units, max_width=max_width,
                variant_formats=variant_formats, variant_units=variant_units, variants=variants,
                mx=mx, mx_elements=mx_elements, mx_units=mx_units, mx_block=mx_block, mx_n=mx_n)
    print(f"sweep: {len(todo)} cases, {jobs} processes at a time; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    store = ResultStore(Path(out) / "results") if resume else None
    try:
        with ProgressBar(None, "Yosys jobs done") as bar:
            rows, run_dir, meta = sweep(todo, out_dir=out, jobs=jobs, fpga=fpga,
                                        liberty=liberty, executor=executor, store=store,
                                        progress=bar.on_done)
    except SynthError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    write_csv(rows, run_dir / "sweep.csv")
    text = markdown(rows, meta)
    (run_dir / "sweep.md").write_text(text)
    plot(rows, run_dir)
    for r in rows:
        if r.status != "ok":
            print(f"skipped {r.format} {r.unit} ({r.variant}): {r.reason}")
    start = text.index("| format |")
    print(text[start:text.index("\n\n", start)])
    print(f"{meta['designs']} units + {meta['cores']} cores in {meta['wall seconds']:.0f} s wall "
          f"(load average {meta['load before'][0]:.1f} -> {meta['load after'][0]:.1f}); "
          f"report: {run_dir / 'sweep.md'}")
    if publish is not None:
        publish = Path(publish)
        publish.mkdir(parents=True, exist_ok=True)
        for name in REPORT_FILES:
            if (run_dir / name).exists():
                shutil.copy2(run_dir / name, publish / name)
        print(f"copied {', '.join(REPORT_FILES)} to {publish}")
    return 0
