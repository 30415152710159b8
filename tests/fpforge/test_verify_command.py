"""``fpforge verify`` on real cases: fpforge's own export, the gate-level netlist synthesis maps
to the cell library, and an independent implementation written here (other port names, no
flags port) that passes, and the same with one rounding bug, which fails with a decoded report.
Exit status 0 pass, 1 mismatches, 2 bad input; JUnit XML on request."""

import xml.etree.ElementTree as ET

import pytest

from fpforge.cli import main
from fpforge.rtl.options import OptionError
from fpforge.sim.verify import SHARD_ALIGN, shard_range

# fp16 -> E5M2 (same exponent field and bias): round the 10 fraction bits to 2, ties to even;
# the carry walks into the exponent and past the largest finite code to infinity, as IEEE rne
# overflows. Written from the formats' definitions, not from fpforge's code.
NARROW = """
module my_narrow(input [15:0] h, output [7:0] q);
  wire [14:0] mag = h[14:0];
  wire is_nan = (mag[14:10] == 5'h1f) && (mag[9:0] != 10'd0);
  wire [7:0] trunc = {1'b0, mag[14:8]};
  wire round = mag[7];
  wire sticky = |mag[6:0];
  wire inc = %s;
  wire [7:0] rounded = trunc + {7'd0, inc};
  assign q = is_nan ? 8'h7e : {h[15], rounded[6:0]};
endmodule
"""
RNE = "round & (sticky | mag[8])"
TIES_AWAY = "round"          # the bug: rounds ties away from zero
CVT = ["--unit", "cvt", "--format", "fp8e5m2", "--in-format", "fp16"]


def verify(args, capsys):
    status = main(["verify", *args])
    return status, capsys.readouterr()


def write(tmp_path, body, name="narrow.v"):
    path = tmp_path / name
    path.write_text(NARROW % body)
    return str(path)


def test_an_independent_implementation_passes_every_input(tmp_path, capsys):
    junit = tmp_path / "v.xml"
    status, out = verify([*CVT, "--verilog", write(tmp_path, RNE), "--top", "my_narrow",
                          "--port", "x=h", "--port", "y=q", "--junit", str(junit)], capsys)
    assert status == 0, out.out + out.err
    assert "PASS, 65,536 vectors, 0 mismatches" in out.out
    assert "not compared (the module has no such port): flags" in out.out
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case.find("failure") is None and "flags" in case.find("system-out").text


def test_the_same_with_one_rounding_bug_fails_decoded(tmp_path, capsys):
    junit = tmp_path / "v.xml"
    status, out = verify([*CVT, "--verilog", write(tmp_path, TIES_AWAY), "--top", "my_narrow",
                          "--port", "x=h", "--port", "y=q", "--junit", str(junit)], capsys)
    assert status == 1
    lines = out.out.splitlines()
    assert "FAIL, 65,536 vectors" in lines[0]
    # a tie, decoded: the input's value and class, the expected and produced codes
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    assert "x=0x" in lines[first] and "normal" in lines[first] and "rounding=rne" in lines[first]
    assert "expected y=0x" in lines[first + 1] and "got y=0x" in lines[first + 1]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert "mismatch" in suite.find("testcase/failure").get("message")


def test_fpforges_own_export_passes(tmp_path, capsys):
    assert main(["verilog", "--unit", "mul", "--format", "fp8e5m2", "--stages", "2",
                 "--out-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    status, out = verify(["--unit", "mul", "--format", "fp8e5m2", "--stages", "2",
                          "--verilog", str(tmp_path / "fp_mul_e5m2_rne_s2.v"),
                          "--top", "fp_mul_e5m2_rne_s2", "--clock", "clk", "--reset", "rst",
                          "--valid-in", "valid_i", "--valid-out", "valid_o", "--latency", "2",
                          "--engine", "batch"], capsys)
    assert status == 0, out.out + out.err
    assert "PASS, 65,536 vectors, 0 mismatches" in out.out


def test_without_verilog_it_checks_fpforges_own_unit(capsys):
    status, out = verify(["--unit", "sub", "--format", "fp6e3m2", "--rounding", "rod"], capsys)
    assert status == 0 and "fp_sub_e3m2fin_rod: PASS, 4,096 vectors" in out.out


def test_a_deliberately_wrong_unit_fails(capsys):
    status, out = verify(["--unit", "add", "--format", "fp4e2m1", "--fault", "rtz-instead",
                          "--engine", "batch"], capsys)
    assert status == 1 and "FAIL, 256 vectors" in out.out


