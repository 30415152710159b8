"""The format sets one multi-format unit serves (rtl/multiformat.py), as accelerators argue about
them (docs/multiformat.md): the sweep's multi-format rows (synth/sweep.py) and the flexibility
report (codesign/flexibility.py) both take them from here, so both price the same sets.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FlexSet", "SETS"]


@dataclass(frozen=True)
class FlexSet:
    """A set of formats one unit serves, and which units the report builds over it."""

    name: str
    formats: tuple[str, ...]
    why: str
    units: tuple[str, ...] = ("mul",)
    scale_format: str | None = None      # the dot rows' scale inputs (NVFP4: E4M3)
    simd_width: int | None = None        # also a packed-SIMD mul row of this width
    # (accumulation, n, option values) of each dot row; empty: the flexibility report's own
    dot_rows: tuple = ()


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
