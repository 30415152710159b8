"""The one command line: every subcommand shares one set of spec options, bad input anywhere is
one line naming what is valid with exit status 2 and nothing written, and every product target
of the Makefile goes through it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fpforge.cli import main, parser
from fpforge.rtl.kinds import KINDS, SPEC_OPTIONS

ROOT = Path(__file__).resolve().parents[2]
SPEC_COMMANDS = ("verilog", "synth", "verify", "verify-exhaustive")


def _subparsers():
    action = next(a for a in parser()._actions if a.dest == "command")
    return action.choices


@pytest.mark.parametrize("command", SPEC_COMMANDS)
def test_every_spec_command_takes_the_one_option_set(command):
    flags = {}
    for action in _subparsers()[command]._actions:
        for flag in action.option_strings:
            flags[flag] = action
    for opt in SPEC_OPTIONS:
        action = flags[opt.flag]
        assert action.dest == opt.dest
        assert opt.help in action.help      # same meaning (synth lists units)


def test_formats_and_units_list_the_catalog_and_the_registry(capsys):
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    catalog, p3109 = out.split("\n\n")        # the catalog, then the P3109 family
    assert "float8_e4m3fn        fp8e4m3" in catalog and len(catalog.splitlines()) == 14
    assert "binary8p3se" in p3109
    assert main(["units"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if not line.startswith(" ")] == \
        list(KINDS)
    assert "      shape: scalar; cut points: decode, product, align, core, round" in out
    assert "      shape: block; cut points: decode, product, sum, round" in out


LONG = "n" * 300
# (subcommand argv, the message's start). Every one must fail in one line, exit 2, before work.
BAD = {
    "verilog unknown format": (["verilog", "--unit", "mul", "--format", "fp7", "-o", "o.v"],
                               "unknown format 'fp7'; valid: "),
    "verilog unknown unit": (["verilog", "--unit", "divide", "-o", "o.v"],
                             "argument --unit: invalid choice: 'divide'"),
    "verilog option of another kind": (["verilog", "--unit", "add", "--n", "8", "-o", "o.v"],
                                       "--n applies to units dot and amax only, not add"),
    "verilog stages": (["verilog", "--unit", "fma", "--stages", "-1", "-o", "o.v"],
                       "stages must be a non-negative integer, not -1"),
    "verilog long name": (["verilog", "--unit", "mul", "--name", LONG, "--out-dir", "."],
                          "module name is 300 characters long; at most 200"),
    "verilog missing folder": (["verilog", "--unit", "mul", "--out-dir", "nowhere"],
                               "--out-dir 'nowhere' does not exist"),
    "synth unknown format": (["synth", "--format", "bogus"], "unknown format 'bogus'"),
    "synth unknown unit": (["synth", "--unit", "mul,divide"], "argument --unit: invalid unit 'divide'"),
    "synth option no unit takes": (["synth", "--unit", "mul,add", "--block", "8"],
                                   "--block applies to units mxq and mxdq only, not mul,add"),
    "synth block range": (["synth", "--unit", "mxq", "--block", "999"],
                          "block must be an integer 1..256, not 999"),
    "synth missing out": (["synth", "--out", "nowhere"], "--out 'nowhere' does not exist"),
    "synth missing liberty": (["synth", "--liberty", "none.lib"],
                              "liberty file 'none.lib' does not exist"),
    "sweep unknown format": (["sweep", "--formats", "fp8e4m3,bogus"],
                             "argument --formats: unknown format 'bogus'"),
    "sweep width": (["sweep", "--max-width", "2"],
                    "no catalog format of at most --max-width 2 bits; the narrowest is "
                    "float4_e2m1fn (4 bits)"),
    "sweep missing out": (["sweep", "--out", "nowhere"], "--out 'nowhere' does not exist"),
    "verify unknown format": (["verify", "--unit", "mul", "--format", "bogus"],
                              "unknown format 'bogus'"),
    "verify matrix format": (["verify", "--matrix", "--formats", "bogus"],
                             "unknown format 'bogus'"),
    "verify matrix and unit": (["verify", "--matrix", "--unit", "mul"],
                               "--matrix runs the whole matrix of make verify"),
    "verify no unit": (["verify"], "fpforge verify needs --unit (or --matrix)"),
    "verify missing file": (["verify", "--unit", "mul", "--verilog", "x.v", "--top", "x"],
                            "Verilog file "),
    "verify unknown fault": (["verify", "--unit", "mul", "--fault", "nope"],
                             "unknown fault 'nope'; valid: force-inexact"),
    "verify-exhaustive unknown format": (["verify-exhaustive", "--unit", "add", "--format",
                                          "bogus"], "unknown format 'bogus'"),
    "verify-exhaustive shard": (["verify-exhaustive", "--unit", "add", "--shard", "4/4"],
                                "argument --shard: '4/4': need 0 <= i < N"),
    "verify-equiv no commit": (["verify-equiv", "--base", "no-such-commit"],
                               "base 'no-such-commit' names no commit"),
    "verify-equiv unknown unit": (["verify-equiv", "--base", "HEAD", "--unit", "divide"],
                                  "argument --unit: invalid unit 'divide'"),
    "bench-ppa missing out": (["bench-ppa", "--out", "nowhere"], "--out 'nowhere' does not exist"),
    "bench-golden not a number": (["bench-golden", "--log2n", "x"],
                                  "argument --log2n: invalid int value: 'x'"),
    "unknown subcommand": (["frobnicate"], "argument command: invalid choice: 'frobnicate'"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path, monkeypatch, capsys):
    argv, start = BAD[case]
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    prog = "fpforge" if case == "unknown subcommand" else f"fpforge {argv[0]}"
    assert err.startswith(f"{prog}: error: {start}"), err
    assert sorted(tmp_path.rglob("*")) == before


def test_a_missing_tool_names_its_package(monkeypatch, capsys):
    """bench-mx without the mxref extra: one line naming how to install it, exit 2."""
    import builtins
    real = builtins.__import__

    def no_torch(name, *a, **k):
        if name.split(".")[0] in ("torch", "torchao"):
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_torch)
    assert main(["bench-mx"]) == 2
    assert capsys.readouterr().err == ("fpforge bench-mx: error: bench-mx needs torch and "
                                       "torchao: .venv/bin/pip install -e '.[mxref]'\n")


def test_the_console_script_fails_in_one_line(tmp_path):
    exe = Path(sys.executable).with_name("fpforge")
    bad = subprocess.run([str(exe), "verify-exhaustive", "--unit", "add", "--format", "bogus"],
                         cwd=tmp_path,
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == "" and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("fpforge verify-exhaustive: error: unknown format 'bogus'")
    assert list(tmp_path.iterdir()) == []


# ----- the Makefile goes through the one command line ---------------------------------------------

PRODUCT_TARGETS = {
    "verilog": "verilog", "synth": "synth", "sweep": "sweep", "bench-ppa": "bench-ppa",
    "verify": "verify", "verify-exhaustive": "verify-exhaustive", "verify-equiv": "verify-equiv",
    "bench-golden": "bench-golden", "bench-mx": "bench-mx",
}


def _make_n(*args) -> str:
    out = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "MAKEFLAGS": ""})
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("target", PRODUCT_TARGETS)
def test_every_product_target_calls_fpforge(target):
    out = _make_n(target, "BASE=HEAD")
    assert re.search(rf"\.venv/bin/fpforge {PRODUCT_TARGETS[target]}\b", out), out
    assert "python -m" not in out and "-m synth" not in out and "-m sim" not in out


def test_make_passes_every_unit_option():
    out = _make_n("synth", "UNIT=dot", "FORMAT=bf16", "IN_FORMAT=fp4e2m1", "N=8",
                  "ACCUM=fixed", "FRAC_BITS=12", "SCALES=0", "ROUNDING=rtz", "STAGES=2",
                  "PNR=1", "FPGA=0", "GATE_LEVEL=1", "LIBERTY=my.lib")
    for part in ("--unit dot", "--format bf16", "--in-format fp4e2m1", "--n 8",
                 "--accum fixed", "--frac-bits 12", "--no-scales", "--rounding rtz",
                 "--stages 2", "--pnr", "--no-fpga", "--gate-level", "--liberty my.lib"):
        assert part in out, part
    out = _make_n("verilog", "UNIT=mxq", "FORMAT=fp4e2m1", "BLOCK=16", "SCALE_RULE=ceil",
                  "SR_BITS=4", "ROUNDING=stochastic", "SATURATE=1", "SUBNORMALS=0", "NAME=q")
    for part in ("--unit mxq", "--block 16", "--scale-rule ceil", "--sr-bits 4", "--saturate",
                 "--no-subnormals", "--name q", "--out-dir build/verilog"):
        assert part in out, part
    out = _make_n("verify", "VERIFY_FORMATS=fp8e4m3,fp16", "SIM=icarus")
    assert "--matrix --formats fp8e4m3,fp16 --sim icarus" in out
    assert "verify-results-fp8e4m3_fp16.xml" in out


def test_make_with_a_bogus_format_fails_fast_in_one_line():
    """make verify-exhaustive FORMAT=bogus (once a traceback) and make verify
    VERIFY_FORMATS=bogus (once a minute of work first) stop at once, exit 2."""
    for target, var in (("verify-exhaustive", "FORMAT=bogus"), ("verify", "VERIFY_FORMATS=bogus")):
        run = subprocess.run(["make", "-s", target, var], cwd=ROOT, capture_output=True,
                             text=True, env={**os.environ, "MAKEFLAGS": ""}, timeout=60)
        assert run.returncode != 0 and "Traceback" not in run.stderr
        errors = [line for line in run.stderr.splitlines() if "fpforge" in line]
        assert len(errors) == 1 and "unknown format 'bogus'" in errors[0], run.stderr
