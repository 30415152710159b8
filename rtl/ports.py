"""The port contract of a unit, written once.

Every spec describes its unit's ports as a list of :class:`Port` (``spec.ports()``), in the
documentation order of docs/verilog-export.md. Everything that needs a port derives it from
there: the Amaranth signature of the component, the export's header, port table, JSON sidecar
and FuseSoC core, the benches' port widths and stimulus, the wrappers synthesis and place and
route build, and the mismatch reports (which decode a port's codes in the format it carries).

A port is ``lanes`` packed elements of ``lane_width`` bits: element i at bits
``[i*lane_width +: lane_width]``. Scalar ports have one lane. Plain Python: no Amaranth.
"""

from __future__ import annotations

from dataclasses import dataclass

from .formats import FloatFormat
from .options import FLAGS_MEANING, FLAGS_WIDTH, RM_MEANING, RM_WIDTH

__all__ = ["Port", "CLOCK", "RESET", "VALID_IN", "VALID_OUT", "READY_OUT", "CONTROL", "clock_ports",
           "result_ports", "valid_ports", "flags_port", "rm_port", "rbits_port"]

CLOCK, RESET, VALID_IN, VALID_OUT = "clk", "rst", "valid_i", "valid_o"
READY_OUT = "ready_o"     # a handshake unit's input ready (div, sqrt --arch iter)
CONTROL = (CLOCK, RESET, VALID_IN, READY_OUT, VALID_OUT)   # clocked units only; no data


@dataclass(frozen=True)
class Port:
    """One port: name, ``input`` or ``output``, ``lanes`` elements of ``lane_width`` bits, the
    format whose codes it carries (None: flags, rm, random bits, control, two's complement
    integers) and what it means."""

    name: str
    direction: str
    lane_width: int
    meaning: str
    lanes: int = 1
    fmt: FloatFormat | None = None

    def __post_init__(self):
        if self.direction not in ("input", "output"):
            raise ValueError(f"port direction must be input or output, not {self.direction!r}")
        for what, v in (("lane_width", self.lane_width), ("lanes", self.lanes)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"port {self.name}: {what} must be a positive integer, not {v!r}")

    @property
    def width(self) -> int:
        """Bits of the whole port, as the Verilog declares it."""
        return self.lanes * self.lane_width

    @property
    def is_input(self) -> bool:
        return self.direction == "input"

    @property
    def is_control(self) -> bool:
        """Clock, reset and the valid signals: what a bench drives itself, never data."""
        return self.name in CONTROL

    def record(self) -> dict:
        """The sidecar's (and the header's) view: name, direction, total width, meaning."""
        return {"name": self.name, "direction": self.direction, "width": self.width,
                "meaning": self.meaning}


def clock_ports(stages: int) -> list[Port]:
    if not stages:
        return []
    return [Port(CLOCK, "input", 1, "clock; registers update on the rising edge"),
            Port(RESET, "input", 1, "synchronous reset, active high: clears every pipeline "
                                    "register and valid")]


def valid_ports(stages: int, inputs: list[str], outputs: str | None = None
                ) -> tuple[list[Port], list[Port]]:
    """([valid_i], [valid_o]) of a pipelined unit, ``([], [])`` for a combinational one.
    ``outputs`` names what valid_o vouches for (default: "the outputs")."""
    if not stages:
        return [], []
    what = outputs or "the outputs"
    return ([Port(VALID_IN, "input", 1, f"marks this cycle's {', '.join(inputs)} as an "
                                        "operation; the data path does not depend on it")],
            [Port(VALID_OUT, "output", 1, f"valid_i delayed by the latency ({stages} cycle(s)): "
                                          f"{what} are that operation's result")])


def flags_port(note: str = "") -> Port:
    """The flags output: the flag order is options.FLAG_ORDER."""
    return Port("flags", "output", FLAGS_WIDTH, FLAGS_MEANING + note)


def result_ports(fmt) -> list[Port]:
    """A one-result unit's outputs: ``y`` (a ``fmt`` code) and the flags."""
    return [Port("y", "output", fmt.width, f"result, {fmt.name} code", fmt=fmt), flags_port()]


def rm_port() -> Port:
    return Port("rm", "input", RM_WIDTH, RM_MEANING)


def rbits_port(sr_bits: int, lanes: int = 1) -> Port:
    if lanes == 1:
        meaning = "uniform random bits for stochastic rounding, fresh every operation"
    else:
        meaning = (f"uniform random bits for stochastic rounding, {sr_bits} per element "
                   f"(element i: rbits[i*{sr_bits} +: {sr_bits}]), fresh every operation")
    return Port("rbits", "input", sr_bits, meaning, lanes)
