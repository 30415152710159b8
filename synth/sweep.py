"""The synthesis sweep: area and delay of every unit in every catalog format, and what the
options cost: the cases (:func:`plan`) and their synthesis (:func:`sweep`). Its report and the
whole ``fpforge sweep`` (``make sweep``) are synth/sweep_report.py's.

Cases: each format x each unit (mul, add, fma in the format; cvt from float32; the other scalar
kinds on request, ``--unit extra``: docs/synth/kinds.md) with the default options (rne, subnormals
kept, non-saturating), plus each kind's own trade on a few formats (div/sqrt ``iter``, the function
units' ``faithful``: KIND_VARIANTS), plus option variants -- subnormals flushed (no-subnormals),
saturating, dynamic rounding (``rm`` input), stochastic rounding (``rbits`` input) -- on a few
formats; and the block-scaled (OCP MX) units per element format -- the quantizer under each scale
rule, the dequantizer, the dot product under each accumulator -- at a small block and vector length
(``mx_block``, ``mx_n``; default 8) so the sweep stays short: the scale rule costs the same logic
per block whatever k is, and the element logic grows with k; and the multi-format units
(docs/multiformat.md) mul and add over each set of synth/format_sets.py whose members are all
among the swept formats, whose rows the report sets beside the members' own. Every case is a unit, a variant label
and the option values that build its spec (rtl.kinds.make_spec). A combination the generator
rejects is skipped and listed with its reason. Verilog is generated in worker processes and every Yosys run is
its own process (``jobs`` of each at once); the FPGA runs are off unless ``fpga``. A run directory
under ``out`` holds the per-design JSON, ``report.md`` and Yosys files of
:func:`synth.run_designs`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fpforge.rtl.formats import CATALOG, FloatFormat, FormatError, catalog_formats
from fpforge.rtl.format_names import P3109_CONFORMANCE, resolve
from fpforge.rtl.kinds import BASIC_UNITS, KINDS, make_spec
from fpforge.rtl.elements import ELEMENT_FORMATS, element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES
from fpforge.rtl.options import OptionError
from fpforge.rtl.spec import Spec

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, new_run_dir, run_designs
from .format_sets import SETS, FlexSet
from .records import core_design, core_formats, design_for

__all__ = ["Case", "Row", "SCALAR_UNITS", "MX_UNITS", "SWEEP_UNITS", "EXTRA_UNITS", "UNIT_GROUPS",
           "VARIANTS", "KIND_VARIANTS", "MX_VARIANTS", "MULTI_UNITS", "MULTI", "case", "mx_case",
           "multi_case", "cases", "mx_cases", "multi_cases", "mx_variants", "plan", "selection",
           "sweep", "split_names"]

CVT_FROM = "float32"
# The report's two tables: scalar units get a row per format, the block-scaled (OCP MX) units a
# row per element format.
SCALAR_UNITS = tuple(u for u, k in KINDS.items() if k.shape == "scalar")
MX_UNITS = tuple(u for u, k in KINDS.items() if k.shape == "block")
# What the sweep synthesises unless told: sub is add with b's sign flipped, and costs the same.
SWEEP_UNITS = BASIC_UNITS
# The rest of an FPU and of an ML datapath, opt-in (--unit extra) so that make sweep's default
# rows and time stay: fms is fma with c's sign flipped, as sub is add.
EXTRA_UNITS = tuple(u for u in SCALAR_UNITS if u not in (*BASIC_UNITS, "sub", "fms"))
# Names that stand for several units in --unit.
UNIT_GROUPS = {"basic": BASIC_UNITS, "extra": EXTRA_UNITS, "all": BASIC_UNITS + EXTRA_UNITS}
# Option variants: name -> option values (rtl.kinds.make_spec). "default" is the base case.
VARIANTS = {
    "default": {},
    "no-subnormals": {"subnormals": False},
    "saturate": {"saturate": True},
    "dynamic": {"rounding": "dynamic"},
    "stochastic": {"rounding": "stochastic"},
}
VARIANT_FORMATS = ("fp8e4m3", "fp16", "bf16")
# A kind's own trade, a row beside each default row in the variant formats: the other
# architecture of div and sqrt (--arch iter, docs/divsqrt.md), the cheaper accuracy of the
# function units (--accuracy faithful, docs/func.md). Option -> variant -> option values.
KIND_VARIANTS = {"arch": {"iter": {"arch": "iter"}},
                 "accuracy": {"faithful": {"accuracy": "faithful"}}}
_KIND_VARIANT_VALUES = {v: values for vs in KIND_VARIANTS.values() for v, values in vs.items()}
VARIANT_UNITS = ("mul", "add")
# Where the generated hardware is decided, for the report's provenance line: all of rtl/ (a
# kind's spec module decides its unit as much as rtl/fp_units/ does; a list of files went stale
# as kinds were added).
HARDWARE_SOURCES = ("rtl",)
MX_BLOCK = 8
NVFP4_RULES = tuple(r for r in VALUE_RULES if r.startswith("nvfp4_"))
MX_N = 8
# MX variants per unit -> option values: the quantizer's scale rules, the dot product's
# accumulators.
MX_VARIANTS = {
    # The NVFP4 quantizers compute in float32 (a multiplier per element, dividers per block):
    # they take the flow's deep job (synth/scripts.py), and so does floor_deep, the MX floor
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
# The multi-format rows: these units over each set of format_sets.SETS made for a scalar unit
# (the dot-only sets are the flexibility report's, codesign/flexibility.py) whose members are all
# among the swept formats, so that each row has its members' single-format rows beside it.
MULTI_UNITS = ("mul", "add")
MULTI = "multi-format"          # their variant; their format is the set's name


def mx_variants(unit: str) -> dict:
    return MX_VARIANTS.get(unit, {"default": {}})


@dataclass(frozen=True)
class Case:
    """One unit to synthesise: the format its row is filed under (a catalog format, or an MX
    element format), the unit, the variant's label and the option values of its spec."""

    fmt: str
    unit: str
    variant: str = "default"
    values: tuple = ()          # (option, value) pairs: rtl.kinds.make_spec(unit, **values)
    deep: bool = False          # through the deep job (synth/scripts.py), under its own name

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
    def members(self) -> tuple[str, ...]:
        """A multi-format scalar case's member formats (catalog names), in fmt order; else ()
        (a dot's members are element formats: its row is filed as an MX unit's)."""
        formats = dict(self.values).get("formats")
        if not formats or self.mx:
            return ()
        return tuple(resolve(f).name for f in split_names(formats))

    @property
    def label(self) -> str:
        return f"{self.fmt} {self.unit} {self.variant}"

    @property
    def row_format(self) -> tuple[str, str, int]:
        """(format, short name, bits) of the case's row; a multi-format case's: the set's name,
        its members' short names, the widest member's bits."""
        if self.mx:
            return self.fmt, self.fmt, element_format(self.fmt).width
        if self.members:
            fmts = [resolve(f) for f in self.members]
            return self.fmt, "+".join(map(_short, fmts)), max(f.width for f in fmts)
        fmt = resolve(self.fmt)
        return fmt.name, _short(fmt), fmt.width


