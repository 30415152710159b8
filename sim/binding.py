"""How a user's module's ports carry a spec's: roles, ties, the flag order and the rounding-mode
codes, resolved against the module's ports and written as one wrapper module.

Every engine simulates a module whose data ports carry the spec's names and widths. For a user's
module that module is ``fpforge_bind_<top>`` (:func:`wrapper_verilog`): it declares the spec's
data ports, passes clock, reset, valid and ready through under the user's names, and inside
assigns one wire per user port, of the port's full width, from roles (``--port a=ops[7:0]``),
ties (``--tie op_sel=2'd1``) and zeros; it re-orders the module's flags into fpforge's order
(flags the module lacks read 0 and are not compared), translates fpforge's rm code into the
module's (``--rm-codes``) and instantiates the user's top once, by named connections.

A port reference is ``NAME``, ``NAME[HI:LO]`` (a part select of the outermost packed
dimension), ``NAME[i]`` (an element: ``ops[1]`` of ``logic [2:0][15:0] ops`` is bits [31:16])
or ``NAME[i][HI:LO]``; it resolves to a run of bits of the port's flattened vector.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import prod

from fpforge.rtl.options import FLAGS_WIDTH, RM_CODES, Flag, OptionError, Rounding
from fpforge.rtl.ports import Port

from .errors import DesignError
from .frontend import BASED_LITERAL, PortInfo

__all__ = ["PortRef", "Bits", "Value", "Binding", "Bound", "parse_ref", "resolve", "parse_value",
           "parse_port", "parse_tie", "parse_flags_order", "parse_rm_codes", "FLAG_NAMES", "RM_PRESETS",
           "wrapper_name", "wrapper_verilog"]

# fpforge's flag order, most significant first (rtl/options.py Flag: RISC-V fflags).
FLAG_NAMES = ("nv", "dz", "of", "uf", "nx")
_FLAG_BIT = {"nv": Flag.NV, "dz": Flag.DZ, "of": Flag.OF, "uf": Flag.UF, "nx": Flag.NX}
RM_PRESETS = {"riscv": tuple(RM_CODES.items())}

_IDENT = r"[A-Za-z_][A-Za-z0-9_$]*"
_REF = re.compile(rf"^({_IDENT})((?:\[\d+(?::\d+)?\])*)$")
_SELECT = re.compile(r"\[(\d+)(?::(\d+))?\]")


# ----- port references ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PortRef:
    """``name`` with its selects: an int is an element, a (hi, lo) pair a part select (last)."""

    name: str
    selects: tuple = ()

    def __str__(self) -> str:
        return self.name + "".join(f"[{s}]" if isinstance(s, int) else f"[{s[0]}:{s[1]}]"
                                   for s in self.selects)


@dataclass(frozen=True)
class Bits:
    """``width`` bits of port ``port``'s flattened vector from bit ``lo``."""

    port: str
    lo: int
    width: int

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1

    def overlaps(self, other: "Bits") -> bool:
        return self.port == other.port and self.lo <= other.hi and other.lo <= self.hi


def parse_ref(text: str, what: str) -> PortRef:
    """``NAME``, ``NAME[HI:LO]``, ``NAME[i]`` or ``NAME[i][HI:LO]``; ``what`` names the option."""
    m = _REF.match(text.strip())
    if not m:
        raise OptionError(f"{what}: {text!r} is not a port reference; valid: NAME, NAME[HI:LO], "
                          "NAME[i], NAME[i][HI:LO]")
    selects = tuple((int(i), int(lo)) if lo else int(i)
                    for i, lo in _SELECT.findall(m.group(2)))
    if any(isinstance(s, tuple) for s in selects[:-1]):
        raise OptionError(f"{what}: {text!r}: a part select [HI:LO] must be the last select")
    return PortRef(m.group(1), selects)


def _dims(dims) -> str:
    return "".join(f"[{m}:{lo}]" for m, lo in dims)


