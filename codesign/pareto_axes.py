"""The configurations ``fpforge pareto`` measures: the axes of its sweep (element format,
scaling, block, scale rule, rounding, accumulator), their combinations as GemmConfigs
(golden/gemm_config.py), and how a configuration is named and what it stores per element."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from fpforge.golden.gemm_config import ACCUMULATOR_PRESETS, SCALINGS, Accumulator, GemmConfig
from fpforge.golden.tensor_core import FUSED_PRESETS, FusedAccumulator
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES
from fpforge.rtl.options import OptionError

from .nonlinear import FuncConfig
from .nonlinear import parse as parse_nonlinear

__all__ = ["Axes", "QUICK", "FULL", "ROUNDINGS", "DOT_LENGTHS", "NONLINEAR", "configurations",
           "nonlinear_configurations", "accum_name", "label", "bits_per_elem"]

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
    # Rows of their own, not crossed with the others: softmax and LayerNorm's 1/sqrt on the
    # exp2, recip and rsqrt units, "FORMAT ACCURACY" each (codesign/nonlinear.py).
    nonlinear: tuple = ()

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
        for entry in self.nonlinear:
            parse_nonlinear(entry)


def _one_of(name, values, valid):
    bad = [v for v in values if v not in valid]
    if bad:
        raise OptionError(f"unknown {name} {bad[0]!r}; valid: {', '.join(valid)}")


# The quick run (make pareto): the OCP MX elements with MX blocks of 32 and per tensor, three
# accumulators. The full run adds INT4 and FNUZ elements, per-channel and float32 scales, block
# sizes, scale rules (NVFP4's and P3109's value scales among them) and roundings.
# Both run the nonlinear units in bf16, fp16 and fp8e4m3 at both accuracies.
NONLINEAR = tuple(f"{fmt} {accuracy}" for fmt in ("bf16", "fp16", "fp8e4m3")
                  for accuracy in ("correct", "faithful"))
QUICK = Axes(nonlinear=NONLINEAR)
FULL = Axes(elements=QUICK.elements + ("int4", "fp8e4m3fnuz", "fp8e5m2fnuz"), scaling=SCALINGS,
            block=(8, 16, 32, 64),
            scale_rule=SCALE_RULES + ("nvfp4_te", "p3109_maxabs"),
            rounding=("rne", "rtz", "stochastic"),
            accum=tuple(ACCUMULATOR_PRESETS) + tuple(FUSED_PRESETS), nonlinear=NONLINEAR)


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


def nonlinear_configurations(axes: "Axes | tuple[Axes, ...]") -> list[FuncConfig]:
    """Every nonlinear entry of the axes (of each of a tuple of axes, in order, once each)."""
    return list(dict.fromkeys(parse_nonlinear(e) for a in
                              (axes if isinstance(axes, tuple) else (axes,))
                              for e in a.nonlinear))


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


def bits_per_elem(c: GemmConfig) -> float:
    """Element bits plus the scale's share: 8 bits (E8M0, NVFP4's E4M3) or 32 (float32) per
    block; per channel, per row of K (K = 4096 here, the longer dot length measured); per
    tensor (and a two-level recipe's second level), none to speak of."""
    per = {"block": c.block, "channel": DOT_LENGTHS[-1],
           "channel_f32": DOT_LENGTHS[-1]}.get(c.scaling)
    scale_bits = 32 if c.scaling.endswith("_f32") else c.scale_fmt.width
    return element_format(c.elem_a).width + (scale_bits / per if per else 0.0)