def case(fmt, unit: str, variant: str = "default") -> Case:
    """A scalar unit in ``fmt`` (cvt: into it from float32) with ``variant``'s options."""
    name = resolve(fmt).name
    values = {"format": name, **({"in_format": CVT_FROM} if unit == "cvt" else {}),
              **{**VARIANTS, **_KIND_VARIANT_VALUES}[variant]}
    return Case(name, unit, variant, tuple(values.items()))


def mx_case(elem, unit: str, variant: str = "default", block: int = MX_BLOCK,
            n: int = MX_N) -> Case:
    """An MX unit on elements ``elem``: mxq's ``format`` is its element format; mxdq's and
    dot's ``format`` is their float32 result, the element their ``in_format``."""
    name = element_format(elem).name
    takes = KINDS[unit].spec.OPTIONS
    values = {"format" if unit == "mxq" else "in_format": name,
              **{k: v for k, v in (("block", block), ("n", n)) if k in takes},
              **mx_variants(unit)[variant]}
    return Case(name, unit, variant, tuple(values.items()))


def mx_cases(elems=tuple(ELEMENT_FORMATS), units=MX_UNITS, block=MX_BLOCK,
             n=MX_N) -> list[Case]:
    """Every element format x MX unit x its variants."""
    return [mx_case(e, u, v, block, n) for e in elems for u in units for v in mx_variants(u)
            if element_format(e).name in VARIANT_ELEMENTS.get(v, (element_format(e).name,))]