def _index_offset(i: int, dim: tuple[int, int]) -> int | None:
    """Position of index ``i`` of a packed dimension from its least significant end."""
    msb, lsb = dim
    if not min(msb, lsb) <= i <= max(msb, lsb):
        return None
    return abs(i - lsb)


def resolve(ref: PortRef, ports: dict[str, PortInfo], what: str, top: str) -> Bits:
    """The bits ``ref`` names in ``ports``; an OptionError naming the port's dimensions when it
    names none."""
    info = ports.get(ref.name)
    if info is None:
        raise DesignError(f"{what}: module {top} has no port {ref.name!r}; its ports: "
                          f"{', '.join(sorted(ports))}")
    dims, lo = tuple(info.dims), 0
    shown = f"{ref.name}{_dims(info.dims)}"
    for s in ref.selects:
        if not dims:
            raise DesignError(f"{what}: {ref} selects below a single bit of {shown}")
        inner = prod(abs(m - lsb) + 1 for m, lsb in dims[1:])
        if isinstance(s, int):
            off = _index_offset(s, dims[0])
            width = inner
        else:
            hi, low = s
            offs = (_index_offset(hi, dims[0]), _index_offset(low, dims[0]))
            if None not in offs and (hi >= low) != (dims[0][0] >= dims[0][1]) and hi != low:
                raise DesignError(f"{what}: {ref} selects against the direction of "
                                  f"{shown}; write [{low}:{hi}]")
            off = None if None in offs else min(offs)
            width = (abs(hi - low) + 1) * inner
        if off is None:
            raise DesignError(f"{what}: {ref} is out of range of {shown} "
                              f"(valid: {dims[0][0]}..{dims[0][1]})")
        lo += off * inner
        dims = dims[1:]
    if not ref.selects:
        return Bits(ref.name, 0, info.width)
    return Bits(ref.name, lo, width)


# ----- values and options ------------------------------------------------------------------------

_BASES = {"b": 2, "o": 8, "d": 10, "h": 16}


@dataclass(frozen=True)
class Value:
    """A constant: ``value``, its literal's ``size`` (None: unsized), ``fill`` for ``'1``."""

    value: int
    size: int | None = None
    fill: bool = False

    def bits(self, width: int, what: str) -> int:
        if self.fill:
            return (1 << width) - 1
        if (self.size or 0) > width or self.value >> width:
            raise OptionError(f"{what}: the value is wider than the {width} bit(s) it drives")
        return self.value


def parse_value(text: str, what: str) -> Value:
    """A Verilog literal (``3'b111``, ``4'd3``, ``8'hff``, ``'1``, ``'0``) or a decimal."""
    t = text.strip()
    if t in ("'0", "'1"):
        return Value(0 if t == "'0" else 1, fill=t == "'1")
    if re.fullmatch(r"\d+", t):
        return Value(int(t))
    m = BASED_LITERAL.fullmatch(t)
    if m:
        size, _, base, digits = m.groups()
        try:
            value = int(digits.replace("_", ""), _BASES[base.lower()])
        except ValueError:
            value = None
        if value is not None and size and int(size) > 0:
            if value >> int(size):
                raise OptionError(f"{what}: {t!r} does not fit its {size} bit(s)")
            return Value(value, int(size))
        if value is not None and not size:
            return Value(value)
    raise OptionError(f"{what}: {text!r} is not a constant; valid: a decimal or a Verilog "
                      "literal such as 3'b111, 4'd3, 8'hff, '1, '0")


def parse_port(item: str) -> tuple[str, PortRef]:
    """``--port ROLE=REF``."""
    role, sep, ref = item.partition("=")
    if not sep or not role or not ref:
        raise OptionError(f"--port takes ROLE=PORT (e.g. a=op_a, a=operands[7:0]), "
                          f"not {item!r}")
    return role.strip(), parse_ref(ref, f"--port {item}")


