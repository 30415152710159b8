"""sim.equiv: the equivalence proof passes a differently built netlist of the same unit and
refutes a wrong unit, combinational and pipelined; bad arguments fail in one line."""

import subprocess

import pytest
from amaranth.back import verilog

from rtl.fp_units import build
from rtl.spec import UnitSpec
from sim import equiv
from synth.flow import yosys_command


def unit_verilog(spec: UnitSpec, name: str | None = None) -> str:
    return verilog.convert(build(spec), name=name or spec.default_name, emit_src=False)


def gate_level(text: str, top: str, work) -> str:
    """The same unit after Yosys's synthesis to generic gates: one function, another netlist."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "in.v").write_text(text)
    (work / "s.ys").write_text(f'read_verilog "in.v"\nsynth -flatten -top {top}\n'
                               'write_verilog -noattr out.v\n')
    subprocess.run(yosys_command() + ["-q", "s.ys"], cwd=work, check=True)
    return (work / "out.v").read_text()


@pytest.mark.parametrize("stages", [0, 2])
def test_a_synthesised_netlist_of_the_unit_is_proven_equivalent(tmp_path, stages):
    spec = UnitSpec.create("mul", "fp6e2m3", rounding="dynamic", stages=stages)
    gold = unit_verilog(spec)
    gate = gate_level(gold, spec.default_name, tmp_path / "synth")
    assert gate != gold
    ok, log = equiv.prove(gold, gate, spec.default_name, stages, tmp_path / "check")
    assert ok, log


@pytest.mark.parametrize("stages", [0, 2])
def test_a_wrong_unit_is_refuted_with_a_counterexample(tmp_path, stages):
    right = UnitSpec.create("mul", "fp6e2m3", stages=stages)
    wrong = UnitSpec.create("mul", "fp6e2m3", rounding="rtz", stages=stages)
    ok, log = equiv.prove(unit_verilog(right), unit_verilog(wrong, right.default_name),
                          right.default_name, stages, tmp_path)
    assert not ok
    # the model found: the inputs, and both units' outputs
    assert "FAIL" in log and all(w in log for w in ("in_a", "in_b", "gold_y", "gate_y"))


def test_compare_sorts_identical_equivalent_and_different(tmp_path):
    spec = UnitSpec.create("add", "fp4e2m1")
    wrong = UnitSpec.create("add", "fp4e2m1", rounding="rup")
    text = unit_verilog(spec)
    cases = {"same": text, "rewritten": gate_level(text, spec.default_name, tmp_path / "g"),
             "wrong": unit_verilog(wrong, spec.default_name)}
    base_dir, new_dir = tmp_path / "base", tmp_path / "new"
    index = {}
    for d in (base_dir, new_dir):
        d.mkdir()
    for case, gate in cases.items():
        (base_dir / f"{case}.v").write_text(text)
        (new_dir / f"{case}.v").write_text(gate)
        index[case] = {"top": spec.default_name, "stages": 0, "unit": "add"}
    checks = {c.case: c.verdict
              for c in equiv.compare(index, index, base_dir, new_dir, tmp_path / "checks", 2)}
    assert checks == {"same": "identical", "rewritten": "equivalent", "wrong": "different"}


@pytest.mark.parametrize("argv, words", [
    (["--base", "HEAD", "--formats", "fp9e9m9"], "unknown format 'fp9e9m9'"),
    (["--base", "no-such-commit"], "names no commit"),
    (["--base", "HEAD", "--units", "mul,div"], "unknown unit 'div'; valid: mul, add, fma, cvt"),
])
def test_bad_arguments_fail_in_one_line(capsys, argv, words):
    assert equiv.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
