"""The cost of flexibility: a multi-format unit (rtl/multiformat.py) beside its single-format
members, for the format sets accelerators argue about (docs/multiformat.md).

For each set and unit kind, one multi-format unit (its ``fmt`` input choosing the member per
operation) and every member alone are synthesised through the same flow as ``fpforge pareto``'s
cost (the deep job, fpforge's cells, OpenSTA load-aware delay); the report gives the multi-format
unit's area and delay beside the largest member and the members' sum: "FP4 support on an FP8
tensor core costs X % area" is the dot row's ratio to its largest member. Packed-SIMD rows
compare with the members at their lane counts (``--simd-width``: a member of width w computes
W / w lanes, so its single-format cost counts that many times). Each dot row comes twice: exact
accumulation at n = DOT_N, and a tensor core's fixed-point accumulator (``--accum fixed``,
FIXED_FRAC_BITS) at n = FIXED_DOT_N, the issue's n.

Energy (with ``energy``, as ``fpforge pareto --power``): every unit again on the pareto's energy
library (codesign/energy.py), its energy per operation on the pareto's data set, the
multi-format unit once per member with ``fmt`` held at it and that member's operands
(codesign/power_data.py ``member``), beside the member alone on the same operands.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from fpforge.synth.format_sets import SETS, FlexSet
from fpforge.synth.sweep import MX_N

from .energy import ENERGY_DATA, ENERGY_LIBRARY, ENERGY_VECTORS

__all__ = ["FlexSet", "SETS", "FlexCase", "FlexRow", "DOT_N", "FIXED_DOT_N", "FIXED_FRAC_BITS",
           "cases", "measure", "measure_energy", "markdown", "plot", "REPORT_FILES",
           "run_flexibility"]

REPORT_FILES = ("flexibility.csv", "flexibility.json", "flexibility.md", "flexibility.png")
# The dot rows' vector length: the sweep's for the MX units (synth/sweep.py MX_N), so the study
# stays short; each element's decode and product is the same at a tensor core's n = 32, the sum
# tree grows with n (an n = 32 exact dot takes Yosys tens of minutes).
DOT_N = MX_N
# The fixed-accumulator dot rows: the tensor-core n; F as the pareto's fixed accumulators.
FIXED_DOT_N = 32
FIXED_FRAC_BITS = 24
# (accumulation, n, the dot's option values) of each dot row
DOT_ROWS = (("exact", DOT_N, ()),
            ("fixed", FIXED_DOT_N, (("accum", "fixed"), ("frac_bits", FIXED_FRAC_BITS))))
ENERGY_DATA_SET = ENERGY_DATA[0]
# Energy is measured on dots up to this n: the gate-level simulation of an n = 32 dot (about
# 30,000 cells) takes about 2 s per operation on this flow, ten minutes per unit and member.
ENERGY_MAX_DOT_N = DOT_N


@dataclass(frozen=True)
class FlexCase:
    """One row: the multi-format unit's option values, and each member's alone with the number
    of copies it stands for (its lanes in a packed-SIMD row)."""

    set_name: str
    unit: str
    layout: str                          # "one lane" or "simd W"
    multi: tuple                         # (option, value) pairs for rtl.kinds.make_spec
    members: tuple                       # ((format, copies, (option, value) pairs), ...)


    @property
    def n(self) -> int | None:
        return dict(self.multi).get("n")

    @property
    def accum(self) -> str:
        return dict(self.multi).get("accum", "exact") if self.unit == "dot" else ""


def _unit_values(s: FlexSet, unit: str) -> list[tuple[tuple, list]]:
    """(the multi-format unit's values, each member's) of every row of ``unit`` over ``s``."""
    fmts = ",".join(s.formats)
    if unit != "dot":
        return [((("formats", fmts),), [(("format", f),) for f in s.formats])]
    out = []
    for _, n, accum in s.dot_rows or DOT_ROWS:
        common = (("n", n),) + accum + \
            ((("scale_format", s.scale_format),) if s.scale_format else ())
        out.append(((("formats", fmts),) + common, [(("in_format", f),) + common
                                                    for f in s.formats]))
    return out


def cases(sets=SETS) -> list[FlexCase]:
    from fpforge.rtl.format_names import resolve
    out = []
    for s in sets:
        for unit in s.units:
            for multi, members in _unit_values(s, unit):
                out.append(FlexCase(s.name, unit, "one lane", multi,
                                    tuple((f, 1, m) for f, m in zip(s.formats, members))))
        if s.simd_width:
            W = s.simd_width
            out.append(FlexCase(s.name, "mul", f"simd {W}",
                                (("formats", ",".join(s.formats)), ("simd_width", W)),
                                tuple((f, W // resolve(f).width, (("format", f),))
                                      for f in s.formats)))
    return out


@dataclass
class FlexRow:
    """One line of flexibility.csv."""

    set: str
    unit: str
    layout: str
    formats: str
    n: int | None = None                 # a dot row's vector length
    accum: str = ""                      # a dot row's accumulation: exact or fixed
    module: str = ""
    ge: float | None = None
    delay_ps: float | None = None
    largest: str = ""                    # the member of most area (times its copies)
    largest_ge: float | None = None
    largest_delay_ps: float | None = None
    sum_ge: float | None = None
    vs_largest: float | None = None      # ge / largest_ge
    vs_sum: float | None = None          # ge / sum_ge
    vs_first: float | None = None        # ge / the first member alone: what the others add
    members: dict = field(default_factory=dict)     # format -> (copies, GE, ps)
    # format -> (pJ per operation of the multi-format unit with fmt held at it, of the member
    # alone times its copies); None where not measured
    energy: dict = field(default_factory=dict)


def _case(unit: str, values: tuple, label: str):
    from fpforge.synth.sweep import Case
    fmt = dict(values).get("format") or dict(values).get("in_format") or \
        dict(values)["formats"].split(",")[0]
    return Case(fmt, unit, label, values, deep=True)


def _sweep(cases_: list, out: Path, jobs: int, what: str, **kw) -> tuple[dict, dict]:
    """case -> its sweep Row (kept by content key under out/results), and the run's meta."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    from fpforge.synth.sweep import sweep
    with ProgressBar(None, what) as bar:
        results, _, meta = sweep(cases_, out_dir=out / "synth", jobs=jobs,
                                 store=ResultStore(out / "results"), progress=bar.on_done, **kw)
    return dict(zip(cases_, results)), meta