def parse_tie(item: str) -> tuple[PortRef, Value]:
    """``--tie REF=VALUE``."""
    ref, sep, value = item.partition("=")
    if not sep or not ref or not value:
        raise OptionError(f"--tie takes PORT=VALUE (e.g. op_sel=2'd1), not {item!r}")
    return parse_ref(ref, f"--tie {item}"), parse_value(value, f"--tie {item}")


def parse_flags_order(text: str) -> tuple[str, ...]:
    """``--flags-order nv,dz,of,uf,nx``: the module's flag bits from the most significant."""
    names = tuple(n.strip().lower() for n in text.split(","))
    for n in names:
        if n not in FLAG_NAMES:
            raise OptionError(f"--flags-order {text}: unknown flag {n!r}; valid: "
                              f"{', '.join(FLAG_NAMES)}")
    if len(set(names)) != len(names):
        raise OptionError(f"--flags-order {text}: a flag is named twice; valid: each of "
                          f"{', '.join(FLAG_NAMES)} at most once")
    return names


def parse_rm_codes(text: str) -> tuple[tuple[Rounding, int], ...]:
    """``--rm-codes rne=0,rtz=1,...`` or a preset name (RM_PRESETS)."""
    t = text.strip().lower()
    if t in RM_PRESETS:
        return RM_PRESETS[t]
    valid = ", ".join(m.value for m in RM_CODES)
    out = []
    for item in t.split(","):
        mode, sep, code = item.partition("=")
        if not sep or not code.strip().isdigit():
            raise OptionError(f"--rm-codes takes MODE=CODE,... (e.g. rne=0,rtz=1) or a preset "
                              f"({', '.join(RM_PRESETS)}), not {text!r}")
        try:
            rounding = Rounding(mode.strip())
        except ValueError:
            rounding = None
        if rounding not in RM_CODES:
            raise OptionError(f"--rm-codes {text}: fpforge cannot compute mode {mode!r} per "
                              f"operation; valid: {valid}")
        out.append((rounding, int(code)))
    for i, what in ((0, "mode"), (1, "code")):
        seen = [x[i] for x in out]
        if len(set(seen)) != len(seen):
            raise OptionError(f"--rm-codes {text}: a {what} is listed twice; each mode has one "
                              "code and each code one mode")
    return tuple(out)


