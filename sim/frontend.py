"""How fpforge reads a user's Verilog and SystemVerilog: the sources as a simulator's command
line gives them (files, include directories, defines, file lists, parameter overrides) and the
ports of a module as a real SystemVerilog front end elaborates them.

The front end is slang (PyPI ``pyslang``, pinned): it elaborates packages, enums, packed
structs, ``parameter type`` and packed multi-dimensional ports, with the preprocessor a simulator
has, and reports errors with file and line. Yosys's ``read_verilog`` reads Verilog-2005 only, and
the slang plugin of Yosys is not in the pinned WebAssembly build.

File lists (``-f FILE``) are read as Verilator and the commercial simulators read them: one
source a line (or several, separated by blanks), ``+incdir+DIR[+DIR...]``,
``+define+NAME[=VALUE][+...]``, ``-I DIR`` / ``-IDIR``, ``-D NAME[=VALUE]`` / ``-DNAME``,
nested ``-f FILE`` / ``-F FILE``, comments from ``//`` or ``#`` to the end of the line. Relative
paths in a list read with ``-f`` are relative to the current directory (as Verilator's ``-f``);
in a list read with ``-F``, relative to the list's own folder (as Verilator's ``-F``).
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .errors import DesignError

__all__ = ["PortInfo", "Sources", "read_ports", "instance_params", "files_read",
           "BASED_LITERAL"]


@dataclass(frozen=True)
class PortInfo:
    """One port of an elaborated module: ``direction`` ("input" or "output"), ``width`` in bits,
    and its packed dimensions ``dims`` as (msb, lsb) pairs, outermost first (``logic [2:0][15:0]
    ops`` is ((2, 0), (15, 0)); a 1-bit port is ((0, 0),)). Packed structs and enums are one
    dimension of their width."""

    direction: str
    width: int
    dims: tuple[tuple[int, int], ...]

    @property
    def is_input(self) -> bool:
        return self.direction == "input"


# ----- sources -----------------------------------------------------------------------------------

SYSTEMVERILOG_SUFFIXES = (".sv", ".svh")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
# A Verilog based literal (8'hff, 'd3, 4'sb1010): size, signedness, base, digits. The front end's
# --param and the binding's --tie read constants by it.
BASED_LITERAL = re.compile(r"(\d+)?'([sS])?([bBoOdDhH])([0-9a-fA-F_xXzZ?]+)")
# A parameter override's value: an integer, decimal or based.
_INTEGER = re.compile(r"-?[0-9][0-9_]*|" + BASED_LITERAL.pattern)


@dataclass(frozen=True)
class Sources:
    """A user's design as a simulator's command line gives it: ``files`` in order (packages
    first, as every simulator wants them), ``include_dirs`` searched by `` `include ``,
    ``defines`` (NAME, VALUE or None) applied before the first file, and ``params``: overrides
    (NAME, VALUE) of the top module's parameters, integers (an enum-typed parameter is set by
    its integer value). ``file_lists`` are the ``-f`` files the rest was read from."""

    files: tuple[Path, ...]
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[tuple[str, str | None], ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    file_lists: tuple[Path, ...] = ()

    @classmethod
    def from_args(cls, args=(), *, params=()) -> "Sources":
        """From command-line words in order, the way a simulator reads them: source files,
        ``-f FILE`` / ``-F FILE`` (file lists, module docstring), ``-I DIR`` / ``-IDIR`` /
        ``+incdir+DIR``, ``-D NAME[=VALUE]`` / ``+define+NAME[=VALUE]``; ``params`` are
        ``NAME=VALUE`` strings. Raises DesignError naming a missing file or a malformed word."""
        acc = _Accumulator()
        acc.words([str(a) for a in args], base=Path.cwd(), where="")
        if not acc.files:
            raise DesignError("no Verilog or SystemVerilog source given (--verilog FILE or "
                              "-f FILE)")
        return cls(files=tuple(acc.files), include_dirs=tuple(acc.include_dirs),
                   defines=tuple(acc.defines), params=tuple(parse_param(p) for p in params),
                   file_lists=tuple(acc.lists))

    @classmethod
    def of(cls, sources) -> "Sources":
        """``sources`` itself, or a Sources of the given file paths."""
        if isinstance(sources, Sources):
            return sources
        files = tuple(Path(f).resolve() for f in sources)
        for f in files:
            if not f.is_file():
                raise DesignError(f"Verilog file {str(f)!r} does not exist")
        return cls(files=files)

    @property
    def systemverilog(self) -> bool:
        """Any .sv / .svh source, or a file list (the way SystemVerilog IP is delivered)."""
        return bool(self.file_lists) or \
            any(f.suffix.lower() in SYSTEMVERILOG_SUFFIXES for f in self.files)

    def tool_args(self) -> list[str]:
        """Include directories and defines as Verilator and Icarus both spell them."""
        return [*(f"-I{d}" for d in self.include_dirs),
                *(f"-D{n}" if v is None else f"-D{n}={v}" for n, v in self.defines)]

    def key(self) -> str:
        """A digest of every file the front end reads (includes included, their contents) and
        of the include directories, defines and parameter overrides."""
        h = hashlib.sha256()
        for f in files_read(self):
            h.update(str(f).encode() + b"\0" + f.read_bytes() + b"\0")
        h.update(repr((self.include_dirs, self.defines, self.params)).encode())
        return h.hexdigest()[:16]


def parse_define(text: str) -> tuple[str, str | None]:
    name, sep, value = text.partition("=")
    if not _IDENT.fullmatch(name):
        raise DesignError(f"--define takes NAME or NAME=VALUE (NAME an identifier), not {text!r}")
    return name, value if sep else None


def parse_param(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not _IDENT.fullmatch(name) or not _INTEGER.fullmatch(value.strip()):
        raise DesignError(f"--param takes NAME=VALUE with an integer VALUE (42, -1, 8'hff; an "
                          f"enum parameter by its integer value), not {text!r}")
    return name, value.strip()


class _Accumulator:
    """Reads command-line words and file lists into files, include dirs and defines."""

    def __init__(self):
        self.files: list[Path] = []
        self.include_dirs: list[Path] = []
        self.defines: list[tuple[str, str | None]] = []
        self.lists: list[Path] = []

    def _file(self, text: str, base: Path, where: str, what: str = "Verilog file") -> Path:
        path = (base / text).resolve()
        if not path.is_file():
            raise DesignError(f"{where}{what} {str(path)!r} does not exist")
        return path

    def _dir(self, text: str, base: Path, where: str) -> None:
        path = (base / text).resolve()
        if not path.is_dir():
            raise DesignError(f"{where}include directory {str(path)!r} does not exist")
        if path not in self.include_dirs:
            self.include_dirs.append(path)

    def words(self, words: list[str], base: Path, where: str) -> None:
        it = iter(words)
        for w in it:
            if w in ("-f", "-F", "-I", "-D"):
                value = next(it, None)
                if value is None:
                    raise DesignError(f"{where}{w} needs a value")
                w += value
            if w.startswith(("-f", "-F")):
                lst = self._file(w[2:], base, where, "file list")
                if lst in self.lists:
                    raise DesignError(f"{where}file list {str(lst)!r} is read twice")
                self.lists.append(lst)
                self.read_list(lst, lst.parent if w.startswith("-F") else Path.cwd())
            elif w.startswith("-I"):
                self._dir(w[2:], base, where)
            elif w.startswith("+incdir+"):
                for d in filter(None, w[len("+incdir+"):].split("+")):
                    self._dir(d, base, where)
            elif w.startswith("-D"):
                self.defines.append(parse_define(w[2:]))
            elif w.startswith("+define+"):
                self.defines += [parse_define(d) for d in filter(None, w[8:].split("+"))]
            elif w.startswith(("-", "+")):
                raise DesignError(f"{where}{w!r} is not an option here; sources, -f/-F FILE, "
                                  "-I DIR, +incdir+DIR, -D NAME[=VALUE], +define+NAME[=VALUE]")
            else:
                path = self._file(w, base, where)
                if path not in self.files:
                    self.files.append(path)

    def read_list(self, path: Path, base: Path) -> None:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            line = line.split("//", 1)[0]
            try:
                words = shlex.split(line, comments=True)
            except ValueError as err:
                raise DesignError(f"{path}:{number}: {err}") from None
            self.words(words, base, f"{_shown(path)}:{number}: ")


# ----- the front end -----------------------------------------------------------------------------

def _parse(sources: Sources, top: str | None = None):
    """slang's syntax tree and compilation of ``sources`` (elaborating ``top`` with the
    parameter overrides applied) and its source manager."""
    import pyslang
    from pyslang import ast, parsing, syntax

    pp = parsing.PreprocessorOptions()
    pp.additionalIncludePaths = [str(d) for d in sources.include_dirs]
    pp.predefines = [n if v is None else f"{n}={v}" for n, v in sources.defines]
    co = ast.CompilationOptions()
    if top is not None:
        co.topModules = {top}
    co.paramOverrides = [f"{n}={v}" for n, v in sources.params]
    # An enum-typed parameter is set by its integer value (--param FpFormat=3), as a
    # simulator's -G sets it; slang's strict rule would need a cast nobody can write there.
    co.flags = co.flags | ast.CompilationFlags.RelaxEnumConversions
    bag = pyslang.Bag([pp, co])
    sm = pyslang.SourceManager()
    for f in sources.files:
        if not f.is_file():
            raise DesignError(f"Verilog file {str(f)!r} does not exist")
    # One compilation unit, files in order: a define of one file reaches the next, as in
    # Verilator and Icarus. Verilog-2005 sources (no .sv, no file list: what Icarus -g2005
    # simulates) are read with that standard's keywords, in which `bit` or `int` are names.
    wrap = ("", "") if sources.systemverilog else ('`begin_keywords "1364-2005" ',
                                                    "\n`end_keywords\n")
    buffers = [sm.assignText(str(f), wrap[0] + f.read_text() + wrap[1]) for f in sources.files]
    tree = syntax.SyntaxTree.fromBuffers(buffers, sm, bag)
    comp = ast.Compilation(bag)
    comp.addSyntaxTree(tree)
    return comp, sm