def measure(flex: list[FlexCase], out: Path, jobs: int, energy: bool = False,
            vectors: int = ENERGY_VECTORS,
            max_dot_n: int = ENERGY_MAX_DOT_N) -> tuple[list[FlexRow], dict]:
    """Synthesise every multi-format unit and member (kept by content key under out/results);
    with ``energy``, their energy per operation too (:func:`measure_energy`)."""
    plan = [(c, _case(c.unit, c.multi, f"flexibility {c.set_name} {c.layout}"),
             [(f, n, _case(c.unit, m, "flexibility member")) for f, n, m in c.members])
            for c in flex]
    all_cases = list(dict.fromkeys([p[1] for p in plan] + [m[2] for p in plan for m in p[2]]))
    by_case, meta = _sweep(all_cases, out, jobs, "flexibility synthesis jobs done")
    rows = []
    for c, multi, members in plan:
        row = FlexRow(c.set_name, c.unit, c.layout, ",".join(f for f, _, _ in members), c.n,
                      c.accum)
        r = by_case[multi]
        row.module = r.module
        if r.status == "ok":
            row.ge, row.delay_ps = r.ge, r.delay_ps
        ok = all(by_case[m].status == "ok" for _, _, m in members)
        row.members = {f: (n, by_case[m].ge, by_case[m].delay_ps) for f, n, m in members}
        if ok:
            f, (n, ge, ps) = max(row.members.items(), key=lambda kv: kv[1][0] * kv[1][1])
            row.largest, row.largest_ge, row.largest_delay_ps = f, round(n * ge, 1), ps
            row.sum_ge = round(sum(n * ge for n, ge, _ in row.members.values()), 1)
            if row.ge is not None:
                row.vs_largest = round(row.ge / row.largest_ge, 3)
                row.vs_sum = round(row.ge / row.sum_ge, 3)
                n0, ge0, _ = next(iter(row.members.values()))
                row.vs_first = round(row.ge / (n0 * ge0), 3)
        rows.append(row)
    if energy:
        meta = meta | {"energy": measure_energy(plan, rows, out, jobs, vectors,
                                                       max_dot_n)}
    return rows, meta