# ----- the binding -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Binding:
    """What the command line says of a module's ports (unresolved): ``roles`` (spec port,
    reference), ``ties`` (reference, value), the module's ``flags_order`` from the most
    significant bit (None: fpforge's), ``rm_codes`` (mode, module code; None: fpforge's
    codes 0..4 as they are), ``no_flags`` (values only)."""

    roles: tuple[tuple[str, PortRef], ...] = ()
    ties: tuple[tuple[PortRef, Value], ...] = ()
    flags_order: tuple[str, ...] | None = None
    rm_codes: tuple[tuple[Rounding, int], ...] | None = None
    no_flags: bool = False

    @classmethod
    def parse(cls, *, ports=(), ties=(), flags_order: str | None = None,
              rm_codes: str | None = None, no_flags: bool = False) -> "Binding":
        """From the command line's strings."""
        if no_flags and flags_order is not None:
            raise OptionError("--no-flags compares values only; it takes no --flags-order")
        roles = tuple(parse_port(p) for p in ports)
        names = [r for r, _ in roles]
        for r in names:
            if names.count(r) > 1:
                raise OptionError(f"--port {r}=...: role {r} is mapped twice")
        return cls(roles=roles, ties=tuple(parse_tie(t) for t in ties),
                   flags_order=None if flags_order is None else parse_flags_order(flags_order),
                   rm_codes=None if rm_codes is None else parse_rm_codes(rm_codes),
                   no_flags=no_flags)

    def resolve(self, data: tuple[Port, ...], ports: dict[str, PortInfo], top: str, *,
                control: tuple[str, ...] = (), unit: str = "the unit") -> "Bound":
        """Against the module's ``ports``: every role and tie found, in range, of the right
        direction and width, nothing driven twice. ``data``: the spec's data ports;
        ``control``: the module's clock, reset, valid and ready ports (passed through)."""
        by_name = {p.name: p for p in data}
        roles = dict(self.roles)
        for role, ref in self.roles:
            if role not in by_name:
                raise DesignError(f"--port {role}=...: {unit} has no port {role!r}; its ports: "
                                  f"{', '.join(sorted(by_name))}")
        for c in control:
            if c in by_name:
                raise DesignError(f"module {top}'s control port {c} has the name of the unit's "
                                  f"data port {c}; the wrapper carries both: rename one")
        if self.no_flags and "flags" in roles:
            raise DesignError("--no-flags compares values only; it takes no --port flags=...")
        if self.rm_codes is not None and "rm" not in by_name:
            raise DesignError("--rm-codes needs a unit with an rm input (--rounding dynamic)")
        bound, absent = {}, []
        for p in data:
            if p.name == "flags" and self.no_flags:
                absent.append(p.name)
                continue
            ref = roles.get(p.name, PortRef(p.name))
            what = f"--port {p.name}={ref}"
            if p.name not in roles and ref.name not in ports:
                if p.is_input:
                    raise DesignError(f"module {top} has no port {p.name!r} for input {p.name} "
                                      f"({p.width} bits); map it with --port {p.name}=NAME")
                absent.append(p.name)
                continue
            bits = resolve(ref, ports, what, top)
            if ref.name in control:
                raise DesignError(f"{what}: {ref.name} is a clock, reset, valid or ready port")
            self._check(p, bits, ref, ports[ref.name].direction, top)
            bound[p.name] = bits
        outputs = [p for p in data if not p.is_input]
        if all(p.name in absent for p in outputs):
            raise DesignError(f"module {top} has none of the outputs "
                              f"{', '.join(p.name for p in outputs)}")
        ties = []
        for ref, value in self.ties:
            what = f"--tie {ref}"
            bits = resolve(ref, ports, what, top)
            if ports[ref.name].direction != "input":
                raise DesignError(f"{what}: {ref.name} is an output; ties drive inputs only")
            if ref.name in control:
                raise DesignError(f"{what}: {ref.name} is a clock, reset, valid or ready port")
            ties.append((bits, value.bits(bits.width, what)))
        driven = [(f"--port {n}", b) for n, b in bound.items() if by_name[n].is_input] + \
            [(f"--tie {b.port}", b) for b, _ in ties]
        for i, (w1, b1) in enumerate(driven):
            for w2, b2 in driven[:i]:
                if b1.overlaps(b2):
                    raise DesignError(f"{w1} and {w2} both drive bits of {b1.port} "
                                      f"(bits [{max(b1.lo, b2.lo)}..{min(b1.hi, b2.hi)}])")
        flags = None if "flags" in absent else (self.flags_order or FLAG_NAMES)
        rm_map = None if self.rm_codes is None else \
            tuple((RM_CODES[m], c) for m, c in self.rm_codes)
        return Bound(top=top, ports=dict(ports),
                     data=tuple(p for p in data if p.name not in absent),
                     absent=tuple(absent), roles=tuple(bound.items()), ties=tuple(ties),
                     control=tuple(control), flags_order=flags, rm_map=rm_map)

    def _check(self, p: Port, bits: Bits, ref: PortRef, direction: str, top: str):
        """The direction and width of role ``p`` on ``bits``."""
        flags_hint = " (name its flags with --flags-order, or --no-flags)"
        if direction != p.direction or (bits.width != p.width and p.name not in ("flags", "rm")):
            raise DesignError(f"module {top} port {ref} is an {direction} of {bits.width} "
                              f"bit(s); {p.name} needs an {p.direction} of {p.width}")
        if p.name == "flags" and self.flags_order is not None:
            if bits.width != len(self.flags_order):
                raise DesignError(f"--flags-order names {len(self.flags_order)} flag(s); "
                                  f"{ref} has {bits.width} bit(s)")
            return
        if p.name == "rm" and self.rm_codes is not None:
            need = max(c for _, c in self.rm_codes).bit_length()
            if need > bits.width:
                raise DesignError(f"--rm-codes: code {max(c for _, c in self.rm_codes)} does "
                                  f"not fit {ref} ({bits.width} bit(s))")
            return
        if bits.width != p.width:
            raise DesignError(f"module {top} port {ref} is an {direction} of {bits.width} "
                              f"bit(s); {p.name} needs an {p.direction} of {p.width}" +
                              (flags_hint if p.name == "flags" else ""))


