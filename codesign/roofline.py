"""The roofline step of `fpforge pareto`: what each configuration's synthesised MAC means for a
transformer layer's speed, beside its quality (docs/codesign.md).

From a stated silicon budget (mm² of fpforge's cells spent on MAC units, the synthesised GE per
MAC and step delay or a stated clock; or iso-power: watts spent on MAC units and the energy per
MAC measured on sky130hd), a stated memory bandwidth and the bytes per element
including the scales: peak MAC/s, and for each GEMM of a layer max(compute time, memory time),
summed over the layer's GEMMs. Everything else a layer does (softmax, norms, activations, the
overlap of one GEMM with the next) is left out, and the report says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from fpforge.rtl.options import OptionError

from .energy import ENERGY_DATA

__all__ = ["Machine", "Layer", "LAYERS", "gemms", "roofline_rows", "write_roofline"]

OUT_BYTES = 2            # every GEMM writes bfloat16 results


@dataclass(frozen=True)
class Machine:
    """The stated assumptions. ``clock_mhz`` None: each configuration's own step delay.
    ``power_w``: an iso-power array instead (as many MAC units as that power feeds at their
    energy per MAC on ``power_data``'s operands; ``area_mm2`` is then unused)."""

    area_mm2: float = 100.0
    bandwidth_gbs: float = 3350.0        # HBM3, 5 stacks (an H100 SXM's 3.35 TB/s)
    clock_mhz: float | None = None
    power_w: float | None = None
    power_data: str = "gaussian"

    def __post_init__(self):
        for name in ("area_mm2", "bandwidth_gbs", "clock_mhz", "power_w"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise OptionError(f"--{name.replace('_', '-')} must be a positive number, not "
                                  f"{v!r}")
        if self.power_data not in ENERGY_DATA:
            raise OptionError(f"--power-data must be one of {', '.join(ENERGY_DATA)}, not "
                              f"{self.power_data!r}")


@dataclass(frozen=True)
class Layer:
    """One transformer layer's shape and the work it is timed on."""

    name: str
    d_model: int
    d_ff: int
    heads: int
    kv_heads: int
    tokens: int                 # new tokens per sequence (prefill) or 1 (decode)
    batch: int = 1
    context: int = 0            # cached tokens attended to (decode)
    gated: bool = False         # SwiGLU: up and gate projections

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def describe(self) -> str:
        work = f"prefill of {self.tokens} tokens" if not self.context else \
            f"decode of 1 token at batch {self.batch} over a {self.context}-token KV cache"
        ffn = "SwiGLU" if self.gated else "GELU"
        return (f"{self.name}: d_model {self.d_model}, d_ff {self.d_ff} ({ffn}), "
                f"{self.heads} query / {self.kv_heads} KV heads of {self.head_dim}; {work}")


LAYERS = (
    Layer("MiniLM-L6 layer", 384, 1536, 12, 12, tokens=128),
    Layer("decoder layer, prefill", 4096, 14336, 32, 8, tokens=2048, gated=True),
    Layer("decoder layer, decode b1", 4096, 14336, 32, 8, tokens=1, batch=1, context=2048,
          gated=True),
    Layer("decoder layer, decode b64", 4096, 14336, 32, 8, tokens=1, batch=64, context=2048,
          gated=True),
)


def gemms(layer: Layer) -> list[tuple[str, int, int, int, int, bool]]:
    """(name, count, M, K, N, weight) of each GEMM: ``count`` of them, (M, K) @ (K, N);
    ``weight``: the (K, N) operand is a weight matrix, read once for the whole batch."""
    t = layer.tokens * layer.batch
    d, hd = layer.d_model, layer.head_dim
    kv = layer.kv_heads * hd
    out = [("qkv projection", 1, t, d, d + 2 * kv, True),
           ("output projection", 1, t, d, d, True),
           ("ffn up" + (" + gate" if layer.gated else ""), 1, t, d,
            layer.d_ff * (2 if layer.gated else 1), True),
           ("ffn down", 1, t, layer.d_ff, d, True)]
    group = layer.heads // layer.kv_heads
    if layer.context:            # each sequence's queries of a KV group against its cache
        n = layer.batch * layer.kv_heads
        out += [("attention scores", n, group, hd, layer.context, False),
                ("attention values", n, group, layer.context, hd, False)]
    else:
        n = layer.batch * layer.heads
        out += [("attention scores", n, layer.tokens, hd, layer.tokens, False),
                ("attention values", n, layer.tokens, layer.tokens, hd, False)]
    return out


def layer_seconds(layer: Layer, peak_macs: float, bytes_per_elem: float,
                  bandwidth: float) -> float:
    """Sum over the layer's GEMMs of max(MACs / peak, bytes / bandwidth)."""
    total = 0.0
    for _, count, m, k, n, _weight in gemms(layer):
        compute = m * k * n / peak_macs
        traffic = (m * k + k * n) * bytes_per_elem + m * n * OUT_BYTES
        total += count * max(compute, traffic / bandwidth)
    return total


def roofline_rows(rows: list[dict], machine: Machine) -> list[dict]:
    """Per pareto row with a cost (with ``machine.power_w``: an energy): peak MAC/s and each
    layer's tokens/s."""
    out = []
    for r in rows:
        array = _iso_power(r, machine) if machine.power_w else _iso_area(r, machine)
        if array is None:
            continue
        peak, clock = array.pop("peak"), array.pop("clock")
        bpe = r["bits_per_elem"] / 8
        fig = {"config": r["config"], "elem": r["elem_a"], "scaling": r["scaling"],
               "block": r["block"], "accum": r["accum"], "bits_per_elem": r["bits_per_elem"],
               "ge_per_mac": r["ge_per_mac"], "delay_ps": r["delay_ps"],
               "clock_mhz": round(clock / 1e6, 1),
               "peak_tmacs": round(peak / 1e12, 4),
               "peak_tflops": round(2 * peak / 1e12, 4),          # a MAC is 2 operations
               "bytes_per_elem": round(bpe, 4), **array,
               "qsnr_dot_db": r.get("qsnr_dot_db"), "minilm_qsnr_db": r.get("minilm_qsnr_db"),
               "digits_acc": r.get("digits_acc")}
        for layer in LAYERS:
            s = layer_seconds(layer, peak, bpe, machine.bandwidth_gbs * 1e9)
            fig[_key(layer)] = round(layer.tokens * layer.batch / s, 1)
        out.append(fig)
    return out


def _iso_area(r: dict, machine: Machine) -> dict | None:
    """area / (GE per MAC x NAND2 area) MAC units at the clock."""
    from fpforge.synth.cells import NAND2_AREA
    if not r.get("ge_per_mac") or not r.get("delay_ps"):
        return None
    clock = machine.clock_mhz * 1e6 if machine.clock_mhz else 1e12 / r["delay_ps"]
    peak = machine.area_mm2 * 1e6 / (r["ge_per_mac"] * NAND2_AREA) * clock
    return {"peak": peak, "clock": clock, "peak_macs_per_mm2": round(peak / machine.area_mm2, 4)}


def _iso_power(r: dict, machine: Machine) -> dict | None:
    """power / (energy per MAC) MAC/s, whatever the clock (a faster clock needs fewer units);
    at a stated clock the leakage is charged over its period instead of the step's. The
    units' sky130hd area is what the array takes."""
    pj = r.get(f"pj_per_mac_{machine.power_data}")
    step = r.get("energy_step_ps")
    if not pj or not step:
        return None
    clock = machine.clock_mhz * 1e6 if machine.clock_mhz else 1e12 / step
    pj += (r.get("leakage_pj_per_mac") or 0.0) * (1e12 / clock / step - 1)
    peak = machine.power_w / (pj * 1e-12)
    fig = {"peak": peak, "clock": clock, "energy_step_ps": step, "pj_per_mac": round(pj, 5),
           "tflops_per_w": round(2 / pj, 4)}
    if r.get("um2_per_mac"):
        fig["array_mm2"] = round(peak / clock * r["um2_per_mac"] / 1e6, 3)
    return fig


def _key(layer: Layer) -> str:
    return "tokens_per_s " + layer.name


def markdown(figures: list[dict], machine: Machine) -> str:
    from fpforge.synth.cells import NAND2_AREA
    if machine.power_w:
        clock = f"{machine.clock_mhz:g} MHz for every unit (leakage charged over its period)" \
            if machine.clock_mhz else "each configuration's own step on sky130hd: 1 / (its " \
            "dot + adder delay there)"
        array = (f"- MAC array: iso-power, {machine.power_w:g} W spent on MAC units; MAC/s = "
                 f"that power / (pJ per MAC on sky130hd, {machine.power_data} operands; "
                 f"fpforge pareto --power), whatever the clock: a faster clock needs fewer "
                 f"units. mm²: the sky130hd area of the units that takes. No wiring, SRAM, "
                 f"control, clock tree or pipeline registers.")
        extra = ("sky130hd ps", "pJ/MAC", "TFLOPS/W", "mm²")
    else:
        clock = f"{machine.clock_mhz:g} MHz for every unit" if machine.clock_mhz else \
            "each configuration's own step: 1 / (the synthesised delay of one unpipelined " \
            "MAC step)"
        array = (f"- MAC array: {machine.area_mm2:g} mm² of fpforge's NanGate45-derived cells "
                 f"spent on MAC units; MACs = that area / (GE per MAC x {NAND2_AREA:g} µm², "
                 f"the NAND2_X1 area). No wiring, SRAM, control or pipeline registers.")
        extra = ()
    keys = {"sky130hd ps": ("energy_step_ps", ".0f"), "pJ/MAC": ("pj_per_mac", ".4g"),
            "TFLOPS/W": ("tflops_per_w", ".4g"), "mm²": ("array_mm2", ".4g")}
    lines = ["# Roofline: tokens/s of one transformer layer per configuration", "",
             "Assumptions (every figure below follows from these; `fpforge roofline` recomputes "
             "them with others):", "", array,
             f"- Clock: {clock}.",
             f"- Memory: {machine.bandwidth_gbs:g} GB/s. Operands cross it once per GEMM at the "
             f"configuration's bits per element (scales included); results are written as "
             f"bfloat16 ({OUT_BYTES} bytes). No cache reuse across GEMMs.",
             "- A GEMM takes max(MACs / peak, bytes / bandwidth); a layer the sum over its "
             "GEMMs (projections, FFN, attention scores and values). Softmax, norms, "
             "activations and overlap are left out.",
             *[f"- {layer.describe()}." for layer in LAYERS], "",
             "| configuration | bits/elem | GE/MAC | ps | " +
             "".join(f"{x} | " for x in extra) + "TMAC/s | " +
             " | ".join(layer.name for layer in LAYERS) + " | dot QSNR dB | MiniLM QSNR dB |",
             "|---|---:|---:|---:|" + "---:|" * (len(extra) + 1 + len(LAYERS)) + "---:|---:|"]
    for f in sorted(figures, key=lambda f: -f["peak_tmacs"]):
        lines.append(f"| {f['config']} | {f['bits_per_elem']:.3g} | {f['ge_per_mac']:g} | "
                     f"{f['delay_ps']:g} | " +
                     "".join(f"{_num(f.get(keys[x][0]), keys[x][1])} | " for x in extra) +
                     f"{f['peak_tmacs']:g} | " +
                     " | ".join(f"{f[_key(layer)]:,.0f}" for layer in LAYERS) +
                     f" | {_num(f['qsnr_dot_db'])} | {_num(f['minilm_qsnr_db'])} |")
    lines += ["", "Tokens/s are one layer's (a model of L layers: divide by L). "
              "roofline.json holds the per-format figures for a roofline tool "
              "(docs/codesign.md says how to feed GenZ or LLM-Viewer with them).", ""]
    return "\n".join(lines)


def _num(v, fmt=".1f") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:{fmt}}"


def write_roofline(rows: list[dict], machine: Machine, out: Path) -> list[dict]:
    """roofline.md and roofline.json in ``out`` from pareto rows (dicts)."""
    figures = roofline_rows(rows, machine)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "roofline.json").write_text(json.dumps({
        "assumptions": asdict(machine) | {"out_bytes": OUT_BYTES,
                                          "layers": [asdict(layer) for layer in LAYERS]},
        "formats": figures}, indent=1) + "\n")
    (out / "roofline.md").write_text(markdown(figures, machine))
    return figures