def measure_energy(plan: list, rows: list[FlexRow], out: Path, jobs: int, vectors: int,
                   max_dot_n: int = ENERGY_MAX_DOT_N) -> dict:
    """Fill each row's ``energy``: every unit synthesised to ENERGY_LIBRARY (the deep job), its
    energy per operation on ``vectors`` operations of ENERGY_DATA_SET at its own clock
    (synth/power.py); a multi-format unit once per member, fmt held at it on that member's
    operands, the member alone on the same operands (times its copies in a packed-SIMD row).
    Dot rows of n > ``max_dot_n`` are left empty. Returns how it was measured."""
    from functools import partial

    from fpforge.synth.sweep_power import PowerRun

    from .power_data import operand_vectors
    start = time.monotonic()
    for (_, _, ms), row in zip(plan, rows):        # empty cells where not measured
        row.energy = {f: (None, None) for f, _, _ in ms}
    plan = [p for p in plan if p[0].n is None or p[0].n <= max_dot_n]
    rows = [r for r in rows if r.n is None or r.n <= max_dot_n]
    run = partial(PowerRun, ENERGY_DATA_SET, vectors, operand_vectors)
    lib = {"lib": ENERGY_LIBRARY}
    members = list(dict.fromkeys(m for _, _, ms in plan for _, _, m in ms))
    alone, meta = _sweep(members, out, jobs, f"{ENERGY_LIBRARY} members alone: energy jobs done",
                         power=run(), **lib)
    held = {}
    for k in range(max(len(ms) for _, _, ms in plan)):
        multis = list(dict.fromkeys(multi for _, multi, ms in plan if len(ms) > k))
        held[k], _ = _sweep(multis, out, jobs, f"{ENERGY_LIBRARY} fmt = {k}: energy jobs done",
                            power=run(member=k), **lib)
    for (_, multi, ms), row in zip(plan, rows):
        row.energy = {f: (held[k][multi].energy_pj,
                          None if alone[m].energy_pj is None else _sig(n * alone[m].energy_pj))
                      for k, (f, n, m) in enumerate(ms)}
    return {"library": (meta.get("power") or {}).get("library", ENERGY_LIBRARY),
            "data": ENERGY_DATA_SET, "vectors": vectors, "max dot n": max_dot_n,
            "seconds": round(time.monotonic() - start, 1)}


def _sig(x: float) -> float:
    return float(f"{x:.6g}")


