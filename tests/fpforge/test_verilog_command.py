"""``fpforge verilog`` (fpforge/cli/export.py): round trips for every kind, and every kind of bad
parameter: exit status 2, one line on stderr naming what is valid, nothing on stdout, no file
written, an earlier export left as it was."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fpforge import cli
from fpforge.rtl.format_names import valid_forms
from kind_examples import specs as kind_specs
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.kinds import KINDS, SPEC_OPTIONS, UNITS, make_spec, spec_argv, units_phrase
from fpforge.rtl.mx import MxQuantSpec

FPFORGE = str(Path(sys.executable).with_name("fpforge"))
# The valid format names as the command line prints them: on one line, runs of spaces collapsed
# (the grammar's help has two spaces before its examples).
VALID = valid_forms()


def run(argv, cwd: Path):
    """main() in this process, from ``cwd`` (relative -o paths resolve there)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return cli.main(argv)
    finally:
        os.chdir(old)


# ----- round trips --------------------------------------------------------------------------------

ROUND_TRIPS = {
    "mul": (["--unit", "mul", "--format", "fp8e4m3"], make_spec("mul", format="fp8e4m3")),
    "add": (["--unit", "add", "--format", "fp8e4m3", "--rounding", "rtz", "--saturate"],
            make_spec("add", format="fp8e4m3", rounding="rtz", saturate=True)),
    "sub": (["--unit", "sub", "--format", "fp8e5m2", "--rounding", "dynamic", "--stages", "1"],
            make_spec("sub", format="fp8e5m2", rounding="dynamic", stages=1)),
    "fma": (["--unit", "fma", "--format", "fp8e4m3", "--in-format", "fp8e5m2", "--c-format",
             "bf16", "--stages", "2"],
            make_spec("fma", format="fp8e4m3", in_format="fp8e5m2", c_format="bf16", stages=2)),
    "cvt": (["--unit", "cvt", "--format", "fp8e4m3", "--in-format", "fp32", "--rounding",
             "stochastic", "--no-subnormals"],
            make_spec("cvt", format="fp8e4m3", in_format="fp32", rounding="stochastic",
                      subnormals=False)),
    "mxq": (["--unit", "mxq", "--format", "fp4e2m1", "--block", "2"],
            MxQuantSpec("fp4e2m1", block=2)),
    "mxdq": (["--unit", "mxdq", "--in-format", "fp6e3m2", "--block", "2"],
             make_spec("mxdq", in_format="fp6e3m2", block=2)),
    "dot": (["--unit", "dot", "--in-format", "fp4e2m1", "--n", "2", "--no-scales"],
            MxDotSpec("fp4e2m1", n=2, scaled=False)),
}


# ... and every kind's examples (tests/kind_examples.py), spelled by spec_argv().
ROUND_TRIPS |= {s.default_name: (spec_argv(s), s) for s in kind_specs()}


def test_round_trips_cover_every_kind():
    assert {spec.unit for _, spec in ROUND_TRIPS.values()} == set(KINDS)


@pytest.mark.parametrize("unit", ROUND_TRIPS)
def test_round_trip(unit, tmp_path, capsys):
    """The command writes .v/.json/.core; the sidecar describes the spec asked for, and the
    command recorded in the header regenerates the same bytes."""
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "out").mkdir(parents=True), second.mkdir()
    argv, expected = ROUND_TRIPS[unit]
    assert run(["verilog", *argv, "-o", "out/unit.v"], first) == 0
    assert capsys.readouterr().out == (f"wrote out/unit.v (module {expected.default_name}, "
                                       f"latency {expected.latency}) and its .json/.core\n")
    side = json.loads((first / "out/unit.json").read_text())
    assert side["module"] == expected.default_name
    assert side["spec"] == expected.describe()
    assert sorted(p.name for p in (first / "out").iterdir()) == ["unit.core", "unit.json",
                                                                "unit.v"]
    text = (first / "out/unit.v").read_text()
    assert f"\nmodule {expected.default_name}(" in text
    assert f"\n// command     {side['command']}\n" in text

    command = shlex.split(side["command"])
    assert command[:2] == ["fpforge", "verilog"]
    assert command[2:-2] == spec_argv(expected)
    assert run(command[1:], second) == 0
    regenerated = second / f"{expected.default_name}.v"
    assert regenerated.read_bytes() == (first / "out/unit.v").read_bytes()


