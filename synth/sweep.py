"""``python -m synth.sweep``: area and delay of every unit in every catalog format, and what the
options cost (what ``make sweep`` calls).

    python -m synth.sweep                              # every catalog format of <= 16 bits
    python -m synth.sweep --formats fp8e4m3,bf16 --units mul
    python -m synth.sweep --publish docs/synth         # also copy the report files there

Cases: each format x each unit (mul, add, fma in the format; cvt from float32) with the default
options (rne, subnormals kept, non-saturating), plus option variants -- subnormals flushed (ftz),
saturating, dynamic rounding (``rm`` input), stochastic rounding (``rbits`` input) -- on a few
formats; and the block-scaled (OCP MX) units per element format -- the quantizer under each
scale rule, the dequantizer, the dot product under each accumulator -- at a small block and
vector length (``--mx-block``, ``--mx-n``; default 8) so the sweep stays short: the scale rule
costs the same logic per block whatever k is, and the element logic grows with k.
A combination the generator rejects is skipped and listed with its reason. Verilog is
generated in worker processes and every Yosys run is its own process (``--jobs`` of each at
once); the FPGA runs are off unless ``--fpga``.

Writes into a fresh run directory under ``--out``: ``sweep.csv`` (one row per case),
``sweep.md`` (tables), ``area.png``, ``delay.png``, ``variants.png``, ``mx.png``, plus the
per-design JSON, ``report.md`` and Yosys files of :func:`synth.run_designs`.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields
from multiprocessing import get_context
from pathlib import Path

from rtl.formats import CATALOG, FloatFormat, FormatError, catalog_formats, resolve
from rtl.mx import (ELEMENT_FORMATS, MX_UNITS, SCALE_RULES, MxDequantSpec, MxDotSpec,
                    MxQuantSpec, element_format)
from rtl.options import OptionError
from rtl.spec import UNITS, UnitSpec

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, SynthError, new_run_dir, run_designs
from .records import Design, core_design, core_formats, design_for

__all__ = ["Case", "MxCase", "Row", "VARIANTS", "MX_VARIANTS", "cases", "mx_cases", "sweep",
           "write_csv", "markdown", "plot", "main"]

CVT_FROM = "float32"
# Option variants: name -> UnitSpec.create keyword arguments. "default" is the base case.
VARIANTS = {
    "default": {},
    "ftz": {"subnormals": False},
    "saturate": {"saturate": True},
    "dynamic": {"rounding": "dynamic"},
    "stochastic": {"rounding": "stochastic"},
}
VARIANT_FORMATS = ("fp8e4m3", "fp16", "bf16")
VARIANT_UNITS = ("mul", "add")
# The files that decide the generated hardware (the CLI and export do not).
HARDWARE_SOURCES = ("rtl/fp_units", "rtl/formats.py", "rtl/options.py", "rtl/spec.py",
                    "rtl/mx.py")
REPORT_FILES = ("sweep.md", "sweep.csv", "area.png", "delay.png", "variants.png", "mx.png")
# MX variants per unit: the quantizer's scale rules, the dot product's accumulators.
MX_VARIANTS = {"mxq": SCALE_RULES, "mxdq": ("default",),
               "dot": ("exact", "fixed24", "fixed8")}
MX_BLOCK = 8
MX_N = 8


@dataclass(frozen=True)
class Case:
    """One unit to synthesise: format, unit, option variant."""

    fmt: FloatFormat
    unit: str
    variant: str = "default"

    def spec(self) -> UnitSpec:
        return UnitSpec.create(self.unit, self.fmt,
                               in_fmt=CVT_FROM if self.unit == "cvt" else None,
                               **VARIANTS[self.variant])

    @property
    def label(self) -> str:
        return f"{self.fmt.name} {self.unit} {self.variant}"

    @property
    def row_format(self) -> tuple[str, str, int]:
        """(format, short name, bits) of the case's row."""
        return self.fmt.name, _short(self.fmt), self.fmt.width


@dataclass(frozen=True)
class MxCase:
    """One block-scaled unit to synthesise: element format, unit, variant (scale rule or
    accumulator), block size k and dot length N."""

    elem: str
    unit: str
    variant: str
    block: int = MX_BLOCK
    n: int = MX_N

    def spec(self):
        if self.unit == "mxq":
            return MxQuantSpec(self.elem, block=self.block, scale_rule=self.variant)
        if self.unit == "mxdq":
            return MxDequantSpec(self.elem, block=self.block)
        if self.variant == "exact":
            return MxDotSpec(self.elem, n=self.n)
        return MxDotSpec(self.elem, n=self.n, accum="fixed",
                         frac_bits=int(self.variant.removeprefix("fixed")))

    @property
    def label(self) -> str:
        return f"{self.elem} {self.unit} {self.variant}"

    @property
    def row_format(self) -> tuple[str, str, int]:
        return self.elem, self.elem, element_format(self.elem).width


def mx_cases(elems=tuple(ELEMENT_FORMATS), units=MX_UNITS, block=MX_BLOCK,
             n=MX_N) -> list[MxCase]:
    """Every element format x MX unit x its variants."""
    return [MxCase(element_format(e).name, u, v, block, n) for e in elems for u in units
            for v in MX_VARIANTS[u]]