def _first_error(comp, sm) -> str | None:
    import pyslang
    engine = pyslang.DiagnosticEngine(sm)
    for d in comp.getAllDiagnostics():
        if d.isError():
            loc = sm.getFullyOriginalLoc(d.location)
            where = sm.getFileName(loc) and _shown(Path(str(sm.getFullPath(loc.buffer))))
            return (f"{where}:{sm.getLineNumber(loc)}: " if where else "") + \
                engine.formatMessage(d)
    return None


def _shown(path: Path) -> str:
    """``path`` as a user would type it: relative to the current directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


_cache: dict = {}


def files_read(sources: Sources) -> tuple[Path, ...]:
    """Every file the front end reads for ``sources``: the sources and what they include.
    Cached per sources and the sources' own contents (an edited source is read again)."""
    stamp = (sources, tuple(f.read_bytes() for f in sources.files))
    if stamp not in _cache:
        comp, sm = _parse(sources)
        paths = (Path(str(sm.getFullPath(b))) for b in sm.getAllBuffers())
        _cache.clear()     # one entry: the design being built
        _cache[stamp] = tuple(dict.fromkeys(p.resolve() for p in paths if p.is_file()))
    return _cache[stamp]


def read_ports(sources: Sources, top: str) -> dict[str, PortInfo]:
    """{port: PortInfo} of module ``top``'s packed ports as slang elaborates ``sources``.
    Raises DesignError with "FILE:LINE: message" of the front end's first error, or naming an
    unknown top module or parameter."""
    comp, sm = _parse(sources, top)
    root = comp.getRoot()
    tops = [i for i in root.topInstances if i.name == top]
    if not tops:
        # Errors first: a module that does not parse is not a module yet.
        error = _first_error(comp, sm)
        modules = sorted(d.name for d in comp.getDefinitions()
                         if str(getattr(d, "definitionKind", "")).endswith("Module"))
        names = ", ".join(f.name for f in sources.files)
        if error and "not a valid top-level module" not in error:
            raise DesignError(error)
        raise DesignError(f"no module {top!r} in {names}; its modules: "
                          f"{', '.join(modules) or 'none'}")
    body = tops[0].body
    declared = [p.name for p in body.parameters if not p.isLocalParam]
    for name, _ in sources.params:
        if name not in declared:
            raise DesignError(f"--param {name}: module {top} has no parameter {name!r}; "
                              f"its parameters: {', '.join(declared) or 'none'}")
    error = _first_error(comp, sm)
    if error:
        raise DesignError(error)
    return {p.name: _port_info(p) for p in body.portList if _bindable(p)}



