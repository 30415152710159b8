"""rtl/emit.py, the one spec -> Verilog emitter: every emitted module has exactly the ports its
spec's ``ports()`` promises (as Yosys elaborates the module, not as a reading of the text), the
text is deterministic (in this process, from the cache, and from another process with another
hash seed), the cache is keyed by spec and name, and module names are checked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fpforge.rtl import emit
from fpforge.rtl.emit import MAX_NAME, ModuleNameError, check_module_name
from fpforge.rtl.kinds import KINDS, make_spec
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.pipeline import Pipeline
from fpforge.sim.lint import each_module_ports

from tests.rtl.export_cases import KIND_SPECS

# Every kind, combinational and pipelined (export_cases.KIND_SPECS), and the variants whose
# ports differ: dynamic rm, stochastic rbits of another width, mixed operand formats, the block
# kinds' buses (rbits per element, a one-element dot vector, no scales).
CORPUS = [
    *KIND_SPECS,
    make_spec("sub", format="fp8e4m3", a_format="fp4e2m1", b_format="bf16", rounding="dynamic"),
    make_spec("fma", format="bf16", in_format="fp8e5m2", rounding="stochastic", sr_bits=3,
              stages=3),
    make_spec("cvt", format="fp4e2m1", in_format="fp16", rounding="dynamic", stages=1),
    MxQuantSpec("fp6e2m3", in_fmt="bfloat16", block=3, rounding="stochastic", sr_bits=4,
                pipeline=Pipeline(1)),
    MxDequantSpec("fp4e2m1", block=5),
    MxDotSpec("fp6e3m2", "fp8e5m2", n=3, out_fmt="fp16", rounding="rod", pipeline=Pipeline(1)),
]


def test_corpus_covers_every_kind_combinational_and_pipelined():
    for unit in KINDS:
        assert sorted({s.stages > 0 for s in CORPUS if s.unit == unit}) == [False, True], unit
    assert len({s.default_name for s in CORPUS}) == len(CORPUS)


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    """Every corpus spec's Verilog, one file each in one folder: {default_name: path}."""
    folder = tmp_path_factory.mktemp("emitted")
    paths = {}
    for spec in CORPUS:
        path = folder / f"{spec.default_name}.v"
        path.write_text(emit.verilog(spec))
        paths[spec.default_name] = path
    return paths


@pytest.fixture(scope="module")
def elaborated_ports(emitted):
    """{default_name: {port: PortInfo}} of every emitted module as Yosys elaborates it, each
    file read alone (one Yosys process for the corpus)."""
    names = list(emitted)
    return dict(zip(names, each_module_ports([([emitted[n]], n) for n in names])))


@pytest.mark.parametrize("spec", CORPUS, ids=lambda s: s.default_name)
def test_emitted_module_has_exactly_the_ports_of_its_spec(spec, elaborated_ports):
    """Names, directions and widths of the elaborated module equal ``spec.ports()``: nothing
    missing, nothing extra (a pipelined unit's clk and rst included)."""
    have = elaborated_ports[spec.default_name]
    assert {n: (i.direction, i.width) for n, i in have.items()} == \
        {p.name: (p.direction, p.width) for p in spec.ports()}


def test_the_module_is_named_as_asked(emitted):
    spec = CORPUS[0]
    assert f"\nmodule {spec.default_name}(" in emitted[spec.default_name].read_text()
    assert "\nmodule other_name(" in emit.verilog(spec, "other_name")


# ----- determinism and the cache ------------------------------------------------------------------

DETERMINISM = make_spec("fma", format="fp8e4m3", c_format="bf16", rounding="stochastic",
                        stages=2)
ONE_LINER = ("import sys; from fpforge.rtl import emit; from fpforge.rtl.kinds import make_spec; "
             "sys.stdout.write(emit.verilog(make_spec('fma', format='fp8e4m3', c_format='bf16', "
             "rounding='stochastic', stages=2)))")


def test_same_text_converted_twice_and_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path / "one"))
    first = emit.verilog(DETERMINISM)                       # converted, then cached
    assert emit.verilog(DETERMINISM) == first               # from the cache
    assert len(list((tmp_path / "one" / "verilog").iterdir())) == 1
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path / "two"))
    assert emit.verilog(DETERMINISM) == first               # converted again