@dataclass(frozen=True)
class Bound:
    """A binding resolved against module ``top``'s ``ports``: the spec ports it carries
    (``data``; the spec outputs it lacks: ``absent``), the bits of each role, the ties, the
    pass-through ``control`` ports, the flag order (None: no flags) and the rm translation
    (fpforge code, module code; None: as it is)."""

    top: str
    ports: dict
    data: tuple[Port, ...]
    absent: tuple[str, ...]
    roles: tuple[tuple[str, Bits], ...]
    ties: tuple[tuple[Bits, int], ...]
    control: tuple[str, ...]
    flags_order: tuple[str, ...] | None
    rm_map: tuple[tuple[int, int], ...] | None

    @property
    def flags_mask(self) -> int | None:
        """fpforge's flag bits the module reports (None: all of them)."""
        if self.flags_order is None or len(self.flags_order) == FLAGS_WIDTH:
            return None
        return sum(int(_FLAG_BIT[f]) for f in self.flags_order)

    def rm_values(self) -> tuple[int, ...]:
        """fpforge's rm codes to drive: the listed modes' (default: the five defined codes,
        never the reserved ones, which a third-party unit may read as anything)."""
        if self.rm_map is None:
            return tuple(sorted(RM_CODES.values()))
        return tuple(sorted(c for c, _ in self.rm_map))

    def undriven(self) -> list[Bits]:
        """Input bits no role, tie or control port drives (the wrapper drives them 0)."""
        out = []
        for name, info in self.ports.items():
            if info.direction != "input" or name in self.control:
                continue
            pieces = sorted(b for b in self._drivers(name))
            at = 0
            for lo, width, _ in pieces:
                if lo > at:
                    out.append(Bits(name, at, lo - at))
                at = max(at, lo + width)
            if at < info.width:
                out.append(Bits(name, at, info.width - at))
        return out

    def notes(self) -> tuple[str, ...]:
        """What a verdict says of the binding."""
        notes = []
        und = self.undriven()
        if und:
            notes.append("undriven inputs driven 0: " + ", ".join(map(self._show, und)))
        if self.flags_order is not None and self.flags_mask is not None:
            missing = [f for f in FLAG_NAMES if f not in self.flags_order]
            notes.append(f"flags not compared (the module has no such bit): {', '.join(missing)}")
        if self.rm_map is not None:
            names = {c: m.value for m, c in RM_CODES.items()}
            notes.append("rounding modes driven (module code): " + ", ".join(
                f"{names[f]}={c}" for f, c in self.rm_map))
        return tuple(notes)

    def _show(self, b: Bits) -> str:
        """``b`` as the module declares its port: ``op``, ``ops[23:16]``, or for a port of
        several dimensions ``ops bits [23:16]`` of the flattened vector."""
        info = self.ports[b.port]
        if b.width == info.width:
            return b.port
        if len(info.dims) > 1:
            return f"{b.port} bits [{b.hi}:{b.lo}]"
        msb, lsb = info.dims[0]
        at = (lambda off: lsb + off) if msb >= lsb else (lambda off: lsb - off)
        return f"{b.port}[{at(b.hi)}]" if b.width == 1 else f"{b.port}[{at(b.hi)}:{at(b.lo)}]"

    def _drivers(self, port: str) -> list[tuple[int, int, str]]:
        """(lo, width, expression) of every piece of input ``port`` that is driven."""
        out = []
        for role, b in self.roles:
            if b.port == port and self.ports[port].direction == "input":
                out.append((b.lo, b.width, "bind_rm" if role == "rm" and self.rm_map else role))
        out += [(b.lo, b.width, f"{b.width}'d{v}") for b, v in self.ties if b.port == port]
        return out


