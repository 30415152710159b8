"""Functional Verilog models of any liberty's cells, from its ``function``, ``three_state``,
``ff`` and ``latch`` groups: a netlist mapped to that library can then be simulated against the
golden model (``fpforge synth --gate-level``). No delays: timing is OpenSTA's.

Liberty's boolean syntax (Liberty reference, "pin group: function"): ``!A`` or ``A'`` is NOT,
``A&B``, ``A*B`` or ``A B`` AND, ``A|B`` or ``A+B`` OR, ``A^B`` XOR, ``0`` / ``1`` constants;
NOT binds tightest, then XOR, then AND, then OR. Every expression is written back fully
parenthesised in Verilog, so Verilog's own precedence never decides.
"""

from __future__ import annotations

import re
from itertools import product

from .liberty_file import LibertyCell

__all__ = ["Expr", "parse_function", "verilog_expr", "evaluate", "truth_table",
           "cell_model", "cell_models_text"]

Expr = tuple   # ("var", name) | ("const", 0/1) | ("not", e) | (op, a, b), op in and/or/xor

_TOK = re.compile(r"\s*([()!'&*|+^]|[A-Za-z_][\w\[\]\.]*|[01])")


def parse_function(text: str) -> Expr:
    """The expression tree of a liberty function string. Raises ValueError naming the text."""
    toks = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _TOK.match(text, pos)
        if m is None:
            raise ValueError(f"cannot read liberty function {text!r} at {text[pos:]!r}")
        toks.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    expr, rest = _or(toks)
    if rest:
        raise ValueError(f"cannot read liberty function {text!r}: trailing {''.join(rest)!r}")
    return expr


def _or(t):
    a, t = _and(t)
    while t and t[0] in "|+":
        b, t = _and(t[1:])
        a = ("or", a, b)
    return a, t


def _and(t):
    a, t = _xor(t)
    # An operand right after an operand (a space in the source) is an AND too.
    while t and (t[0] in "&*" or t[0] == "(" or t[0] == "!" or _is_operand(t[0])):
        b, t = _xor(t[1:] if t[0] in "&*" else t)
        a = ("and", a, b)
    return a, t


def _xor(t):
    a, t = _not(t)
    while t and t[0] == "^":
        b, t = _not(t[1:])
        a = ("xor", a, b)
    return a, t


def _is_operand(tok: str) -> bool:
    return tok not in ("(", ")", "!", "'", "&", "*", "|", "+", "^")


def _not(t):
    if not t:
        raise ValueError("liberty function ends where an operand was expected")
    if t[0] == "!":
        a, t = _not(t[1:])
        a = ("not", a)
    elif t[0] == "(":
        a, t = _or(t[1:])
        if not t or t[0] != ")":
            raise ValueError("liberty function has an unclosed '('")
        t = t[1:]
    elif t[0] in ("0", "1"):
        a, t = ("const", int(t[0])), t[1:]
    elif _is_operand(t[0]):
        a, t = ("var", t[0]), t[1:]
    else:
        raise ValueError(f"unexpected {t[0]!r} in liberty function")
    while t and t[0] == "'":
        a, t = ("not", a), t[1:]
    return a, t


def verilog_expr(e: Expr) -> str:
    kind = e[0]
    if kind == "var":
        return e[1]
    if kind == "const":
        return f"1'b{e[1]}"
    if kind == "not":
        return f"~{verilog_expr(e[1])}"
    op = {"and": "&", "or": "|", "xor": "^"}[kind]
    return f"({verilog_expr(e[1])} {op} {verilog_expr(e[2])})"


def evaluate(e: Expr, env: dict) -> int:
    kind = e[0]
    if kind == "var":
        return env[e[1]]
    if kind == "const":
        return e[1]
    if kind == "not":
        return 1 - evaluate(e[1], env)
    a, b = evaluate(e[1], env), evaluate(e[2], env)
    return {"and": a & b, "or": a | b, "xor": a ^ b}[kind]


def truth_table(function: str, inputs: tuple[str, ...]) -> tuple[int, ...]:
    """The function's output for every assignment of ``inputs`` (first input most significant)."""
    e = parse_function(function)
    return tuple(evaluate(e, dict(zip(inputs, bits)))
                 for bits in product((0, 1), repeat=len(inputs)))


def _edge(clock: str) -> str:
    e = parse_function(clock)
    if e[0] == "var":
        return f"posedge {e[1]}"
    if e[0] == "not" and e[1][0] == "var":
        return f"negedge {e[1][1]}"
    raise ValueError(f"clocked_on {clock!r} is not a pin or its complement")


def cell_model(cell: LibertyCell) -> str:
    """One cell's module, or a comment saying why it has none (an output without a function)."""
    if not cell.outputs or any(not f for f in cell.outputs.values()) and cell.ff is None and \
            not cell.latch:
        return f"// {cell.name}: no model (an output without a function)\n"
    pins = list(cell.inputs) + list(cell.outputs)
    lines = [f"(* area = \"{cell.area:g}\" *)", f"module {cell.name} ({', '.join(pins)});"]
    lines += [f"  input {p};" for p in cell.inputs]
    lines += [f"  output {p};" for p in cell.outputs]
    state = cell.ff["state"] if cell.ff else ()
    if cell.ff:
        q, qn = state
        ff = cell.ff
        lines.append(f"  reg {q};")
        clear = verilog_expr(parse_function(ff["clear"])) if "clear" in ff else None
        preset = verilog_expr(parse_function(ff["preset"])) if "preset" in ff else None
        events = [_edge(ff["clocked_on"])]
        body = f"{q} <= {verilog_expr(parse_function(ff['next_state']))};"
        if preset:
            lines.append(f"  wire {q}_preset = {preset};")
            events.append(f"posedge {q}_preset")
            body = f"if ({q}_preset) {q} <= 1'b1; else {body}"
        if clear:
            lines.append(f"  wire {q}_clear = {clear};")
            events.append(f"posedge {q}_clear")
            body = f"if ({q}_clear) {q} <= 1'b0; else {body}"
        lines += [f"  wire {qn} = ~{q};", f"  always @({' or '.join(events)}) {body}"]
    elif cell.latch:
        g = cell.group.groups("latch")[0]
        q, qn = g.args
        lines += [f"  reg {q};", f"  wire {qn} = ~{q};",
                  f"  always @* if ({verilog_expr(parse_function(g.attrs['enable']))}) "
                  f"{q} = {verilog_expr(parse_function(g.attrs['data_in']))};"]
    for pin, function in cell.outputs.items():
        if not function:
            raise ValueError(f"cell {cell.name}: output {pin} has no function")
        value = verilog_expr(parse_function(function))
        off = cell.pin(pin).attrs.get("three_state")
        if off:
            value = f"{verilog_expr(parse_function(off))} ? 1'bz : {value}"
        lines.append(f"  assign {pin} = {value};")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def cell_models_text(cells, source: str) -> str:
    """Functional Verilog models of ``cells`` (LibertyCell), headed by where they come from."""
    head = (f"// Functional cell models generated by fpforge synth/liberty_models.py from\n"
            f"// {source}: no delays (OpenSTA times the netlist on the liberty's tables).\n\n")
    return head + "\n".join(cell_model(c) for c in cells)