def test_sub_is_a_unit_of_its_own(tmp_path):
    """--unit sub exports fp_sub_..., and its header records the command that made it."""
    assert run(["verilog", "--unit", "sub", "--format", "bf16", "--out-dir", "."], tmp_path) == 0
    text = (tmp_path / "fp_sub_e8m7_rne.v").read_text()
    assert "\nmodule fp_sub_e8m7_rne(" in text
    assert ("\n// command     fpforge verilog --unit sub --format bfloat16 --rounding rne "
            "--stages 0 -o fp_sub_e8m7_rne.v\n") in text


def test_name_option(tmp_path):
    assert run(["verilog", "--unit", "mul", "--format", "fp4e2m1", "--name", "my_mul",
                "-o", "m.v"], tmp_path) == 0
    assert "\nmodule my_mul(" in (tmp_path / "m.v").read_text()
    core = (tmp_path / "m.core").read_text()
    assert 'name: "fpforge:units:my_mul:0.1.0"' in core
    assert json.loads((tmp_path / "m.json").read_text())["command"].endswith(
        "--stages 0 --name my_mul -o my_mul.v")


def test_a_name_of_200_characters_is_the_longest(tmp_path):
    name = "m" * 200
    assert run(["verilog", "--unit", "mul", "--format", "fp4e2m1", "--name", name,
                "--out-dir", "."], tmp_path) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.core", f"{name}.json",
                                                          f"{name}.v"]


def test_out_dir_takes_the_module_name(tmp_path):
    (tmp_path / "build/verilog").mkdir(parents=True)
    assert run(["verilog", "--unit", "cvt", "--format", "fp8e5m2", "--in-format", "bf16",
                "--out-dir", "build/verilog"], tmp_path) == 0
    name = make_spec("cvt", format="fp8e5m2", in_format="bf16").default_name
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
    assert bad.stderr == f"fpforge verilog: error: unknown format 'fp7'; {VALID}\n"
    assert bad.stdout == ""
    assert not (tmp_path / "b.v").exists()


def test_formats_lists_the_catalog(capsys):
    """``fpforge formats``, the neighbour of ``verilog`` that lists what --format takes."""
    assert cli.main(["formats"]) == 0
    out = capsys.readouterr().out
    assert "float8_e4m3fn        fp8e4m3" in out
    catalog = out.split("\n\n")[0]           # then the P3109 family (tests/test_lists.py)
    assert "max 448" in catalog and len(catalog.splitlines()) == 14


# ----- errors -------------------------------------------------------------------------------------

BASE = ["verilog", "--unit", "mul", "--format", "fp8e4m3"]
Q = ["verilog", "--unit", "mxq", "--format", "fp8e4m3"]
D = ["verilog", "--unit", "dot", "--format", "float32", "--in-format", "fp8e4m3"]
E = "fpforge verilog: error: "


def applies(flag: str) -> str:
    """``--x applies to unit(s) ...``: the kinds that take the option, from the registry."""
    dest = next(o.dest for o in SPEC_OPTIONS if o.flag == flag)
    takers = [k for k, kd in KINDS.items() if dest in kd.spec.OPTIONS]
    return f"{flag} applies to {units_phrase(takers)} only"