def test_same_text_from_another_process_and_hash_seed(tmp_path):
    """A fresh interpreter with another PYTHONHASHSEED and an empty cache converts anew and gets
    the same bytes."""
    env = dict(os.environ, PYTHONHASHSEED="4242", FPFORGE_CACHE=str(tmp_path / "cache"),
               AMARANTH_USE_YOSYS="system")
    root = str(emit.RTL.parent)
    other = subprocess.run([sys.executable, "-c", ONE_LINER], cwd=root, env=env, check=True,
                           capture_output=True, text=True).stdout
    assert list((tmp_path / "cache" / "verilog").iterdir()), "the other process used no cache"
    assert other == emit.verilog(DETERMINISM)


def one_spec_of_every_kind() -> list:
    """A corpus spec of every kind, the pipelined one for every other kind (the first kind's
    combinational one first): every kind's datapath and both kinds of module, combinational
    and clocked, at a third of the corpus."""
    chosen = []
    for i, unit in enumerate(KINDS):
        specs = [s for s in CORPUS if s.unit == unit]
        chosen.append(next(s for s in specs if (s.stages > 0) == bool(i % 2)))
    return chosen


def test_in_process_yosys_writes_what_amaranths_own_conversion_writes(emitted):
    """rtl/wasm_yosys.py runs Amaranth's builtin Yosys in this process on Amaranth's script:
    for a spec of every kind (combinational and pipelined ones among them), the same bytes as
    ``amaranth.back.verilog.convert`` (a Yosys process per call), so a new Amaranth whose
    script differs fails here."""
    from fpforge.rtl.kinds import build
    specs = one_spec_of_every_kind()
    assert {s.unit for s in specs} == set(KINDS) and {s.stages > 0 for s in specs} == {False, True}
    for spec in specs:
        assert emitted[spec.default_name].read_text() == \
            emit.convert_amaranth(build(spec), spec.default_name), spec.default_name


def test_in_process_yosys_errors_carry_its_message():
    from fpforge.rtl import wasm_yosys
    with pytest.raises(wasm_yosys.YosysError, match="No such command: no_such_pass"):
        wasm_yosys.run(["-q", "-"], "no_such_pass")


def test_the_cache_is_keyed_by_spec_and_name(tmp_path, monkeypatch):
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path))
    spec = make_spec("mul", format="fp4e2m1")
    other_spec = make_spec("mul", format="fp4e2m1", rounding="rtz")
    plain = emit.verilog(spec)
    renamed = emit.verilog(spec, "renamed")
    other = emit.verilog(other_spec)
    assert len({plain, renamed, other}) == 3
    assert "\nmodule renamed(" in renamed and "\nmodule fp_mul_e2m1fin_rne(" in plain
    assert "\nmodule fp_mul_e2m1fin_rtz(" in other
    # and each is found again under its own key, whatever was asked in between
    assert (emit.verilog(spec), emit.verilog(spec, "renamed"), emit.verilog(other_spec)) == \
        (plain, renamed, other)
    assert len(list((tmp_path / "verilog").iterdir())) == 3


# ----- module names -------------------------------------------------------------------------------

IDENTIFIER = ("module name must be a plain Verilog identifier (letters, digits, _; not starting "
              "with a digit), not {!r}")


@pytest.mark.parametrize("name, message", [
    ("9lives", IDENTIFIER.format("9lives")),
    ("", IDENTIFIER.format("")),
    ("a-b", IDENTIFIER.format("a-b")),
    ("top\n", IDENTIFIER.format("top\n")),      # regression: ^...$ matched before a newline
    ("mul\u00e9", IDENTIFIER.format("mul\u00e9")),
    (None, IDENTIFIER.format(None)),
    (7, IDENTIFIER.format(7)),
    ("module", "module name 'module' is reserved in Verilog or SystemVerilog; choose another "
               "--name"),
    ("logic", "module name 'logic' is reserved in Verilog or SystemVerilog; choose another "
              "--name"),
    ("m" * (MAX_NAME + 1), f"module name is {MAX_NAME + 1} characters long; at most {MAX_NAME} "
                           "(it names the .v, .json and .core files too)"),
], ids=["digit-first", "empty", "dash", "newline", "non-ascii", "none", "int", "keyword",
        "sv-keyword", "too-long"])
def test_check_module_name_errors(name, message):
    with pytest.raises(ModuleNameError) as err:
        check_module_name(name)
    assert str(err.value) == message


def test_check_module_name_accepts_identifiers():
    for name in ("m", "_m", "fp_mul_e4m3fn_rne", "Module2", "m" * MAX_NAME):
        assert check_module_name(name) == name


def test_a_bad_name_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path))
    with pytest.raises(ModuleNameError):
        emit.verilog(make_spec("mul", format="fp8e4m3"), "always")
    assert list(tmp_path.iterdir()) == []
