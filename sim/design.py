"""What a verification engine simulates: a Verilog module, how its ports map onto a spec's, and
how it is clocked.

A :class:`Design` is either fpforge's own unit (``Design.of(spec)``: the Verilog of the one
emitter, ports named as the spec names them) or any Verilog a user brings
(``Design.from_files``: its :class:`~sim.frontend.Sources`, a top module, a port map from the
spec's port names to the module's, a clock, reset and valid signals when pipelined). Either way
the spec says what it must compute (the golden model) and which ports carry what; engines bind
ports by the map and never read ports out of Verilog text (a user module's ports come from the
SystemVerilog front end's elaboration of it, sim/frontend.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from fpforge.rtl import emit
from fpforge.rtl.ports import CLOCK, READY_OUT, RESET, VALID_IN, VALID_OUT, Port
from fpforge.rtl.spec import Spec

from .binding import Binding, parse_ref, wrapper_name, wrapper_verilog
from .check import NAN_POLICIES
from .errors import DesignError

if TYPE_CHECKING:
    from .frontend import Sources

__all__ = ["Design"]


@dataclass(frozen=True)
class Design:
    """A module to simulate against ``spec``.

    ``text`` holds fpforge's Verilog, ``sources`` a user's (files read where they are, in
    order, with their include directories and defines: sim/frontend.py); ``top`` is the
    module (a user's module's is the wrapper of sim/binding.py, its ports the spec's, written
    in ``text``). ``port_map`` maps each spec data port to the module's port name; spec outputs
    the module does not have are ``absent`` (not compared, and reports say so). ``latency`` is
    the cycles from inputs to outputs; pipelined designs have a ``clock``, maybe a ``reset``
    (``reset_low``: active low) and maybe ``valid_in`` / ``valid_out`` (without them the bench
    counts ``latency`` cycles itself). A design may also have a valid/ready handshake:
    ``ready_in``, its input-ready output (it takes an input on an edge where valid_in and
    ready_in are high), and ``ready_out``, its output-ready input (a result is taken where
    valid_out and ready_out are high); such a design, or one with a valid output and no
    ``latency``, is ``elastic``: the module, not a count of cycles, says when results come.
    ``spec`` may be None for a design that is only simulated
    (``ports`` then lists its data ports). ``nan`` is how an expected NaN is judged
    (sim/check.py NAN_POLICIES): ``exact`` codes for fpforge's own units, ``any`` NaN code of
    the format for a user's module unless asked otherwise, as TestFloat judges.
    ``flags_mask``: the flag bits compared (None: all); ``rm_values``: the rm codes the
    stimulus draws (None: every code the port carries); ``notes``: what a verdict says of the
    binding (undriven inputs, flags not compared)."""

    spec: Spec | None
    top: str
    ports: tuple[Port, ...]
    text: str | None = None
    sources: Sources | None = None
    port_map: dict = field(default_factory=dict)
    absent: tuple[str, ...] = ()
    latency: int = 0
    clock: str | None = None
    reset: str | None = None
    reset_low: bool = False
    valid_in: str | None = None
    valid_out: str | None = None
    label: str = ""
    nan: str = "exact"
    flags_mask: int | None = None
    rm_values: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()
    ready_in: str | None = None
    ready_out: str | None = None

    # ----- construction ------------------------------------------------------------------------
    @classmethod
    def of(cls, spec: Spec, *, name: str | None = None, text: str | None = None,
           label: str = "") -> "Design":
        """fpforge's unit for ``spec`` (or ``text``, a variant of it with the same ports: the
        fault wrappers)."""
        name = name or spec.default_name
        piped = spec.latency > 0
        # A handshake unit (div, sqrt --arch iter) says itself when it takes an operation
        # (ready_o) and when its result comes (valid_o): an elastic design, no fixed latency.
        handshake = getattr(spec, "handshake", False)
        return cls(spec=spec, top=name, ports=_data_ports(spec),
                   text=emit.verilog(spec, name) if text is None else text,
                   latency=0 if handshake else spec.latency, clock=CLOCK if piped else None,
                   reset=RESET if piped else None, valid_in=VALID_IN if piped else None,
                   valid_out=VALID_OUT if piped else None,
                   ready_in=READY_OUT if handshake else None, label=label or name)

    @classmethod
    def from_component(cls, component, name: str, *, latency: int = 0) -> "Design":
        """Any Amaranth component (a test's bank of units, say), simulated only: its signature
        members are the ports, one lane each; pipelined components have clk, rst, valid_i and
        valid_o."""
        from amaranth.hdl import Shape
        from amaranth.lib import wiring
        ports = tuple(Port(n, "input" if m.flow is wiring.In else "output",
                           Shape.cast(m.shape).width, n)
                      for n, m in component.signature.members.items()
                      if n not in (VALID_IN, VALID_OUT))
        piped = latency > 0
        return cls(spec=None, top=name, ports=ports, text=emit.convert(component, name),
                   latency=latency, clock=CLOCK if piped else None,
                   reset=RESET if piped else None, valid_in=VALID_IN if piped else None,
                   valid_out=VALID_OUT if piped else None, label=name)

    @classmethod
    def from_files(cls, spec: Spec, sources, top: str, *, binding: Binding | None = None,
                   port_map: dict | None = None, latency: int = 0, clock: str | None = None,
                   reset: str | None = None, reset_low: bool = False,
                   valid_in: str | None = None, valid_out: str | None = None,
                   ready_in: str | None = None, ready_out: str | None = None,
                   nan: str = "any") -> "Design":
        """A user's module in ``sources`` (a :class:`~sim.frontend.Sources`, or Verilog file
        paths), checked against ``spec`` through ``binding`` (sim/binding.py; plain
        ``port_map`` entries are roles too): every spec input carried with the spec's width,
        every output that exists too, at least one output. What is simulated is the wrapper
        ``fpforge_bind_<top>`` (its data ports named as the spec's) around the module,
        instantiated with the sources' parameter overrides."""
        from .frontend import Sources, instance_params, read_ports
        sources = Sources.of(sources)
        binding = binding or Binding()
        if port_map:
            binding = replace(binding, roles=binding.roles + tuple(
                (k, parse_ref(v, f"--port {k}={v}")) for k, v in port_map.items()))
        if latency and clock is None:
            raise DesignError(f"a design with latency {latency} needs --clock NAME")
        _check_handshake(latency, clock, valid_in, valid_out, ready_in, ready_out)
        have = read_ports(sources, top)
        control = {}
        for what, name, direction in (("--clock", clock, "input"), ("--reset", reset, "input"),
                                      ("--valid-in", valid_in, "input"),
                                      ("--valid-out", valid_out, "output"),
                                      ("--ready-in", ready_in, "output"),
                                      ("--ready-out", ready_out, "input")):
            if name is None:
                continue
            if name not in have:
                raise DesignError(f"{what} {name}: module {top} has no such port; its ports: "
                                  f"{', '.join(sorted(have))}")
            if have[name].direction != direction or have[name].width != 1:
                raise DesignError(f"{what} {name}: module {top} port {name} is an "
                                  f"{have[name].direction} of {have[name].width} bit(s); "
                                  f"{what} names a 1-bit {direction} of the module")
            control[name] = what
        if nan not in NAN_POLICIES:
            raise DesignError(f"--nan must be one of {', '.join(NAN_POLICIES)}, not {nan!r}")
        data = _data_ports(spec)
        bound = binding.resolve(data, have, top, control=tuple(control), unit=spec.default_name)
        return cls(spec=spec, top=wrapper_name(top), ports=data, sources=sources,
                   text=wrapper_verilog(bound, instance_params(sources, top)), absent=bound.absent,
                   latency=latency, clock=clock, reset=reset, reset_low=reset_low,
                   valid_in=valid_in, valid_out=valid_out, ready_in=ready_in,
                   ready_out=ready_out, label=top, nan=nan,
                   flags_mask=bound.flags_mask,
                   rm_values=bound.rm_values() if any(p.name == "rm" for p in data) else None,
                   notes=bound.notes())

    # ----- derived -----------------------------------------------------------------------------
    def outer(self, port: str) -> str:
        """The module's name for spec port ``port``."""
        return self.port_map.get(port, port)

    @property
    def inputs(self) -> list[Port]:
        return [p for p in self.ports if p.is_input]

    @property
    def outputs(self) -> list[Port]:
        """The outputs that are compared (the module's, of the spec's)."""
        return [p for p in self.ports if not p.is_input and p.name not in self.absent]

    @property
    def elastic(self) -> bool:
        """Whether the module decides when it takes inputs and delivers results (a ready
        port, or a valid output and no fixed latency): benches follow its handshake."""
        return bool(self.ready_in or self.ready_out or (self.valid_out and not self.latency))

    def control(self, *, clock: str, reset: str, valid_in: str, valid_out: str,
                ready_in: str = "", ready_out: str = "") -> list[str]:
        """Named connections of a pipelined design's clock, reset (its polarity applied),
        valid and ready ports to the given signals (``""`` leaves an output open; a ready
        output the design has needs ``ready_in``, a ready input ``ready_out``); none when the
        design is combinational."""
        if not (self.latency or self.elastic):
            return []
        conns = [f".{self.clock}({clock})"]
        if self.reset:
            conns.append(f".{self.reset}({'~' if self.reset_low else ''}{reset})")
        if self.valid_in:
            conns.append(f".{self.valid_in}({valid_in})")
        if self.valid_out:
            conns.append(f".{self.valid_out}({valid_out})")
        if self.ready_in:
            conns.append(f".{self.ready_in}({ready_in})")
        if self.ready_out:
            conns.append(f".{self.ready_out}({ready_out})")
        return conns

    @property
    def own_text(self) -> str:
        """The Verilog an engine writes into its build beside its bench: fpforge's module, or a
        user's module's wrapper (its ``sources`` are read where they are, so that an
        `` `include `` finds its file and packages keep their order)."""
        return self.text or ""

    @property
    def source_files(self) -> list[str]:
        """A user's source files, in order (absolute paths), for a simulator's command line."""
        return [str(f) for f in self.sources.files] if self.sources else []

    @property
    def source_args(self) -> list[str]:
        """Include directories and defines of a user's sources, for Verilator or Icarus."""
        return self.sources.tool_args() if self.sources else []

    @property
    def systemverilog(self) -> bool:
        """SystemVerilog sources: simulated on Verilator (Icarus reads Verilog-2005 here)."""
        return self.sources is not None and self.sources.systemverilog

    def key(self) -> str:
        """A digest of everything a build of this design depends on."""
        h = hashlib.sha256()
        if self.text is not None:       # as before sources existed: cached builds stay valid
            h.update(f"{self.top}.v".encode() + b"\0" + self.text.encode() + b"\0")
        if self.sources is not None:
            h.update(self.sources.key().encode())
        h.update(repr((self.top, sorted(self.port_map.items()), self.absent, self.latency,
                       self.clock, self.reset, self.reset_low, self.valid_in, self.valid_out,
                       [(p.name, p.direction, p.lanes, p.lane_width) for p in self.ports]))
                 .encode())
        if self.elastic:        # the keys of designs without a handshake stay as they were
            h.update(repr((self.ready_in, self.ready_out)).encode())
        return h.hexdigest()[:12]


def _check_handshake(latency: int, clock, valid_in, valid_out, ready_in, ready_out) -> None:
    """The combinations of control ports a bench can drive: a ready pairs with its valid, and
    without a fixed latency results come when the valid output says so."""
    if ready_in and not valid_in:
        raise DesignError("--ready-in needs --valid-in NAME (the input valid it answers)")
    if ready_out and not valid_out:
        raise DesignError("--ready-out needs --valid-out NAME (the output valid it answers)")
    if not latency and valid_in and not valid_out:
        raise DesignError("--valid-in without --valid-out needs --latency N (N >= 1)")
    if (ready_out or (valid_out and not latency)) and not valid_in:
        raise DesignError("a handshake design needs --valid-in NAME (it says when the bench "
                          "offers an operation)")
    if (valid_out or ready_in) and clock is None:
        raise DesignError("a design with --valid-out or --ready-in needs --clock NAME")


def _data_ports(spec: Spec) -> tuple[Port, ...]:
    return tuple(p for p in spec.ports() if not p.is_control)
