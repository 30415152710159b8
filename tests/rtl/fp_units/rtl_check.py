"""What the unit-vs-golden tests of rtl/fp_units share.

A unit (or a :class:`Bank` of several units that read the same inputs) is simulated on the batch
Icarus engine (sim/engines/batch.py) and every output port is compared with the golden model by
the benches' one checker (sim/check.py), so a failure shows the first mismatches decoded: every
operand and result in hex with its value and class, flags by name, differing bus elements.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpforge import golden
from fpforge.rtl import emit
from fpforge.rtl.kinds import build
from fpforge.rtl.scalar import MulSpec, ScalarSpec
from fpforge.rtl.spec import Spec
from fpforge.sim.check import Checker, expected
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.stimulus.base import exhaustive, mode_inputs, space_size

ENGINE = BatchEngine()


class Bank(wiring.Component):
    """Several combinational units on the same inputs, as one module: one Verilog conversion and
    one simulation for all of them (a block unit's conversion costs seconds). The inputs are the
    first unit's; unit j's outputs are its output ports with the suffix j (``y0``, ``flags0``)."""

    def __init__(self, specs: list[Spec]):
        self.specs = list(specs)
        inputs = self.specs[0].inputs()
        shape = [(p.name, p.lanes, p.lane_width) for p in inputs]
        for s in self.specs:
            if [(p.name, p.lanes, p.lane_width) for p in s.inputs()] != shape or s.stages:
                raise ValueError(f"a bank holds combinational units on the same inputs; "
                                 f"{s.default_name} does not fit {self.specs[0].default_name}")
        self.ports = [*inputs, *(replace(p, name=f"{p.name}{j}")
                                 for j, s in enumerate(self.specs) for p in s.outputs())]
        super().__init__({p.name: (In if p.is_input else Out)(p.width) for p in self.ports})

    def elaborate(self, platform):
        m = Module()
        for j, s in enumerate(self.specs):
            unit = m.submodules[f"u{j}"] = build(s)
            m.d.comb += [getattr(unit, p.name).eq(getattr(self, p.name)) for p in s.inputs()]
            m.d.comb += [getattr(self, f"{p.name}{j}").eq(getattr(unit, p.name))
                         for p in s.outputs()]
        return m


def design_of(specs: list[Spec]) -> Design:
    """One spec: its unit as the emitter writes it (cached). Several: a :class:`Bank` of them.

    The bank's Design is made here rather than by ``Design.from_component``, which gives every
    port one lane: the engines move at most 32 bits per lane, and a bank's buses (a block of
    float32 values) are wider."""
    if len(specs) == 1:
        return Design.of(specs[0])
    bank = Bank(specs)
    name = f"bank{len(specs)}_{specs[0].default_name}"
    return Design(spec=None, top=name, ports=tuple(bank.ports), text=emit.convert(bank, name),
                  label=name)


def check(specs: list[Spec], inputs: dict, design: Design | None = None) -> list[Checker]:
    """Simulate ``design`` (default: :func:`design_of` the specs; a broken variant with the same
    ports otherwise) on ``inputs`` and check each spec's outputs against its golden model."""
    design = design or design_of(specs)
    out = ENGINE.simulate(design, inputs)
    checkers = []
    for j, spec in enumerate(specs):
        got = out if len(specs) == 1 else {p.name: out[f"{p.name}{j}"] for p in spec.outputs()}
        checker = Checker(spec, spec.inputs(), spec.outputs(), max_report=4)
        checker.check(inputs, 0, expected(spec, inputs), got)
        checkers.append(checker)
    return checkers


def failures(checkers: list[Checker]) -> str:
    return "\n".join(f"{c.spec.describe()}: {c.mismatches} of {c.vectors} vectors differ\n  "
                     + "\n  ".join(c.lines) for c in checkers if c.mismatches)


def assert_exact(specs: list[Spec], inputs: dict, design: Design | None = None):
    checkers = check(specs, inputs, design)
    assert all(c.vectors for c in checkers), "no vectors checked"
    assert not any(c.mismatches for c in checkers), failures(checkers)


# ----- scalar stimulus ---------------------------------------------------------------------------

def every_input(spec: Spec) -> dict:
    """Every operand tuple (rm and rbits are drawn per vector by :func:`check_scalar`)."""
    return exhaustive(spec, 0, space_size(spec))


def sampled(spec: ScalarSpec, n: int, seed: int) -> dict:
    """Uniform random codes, then cancellation-biased vectors in the last third: fma's c is
    -round(a*b) nudged by a few ulps, add's b is -a (sub's b is a) nudged."""
    rng = np.random.default_rng(seed)
    ops = {p: rng.integers(0, 1 << f.width, n, dtype=np.uint64).astype(np.uint32)
           for p, f in zip(spec.operands, spec.in_fmts)}
    k = n // 3
    if spec.unit == "fma":
        cf = spec.in_fmts[2]
        p = golden.evaluate(MulSpec(cf, spec.in_fmts[:2]), a=ops["a"][-k:], b=ops["b"][-k:])["y"]
        p = np.asarray(p).astype(np.uint32) ^ np.uint32(cf.sign_mask)
        ops["c"][-k:] = p ^ rng.integers(0, 4, k, dtype=np.uint32) * (rng.random(k) < 0.5)
    elif spec.unit in ("add", "sub") and spec.in_fmts[0] == spec.in_fmts[1]:
        f = spec.in_fmts[0]
        flip = 0 if spec.unit == "sub" else f.sign_mask
        ops["b"][-k:] = (ops["a"][-k:] ^ np.uint32(flip)) + \
            rng.integers(-2, 3, k).astype(np.uint32)
        ops["b"] &= np.uint32((1 << f.width) - 1)
    return ops


def with_modes(spec: Spec, operands: dict, seed: int) -> dict:
    """The operands plus ``rm`` (every code, reserved ones included) and ``rbits`` drawn per
    vector, where the unit has them."""
    n = len(next(iter(operands.values())))
    return operands | mode_inputs(spec, np.random.default_rng(seed + 1), n)


def check_scalar(spec: ScalarSpec, operands: dict, seed: int = 0):
    assert_exact([spec], with_modes(spec, operands, seed))