def multi_case(s: FlexSet, unit: str) -> Case:
    """``unit`` over the set ``s``, one lane, the default options: its row is filed under the
    set's name."""
    return Case(s.name, unit, MULTI, (("formats", ",".join(resolve(f).name for f in s.formats)),))


def multi_cases(formats, units=MULTI_UNITS, sets=SETS) -> list[Case]:
    """Each of ``units`` in MULTI_UNITS over each set made for a scalar unit whose members are
    all among ``formats``."""
    have = {resolve(f).name for f in formats}
    return [multi_case(s, u) for s in sets if any(u in SCALAR_UNITS for u in s.units)
            and all(resolve(f).name in have for f in s.formats)
            for u in units if u in MULTI_UNITS]


def cases(formats, units=SWEEP_UNITS, variant_formats=VARIANT_FORMATS,
          variant_units=VARIANT_UNITS, variants=tuple(VARIANTS)) -> list[Case]:
    """Every format x unit with default options, then the variants (formats in catalog order)."""
    out = [case(f, u) for f in formats for u in units]
    out += [case(f, u, v) for f in variant_formats for u in variant_units
            for v in variants if v != "default"]
    out += [case(f, u, v) for f in variant_formats for u in units
            for option, vs in KIND_VARIANTS.items() if option in KINDS[u].spec.OPTIONS
            for v in vs]
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
    from fpforge.infra.executor import LocalExecutor, Task, digest
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
    # A multi-format row's members (their rows' format names, comma-separated, in fmt order).
    members: str = ""
    # With ``power`` (PowerRun): the record's power object (synth/power.py), energy per
    # operation on ``power_data``'s operands at ``clock_ps``.
    power_data: str = ""
    vectors: int | None = None
    clock_ps: float | None = None
    internal_uw: float | None = None
    switching_uw: float | None = None
    leakage_uw: float | None = None
    energy_pj: float | None = None

    @property
    def power(self) -> dict | None:
        """The power object back, as a synthesis record holds it."""
        if self.energy_pj is None:
            return None
        return {"data": self.power_data, **{k: getattr(self, k) for k in POWER_KEYS[1:]}}


POWER_KEYS = ("data", "vectors", "clock_ps", "internal_uw", "switching_uw", "leakage_uw",
              "energy_pj")


def _short(fmt: FloatFormat) -> str:
    from fpforge.rtl.format_names import SHORT_NAMES
    base = fmt.with_subnormals(True).name
    names = [s for s, c in SHORT_NAMES.items() if c == base]
    return names[0] if names else base


def sweep(cases_: list[Case], *, out_dir=DEFAULT_OUT_DIR, jobs=DEFAULT_JOBS, fpga=False,
          liberty=None, run_dir=None, executor=None, store=None,
          progress=None, lib: str = "fpforge",
          power: "PowerRun | None" = None) -> tuple[list[Row], Path, dict]:
    """Synthesise every case (and the integer cores of the mul / fma cases); one Row per case.
    ``power`` (synth/sweep_power.py): also each unit's energy per operation on its data set
    (the library must have power tables: power.check_power first)."""
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
                          progress=progress, lib=lib) if designs else []
    by_name = {r.name: r for r in records}
    rows = []
    for c, design, reason in built:
        row = Row(*c.row_format, c.unit, c.variant,
                  design.name if design else "", "ok" if design else "skipped", reason or "",
                  members=",".join(c.members))
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
    power_meta = None
    if power is not None and records:
        from .sweep_power import measure_powers
        units = {design.name: (c.spec(), by_name[design.name]) for c, design, _ in built
                 if design is not None}
        figures, power_meta = measure_powers(units, power, lib, liberty, run_dir, jobs,
                                             executor, store, progress)
        for row in rows:
            for k, v in figures.get(row.module, {}).items():
                setattr(row, "power_data" if k == "data" else k, v)
    meta = {"cases": len(cases_), "designs": len(designs), "cores": len(cores),
            "skipped": sum(r.status != "ok" for r in rows),
            "verilog seconds": round(gen_seconds, 1),
            "wall seconds": round(time.monotonic() - start, 1),
            "yosys cpu seconds": round(sum(sum(r.cpu_seconds.values()) for r in records), 1),
            "load before": load0, "load after": os.getloadavg(), "jobs": jobs,
            # The library's description, as the run's report header states it.
            "library": (json.loads((run_dir / "header.json").read_text())["liberty"]
                        if records else ""),
            "yosys": records[0].tools.get("yosys", "") if records else "",
            "amaranth": records[0].tools.get("amaranth", "") if records else "",
            "rtl": rtl, "power": power_meta}
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