def markdown(rows: list[FlexRow], meta: dict) -> str:
    lines = [
        "# The cost of flexibility: multi-format units beside their members", "",
        f"- **cells**: {meta.get('library', '').split(' at ')[0]}; **yosys**: "
        f"{meta.get('yosys', '')}; **RTL**: {meta.get('rtl', '')}",
        "- **how**: `fpforge pareto --flexibility` (make pareto): each unit synthesised by "
        "Yosys + ABC to fpforge's NanGate45-derived cells through the deep job (as the pareto's "
        "cost), OpenSTA load-aware delay, combinational. A multi-format unit is one datapath "
        "whose `fmt` input picks the member per operation (docs/multiformat.md). *largest*: the "
        "member alone of most area (a packed-SIMD row counts each member's lanes: W / width "
        "copies); *sum*: every member alone, added: what separate units would cost; *vs "
        "first*: against the set's first member alone (its base format: what serving the "
        "others adds, e.g. FP4 on an FP8 dot unit).",
        f"- **run**: {meta.get('seconds', 0):.0f} s wall, {meta.get('yosys cpu seconds', 0):.0f} "
        "s of Yosys (units already in the result store are not synthesised again)",
        f"- **dot rows** (columns n, accum): exact accumulation into float32 at n = {DOT_N}; "
        f"a tensor core's fixed-point accumulator (`--accum fixed --frac-bits "
        f"{FIXED_FRAC_BITS}`: products aligned to the largest and truncated to "
        f"{FIXED_FRAC_BITS} fraction bits below it, one rounding) at n = {FIXED_DOT_N}; "
        "scales as the set says.",
        "", "![flexibility](flexibility.png)", "",
        "| set | unit | layout | n | accum | multi-format GE | ps | largest member | GE | ps | "
        "sum GE | vs largest | vs sum | vs first |",
        "|---|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]

    def f(v, d=1):
        return "" if v is None else f"{v:.{d}f}"
    for r in rows:
        lines.append(f"| {r.set} | {r.unit} | {r.layout} | {r.n or ''} | {r.accum} | "
                     f"{f(r.ge)} | {f(r.delay_ps, 0)} | "
                     f"{r.largest} | {f(r.largest_ge)} | {f(r.largest_delay_ps, 0)} | "
                     f"{f(r.sum_ge)} | {f(r.vs_largest, 2)}x | {f(r.vs_sum, 2)}x | "
                     f"{f(r.vs_first, 2)}x |")
    lines += ["", "Members alone (GE, ps; copies in a packed-SIMD row):", ""]
    for r in rows:
        parts = [f"{k} {'%dx ' % n if n > 1 else ''}{ge} GE {ps:.0f} ps"
                 for k, (n, ge, ps) in r.members.items() if ge is not None]
        lines.append(f"- {r.set} {r.unit} ({r.layout}{_dot_words(r)}): " + "; ".join(parts))
    if "energy" in meta:
        lines += _energy_lines(rows, meta["energy"])
    return "\n".join(lines) + "\n"


def _dot_words(r: FlexRow) -> str:
    return f", n = {r.n}, {r.accum}" if r.unit == "dot" else ""


def _energy_lines(rows: list[FlexRow], how: dict) -> list[str]:
    skipped = "" if all((r.n or 0) <= how["max dot n"] for r in rows) else \
        (f" Dot rows of n > {how['max dot n']} are not measured (empty cells): the gate-level "
         "simulation of an n = 32 dot (about 30,000 cells) takes about 2 s per operation here, "
         "ten minutes per unit and member.")
    lines = ["", "## Energy per operation, per member", "",
             f"- **how**: every unit again through the deep job to {how['library']} (the "
             f"pareto's energy library), OpenSTA's power with each cell's switching from a "
             f"gate-level simulation of {how['vectors']} operations on {how['data']} operands "
             "(synth/power.py, docs/power.md), at the unit's own clock (its worst delay rounded "
             "up to 10 ps: leakage is charged over that period). The multi-format unit is "
             "measured once per member with `fmt` held at it, on that member's operands, the "
             "same codes the member alone is given (codesign/power_data.py); a packed-SIMD "
             "row's operation is one W-bit word (every lane), its member alone counted times its "
             f"lanes.{skipped} {how['seconds']:.0f} s.", "",
             "| set | unit | layout | n | accum | member | multi pJ/op | alone pJ/op | "
             "multi / alone |", "|---|---|---|---:|---|---|---:|---:|---:|"]
    for r in rows:
        for fmt, (multi, alone) in r.energy.items():
            ratio = f"{multi / alone:.2f}x" if multi is not None and alone else ""
            lines.append(f"| {r.set} | {r.unit} | {r.layout} | {r.n or ''} | {r.accum} | {fmt} | "
                         f"{'' if multi is None else f'{multi:.4f}'} | "
                         f"{'' if alone is None else f'{alone:.4f}'} | {ratio} |")
    return lines


def plot(rows: list[FlexRow], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [r for r in rows if r.ge is not None and r.sum_ge is not None]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(shown)), 4))
    x = range(len(shown))
    for k, (key, label) in enumerate((("largest_ge", "largest member alone"),
                                      ("ge", "multi-format unit"),
                                      ("sum_ge", "every member alone"))):
        ax.bar([i + (k - 1) * 0.27 for i in x], [getattr(r, key) for r in shown], 0.27,
               label=label)
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{r.set}\n{r.unit} {r.layout}" + (f"\nn = {r.n}, {r.accum}"
                                                             if r.unit == "dot" else "")
                        for r in shown], fontsize=7)
    ax.set_ylabel("area (GE)")
    ax.set_title("The cost of flexibility (fpforge cells, deep job)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_csv(rows: list[FlexRow], path: Path) -> None:
    """One line per row; the members as ``format:copies:GE:ps`` words, the energy as
    ``format:multi pJ:alone pJ``."""
    names = [f.name for f in fields(FlexRow)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            cells = {**asdict(r), "members": " ".join(
                f"{k}:{n}:{ge}:{ps}" for k, (n, ge, ps) in r.members.items()),
                "energy": " ".join(f"{k}:{'' if m is None else m}:{'' if a is None else a}"
                                   for k, (m, a) in r.energy.items()),
                "n": r.n or ""}
            w.writerow(["" if cells[n] is None else cells[n] for n in names])


def run_flexibility(out: Path, jobs: int = 2, sets=SETS, energy: bool = False,
                    vectors: int = ENERGY_VECTORS,
                    max_dot_n: int = ENERGY_MAX_DOT_N) -> list[FlexRow]:
    """Measure (with ``energy``: per member too, on ``vectors`` operations), then write the
    report files into ``out`` (stale ones removed first)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        (out / name).unlink(missing_ok=True)
    start = time.monotonic()
    rows, meta = measure(cases(sets), out, jobs, energy, vectors, max_dot_n)
    meta = {k: meta[k] for k in ("library", "yosys", "rtl", "yosys cpu seconds", "energy")
            if k in meta} | \
        {"seconds": round(time.monotonic() - start, 1)}
    _write_csv(rows, out / "flexibility.csv")
    (out / "flexibility.json").write_text(json.dumps(
        {"meta": meta, "rows": [asdict(r) for r in rows]}, indent=1))
    (out / "flexibility.md").write_text(markdown(rows, meta))
    plot(rows, out / "flexibility.png")
    return rows
