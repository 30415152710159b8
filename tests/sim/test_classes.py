"""sim/classes.py and sim/vectors.py: the verdict's mismatch classes, --dump-failing and
--vectors, on fpforge's own fp8 multiplier and its deliberately wrong variants (batch engine:
every one of the 2^16 operand pairs in a few seconds)."""

import numpy as np
import pytest

from fpforge import golden
from fpforge.cli import main
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from fpforge.sim.classes import code_classes
from fpforge.sim.design import Design
from fpforge.sim.faults import faulty_design
from fpforge.sim.stimulus.base import code_values, exhaustive
from fpforge.sim.verify import verify

SPEC = make_spec("mul", format="fp8e4m3")


@pytest.fixture(scope="module")
def ties_away(tmp_path_factory):
    """The ties-away mutant over every input, its failing vectors dumped."""
    dump = tmp_path_factory.mktemp("dump") / "failing.txt"
    v = verify(faulty_design(SPEC, "rna-instead"), engine="batch", dump=str(dump))
    return v, dump


def test_ties_away_is_value_wrong_at_exact_ties_only(ties_away):
    v, _ = ties_away
    # Independently of the classifier: the vectors where RNE and RNA give different codes, and
    # the exact product (float64 is exact for 8-bit operands) halfway between the two results.
    ins = exhaustive(SPEC, 0, 1 << 16)
    rne = np.asarray(golden.evaluate(SPEC, **ins)["y"])
    rna = np.asarray(golden.evaluate(make_spec("mul", format="fp8e4m3", rounding="rna"),
                                     **ins)["y"])
    differ = rne != rna
    fmt = SPEC.out_fmt
    x = code_values(fmt, ins["a"]) * code_values(fmt, ins["b"])
    lo, hi = code_values(fmt, rne), code_values(fmt, rna)
    finite = differ & np.isfinite(hi)
    assert np.array_equal(np.abs(x - lo)[finite], np.abs(x - hi)[finite])
    assert differ.sum() > 1000
    assert v.summary["classes"] == {"value wrong, exact ties": int(differ.sum())}
    assert v.mismatches == differ.sum()
    text = v.explain()
    assert "value wrong, exact ties" in text and "first of value wrong, exact ties:" in text
    assert text.index("mismatch classes") < text.index("first of")


def test_forced_inexact_is_flags_only_nx_extra():
    v = verify(faulty_design(SPEC, "force-inexact"), engine="batch")
    classes = v.summary["classes"]
    assert sum(classes.values()) == v.mismatches > 0
    assert all(name.startswith("flags only: NX extra, ") for name in classes), classes
    # Every vector whose expected flags lack NX fails, and nothing else.
    ins = exhaustive(SPEC, 0, 1 << 16)
    exact = (np.asarray(golden.evaluate(SPEC, **ins)["flags"]) & 1) == 0
    assert v.mismatches == exact.sum()
    assert sum(v.summary["operand_classes"].values()) == v.mismatches


def test_dump_replays_failing_exactly_and_passes_on_the_correct_unit(ties_away):
    v, dump = ties_away
    lines = [line for line in dump.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == v.mismatches == v.summary["dump"]["failing"]
    assert f"# {v.mismatches:,} failing vectors, all written" in dump.read_text()
    again = verify(faulty_design(SPEC, "rna-instead"), engine="batch", vectors=str(dump))
    assert (again.vectors, again.mismatches) == (v.mismatches, v.mismatches)
    good = verify(Design.of(SPEC), engine="batch", vectors=str(dump))
    assert good.ok and good.vectors == v.mismatches
    assert good.summary["file_disagrees"]["lines"] == 0


def test_a_wrong_expected_column_is_reported(ties_away, tmp_path):
    _, dump = ties_away
    lines = dump.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if not line.startswith("#"))
    a, b, y, flags = lines[i].split()
    lines[i] = f"{a} {b} {(int(y, 16) ^ 1):02X} {flags}"
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("\n".join(lines) + "\n")
    v = verify(Design.of(SPEC), engine="batch", vectors=str(wrong))
    assert v.ok                     # the design is right; the file is not
    found = v.summary["file_disagrees"]
    assert found["lines"] == 1 and found["first"][0].startswith(f"line {i + 1}: a=0x{a.lower()}")
    assert "differs from fpforge's golden model on 1 of" in v.explain()


@pytest.mark.parametrize("text, message", [
    ("3C 40 7E 00 11\n", r"f\.txt:1: 5 columns; fp_mul_e4m3fn_rne lines have 2 or 3 or 4"),
    ("3C 4G\n", r"f\.txt:1: b '4G' is not a hex code"),
    ("3C 40\n\n1FF 40\n", r"f\.txt:3: a 0x1ff is wider than its 8 bit\(s\)"),
    ("3C 40\n3C 40 38\n", r"f\.txt:2: 3 columns; fp_mul_e4m3fn_rne lines have 2 \(a b\)"),
    ("# rm=rne\n3C 40\n", r"f\.txt:1: '# rm=' lines are for a unit with a dynamic"),
    ("# only a comment\n", r"no vectors in the file"),
])
def test_a_bad_vector_file_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "f.txt"
    path.write_text(text)
    with pytest.raises(OptionError, match=message):
        verify(Design.of(SPEC), engine="batch", vectors=str(path))


def test_dynamic_rounding_needs_a_mode_line(tmp_path):
    spec = make_spec("mul", format="fp8e4m3", rounding="dynamic")
    path = tmp_path / "f.txt"
    path.write_text("3C 40\n")
    with pytest.raises(OptionError, match=r"f\.txt:1: .* rounds by its rm input: give the mode "
                                          r"first with a line '# rm=NAME'"):
        verify(Design.of(spec), engine="batch", vectors=str(path))
    path.write_text("# rm=9\n3C 40\n")
    with pytest.raises(OptionError, match=r"f\.txt:1: unknown rounding mode '9'"):
        verify(Design.of(spec), engine="batch", vectors=str(path))


def test_code_classes_agree_with_classify():
    for name in ("fp8e4m3", "fp8e5m2", "fp16", "fp8e5m2fnuz", "fp4e2m1"):
        fmt = make_spec("cvt", format=name, in_format="fp16").out_fmt
        codes = np.arange(1 << fmt.width)
        names = {"inf": "infinity", "nan": "NaN", "snan": "NaN"}
        want = [names.get(fmt.classify(int(c)), fmt.classify(int(c))) for c in codes]
        from fpforge.sim.classes import CODE_CLASSES
        assert [CODE_CLASSES[k] for k in code_classes(fmt, codes)] == want, name


def test_cli_dump_and_replay(tmp_path, capsys):
    dump = tmp_path / "d.txt"
    args = ["verify", "--unit", "mul", "--format", "fp8e4m3", "--engine", "batch"]
    assert main([*args, "--fault", "rna-instead", "--dump-failing", str(dump)]) == 1
    out = capsys.readouterr().out
    assert "value wrong, exact ties" in out and f"written to {dump}" in out
    assert main([*args, "--vectors", str(dump)]) == 0
    dump.write_text("3C\n")
    assert main([*args, "--vectors", str(dump)]) == 2
    assert f"{dump}:1: 1 columns" in capsys.readouterr().err