# ----- the wrapper -------------------------------------------------------------------------------

def wrapper_name(top: str) -> str:
    return f"fpforge_bind_{top}"


def _decl(kind: str, width: int, name: str) -> str:
    return f"  {kind} {f'[{width - 1}:0] ' if width > 1 else ''}{name};"


def wrapper_verilog(bound: Bound, params=()) -> str:
    """Verilog-2005 text of ``fpforge_bind_<top>`` around ``bound.top`` (module docstring);
    ``params``: (name, value) parameter overrides of the instance."""
    ports = bound.ports
    data = list(bound.data)
    names = [*bound.control, *(p.name for p in data)]
    v = [f"// The spec's data ports on module {bound.top}: written by fpforge verify.",
         f"module {wrapper_name(bound.top)}({', '.join(names)});"]
    v += [_decl(ports[c].direction, ports[c].width, c) for c in bound.control]
    v += [_decl(p.direction, p.width, p.name) for p in data]
    roles = dict(bound.roles)
    if bound.rm_map is not None and "rm" in roles:
        w = roles["rm"].width
        v += [f"  reg [{w - 1}:0] bind_rm;",
              "  // fpforge's rm code (RISC-V frm) to the module's",
              "  always @(*) begin", "    case (rm)"]
        v += [f"      3'd{f}: bind_rm = {w}'d{c};" for f, c in bound.rm_map]
        v += [f"      default: bind_rm = {w}'d{bound.rm_map[0][1]};", "    endcase", "  end"]
    conns = [f".{c}({c})" for c in bound.control]
    used_outputs = {b.port for n, b in bound.roles if not _is_input(bound, n)}
    for name, info in ports.items():
        if name in bound.control:
            continue
        if info.direction == "input":
            v.append(_decl("wire", info.width, f"bind_{name}"))
            v.append(f"  assign bind_{name} = {_concat(bound, name, info.width)};")
        elif name in used_outputs:
            v.append(_decl("wire", info.width, f"bind_{name}"))
        else:
            conns.append(f".{name}()")
            continue
        conns.append(f".{name}(bind_{name})")
    for p in data:
        if p.is_input:
            continue
        b = roles[p.name]
        if p.name == "flags":
            by_flag = {f: b.lo + len(bound.flags_order) - 1 - i
                       for i, f in enumerate(bound.flags_order)}
            bits = [f"bind_{b.port}[{by_flag[f]}]" if f in by_flag else "1'b0"
                    for f in FLAG_NAMES]
            v.append(f"  assign flags = {{{', '.join(bits)}}};  // {', '.join(FLAG_NAMES)}")
        else:
            v.append(f"  assign {p.name} = {_select(b, ports[b.port].width)};")
    over = f" #({', '.join(f'.{n}({val})' for n, val in params)})" if params else ""
    v.append(f"  {bound.top}{over} dut({', '.join(conns)});")
    v.append("endmodule")
    return "\n".join(v) + "\n"


def _is_input(bound: Bound, role: str) -> bool:
    return next(p for p in bound.data if p.name == role).is_input


def _select(b: Bits, width: int) -> str:
    if b.width == width:
        return f"bind_{b.port}"
    return f"bind_{b.port}[{b.hi}:{b.lo}]" if b.width > 1 else f"bind_{b.port}[{b.lo}]"


def _concat(bound: Bound, port: str, width: int) -> str:
    """Input ``port``'s value: its driven pieces, zeros between them, most significant first."""
    pieces, at = [], 0
    for lo, w, expr in sorted(bound._drivers(port)):
        if lo > at:
            pieces.append(f"{lo - at}'d0")
        pieces.append(expr)
        at = lo + w
    if at < width:
        pieces.append(f"{width - at}'d0")
    return pieces[0] if len(pieces) == 1 else "{" + ", ".join(reversed(pieces)) + "}"