def instance_params(sources: Sources, top: str) -> tuple[tuple[str, str], ...]:
    """``sources.params`` as a wrapper's instance of ``top`` writes them (after read_ports).

    A Verilator defect: it takes an instance's overrides for no change when each equals its
    parameter's default by its reckoning, which counts a default ``'1`` equal to 1, so
    ``P = '1`` set to 1 keeps ``'1`` (FPnew's ``FpFmtConfig=1``: all five formats). Such a 1 is
    written as 2^W + 1 in W + 1 bits (W: the parameter's width), which differs from ``'1`` and
    truncates to 1 in the parameter's type; an untyped parameter takes the value as it is."""
    if not sources.params:
        return ()
    import pyslang
    from pyslang import syntax
    comp, _ = _parse(sources, top)
    body = next(i.body for i in comp.getRoot().topInstances if i.name == top)
    by_name = {p.name: p for p in body.parameters if not p.isLocalParam}
    out = []
    for name, value in sources.params:
        p = by_name[name]
        decl = p.syntax
        default = decl.initializer.expr if decl.initializer else None
        typed = decl.parent.type.kind != syntax.SyntaxKind.ImplicitType or \
            len(decl.parent.type.dimensions) > 0
        width = p.type.bitWidth
        value_is_1 = isinstance(p.value.value, pyslang.SVInt) and not p.value.hasUnknown() \
            and int(p.value.value) == 1
        if default is not None and str(default).strip() == "'1" and typed and width > 1 \
                and value_is_1:
            value = f"{width + 1}'d{(1 << width) + 1}"
        out.append((name, value))
    return tuple(out)

def _bindable(port) -> bool:
    """A port of packed bits; interface ports and unpacked arrays are not one vector a bench can
    drive, so they are left out."""
    return hasattr(port, "direction") and not port.type.canonicalType.isUnpackedArray


def _port_info(port) -> PortInfo:
    from pyslang import ast
    direction = {ast.ArgumentDirection.In: "input", ast.ArgumentDirection.Out: "output"}.get(
        port.direction, str(port.direction).rsplit(".", 1)[-1].lower())
    t = port.type.canonicalType
    width = t.bitWidth
    dims = []
    while t.isPackedArray:
        r = t.range
        dims.append((r.left, r.right))
        t = t.elementType.canonicalType
    if not dims or t.bitWidth > 1:
        dims.append((t.bitWidth - 1, 0))    # a scalar, an enum, a packed struct: one dimension
    return PortInfo(direction, width, tuple(dims))