def test_gate_level_netlist_matches_the_golden_model(tmp_path, capsys):
    """fpforge synth --gate-level: the netlist mapped to the cells, simulated with the cell
    models, against the golden model: synthesis preserved the function."""
    status = main(["synth", "--unit", "mul", "--format", "fp6e3m2", "--no-fpga", "--no-core",
                   "--gate-level", "--out", str(tmp_path), "--jobs", "1"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "gate-level fp_mul_e3m2fin_rne: PASS, 4,096 vectors, 0 mismatches" in out


@pytest.mark.parametrize("args,message", [
    (["--verilog", "missing.v", "--top", "t"], "Verilog file '{tmp}/missing.v' does not exist"),
    (["--verilog", "{narrow}"], "--verilog / -f need --top NAME (the module to check)"),
    (["--verilog", "{narrow}", "--top", "my_narrow"],
     "module my_narrow has no port 'x' for input x (16 bits); map it with --port x=NAME"),
    (["--verilog", "{narrow}", "--top", "my_narrow", "--port", "x=q"],
     "module my_narrow port q is an output of 8 bit(s); x needs an input of 16"),
    (["--verilog", "{narrow}", "--top", "my_narrow", "--port", "z=h"],
     "--port z=...: fp_cvt_e5m10_to_e5m2_rne has no port 'z'; its ports: flags, x, y"),
    (["--verilog", "{narrow}", "--top", "other", "--port", "x=h"],
     "no module 'other' in narrow.v; its modules: my_narrow"),
    (["--verilog", "{narrow}", "--top", "my_narrow", "--port", "x=h", "--latency", "2"],
     "a design with latency 2 needs --clock NAME"),
    (["--top", "my_narrow"], "--top describes a module given with --verilog FILE or -f FILE; "
                             "without them fpforge checks its own unit"),
    (["--port", "x=h", "--verilog", "{narrow}", "--top", "my_narrow", "--port", "y"],
     "--port takes ROLE=PORT (e.g. a=op_a, a=operands[7:0]), not 'y'"),
    (["--shards", "2"], "--shards, --shard, --limit and --force go with --exhaustive"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    narrow = write(tmp_path, RNE)
    args = [a.format(narrow=narrow, tmp=tmp_path) for a in args]
    status, out = verify([*CVT, *args], capsys)
    assert status == 2 and out.out == ""
    assert out.err == f"fpforge verify: error: {message.format(tmp=tmp_path)}\n"


def test_exhaustive_runs_every_input_on_the_native_engine(capsys):
    status = main(["verify-exhaustive", "--unit", "mul", "--format", "fp4e2m1", "--shards", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "256 of 256 vectors, 0 mismatches" in out and "native engine" in out


@pytest.mark.parametrize("args, message", [
    (["--unit", "mul", "--format", "fp32"],
     "fp_mul_e8m23_rne has 18,446,744,073,709,551,616 inputs (2^64), about 12,306 years at "
     "47.5 M inputs/s; verify-exhaustive runs at most 2^36 unasked: --limit N for the first N, "
     "--force for all of them"),
    (["--unit", "fma", "--format", "fp16"],
     "fp_fma_e5m10_rne has 281,474,976,710,656 inputs (2^48), about 69 days at 47.5 M inputs/s; "
     "verify-exhaustive runs at most 2^36 unasked: --limit N for the first N, --force for all "
     "of them"),
])
def test_an_exhaustive_run_of_ages_is_refused_before_any_work(args, message, tmp_path, capsys,
                                                              monkeypatch):
    """Issue 35: 2^64 inputs would start at once and run for millennia; it is refused in one
    line with the count and the time, exit 2, nothing written (not even build/)."""
    monkeypatch.chdir(tmp_path)
    status = main(["verify-exhaustive", *args])
    err = capsys.readouterr().err
    assert status == 2 and err == f"fpforge verify-exhaustive: error: {message}\n"
    assert list(tmp_path.iterdir()) == []


def test_the_size_check_lets_limit_force_and_small_spaces_through():
    from fpforge.rtl.kinds import make_spec
    from fpforge.sim.verify import EXHAUSTIVE_MAX, check_exhaustive_size
    big, small = make_spec("mul", format="fp32"), make_spec("mul", format="fp16")
    assert check_exhaustive_size(small) == 1 << 32 <= EXHAUSTIVE_MAX
    assert check_exhaustive_size(big, limit=1000) == 1000
    assert check_exhaustive_size(big, force=True) == 1 << 64
    with pytest.raises(OptionError, match=r"2\^64"):
        check_exhaustive_size(big)


@pytest.mark.parametrize("total, n", [(1 << 32, 3), (1 << 32, 6), (1 << 16, 7), (1000, 2),
                                      (774, 2), (300, 2), (256, 3), (5, 8), (1 << 32, 1)])
def test_shards_cover_every_input_once_with_edges_on_whole_steps(total, n):
    edges = [shard_range(total, i, n) for i in range(n)]
    assert edges[0][0] == 0 and edges[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(edges, edges[1:]))
    assert all(lo <= hi for lo, hi in edges)
    if total // n >= SHARD_ALIGN:       # every shard a step long at least: edges on whole steps
        assert all(lo % SHARD_ALIGN == 0 and hi > lo for lo, hi in edges)
        # each inner edge the even split's, rounded down to a whole step
        assert all(0 <= total * i // n - lo < SHARD_ALIGN for i, (lo, _) in enumerate(edges))
    else:
        assert edges == [(total * i // n, total * (i + 1) // n) for i in range(n)]