ERRORS = {
    "unknown unit": (["verilog", "--unit", "divide", "--format", "fp8e4m3"],
                     E + "argument --unit: invalid choice: 'divide' (choose from "
                         f"{', '.join(map(repr, UNITS))})"),
    "unknown format": (["verilog", "--unit", "mul", "--format", "fp9"],
                       E + f"unknown format 'fp9'; {VALID}"),
    "unknown in-format": (BASE + ["--in-format", "float8_e4m3fnx"],
                          E + f"unknown format 'float8_e4m3fnx'; {VALID}"),
    "impossible in-format": (BASE + ["--in-format", "e8m24"],
                             E + "impossible format 'e8m24': format e8m24: mantissa bits must be "
                                 f"0..23, not 24; {VALID}"),
    "impossible format": (["verilog", "--unit", "add", "--format", "e4m0"],
                          E + "impossible format 'e4m0': format e4m0: IEEE-style NaNs need at "
                              f"least 1 mantissa bit (use fn, fnuz or fin); {VALID}"),
    "ambiguous format": (["verilog", "--unit", "sub", "--format", "e2m1fn"],
                         E + "ambiguous format 'e2m1fn': ml_dtypes' float4_e2m1fn is finite (no "
                             "inf, no NaN, max 6: spell it float4_e2m1fn, fp4e2m1 or e2m1fin), "
                             "while the generic grammar's fn has NaN at the all-ones code (max "
                             "4: spell it e2m1fn_b1)"),
    "a-format with cvt": (["verilog", "--unit", "cvt", "--format", "fp8e4m3", "--a-format",
                           "fp16"],
                          E + applies("--a-format") + ", not "
                              "cvt"),
    "c-format with mul": (BASE + ["--c-format", "fp16"],
                          E + applies("--c-format") + ", not mul"),
    "c-format with sub": (["verilog", "--unit", "sub", "--format", "fp8e4m3", "--c-format",
                           "fp16"],
                          E + applies("--c-format") + ", not sub"),
    "negative stages": (BASE + ["--stages", "-1"],
                        E + "stages must be a non-negative integer, not -1"),
    "stages not a number": (BASE + ["--stages", "two"],
                            E + "argument --stages: invalid int value: 'two'"),
    "unknown rounding": (BASE + ["--rounding", "nearest"],
                         E + "argument --rounding: invalid choice: 'nearest' (choose from 'rne', "
                             "'rtz', 'rdn', 'rup', 'rna', 'rod', 'stochastic', 'stochastic_b', "
                             "'stochastic_c', 'dynamic')"),
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
    "name of 300 characters": (BASE + ["--name", "n" * 300],
                               E + "module name is 300 characters long; at most 200 (it names "
                                   "the .v, .json and .core files too)"),
    "name of 201 characters": (BASE + ["--name", "n" * 201, "--out-dir", "."],
                               E + "module name is 201 characters long; at most 200 (it names "
                                   "the .v, .json and .core files too)"),
    "output not .v": (BASE + ["-o", "OUT.sv"], E + "output file must end in .v, not 'OUT.sv'"),
    "output missing": (BASE, E + "one of the arguments -o/--output --out-dir is required"),
    "two outputs": (BASE + ["-o", "a.v", "--out-dir", "d"],
                    E + "argument --out-dir: not allowed with argument -o/--output"),
    "output folder missing": (BASE + ["-o", "missing/OUT.v"],
                              E + "output folder 'missing' does not exist"),
    "output folder below a file": (BASE + ["-o", "OUT.v/deeper/m.v"],
                                   E + "output folder 'OUT.v/deeper' is not a directory: "
                                       "'OUT.v' is a file"),
    "out-dir missing": (BASE + ["--out-dir", "missing"],
                        E + "--out-dir 'missing' does not exist (or is not a folder)"),
    "out-dir a file": (BASE + ["--out-dir", "OUT.json"],
                       E + "--out-dir 'OUT.json' does not exist (or is not a folder)"),
    "out-dir below a file": (BASE + ["--out-dir", "OUT.v/deeper"],
                             E + "--out-dir 'OUT.v/deeper' does not exist (or is not a folder)"),
    # the block kinds
    "unknown element": (["verilog", "--unit", "mxq", "--format", "fp7"],
                        E + "MX element format must be one of fp8e4m3, fp8e5m2, fp6e3m2, "
                            "fp6e2m3, fp4e2m1, mxint8, int4, fp8e4m3fnuz, fp8e5m2fnuz, "
                            "binary8p4se, binary8p3se, binary4p2sf (or their catalog names), "
                            "not 'fp7'"),
    "mxq input format": (Q + ["--in-format", "fp16"],
                         E + "MX quantizer input format must be one of float32, bfloat16, not "
                             "'fp16'"),
    "block zero": (Q + ["--block", "0"], E + "block must be an integer 1..256, not 0"),
    "block too long": (Q + ["--block", "257"], E + "block must be an integer 1..256, not 257"),
    "scale rule": (Q + ["--scale-rule", "round"],
                   E + "argument --scale-rule: invalid choice: 'round' (choose from 'floor', "
                       "'ceil', 'rceil', 'even', 'vllm', 'nvfp4_te', 'nvfp4_modelopt', "
                       "'nvfp4_torchao', 'nvfp4_4over6', 'p3109_maxabs')"),
    "mxq dynamic": (Q + ["--rounding", "dynamic"],
                    E + "the MX quantizer takes a static rounding mode or stochastic, not "
                        "'dynamic'"),
    "mxq saturate": (Q + ["--saturate"],
                     E + applies("--saturate") + ", not mxq "
                         "(its elements always saturate)"),
    "mxq a-format": (Q + ["--a-format", "fp16"],
                     E + applies("--a-format") + ", not mxq"),
    "n with mxq": (Q + ["--n", "8"], E + "--n applies to units dot and amax only, not mxq"),
    "block with dot": (D + ["--block", "8"],
                       E + "--block applies to units mxq and mxdq only, not dot"),
    "block with mul": (BASE + ["--block", "8"],
                       E + "--block applies to units mxq and mxdq only, not mul"),
    "scale rule with mxdq": (["verilog", "--unit", "mxdq", "--format", "float32", "--in-format",
                              "fp4e2m1", "--scale-rule", "ceil"],
                             E + "mxdq reads an E8M0 scale the same way under every "
                                 "power-of-two rule; --scale-rule selects a value-scale recipe: "
                                 "nvfp4_te, nvfp4_modelopt, nvfp4_torchao, nvfp4_4over6, "
                                 "p3109_maxabs, not 'ceil'"),
    "mxdq output": (["verilog", "--unit", "mxdq", "--format", "bf16", "--in-format", "fp4e2m1"],
                    E + "unit mxdq writes float32; --format must be float32, not 'bf16'"),
    "mxdq element missing": (["verilog", "--unit", "mxdq", "--format", "float32"],
                             E + "unit mxdq needs its element format: --in-format ELEM"),
    "mxdq rounding": (["verilog", "--unit", "mxdq", "--format", "float32", "--in-format",
                       "fp4e2m1", "--rounding", "rtz"],
                      E + "unit mxdq rounds rne (exact unless float32 overflows or underflows); "
                          "--rounding rtz does not apply"),
    "mxdq saturate": (["verilog", "--unit", "mxdq", "--in-format", "fp4e2m1", "--saturate"],
                      E + applies("--saturate") + ", not "
                          "mxdq"),
    "dot n too long": (D + ["--n", "65"], E + "dot length n must be an integer 1..64, not 65"),
    "dot n zero": (D + ["--n", "0"], E + "dot length n must be an integer 1..64, not 0"),
    "dot element missing": (["verilog", "--unit", "dot", "--format", "float32"],
                            E + "unit dot needs its element format(s): --in-format ELEM (both "
                                "vectors) or --a-format ELEM and --b-format ELEM"),
    "dot element": (D[:-1] + ["fp16"],
                    E + "MX element format must be one of fp8e4m3, fp8e5m2, fp6e3m2, fp6e2m3, "
                        "fp4e2m1, mxint8, int4, fp8e4m3fnuz, fp8e5m2fnuz, binary8p4se, "
                        "binary8p3se, binary4p2sf (or their catalog names), not 'fp16'"),
    "dot stochastic": (D + ["--rounding", "stochastic"],
                       E + "the dot unit takes a static rounding mode (rne, rtz, rdn, rup, rna, "
                           "rod), not 'stochastic'"),
    "dot saturate": (D + ["--saturate"],
                     E + applies("--saturate") + ", not dot "
                         "(its result overflows to inf)"),
    "frac-bits exact": (D + ["--frac-bits", "8"],
                        E + "--frac-bits sets the width of --accum fixed; it does not apply to "
                            "--accum exact"),
    "frac-bits range": (D + ["--accum", "fixed", "--frac-bits", "56"],
                        E + "frac_bits must be an integer 1..55, not 56"),
    "dot output": (["verilog", "--unit", "dot", "--format", "e8m0", "--in-format", "fp4e2m1"],
                   E + "dot output format must hold signed values, not float8_e8m0fnu"),
    "dot stages": (D + ["--stages", "-2"], E + "stages must be a non-negative integer, not -2"),
    "dot c exact": (D + ["--c-format", "float32"],
                    E + "dot --c-format adds the accumulator input c to --accum fixed (c "
                        "truncated like the products, a tensor core's step); --accum exact "
                        "takes no c"),
    "dot c unsigned": (D + ["--accum", "fixed", "--c-format", "e8m0"],
                       E + "dot --c-format must be a signed float format (float32, bfloat16, "
                           "e8m13...), not float8_e8m0fnu"),
    "dot c value scales": (D + ["--accum", "fixed", "--c-format", "float32", "--scale-format",
                                "fp8e4m3"],
                           E + "dot --c-format works with E8M0 scales, --no-scales or "
                               "--sum-group, not --scale-format float8_e4m3fn alone"),
    "dot sum group exact": (D + ["--sum-group", "8"],
                            E + "dot --sum-group sums groups of lanes exactly, each at its own "
                                "scales (a tensor core's grouped step): it needs --accum fixed "
                                "and scale inputs"),
    "dot sum group unscaled": (D + ["--accum", "fixed", "--sum-group", "8", "--no-scales"],
                               E + "dot --sum-group sums groups of lanes exactly, each at its "
                                   "own scales (a tensor core's grouped step): it needs --accum "
                                   "fixed and scale inputs"),
    "dot sum group divides": (D + ["--accum", "fixed", "--sum-group", "5"],
                              E + "dot --sum-group 5 must divide the vector length n = 32"),
    "dot sum group range": (D + ["--accum", "fixed", "--sum-group", "0"],
                            E + "sum_group must be an integer 1..32, not 0"),
    "dot frac-bits2 without c": (D + ["--accum", "fixed", "--frac-bits2", "31", "--no-scales"],
                                 E + "dot --frac-bits2 is the second stage of a two-stage sum "
                                     "with c (AMD CDNA3's step): it needs --accum fixed and "
                                     "--c-format, without --sum-group or scale inputs "
                                     "(--no-scales)"),
    "dot frac-bits2 odd n": (D + ["--accum", "fixed", "--frac-bits2", "31", "--no-scales",
                                  "--c-format", "float32", "--n", "15"],
                             E + "dot --frac-bits2 sums the even and the odd lanes apart: n "
                                 "must be even, not 15"),
    "dot frac-bits2 range": (D + ["--accum", "fixed", "--frac-bits2", "20", "--no-scales",
                                  "--c-format", "float32"],
                             E + "frac_bits2 must be an integer 24..48, not 20"),
    "dot sum group wide": (D + ["--accum", "fixed", "--sum-group", "16", "--frac-bits", "40"],
                           E + "dot --sum-group 16: a scaled group of fp8e4m3 x fp8e4m3 needs 43 "
                               "bits and the truncated sum 68; at most 64 and 62 are supported "
                               "(fewer --frac-bits, a smaller group or narrower elements)"),
}


