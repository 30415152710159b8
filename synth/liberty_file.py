"""Read any liberty file: a small parser of its group / attribute grammar, and what fpforge needs
from it (cells, pins, functions, flip-flops, NLDM tables), for a library it did not generate.

The grammar (Liberty reference, "Library File Syntax"): a group is ``name (args) { ... }``, a
simple attribute ``name : value ;``, a complex attribute ``name (args) ;``; comments are C
style and a backslash continues a line. Every group keeps the span of its text, so a library can
be trimmed by dropping whole cell groups and keeping every other byte (synth/libraries/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["Group", "parse", "read_liberty", "Table", "LibertyCell", "cells_of", "unquote"]

_TOKEN = re.compile(r'/\*.*?\*/|"(?:[^"\\]|\\.)*"|\\\r?\n|([{}();:,])|([^\s{}();:,"\\]+)',
                    re.S)


def unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


@dataclass
class Group:
    """One liberty group: ``kind(args) { attrs; children }``; ``start`` / ``end`` its span in the
    text (from its kind's first character to its closing brace, inclusive)."""

    kind: str
    args: tuple[str, ...]
    start: int
    end: int = 0
    attrs: dict = field(default_factory=dict)      # simple attributes: name -> value (unquoted)
    complex: list = field(default_factory=list)    # complex attributes: (name, args)
    children: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.args[0] if self.args else ""

    def groups(self, kind: str) -> list["Group"]:
        return [g for g in self.children if g.kind == kind]

    def values(self, name: str) -> list[tuple[str, ...]]:
        return [a for n, a in self.complex if n == name]


def parse(text: str) -> Group:
    """The library group of a liberty file's text. Raises ValueError on unbalanced braces."""
    root = Group("", (), 0)
    stack = [root]
    stmt: list[tuple[str, int]] = []      # tokens of the statement being read, with offsets
    for m in _TOKEN.finditer(text):
        punct, word = m.group(1), m.group(2)
        tok = m.group(0)
        if punct is None and word is None:
            if tok.startswith('"'):
                stmt.append((tok, m.start()))
            continue
        if punct == "{":
            kind, args = _head(stmt)
            g = Group(kind, args, stmt[0][1] if stmt else m.start())
            stack[-1].children.append(g)
            stack.append(g)
            stmt = []
        elif punct == "}":
            _statement(stack[-1], stmt)
            stmt = []
            if len(stack) == 1:
                raise ValueError(f"unbalanced '}}' at offset {m.start()}")
            stack.pop().end = m.end()
        elif punct == ";":
            _statement(stack[-1], stmt)
            stmt = []
        else:
            stmt.append((tok, m.start()))
    if len(stack) != 1:
        raise ValueError(f"unclosed group {stack[-1].kind}({', '.join(stack[-1].args)})")
    libs = root.groups("library")
    if len(libs) != 1:
        raise ValueError("no library group")
    return libs[0]


def _head(stmt) -> tuple[str, tuple[str, ...]]:
    toks = [t for t, _ in stmt]
    if not toks:
        return "", ()
    kind = toks[0]
    args = [unquote(t) for t in toks[1:] if t not in "(),"]
    return kind, tuple(args)


def _statement(g: Group, stmt) -> None:
    toks = [t for t, _ in stmt]
    if not toks:
        return
    if len(toks) >= 2 and toks[1] == ":":
        g.attrs[toks[0]] = unquote(" ".join(toks[2:]))
    else:
        g.complex.append(_head(stmt))


def read_liberty(path: Path) -> Group:
    """The parsed library group of a liberty file (``.gz`` read as gzip), cached by content:
    the flow writes the same library into every job's folder, and parsing it is most of setting
    a job up (0.55 CPU-seconds for the trimmed SKY130 HD library, against 0.01 to read it and find
    it here). Callers share the returned group and must not change it."""
    return _parse_cached(_text(Path(path)))


@lru_cache(maxsize=4)
def _parse_cached(text: str) -> Group:
    return parse(text)


def _text(path: Path) -> str:
    if path.suffix == ".gz":
        import gzip
        return gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    return path.read_text(errors="replace")


# ----- what the flow reads --------------------------------------------------------------------
def _floats(s: str) -> tuple[float, ...]:
    return tuple(float(x) for x in re.split(r"[\s,]+", s.strip()) if x)


@dataclass(frozen=True)
class Table:
    """One NLDM table: ``values[i][j]`` at ``index_1[i]``, ``index_2[j]`` (a 1-D table has one
    row); bilinear inside, linear extrapolation outside, as the timers do."""

    index_1: tuple[float, ...]
    index_2: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]

    @classmethod
    def of(cls, g: Group, templates: dict) -> "Table":
        t = templates.get(g.name, None)

        def index(n):
            own = g.values(f"index_{n}")
            if own:
                return _floats(own[0][0])
            return _floats(t.values(f"index_{n}")[0][0]) if t and t.values(f"index_{n}") else ()
        rows = tuple(_floats(r) for r in g.values("values")[0])
        return cls(index(1), index(2), rows)

    def lookup(self, x: float, y: float | None = None) -> float:
        def bracket(index, v):
            if len(index) == 1:
                return 0, 0, 0.0
            i = 0
            while i < len(index) - 2 and v > index[i + 1]:
                i += 1
            return i, i + 1, (v - index[i]) / (index[i + 1] - index[i])
        if len(self.values) == 1 and len(self.index_1) > 1 and len(self.values[0]) == \
                len(self.index_1) and not self.index_2:
            i0, i1, f = bracket(self.index_1, x)      # 1-D table on index_1
            row = self.values[0]
            return row[i0] + (row[i1] - row[i0]) * f
        i0, i1, fx = bracket(self.index_1, x)
        j0, j1, fy = bracket(self.index_2, y if y is not None else 0.0)
        v = self.values
        top = v[i0][j0] + (v[i0][j1] - v[i0][j0]) * fy
        bot = v[i1][j0] + (v[i1][j1] - v[i1][j0]) * fy
        return top + (bot - top) * fx


@dataclass(frozen=True)
class LibertyCell:
    """A cell as the flow sees it: pins by direction, output functions, its flip-flop."""

    name: str
    area: float
    inputs: tuple[str, ...]
    outputs: dict                 # pin -> function ("" when the liberty gives none)
    ff: dict | None               # ff group: {"state": (IQ, IQN), "next_state", "clocked_on", ...}
    latch: bool
    dont_use: bool
    group: Group

    @property
    def combinational(self) -> bool:
        return self.ff is None and not self.latch and bool(self.outputs) and \
            all(self.outputs.values())

    def pin(self, name: str) -> Group:
        for p in self.group.groups("pin"):
            if p.name == name:
                return p
        raise KeyError(f"cell {self.name} has no pin {name}")


def cells_of(lib: Group) -> dict[str, LibertyCell]:
    out = {}
    for c in lib.groups("cell"):
        pins = c.groups("pin")
        inputs = tuple(p.name for p in pins if p.attrs.get("direction") == "input")
        outputs = {p.name: p.attrs.get("function", "") for p in pins
                   if p.attrs.get("direction") == "output"}
        ff = None
        if c.groups("ff"):
            g = c.groups("ff")[0]
            ff = {"state": g.args, **g.attrs}
        out[c.name] = LibertyCell(
            c.name, float(c.attrs.get("area", 0.0)), inputs, outputs, ff,
            bool(c.groups("latch")), c.attrs.get("dont_use", "false").lower() == "true", c)
    return out
