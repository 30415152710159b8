"""synth.equiv: the equivalence proof passes a differently built netlist of the same unit and
refutes a wrong unit, combinational and pipelined; bad arguments fail in one line before any
export; the export script reads the working tree's API."""

import json

import pytest

from fpforge.rtl.emit import verilog
from fpforge.rtl.formats import FormatError
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from fpforge.synth import equiv
from fpforge.synth.flow import run_yosys


def gate_level(text: str, top: str, work) -> str:
    """The same unit after Yosys's synthesis to generic gates: one function, another netlist."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "in.v").write_text(text)
    done = run_yosys(work, f'read_verilog "in.v"\nsynth -flatten -top {top}\n'
                           'write_verilog -noattr out.v\n', "s.ys")
    assert done.ok, done.log()
    return (work / "out.v").read_text()


@pytest.mark.parametrize("stages", [0, 2])
def test_a_synthesised_netlist_of_the_unit_is_proven_equivalent(tmp_path, stages):
    spec = make_spec("mul", format="fp6e2m3", rounding="dynamic", stages=stages)
    gold = verilog(spec)
    gate = gate_level(gold, spec.default_name, tmp_path / "synth")
    assert gate != gold
    ok, log = equiv.prove(gold, gate, spec.default_name, stages, tmp_path / "check")
    assert ok, log


@pytest.mark.parametrize("stages", [0, 2])
def test_a_wrong_unit_is_refuted_with_a_counterexample(tmp_path, stages):
    right = make_spec("mul", format="fp6e2m3", stages=stages)
    wrong = make_spec("mul", format="fp6e2m3", rounding="rtz", stages=stages)
    ok, log = equiv.prove(verilog(right), verilog(wrong, right.default_name),
                          right.default_name, stages, tmp_path)
    assert not ok
    # the model found: the inputs, and both units' outputs
    assert "FAIL" in log and all(w in log for w in ("in_a", "in_b", "gold_y", "gate_y"))


def test_compare_sorts_identical_equivalent_and_different(tmp_path):
    spec = make_spec("add", format="fp4e2m1")
    wrong = make_spec("add", format="fp4e2m1", rounding="rup")
    text = verilog(spec)
    cases = {"same": text, "commented": "// another header\n" + text.replace("\n", "\n\n"),
             "rewritten": gate_level(text, spec.default_name, tmp_path / "g"),
             "wrong": verilog(wrong, spec.default_name)}
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
    assert checks == {"same": "identical", "commented": "identical", "rewritten": "equivalent",
                      "wrong": "different"}
    # A spec the base does not have (a new scale rule) is new; one the working tree lost is
    # an error.
    (new_dir / "added.v").write_text(text)
    grown = {**index, "added": {"top": spec.default_name, "stages": 0, "unit": "mxq"}}
    verdicts = {c.case: c.verdict for c in
                equiv.compare(index, grown, base_dir, new_dir, tmp_path / "checks2", 2)}
    assert verdicts["added"] == "new" and verdicts["same"] == "identical"
    with pytest.raises(ValueError, match="^the working tree lacks 1 of the base's specs "
                                         r"\(first added\): compare them by simulation$"):
        equiv.compare(grown, index, base_dir, new_dir, tmp_path / "checks3", 2)


def test_only_comment_lines_and_whitespace_are_ignored():
    assert equiv.same_text("a b\n// x\n", "a  b\n\n// y\n")
    assert not equiv.same_text("assign y = a;\n", "assign y = b;\n")
    assert not equiv.same_text("assign y = a; // x\n", "assign y = a; // y\n")


def test_export_covers_the_matrix_and_the_sweeps_mx_units(tmp_path):
    from fpforge.sim.tiers import FULL_MODES
    from fpforge.synth import sweep
    index = equiv.export(equiv.ROOT, tmp_path, "fp4e2m1", "mul,mxdq")
    assert {i["unit"] for i in index.values()} == {"mul", "mxdq"}
    # mul: every rounding x saturate x subnormals x 2 stage counts; mxdq: the sweep's one case
    assert len([i for i in index.values() if i["unit"] == "mul"]) == len(FULL_MODES) * 2 * 2 * 2
    mx = [c.spec() for c in sweep.mx_cases(["fp4e2m1"], ["mxdq"])]
    assert [n for n, i in index.items() if i["unit"] == "mxdq"] == [s.default_name for s in mx]
    assert (tmp_path / "mul-float4_e2m1fn-rne.v").read_text() == \
        verilog(make_spec("mul", format="fp4e2m1"))
    assert json.loads((tmp_path / "index.json").read_text()) == index


def test_export_reads_the_base_trees_own_modules(tmp_path):
    """A base without the fpforge/ package (the top-level layout) is exported with its own
    modules: the installed fpforge (the working tree) must not answer for it. Regression: it
    did, and every spec then compared the working tree with itself."""
    tree = tmp_path / "tree"
    for pkg, body in {
        "sim": "class S:\n    default_name = 'fake_top'; stages = 0; unit = 'mul'\n"
               "def case_id(s): return 'fake-case'\n"
               "def full_matrix(formats): return [S()]\n"
               "def verify_formats(names): return []\n",
        "rtl": "def verilog(spec): return 'module fake_top; endmodule // from the base tree\\n'\n",
        "synth": "def mx_cases(): return []\n",
    }.items():
        (tree / pkg).mkdir(parents=True)
        (tree / pkg / "__init__.py").write_text("")
        name = {"sim": "tiers.py", "rtl": "emit.py", "synth": "sweep.py"}[pkg]
        (tree / pkg / name).write_text(body)
    index = equiv.export(tree, tmp_path / "out", "", "")
    assert index == {"fake-case": {"top": "fake_top", "stages": 0, "unit": "mul"}}
    assert "from the base tree" in (tmp_path / "out" / "fake-case.v").read_text()


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(base="HEAD", formats=["fp9e9m9"]), FormatError, "unknown format 'fp9e9m9'"),
    (dict(base="no-such-commit"), ValueError, "base 'no-such-commit' names no commit"),
    (dict(base="HEAD", units=["mul", "div"]), OptionError,
     "unknown unit 'div'; valid: mul, add, fma, cvt, mxq, mxdq, dot"),
])
def test_bad_arguments_fail_in_one_line_before_any_export(monkeypatch, kwargs, error, words):
    def no_export(*args):
        raise AssertionError("exported before checking its arguments")
    monkeypatch.setattr(equiv, "export", no_export)
    monkeypatch.setattr(equiv, "base_tree", lambda rev: equiv._commit(rev) and no_export())
    with pytest.raises(error) as info:
        equiv.run(jobs=1, **kwargs)
    assert words in str(info.value) and "\n" not in str(info.value)
