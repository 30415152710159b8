"""``fpforge verilog``: round trips for every unit, and every kind of bad parameter (exit 2, one
line on stderr naming what is valid, no file written, an earlier export left as it was)."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rtl import cli
from rtl.formats import valid_forms
from rtl.spec import UnitSpec

FPFORGE = str(Path(sys.executable).with_name("fpforge"))


def run(argv, cwd: Path):
    """main() in this process, from ``cwd`` (relative -o paths resolve there)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return cli.main(argv)
    finally:
        os.chdir(old)


@pytest.mark.parametrize("unit, extra", [
    ("mul", []), ("add", ["--rounding", "rtz", "--saturate"]),
    ("fma", ["--in-format", "fp8e5m2", "--c-format", "bf16", "--stages", "2"]),
    ("cvt", ["--in-format", "fp32", "--rounding", "stochastic", "--no-subnormals"]),
])
def test_round_trip(unit, extra, tmp_path, capsys):
    """The CLI writes .v/.json/.core; the sidecar describes the spec asked for, and the command
    recorded in the header regenerates the same bytes."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    argv = ["verilog", "--unit", unit, "--format", "fp8e4m3", *extra, "-o", "out/unit.v"]
    assert run(argv, first) == 0
    side = json.loads((first / "out/unit.json").read_text())
    expected = UnitSpec.create(unit, "fp8e4m3", **_create_kwargs(extra))
    assert side["module"] == expected.default_name
    assert side["spec"] == expected.describe()
    assert sorted(p.name for p in (first / "out").iterdir()) == ["unit.core", "unit.json", "unit.v"]
    text = (first / "out/unit.v").read_text()
    assert f"\nmodule {expected.default_name}(" in text

    command = shlex.split(side["command"])
    assert command[:2] == ["fpforge", "verilog"]
    assert run(command[1:], second) == 0
    regenerated = second / f"{expected.default_name}.v"
    assert regenerated.read_bytes() == (first / "out/unit.v").read_bytes()
    assert "wrote out/unit.v" in capsys.readouterr().out


def _create_kwargs(extra):
    keys = {"--in-format": "in_fmt", "--c-format": "c_fmt", "--rounding": "rounding",
            "--stages": "stages"}
    kw, it = {}, iter(extra)
    for arg in it:
        if arg == "--saturate":
            kw["saturate"] = True
        elif arg == "--no-subnormals":
            kw["subnormals"] = False
        else:
            kw[keys[arg]] = next(it) if arg != "--stages" else int(next(it))
    return kw


def test_name_option(tmp_path):
    assert run(["verilog", "--unit", "mul", "--format", "fp4e2m1", "--name", "my_mul",
                "-o", "m.v"], tmp_path) == 0
    assert "\nmodule my_mul(" in (tmp_path / "m.v").read_text()
    core = (tmp_path / "m.core").read_text()
    assert 'name: "fpforge:units:my_mul:0.1.0"' in core
    assert json.loads((tmp_path / "m.json").read_text())["command"].endswith(
        "--stages 0 --name my_mul -o my_mul.v")


def test_out_dir_takes_the_module_name(tmp_path):
    assert run(["verilog", "--unit", "cvt", "--format", "fp8e5m2", "--in-format", "bf16",
                "--out-dir", "build/verilog"], tmp_path) == 0
    name = UnitSpec.create("cvt", "fp8e5m2", in_fmt="bf16").default_name
    assert sorted(p.name for p in (tmp_path / "build/verilog").iterdir()) == [
        f"{name}.core", f"{name}.json", f"{name}.v"]
    assert run(["verilog", "--unit", "mul", "--format", "fp8e5m2", "--name", "m8",
                "--out-dir", "build/verilog"], tmp_path) == 0
    assert (tmp_path / "build/verilog/m8.v").exists()


def test_console_script(tmp_path):
    """The installed ``fpforge`` entry point: status 0 and files on success, 2 on an error."""
    ok = subprocess.run([FPFORGE, "verilog", "--unit", "add", "--format", "fp8e5m2", "-o",
                         "a.v"], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "a.v").exists()
    bad = subprocess.run([FPFORGE, "verilog", "--unit", "add", "--format", "fp7", "-o", "b.v"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr == f"fpforge verilog: error: unknown format 'fp7'; {valid_forms()}\n"
    assert not (tmp_path / "b.v").exists()


def test_formats_lists_the_catalog(capsys):
    assert cli.main(["formats"]) == 0
    out = capsys.readouterr().out
    assert "float8_e4m3fn        fp8e4m3" in out
    assert "max 448" in out and len(out.splitlines()) == 14


BASE = ["verilog", "--unit", "mul", "--format", "fp8e4m3"]
E = "fpforge verilog: error: "
ERRORS = {
    "unknown unit": (["verilog", "--unit", "div", "--format", "fp8e4m3"],
                     E + "argument --unit: invalid choice: 'div' (choose from 'mul', 'add', "
                         "'fma', 'cvt', 'mxq', 'mxdq', 'dot')"),
    "unknown format": (["verilog", "--unit", "mul", "--format", "fp9"],
                       E + f"unknown format 'fp9'; {valid_forms()}"),
    "unknown in-format": (BASE + ["--in-format", "float8_e4m3fnx"],
                          E + f"unknown format 'float8_e4m3fnx'; {valid_forms()}"),
    "impossible in-format": (BASE + ["--in-format", "e8m24"],
                             E + "impossible format 'e8m24': format e8m24: mantissa bits must be "
                                 f"0..23, not 24; {valid_forms()}"),
    "impossible format": (["verilog", "--unit", "add", "--format", "e4m0"],
                          E + "impossible format 'e4m0': format e4m0: IEEE-style NaNs need at "
                              f"least 1 mantissa bit (use fn, fnuz or fin); {valid_forms()}"),
    "a-format with cvt": (["verilog", "--unit", "cvt", "--format", "fp8e4m3", "--a-format",
                           "fp16"],
                          E + "unit cvt takes --in-format, not --a-format/--b-format/--c-format"),
    "c-format with mul": (BASE + ["--c-format", "fp16"],
                          E + "--c-format applies to unit fma only, not mul"),
    "negative stages": (BASE + ["--stages", "-1"],
                        E + "stages must be a non-negative integer, not -1"),
    "stages not a number": (BASE + ["--stages", "two"],
                            E + "argument --stages: invalid int value: 'two'"),
    "unknown rounding": (BASE + ["--rounding", "nearest"],
                         E + "argument --rounding: invalid choice: 'nearest' (choose from 'rne', "
                             "'rtz', 'rdn', 'rup', 'rna', 'rod', 'stochastic', 'dynamic')"),
    "sr-bits without stochastic": (BASE + ["--rounding", "dynamic", "--sr-bits", "4"],
                                   E + "--sr-bits sets the width of the rbits input of "
                                       "--rounding stochastic; it does not apply to --rounding "
                                       "dynamic"),
    "sr-bits out of range": (BASE + ["--rounding", "stochastic", "--sr-bits", "33"],
                             E + "sr_bits must be an integer 1..32, not 33"),
    "name not an identifier": (BASE + ["--name", "9lives"],
                               E + "module name must be a plain Verilog identifier (letters, "
                                   "digits, _; not starting with a digit), not '9lives'"),
    "name a keyword": (BASE + ["--name", "always"],
                       E + "module name 'always' is reserved in Verilog or SystemVerilog; choose "
                           "another --name"),
    "name a SystemVerilog keyword": (BASE + ["--name", "logic"],
                                     E + "module name 'logic' is reserved in Verilog or "
                                         "SystemVerilog; choose another --name"),
    "output not .v": (BASE + ["-o", "OUT.sv"], E + "output file must end in .v, not 'OUT.sv'"),
    "output missing": (BASE, E + "one of the arguments -o/--output --out-dir is required"),
    "two outputs": (BASE + ["-o", "a.v", "--out-dir", "d"],
                    E + "argument --out-dir: not allowed with argument -o/--output"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_bad_parameters(case, tmp_path, capsys):
    argv, message = ERRORS[case]
    if "-o" not in argv and not case.startswith("output"):
        argv = argv + ["-o", "OUT.v"]
    before = _earlier_export(tmp_path)
    assert run(argv, tmp_path) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n"
    assert captured.out == ""
    assert _snapshot(tmp_path) == before


def test_output_is_a_directory(tmp_path, capsys):
    (tmp_path / "OUT.v").mkdir()
    assert run(BASE + ["-o", "OUT.v"], tmp_path) == 2
    assert capsys.readouterr().err == E + "output file 'OUT.v' is a directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["OUT.v"]


def _earlier_export(folder: Path) -> dict:
    """An earlier, good export at OUT.v that a failed run must leave exactly as it is."""
    for suffix in (".v", ".json", ".core"):
        (folder / f"OUT{suffix}").write_text(f"earlier {suffix}\n")
    return _snapshot(folder)


def _snapshot(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_synth_hands_over_to_the_synthesis_command_line(monkeypatch):
    import synth.__main__
    seen = []
    monkeypatch.setattr(synth.__main__, "main", lambda argv: seen.append(argv) or 0)
    assert cli.main(["synth", "--format", "fp8e4m3", "--unit", "fma", "--rounding", "rtz",
                     "--stages", "2", "--saturate", "--no-subnormals", "--liberty", "my.lib",
                     "--out", "o"]) == 0
    assert cli.main(["synth", "--format", "bf16"]) == 0
    assert seen == [["--format", "fp8e4m3", "--units", "fma", "--rounding", "rtz", "--stages", "2",
                     "--saturate", "--ftz", "--liberty", "my.lib", "--out", "o"],
                    ["--format", "bf16", "--units", "mul,add,fma,cvt", "--rounding", "rne",
                     "--stages", "0"]]
