"""The cost of flexibility: a multi-format unit (rtl/multiformat.py) beside its single-format
members, for the format sets accelerators argue about (docs/multiformat.md).

For each set and unit kind, one multi-format unit (its ``fmt`` input choosing the member per
operation) and every member alone are synthesised through the same flow as ``fpforge pareto``'s
cost (the deep job, fpforge's cells, OpenSTA load-aware delay); the report gives the multi-format
unit's area and delay beside the largest member and the members' sum: "FP4 support on an FP8
tensor core costs X % area" is the dot row's ratio to its largest member. Packed-SIMD rows
compare with the members at their lane counts (``--simd-width``: a member of width w computes
W / w lanes, so its single-format cost counts that many times).
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from fpforge.synth.sweep import MX_N

__all__ = ["FlexSet", "SETS", "FlexCase", "FlexRow", "cases", "measure", "markdown", "plot",
           "REPORT_FILES", "run_flexibility"]

REPORT_FILES = ("flexibility.csv", "flexibility.json", "flexibility.md", "flexibility.png")
# The dot rows' vector length: the sweep's for the MX units (synth/sweep.py MX_N), so the study
# stays short; each element's decode and product is the same at a tensor core's n = 32, the sum
# tree grows with n (an n = 32 exact dot takes Yosys tens of minutes).
DOT_N = MX_N


@dataclass(frozen=True)
class FlexSet:
    """A set of formats one unit serves, and which units the report builds over it."""

    name: str
    formats: tuple[str, ...]
    why: str
    units: tuple[str, ...] = ("mul",)
    scale_format: str | None = None      # the dot rows' scale inputs (NVFP4: E4M3)
    simd_width: int | None = None        # also a packed-SIMD mul row of this width


SETS = (
    FlexSet("OCP FP8", ("fp8e4m3", "fp8e5m2"), "both OCP 8-bit formats (E4M3 forward, E5M2 "
            "gradients)", units=("mul", "add", "dot")),
    FlexSet("f8f6f4", ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1"),
            "a tensor core's f8f6f4 operand kinds", units=("mul", "dot")),
    FlexSet("E4M3 + NVFP4", ("fp8e4m3", "fp4e2m1"), "FP8 and NVFP4 (E2M1 elements, E4M3 block "
            "scales) on one dot unit", units=("dot",), scale_format="float8_e4m3fn"),
    FlexSet("CVFPU", ("fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"), "CVFPU's formats: one "
            "fp32 or two 16-bit or four 8-bit operations", units=("mul",), simd_width=32),
)


@dataclass(frozen=True)
class FlexCase:
    """One row: the multi-format unit's option values, and each member's alone with the number
    of copies it stands for (its lanes in a packed-SIMD row)."""

    set_name: str
    unit: str
    layout: str                          # "one lane" or "simd W"
    multi: tuple                         # (option, value) pairs for rtl.kinds.make_spec
    members: tuple                       # ((format, copies, (option, value) pairs), ...)


def _unit_values(s: FlexSet, unit: str) -> tuple[tuple, list]:
    """(the multi-format unit's values, each member's) for ``unit`` over ``s``."""
    fmts = ",".join(s.formats)
    if unit == "dot":
        common = (("n", DOT_N),) + ((("scale_format", s.scale_format),) if s.scale_format else ())
        return (("formats", fmts),) + common, [(("in_format", f),) + common for f in s.formats]
    return (("formats", fmts),), [(("format", f),) for f in s.formats]


def cases(sets=SETS) -> list[FlexCase]:
    from fpforge.rtl.format_names import resolve
    out = []
    for s in sets:
        for unit in s.units:
            multi, members = _unit_values(s, unit)
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


def _case(unit: str, values: tuple, label: str):
    from fpforge.synth.sweep import Case
    fmt = dict(values).get("format") or dict(values).get("in_format") or \
        dict(values)["formats"].split(",")[0]
    return Case(fmt, unit, label, values, deep=True)


def measure(flex: list[FlexCase], out: Path, jobs: int) -> tuple[list[FlexRow], dict]:
    """Synthesise every multi-format unit and member (kept by content key under out/results)."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    from fpforge.synth.sweep import sweep
    plan = [(c, _case(c.unit, c.multi, f"flexibility {c.set_name} {c.layout}"),
             [(f, n, _case(c.unit, m, "flexibility member")) for f, n, m in c.members])
            for c in flex]
    all_cases = list(dict.fromkeys([p[1] for p in plan] + [m[2] for p in plan for m in p[2]]))
    with ProgressBar(None, "flexibility synthesis jobs done") as bar:
        results, _, meta = sweep(all_cases, out_dir=out / "synth", jobs=jobs,
                                 store=ResultStore(out / "results"), progress=bar.on_done)
    by_case = dict(zip(all_cases, results))
    rows = []
    for c, multi, members in plan:
        row = FlexRow(c.set_name, c.unit, c.layout, ",".join(f for f, _, _ in members))
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
    return rows, meta


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
        f"- **dot rows**: n = {DOT_N}, exact accumulation into float32, scales as the set says.",
        "", "![flexibility](flexibility.png)", "",
        "| set | unit | layout | multi-format GE | ps | largest member | GE | ps | sum GE | "
        "vs largest | vs sum | vs first |",
        "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        def f(v, d=1):
            return "" if v is None else f"{v:.{d}f}"
        lines.append(f"| {r.set} | {r.unit} | {r.layout} | {f(r.ge)} | {f(r.delay_ps, 0)} | "
                     f"{r.largest} | {f(r.largest_ge)} | {f(r.largest_delay_ps, 0)} | "
                     f"{f(r.sum_ge)} | {f(r.vs_largest, 2)}x | {f(r.vs_sum, 2)}x | "
                     f"{f(r.vs_first, 2)}x |")
    lines += ["", "Members alone (GE, ps; copies in a packed-SIMD row):", ""]
    for r in rows:
        parts = [f"{k} {'%dx ' % n if n > 1 else ''}{ge} GE {ps:.0f} ps"
                 for k, (n, ge, ps) in r.members.items() if ge is not None]
        lines.append(f"- {r.set} {r.unit} ({r.layout}): " + "; ".join(parts))
    return "\n".join(lines) + "\n"


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
    ax.set_xticklabels([f"{r.set}\n{r.unit} {r.layout}" for r in shown], fontsize=7)
    ax.set_ylabel("area (GE)")
    ax.set_title("The cost of flexibility (fpforge cells, deep job)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_csv(rows: list[FlexRow], path: Path) -> None:
    """One line per row; the members as ``format:copies:GE:ps`` words."""
    names = [f.name for f in fields(FlexRow)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            cells = {**asdict(r), "members": " ".join(
                f"{k}:{n}:{ge}:{ps}" for k, (n, ge, ps) in r.members.items())}
            w.writerow(["" if cells[n] is None else cells[n] for n in names])


def run_flexibility(out: Path, jobs: int = 2, sets=SETS) -> list[FlexRow]:
    """Measure, then write the report files into ``out`` (stale ones removed first)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:
        (out / name).unlink(missing_ok=True)
    start = time.monotonic()
    rows, meta = measure(cases(sets), out, jobs)
    meta = {k: meta.get(k) for k in ("library", "yosys", "rtl", "yosys cpu seconds")} | \
        {"seconds": round(time.monotonic() - start, 1)}
    _write_csv(rows, out / "flexibility.csv")
    (out / "flexibility.json").write_text(json.dumps(
        {"meta": meta, "rows": [asdict(r) for r in rows]}, indent=1))
    (out / "flexibility.md").write_text(markdown(rows, meta))
    plot(rows, out / "flexibility.png")
    return rows
