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

The axes' ``nonlinear`` entries add rows of their own (codesign/nonlinear.py): softmax and
LayerNorm's 1/sqrt on the exp2, recip and rsqrt units of a format and accuracy, their quality
through those units' golden models in the digits MLP and MiniLM, their cost those units
synthesised the same way.

The join goes to pareto.csv / pareto.json (one row per configuration), pareto.md (the table,
the front in bold, how every figure was measured) and pareto.png. The configurations come from
codesign/pareto_axes.py, the rows' front and rendering from codesign/pareto_report.py.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict
from pathlib import Path

from fpforge.golden.gemm_config import GemmConfig
from fpforge.golden.tensor_core import FusedAccumulator
from fpforge.rtl.elements import element_format

from .energy import ENERGY_DATA, ENERGY_LIBRARY, ENERGY_VECTORS, step_energy
from . import nonlinear
from .pareto_axes import (DOT_LENGTHS, QUICK, Axes, accum_name, bits_per_elem, configurations,
                          label, nonlinear_configurations)
from .pareto_report import (ENERGY_PANELS, FRONT_METRIC, NONLINEAR_FRONT, Row, front,
                             is_nonlinear, markdown, plot)
from .roofline import Machine, write_roofline

__all__ = ["DEFAULT_OUT", "REPORT_FILES", "measure", "hardware_cases", "firings", "lanes",
           "energy_cost", "run_pareto"]

DEFAULT_OUT = Path("build/pareto")
REPORT_FILES = ("pareto.csv", "pareto.json", "pareto.md", "pareto.png", "energy.png",
                "roofline.md", "roofline.json")


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


def quality(configs, funcs, rows, out: Path, jobs: int) -> None:
    """Every row's quality figures: the GEMM configurations' (measure), then the nonlinear
    ones' (nonlinear.measure), in ``rows``' order."""
    from fpforge.infra.executor import LocalExecutor, ProgressBar, Task, digest
    cache = str((out / "jax-cache").resolve())
    tasks = [Task(digest("pareto quality", repr(c)), "fpforge.codesign.pareto:measure",
                  (c, cache), label(c)) for c in configs]
    tasks += [Task(digest("pareto nonlinear quality", repr(f)),
                   "fpforge.codesign.nonlinear:measure", (f, cache), f.label) for f in funcs]
    executor = LocalExecutor(jobs, processes=True)
    try:
        with ProgressBar(len(tasks), "quality (emulated hardware)") as bar:
            results = executor.run(tasks, on_done=bar.on_done)
    finally:
        executor.close()
    for row, figures in zip(rows, results):
        for k, v in figures.items():
            # a nonlinear row's errors are far below 1e-4 (fp16): 4 significant digits
            setattr(row, k, v if not math.isfinite(v) else
                    float(f"{v:.4g}") if is_nonlinear(row) else round(v, 4))


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


def firings(c: GemmConfig) -> dict:
    """How often each role's unit works per MAC step: the dot unit and the running sum's adder
    once, the float32 adder promoted into once per ``promote_every`` terms."""
    acc = c.accum
    if isinstance(acc, FusedAccumulator):
        return {"dot": 1.0}
    return {"dot": 1.0, "adder": 1.0} | ({"promotion": c.block / acc.promote_every}
                                         if acc.promote_every else {})


def lanes(c: GemmConfig) -> int:
    """MACs per step: the dot unit's products (a tensor-core step's group)."""
    return c.accum.group if isinstance(c.accum, FusedAccumulator) else c.block