def _earlier_export(folder: Path) -> dict:
    """An earlier, good export at OUT.v that a failed run must leave exactly as it is."""
    for suffix in (".v", ".json", ".core"):
        (folder / f"OUT{suffix}").write_text(f"earlier {suffix}\n")
    return _snapshot(folder)


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
            for p in sorted(folder.rglob("*"))}


def _refused(argv, folder: Path, capsys, message: str):
    """The run exits 2 with exactly ``message`` on stderr, nothing on stdout, and leaves
    ``folder`` as it was."""
    before = _snapshot(folder)
    assert run(argv, folder) == 2
    captured = capsys.readouterr()
    assert captured.err == message + "\n"
    assert captured.out == ""
    assert _snapshot(folder) == before


@pytest.mark.parametrize("case", ERRORS)
def test_bad_parameters(case, tmp_path, capsys):
    argv, message = ERRORS[case]
    if "-o" not in argv and "--out-dir" not in argv and not case.startswith("output"):
        argv = argv + ["-o", "OUT.v"]
    _earlier_export(tmp_path)
    _refused(argv, tmp_path, capsys, message)


def test_a_name_ending_in_a_newline_is_refused(tmp_path, capsys):
    _refused(BASE + ["--name", "top\n", "--out-dir", "."], tmp_path, capsys,
             E + "module name must be a plain Verilog identifier (letters, digits, _; not "
                 "starting with a digit), not 'top\\n'")


def test_output_is_a_directory(tmp_path, capsys):
    (tmp_path / "OUT.v").mkdir()
    _refused(BASE + ["-o", "OUT.v"], tmp_path, capsys, E + "output file 'OUT.v' is a directory")


def test_every_error_is_one_line():
    assert all("\n" not in message for _, message in ERRORS.values())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a folder whatever its "
                                               "permissions say; the cases of a folder that "
                                               "cannot exist (below a file) cover the refusal")
@pytest.mark.parametrize("how", ["-o", "--out-dir"])
def test_unwritable_output_folder(how, tmp_path, capsys):
    folder = tmp_path / "locked"
    folder.mkdir()
    _earlier_export(folder)
    folder.chmod(0o500)
    try:
        target = ["-o", "locked/OUT.v"] if how == "-o" else ["--out-dir", "locked"]
        message = ("output folder 'locked' is not writable" if how == "-o" else
                   "--out-dir 'locked' is not writable")
        _refused(BASE + target, tmp_path, capsys, E + message)
    finally:
        folder.chmod(0o700)