def cases(formats, units=UNITS, variant_formats=VARIANT_FORMATS, variant_units=VARIANT_UNITS,
          variants=tuple(VARIANTS)) -> list[Case]:
    """Every format x unit with default options, then the variants (formats in catalog order)."""
    out = [Case(resolve(f), u) for f in formats for u in units]
    out += [Case(resolve(f), u, v) for f in variant_formats for u in variant_units
            for v in variants if v != "default"]
    return list(dict.fromkeys(out))


def _design(case) -> tuple:
    """In a worker process: the case's Verilog, or why the generator rejects it."""
    try:
        return case, design_for(case.spec()), None
    except (FormatError, OptionError, ValueError) as err:
        return case, None, f"{type(err).__name__}: {' '.join(str(err).split())}"


def designs_for(cases_: list, jobs: int) -> list[tuple]:
    """Generate every case's Verilog, ``jobs`` Python processes at a time (Amaranth's own
    Yosys makes each conversion take seconds)."""
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn")) as pool:
        return list(pool.map(_design, cases_))


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
    delay_slow_ps: float | None = None
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
    from rtl.formats import SHORT_NAMES
    base = fmt.with_subnormals(True).name
    names = [s for s, c in SHORT_NAMES.items() if c == base]
    return names[0] if names else base


def sweep(cases_: list, *, out_dir=DEFAULT_OUT_DIR, jobs=DEFAULT_JOBS, fpga=False,
          liberty=None, run_dir=None) -> tuple[list[Row], Path, dict]:
    """Synthesise every case (Case or MxCase, and the integer cores of the mul / fma cases);
    one Row per case."""
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(out_dir, "sweep")
    start = time.monotonic()
    load0 = os.getloadavg()
    rtl = _rtl_revision()      # before generating: the RTL may change while Yosys runs
    built = designs_for(cases_, jobs)
    gen_seconds = time.monotonic() - start
    designs, seen = [], set()
    for case, design, _ in built:
        if design is None or design.name in seen:
            continue
        seen.add(design.name)
        designs.append(design)
    cores = {}
    for case, design, _ in built:
        if design is not None and design.core and design.core not in cores:
            cores[design.core] = core_design(*core_formats(case.spec()))
    records = run_designs(designs + list(cores.values()), liberty=liberty, run_dir=run_dir,
                          jobs=jobs, fpga=fpga, tag="sweep") if designs else []
    by_name = {r.name: r for r in records}
    rows = []
    for case, design, reason in built:
        row = Row(*case.row_format, case.unit, case.variant,
                  design.name if design else "", "ok" if design else "skipped", reason or "")
        if design is not None:
            r = by_name[design.name]
            core = by_name.get(r.core) if r.core else None
            row.ge, row.area_um2 = r.asic.ge, r.asic.area_um2
            row.delay_ps, row.delay_slow_ps = r.asic.delay_ps, r.asic.delay_slow_ps
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
    mx = [c for c in cases_ if isinstance(c, MxCase)]
    if mx:
        meta |= {"mx block": mx[0].block, "mx n": mx[0].n}
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
def write_csv(rows: list[Row], path: Path) -> Path:
    names = [f.name for f in fields(Row)]
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
           "Each cell: **area in GE** (NAND2_X1 = 1) **/ critical path in ps** (Yosys `sta` "
           "over fpforge's fixed-delay NanGate45 cell models, fast edge). Default options: "
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
                "Against the same unit with default options. *ftz*: subnormal inputs and "
                "results flushed to zero; *saturate*: overflow gives ±max finite; *dynamic*: "
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
            "`make sweep` (`python -m synth.sweep`).", ""]
    return "\n".join(out)