# ----- the sweep from plain values ------------------------------------------------------------
def split_names(names) -> list[str]:
    """A list of names; one string may hold several, comma-separated."""
    if isinstance(names, str):
        names = names.split(",")
    return [n for n in (str(x).strip() for x in names) if n]


def expand_units(names) -> list[str]:
    """Unit names with each group (UNIT_GROUPS) replaced by its units, in order, once each."""
    return list(dict.fromkeys(u for n in split_names(names) for u in UNIT_GROUPS.get(n, (n,))))


def selection(formats=None, units=None) -> dict:
    """plan()'s arguments for a ``--formats`` / ``--unit`` choice: with either given, the option
    variants, the kinds' own variants, the MX units and the multi-format rows follow it (only the
    named units, only in the named formats) instead of adding make sweep's whole set of them."""
    kw = {"formats": formats, "units": units}
    if units is not None:
        names = expand_units(units)
        kw |= {"units": [u for u in names if u not in MX_UNITS],
               "variant_units": [u for u in VARIANT_UNITS if u in names],
               "mx": any(u in MX_UNITS for u in names),
               "mx_units": [u for u in names if u in MX_UNITS]}
    if formats is not None:
        chosen = {resolve(f).name for f in split_names(formats)}
        kw["variant_formats"] = [f for f in VARIANT_FORMATS if resolve(f).name in chosen]
        kw["mx_elements"] = [e for e in ELEMENT_FORMATS if element_format(e).grid.name in chosen]
    return kw


def plan(*, formats=None, units=None, max_width: int = 16, variant_formats=VARIANT_FORMATS,
         variant_units=VARIANT_UNITS, variants=None, mx: bool = True, mx_elements=None,
         mx_units=None, mx_block: int = MX_BLOCK, mx_n: int = MX_N,
         multi: bool = True) -> list[Case]:
    """The sweep's cases, every name and size checked first: an unknown one raises OptionError
    or FormatError in one line naming what is valid, before any work.

    ``formats``: default every catalog format of at most ``max_width`` bits and the P3109
    conformance set (``P3109_CONFORMANCE``), filed after them; ``units``: names or groups
    (UNIT_GROUPS), default BASIC_UNITS; the ``variants`` (default all) on ``variant_formats`` x
    ``variant_units``; with ``mx``, the MX units ``mx_units`` (default all) on ``mx_elements``
    (default all) at block ``mx_block`` and dot length ``mx_n``; with ``multi``, the multi-format
    rows (:func:`multi_cases`) of the sets whose members are all among the formats."""
    fmts = split_names(formats) if formats is not None else \
        [f.name for f in catalog_formats(max_width)] + \
        [resolve(f).name for f in P3109_CONFORMANCE if resolve(f).width <= max_width]
    units = expand_units(units) if units is not None else list(SWEEP_UNITS)
    bad = [u for u in units + split_names(variant_units) if u not in SCALAR_UNITS]
    if bad:
        raise OptionError(f"unknown unit {bad[0]!r}; valid: {', '.join(SCALAR_UNITS)} or a "
                          f"group: {', '.join(UNIT_GROUPS)}")
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
    if multi:
        todo += multi_cases(fmts, units)
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