def _synthesise(plans, out: Path, jobs: int, what: str) -> tuple[dict, dict]:
    """({Case: sweep Row}, the sweep's run metadata) of every (role, Case) of ``plans``, each
    unit once, stored by content key under out/results."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    from fpforge.synth.sweep import sweep
    cases = list(dict.fromkeys(case for plan in plans for _, case in plan))
    if not cases:
        return {}, {}
    with ProgressBar(None, what) as bar:
        results, _, meta = sweep(cases, out_dir=out / "synth", jobs=jobs,
                                 store=ResultStore(out / "results"), progress=bar.on_done)
    return dict(zip(cases, results)), meta


def cost(configs, rows, out: Path, jobs: int) -> dict:
    """Synthesise every configuration's units (stored by content key under out/results) and
    fill in GE per MAC and delay. Returns the sweep's run metadata."""
    plans = [hardware_cases(c) for c in configs]
    by_case, meta = _synthesise(plans, out, jobs, "synthesis jobs done")
    for c, plan, row in zip(configs, plans, rows):
        units = {role: by_case[case] for role, case in plan}
        if not units or any(u.status != "ok" for u in units.values()):
            continue
        # One MAC step: the dot unit's block of products, then the running sum's adder (and,
        # every N_C terms, the float32 adder it is promoted into), per lane of the dot unit.
        area = sum(u.ge for u in units.values())
        row.ge_per_mac = round(area / lanes(c), 2)
        adder = units.get("adder")
        row.delay_ps = round(units["dot"].delay_ps + (adder.delay_ps if adder else 0), 1)
        row.dot_ge, row.adder_ge = units["dot"].ge, adder.ge if adder else None
    return meta


def nonlinear_cost(funcs, rows, out: Path, jobs: int) -> dict:
    """Synthesise every nonlinear row's units (nonlinear.hardware_cases; stored by content key
    as the GEMM units') and fill in their GE and the slowest unit's delay."""
    plans = [nonlinear.hardware_cases(f) for f in funcs]
    by_case, meta = _synthesise(plans, out, jobs, "nonlinear synthesis jobs done")
    for plan, row in zip(plans, rows):
        units = {role: by_case[case] for role, case in plan}
        if any(u.status != "ok" for u in units.values()):
            continue
        row.exp2_ge, row.recip_ge, row.rsqrt_ge = (units[u].ge for u in nonlinear.FUNC_UNITS)
        row.func_ge = round(sum(u.ge for u in units.values()), 2)
        row.delay_ps = max(u.delay_ps for u in units.values())
    return meta