def mx_markdown(rows: list[Row], meta: dict) -> list[str]:
    """The block-scaled units: one row per element format, a column per unit and variant."""
    cols = [(u, v) for u in MX_UNITS for v in MX_VARIANTS[u]
            if any(r.unit == u and r.variant == v for r in rows)]
    by = {(r.format, r.unit, r.variant): r for r in rows}
    elems = list(dict.fromkeys(r.format for r in rows))
    block, n = meta.get("mx block", MX_BLOCK), meta.get("mx n", MX_N)
    out = ["", "## Block-scaled (OCP MX) units", "",
           f"Per element format, GE / ps. *mxq*: quantizer of a block of k = {block} float32 "
           "values into one E8M0 scale + k elements (rne, saturating), under each scale rule "
           "(floor: OCP MX v1.0 6.3; ceil; rceil: NVIDIA's 2^ceil(log2(amax / max_elem)); even: "
           f"floor after rounding amax to the element's precision). *mxdq*: dequantizer of k = "
           f"{block} elements to float32. *dot*: N = {n} element products with their two E8M0 "
           "scales into float32, rne; *exact*: exact sum, one rounding; *fixedF*: products "
           "truncated to F fraction bits below the largest, then one rounding (docs/mx.md). "
           "The OCP block is k = 32: the per-block scale logic stays, the per-element logic "
           "grows 4x (`python -m synth --units mxq --format ELEM` for k = 32).", "",
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
    colors = dict(zip(UNITS, ("tab:blue", "tab:orange", "tab:green", "tab:purple")))
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

    cols = [(u, v) for u in MX_UNITS for v in MX_VARIANTS[u]
            if any(r.unit == u and r.variant == v for r in rows)]
    elems = list(dict.fromkeys(r.format for r in rows))
    by = {(r.format, r.unit, r.variant): r for r in rows}
    fig, ax = plt.subplots(figsize=(12, 5.2), dpi=100)
    width = 0.8 / max(1, len(cols))
    cmap = plt.get_cmap("tab10")
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
    ax.set_ylabel("area (GE)")
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


# ----- command line -------------------------------------------------------------------------
def _names(text: str) -> list[str]:
    return [n for n in (s.strip() for s in text.split(",")) if n]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m synth.sweep", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--formats", default=None,
                   help="comma-separated formats (default: every catalog format of at most "
                        "--max-width bits)")
    p.add_argument("--max-width", type=int, default=16)
    p.add_argument("--units", default=",".join(UNITS))
    p.add_argument("--variant-formats", default=",".join(VARIANT_FORMATS),
                   help="formats that also get the option variants ('' for none)")
    p.add_argument("--variant-units", default=",".join(VARIANT_UNITS))
    p.add_argument("--variants", default=",".join(v for v in VARIANTS if v != "default"),
                   help=f"from {', '.join(v for v in VARIANTS if v != 'default')}")
    p.add_argument("--mx-elements", default=",".join(ELEMENT_FORMATS),
                   help="MX element formats whose block-scaled units are swept ('' for none)")
    p.add_argument("--mx-units", default=",".join(MX_UNITS))
    p.add_argument("--mx-block", type=int, default=MX_BLOCK,
                   help=f"MX block size k of the swept quantizers (default {MX_BLOCK})")
    p.add_argument("--mx-n", type=int, default=MX_N,
                   help=f"vector length N of the swept dot units (default {MX_N})")
    p.add_argument("--jobs", "-j", type=int, default=DEFAULT_JOBS,
                   help="Python and Yosys processes at a time")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR)
    p.add_argument("--liberty", type=Path, default=None)
    p.add_argument("--fpga", action="store_true", help="also run the iCE40 / ECP5 flows")
    p.add_argument("--publish", type=Path, default=None, metavar="DIR",
                   help=f"copy {', '.join(REPORT_FILES)} into DIR")
    return p.parse_args(argv)


def _check_names(args) -> list[Case]:
    fmts = _names(args.formats) if args.formats is not None else \
        [f.name for f in catalog_formats(args.max_width)]
    units = _names(args.units)
    bad = [u for u in units + _names(args.variant_units) if u not in UNITS]
    if bad:
        raise OptionError(f"unknown unit {bad[0]!r}; valid: {', '.join(UNITS)}")
    variants = _names(args.variants)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        raise OptionError(f"unknown variant {bad[0]!r}; valid: {', '.join(VARIANTS)}")
    if not fmts and args.formats is None:
        narrowest = min(CATALOG.values(), key=lambda f: f.width)
        raise OptionError(f"no catalog format of at most --max-width {args.max_width} bits; "
                          f"the narrowest is {narrowest.name} ({narrowest.width} bits)")
    if not fmts or not units:
        raise OptionError("no format or no unit selected")
    mx_units = _names(args.mx_units)
    bad = [u for u in mx_units if u not in MX_UNITS]
    if bad:
        raise OptionError(f"unknown MX unit {bad[0]!r}; valid: {', '.join(MX_UNITS)}")
    mx = mx_cases([element_format(e).name for e in _names(args.mx_elements)], mx_units,
                  args.mx_block, args.mx_n)
    if mx:      # a bad --mx-block / --mx-n fails here, before any work
        MxQuantSpec("fp8e4m3", block=args.mx_block), MxDotSpec("fp8e4m3", n=args.mx_n)
    return cases([resolve(f) for f in fmts], units,
                 [resolve(f) for f in _names(args.variant_formats)],
                 _names(args.variant_units), variants) + mx


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        todo = _check_names(args)
    except (FormatError, OptionError) as err:
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    print(f"sweep: {len(todo)} cases, {args.jobs} processes at a time; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    try:
        rows, run_dir, meta = sweep(todo, out_dir=args.out, jobs=args.jobs, fpga=args.fpga,
                                    liberty=args.liberty)
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
    table = text[text.index("| format |"):text.index("\n\n", text.index("| format |"))]
    print(table)
    print(f"{meta['designs']} units + {meta['cores']} cores in {meta['wall seconds']:.0f} s wall "
          f"(load average {meta['load before'][0]:.1f} -> {meta['load after'][0]:.1f}); "
          f"report: {run_dir / 'sweep.md'}")
    if args.publish is not None:
        args.publish.mkdir(parents=True, exist_ok=True)
        for name in REPORT_FILES:
            if (run_dir / name).exists():
                shutil.copy2(run_dir / name, args.publish / name)
        print(f"copied {', '.join(REPORT_FILES)} to {args.publish}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