def energy_cost(configs, rows, out: Path, jobs: int, vectors: int = ENERGY_VECTORS) -> dict:
    """The same units on sky130hd, each one's power on ``vectors`` operand vectors of every
    data set of ENERGY_DATA (codesign/energy.py; minilm where its weights are installed, as for
    its quality figures); fill in µm² and pJ per MAC and TFLOPS/W.
    Synthesis and power are kept by content key under out/results like the cost's. Returns
    how it was measured."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    from fpforge.synth.sweep import sweep
    from fpforge.synth.sweep_power import PowerRun
    from . import minilm
    from .power_data import operand_vectors
    start = time.monotonic()
    plans = [hardware_cases(c) for c in configs]
    cases = list(dict.fromkeys(case for plan in plans for _, case in plan))
    if not cases:
        return {}
    # MiniLM's operands need its weights, like its quality figures: without them, gaussian only
    sets = [d for d in ENERGY_DATA if d != "minilm" or minilm.available() is None]
    by_data, meta = {}, {}
    for data in sets:
        with ProgressBar(None, f"{ENERGY_LIBRARY} synthesis and power ({data}) jobs done") as bar:
            results, _, meta = sweep(cases, out_dir=out / "synth", jobs=jobs,
                                     store=ResultStore(out / "results"), lib=ENERGY_LIBRARY,
                                     power=PowerRun(data, vectors, operand_vectors),
                                     progress=bar.on_done)
        by_data[data] = dict(zip(cases, results))
    for c, plan, row in zip(configs, plans, rows):
        units = {data: {role: by_data[data][case] for role, case in plan} for data in sets}
        if any(u.power is None for us in units.values() for u in us.values()):
            continue
        first = units[sets[0]]
        # the step's clock on sky130hd, as delay_ps on fpforge's cells: dot + adder
        step_ps = first["dot"].delay_ps + (first["adder"].delay_ps if "adder" in first else 0)
        row.um2_per_mac = round(sum(u.area_um2 for u in first.values()) / lanes(c), 2)
        row.energy_step_ps = round(step_ps, 1)
        for data in sets:
            e = step_energy({role: u.power for role, u in units[data].items()}, firings(c),
                            lanes(c), step_ps)
            setattr(row, f"pj_per_mac_{data}", round(e.pj_per_mac, 5))
            setattr(row, f"tflops_per_w_{data}", round(e.tflops_per_w, 3))
            if data == "gaussian":
                row.leakage_pj_per_mac = round(e.leakage_pj_per_mac, 6)
    return {"library": meta["power"]["library"], "data": sets, "vectors": vectors,
            "seconds": round(time.monotonic() - start, 1)}


# ----- the join --------------------------------------------------------------------------------

def run_pareto(*, axes: "Axes | tuple[Axes, ...]" = QUICK, out: Path = DEFAULT_OUT,
               jobs: int = 2, machine: Machine = Machine(), power: bool = False,
               vectors: int = ENERGY_VECTORS) -> int:
    """The study; ``power``: with energy per MAC (energy_cost) and energy.png."""
    configs = configurations(axes)                 # bad axes fail here, before any work
    funcs = nonlinear_configurations(axes)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:                       # no stale report beside a new run
        (out / name).unlink(missing_ok=True)
    start = time.monotonic()
    rows = [Row(label(c), c.elem_a, c.elem_b or c.elem_a, c.scaling, c.block, c.scale_rule,
                c.rounding, accum_name(c.accum), bits_per_elem(c)) for c in configs]
    # a nonlinear row: its format, no scaling or block, its softmax's float32 sum
    func_rows = [Row(f.label, f.fmt, f.fmt, "", 0, "", "rne", "float32",
                     float(f.spec("exp2").out_fmt.width), accuracy=f.accuracy) for f in funcs]
    print(f"pareto: {len(configs)} configurations"
          + (f", {len(funcs)} nonlinear" if funcs else ""), flush=True)
    synth_meta = cost(configs, rows, out, jobs)
    func_meta = nonlinear_cost(funcs, func_rows, out, jobs)
    energy_meta = energy_cost(configs, rows, out, jobs, vectors) if power else None
    synth_seconds = time.monotonic() - start
    quality(configs, funcs, rows + func_rows, out, jobs)
    for row, on in zip(rows, front(rows)):
        row.on_front = on
    for row, on in zip(func_rows, front(func_rows, *NONLINEAR_FRONT)):
        row.on_front = on
    cpu = [m["yosys cpu seconds"] for m in (synth_meta, func_meta) if m.get("yosys cpu seconds")]
    meta = {"configurations": len(rows), "synthesis seconds": round(synth_seconds, 1),
            "quality seconds": round(time.monotonic() - start - synth_seconds, 1),
            "yosys cpu seconds": round(sum(cpu), 1) if func_meta else
            synth_meta.get("yosys cpu seconds"),
            "library": synth_meta.get("library", "").split(" at ")[0],
            "yosys": synth_meta.get("yosys", ""),
            "rtl": synth_meta.get("rtl", ""), "energy": energy_meta,
            "axes": [asdict(a) for a in axes] if isinstance(axes, tuple) else asdict(axes)}
    if funcs:
        meta["nonlinear"] = len(funcs)
    from fpforge.synth.sweep_report import write_csv
    write_csv(rows + func_rows, out / "pareto.csv")
    (out / "pareto.json").write_text(json.dumps({"meta": meta, "rows": [
        asdict(r) for r in rows + func_rows]}, indent=1))
    (out / "pareto.md").write_text(markdown(rows + func_rows, meta))
    plot(rows, out / "pareto.png")
    if power:
        plot(rows, out / "energy.png", ENERGY_PANELS)
    write_roofline([asdict(r) for r in rows], machine, out)
    on = [r for r in rows if r.on_front]
    print(f"{len(rows)} configurations in {time.monotonic() - start:.0f} s "
          f"(synthesis {synth_seconds:.0f} s); front on {FRONT_METRIC}: "
          f"{', '.join(r.config for r in on)}")
    if funcs:
        print(f"nonlinear front on {NONLINEAR_FRONT[0]}: "
              f"{', '.join(r.config for r in func_rows if r.on_front)}")
    print(f"report: {out / 'pareto.md'}")
    return 0
