"""The engines behind one interface: ``simulate(design, inputs) -> outputs`` agrees across batch
Icarus, the cocotb harness and the native Verilator loop; their tops bind any design by its
port map."""

import os
import shutil

import numpy as np
import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines import engine
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.engines.harness import Harness
from fpforge.sim.engines.native import NativeTop, container_bytes
from fpforge.sim.stimulus.base import exhaustive
from fpforge.sim.tiers import simulators

needs_cxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


def _random_inputs(spec, n, seed):
    rng = np.random.default_rng(seed)
    return {p.name: rng.integers(0, 1 << p.lane_width, (n,) if p.lanes == 1 else (n, p.lanes),
                                 dtype=np.uint64).astype(np.uint32) for p in spec.inputs()}


def test_pipelined_matches_combinational_on_batch():
    comb = make_spec("add", format="fp8e5m2", rounding="dynamic")
    piped = make_spec("add", format="fp8e5m2", rounding="dynamic", stages=3)
    inputs = _random_inputs(comb, 3000, 5)
    a = BatchEngine().simulate(Design.of(comb), inputs)
    b = BatchEngine().simulate(Design.of(piped), inputs)
    assert all((a[p] == b[p]).all() for p in ("y", "flags"))


def test_inputs_must_match_the_ports():
    design = Design.of(make_spec("mul", format="fp8e4m3"))
    with pytest.raises(ValueError, match=r"inputs must be exactly the ports \['a', 'b'\]; "
                                         r"missing \['b'\], unknown \['c'\]"):
        BatchEngine().simulate(design, {"a": np.zeros(4), "c": np.zeros(4)})
    with pytest.raises(ValueError, match="input arrays must be non-empty and of equal length"):
        BatchEngine().simulate(design, {"a": np.zeros(4), "b": np.zeros(3)})
    bus = Design.of(make_spec("mxdq", in_format="fp4e2m1", block=4))
    with pytest.raises(ValueError, match=r"input x has 4 lane\(s\): arrays of shape \(2, 4\)"):
        BatchEngine().simulate(bus, {"scale": np.zeros(2), "x": np.zeros(2)})


def test_unknown_engine():
    with pytest.raises(ValueError,
                       match="^unknown engine 'x'; valid: batch, cocotb, native, gates$"):
        engine("x")


@pytest.mark.parametrize("spec", [make_spec("fma", format="fp8e4m3", rounding="stochastic",
                                            stages=2),
                                  make_spec("mxq", format="fp6e3m2", block=4, stages=1)],
                         ids=lambda s: s.default_name)
def test_batch_and_cocotb_agree(spec):
    design = Design.of(spec)
    inputs = _random_inputs(spec, 700, 9)
    a = BatchEngine().simulate(design, inputs)
    b = engine("cocotb", simulators()[0]).simulate(design, inputs)
    assert set(a) == set(b) == {p.name for p in spec.outputs()}
    assert all((a[p] == b[p]).all() for p in a)


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("spec", [make_spec("fma", format="fp8e4m3", rounding="stochastic",
                                            stages=2),
                                  make_spec("dot", in_format="fp6e2m3", n=4)],
                         ids=lambda s: s.default_name)
def test_every_engine_agrees(spec):
    design = Design.of(spec)
    inputs = _random_inputs(spec, 5000, 11)
    outs = [BatchEngine().simulate(design, inputs),
            engine("cocotb", "verilator").simulate(design, inputs),
            engine("native").simulate(design, inputs)]
    for other in outs[1:]:
        assert all((outs[0][p] == other[p]).all() for p in outs[0])


def test_harness_geometry_and_ports():
    spec = make_spec("add", format="fp8e4m3", rounding="dynamic", stages=2)
    h = Harness(Design.of(spec), lanes=3, steps=5)
    assert (h.vectors, h.latency, h.cycles) == (15, 2, 7)
    top = h._top()
    assert "input [119:0] a;" in top and "input [44:0] rm;" in top      # 3 lanes x 5 steps
    assert "output reg [74:0] flags = 0;" in top
    assert top.count(f"{spec.default_name} lane") == 3
    assert ".valid_o(lane_valid_o)" in top and "valid_d1" not in top
    with pytest.raises(ValueError, match="lanes must be a positive integer, not 0"):
        Harness(Design.of(spec), lanes=0)


def test_harness_counts_the_latency_of_a_module_without_valid():
    spec = make_spec("mul", format="fp8e4m3", stages=2)
    bare = Design(spec=spec, top="mymul", ports=Design.of(spec).ports, text="", latency=2,
                  clock="ck", reset="rst_n", reset_low=True, port_map={"a": "x1", "y": "p"})
    top = Harness(bare, lanes=2, steps=4)._top()
    assert ".ck(clk), .rst_n(~rst)" in top and ".x1(a[(slot * 2 + 0) * 8 +: 8])" in top
    assert ".p(y_0)" in top and "assign lane_valid_o = valid_d2;" in top


def test_harness_registers_a_combinational_design():
    top = Harness(Design.of(make_spec("mul", format="fp8e4m3")), lanes=1, steps=2)._top()
    assert "always @(posedge clk) y_0_q <= y_0;" in top and "{y_0_q}" in top


@pytest.mark.parametrize("width,expected", [(1, 1), (8, 1), (9, 2), (16, 2), (17, 4), (32, 4)])
def test_codes_sit_in_byte_containers(width, expected):
    assert container_bytes(width) == expected


def test_native_top_puts_each_element_in_a_container():
    spec = make_spec("add", format="fp6e3m2", rounding="dynamic")
    top = NativeTop(Design.of(spec), 3)
    text = top._top()
    assert "input [23:0] a;" in text and "input [23:0] rm;" in text
    assert ".a({a[16 +: 6]})" in text and ".rm({rm[8 +: 3]})" in text
    assert ".clk(" not in text    # combinational: the bare unit
    assert "assign flags[16 +: 8] = {3'd0, flags_2[0 +: 5]};" in text
    assert top.ports_header().splitlines() == [    # rm is drawn per vector: no index fields
        "#define LANES 3", "#define LATENCY 0", "#define FOR_INPUTS(X) X(a, 3) X(b, 3) X(rm, 3)",
        "#define FOR_OUTPUTS(X) X(y, 3) X(flags, 3)"]
    bus = NativeTop(Design.of(make_spec("mxdq", in_format="fp4e2m1", block=2, stages=2)), 2)
    text = bus._top()
    assert ".x({x[8 +: 4], x[0 +: 4]})" in text and ".clk(clk), .rst(rst), .valid_i(1'b1)" in text
    assert "#define FOR_OUTPUTS(X) X(y, 16)" in bus.ports_header()


def test_native_top_splits_the_exhaustive_index_as_the_stimulus_does():
    """fast --index: field (port, row bytes, container bytes, slots per lane, slot, shift, width,
    the port's first bit among the inputs'), the last port's last element in the low bits
    (sim/stimulus/base.py)."""
    top = NativeTop(Design.of(make_spec("mul", format="fp16")), 4)
    assert top.ports_header().splitlines()[0] == \
        "#define FOR_FIELDS(X) X(a, 8, 2, 1, 0, 16, 16, 0) X(b, 8, 2, 1, 0, 0, 16, 16)"
    bus = NativeTop(Design.of(make_spec("mxdq", in_format="fp4e2m1", block=2, stages=2)), 2)
    fields = dict(((n, e), shift) for n, e, shift in bus.index_fields())
    codes = exhaustive(bus.design.spec, 0, 1 << 16)
    for (name, e), shift in fields.items():
        col = codes[name] if codes[name].ndim == 1 else codes[name][:, e]
        w = bus.design.spec.port(name).lane_width
        assert (col == (np.arange(1 << 16) >> shift) % (1 << w)).all(), (name, e)


@pytest.mark.slow
@needs_cxx
def test_native_engine_matches_the_golden_model_and_catches_a_fault():
    from fpforge.sim.faults import faulty_design
    from fpforge.sim.stream import Plan
    native = engine("native")
    spec = make_spec("add", format="fp8e5m2", rounding="dynamic", stages=2)
    # not a multiple of the lanes at the end: padding is checked
    s = native.verify(Design.of(spec), Plan([["exhaustive", {"stop": 65536 - 5}]], batch=1 << 14))
    assert (s["vectors"], s["mismatches"]) == (65536 - 5, 0), s["first_mismatches"]
    bad = native.verify(faulty_design(make_spec("mul", format="fp8e4m3"), "rtz-instead"),
                        Plan([["exhaustive", {"stop": 4096}]], batch=1 << 12))
    assert bad["mismatches"] > 0 and "rounding=rne" in bad["first_mismatches"][0]


@pytest.mark.slow
@needs_cxx
def test_native_index_runs_report_as_the_pipe_runs():
    """An exhaustive run the simulator and the golden model draw from the index (fast --index,
    check.expected_index) reports a fault exactly as the same inputs through the pipe do (two
    parts: the pipe path): counts, decoded mismatches, classes, the padded last row."""
    from fpforge.sim.faults import faulty_design
    from fpforge.sim.stream import Plan
    native = engine("native")
    design = faulty_design(make_spec("mul", format="fp8e4m3"), "rtz-instead")
    assert native.index_start(design, Plan([["exhaustive", {"stop": 1000}]])) == 0
    timing = {"stimulus", "elapsed_s", "vectors_per_s", "golden_s", "waited_for_reference_s",
              "simulator_s", "simulator_cpu_s"}
    index = native.verify(design, Plan([["exhaustive", {"start": 3, "stop": 65534}]],
                                        batch=1 << 12, max_report=20))
    pipe = native.verify(design, Plan([["exhaustive", {"start": 3, "stop": 4099}],
                                       ["exhaustive", {"start": 4099, "stop": 65534}]],
                                      batch=1 << 12, max_report=20))
    assert index["mismatches"] > 0 and index["vectors"] == 65531
    assert {k: v for k, v in index.items() if k not in timing} == \
        {k: v for k, v in pipe.items() if k not in timing}


@needs_cxx
def test_native_builds_share_the_verilator_runtime():
    """Verilator's run-time library is compiled once per flag set for the native engine too: a
    new design's build compiles only its own code and the loop, and its run is checked."""
    from fpforge.sim.engines.native import NativeEngine
    from fpforge.sim.stream import Plan
    engine("native").build(Design.of(make_spec("mul", format="fp4e2m1")))  # keeps the objects
    design, fresh = Design.of(make_spec("add", format="fp4e2m1")), NativeEngine(lanes=3)
    log = (fresh.build(design).parents[1] / "build.log").read_text()
    assert "-o Vfast__ALL.o" in log and "-o native_main.o" in log and "-o verilated" not in log
    before = dict(os.environ)
    s = fresh.verify(design, Plan([["exhaustive", {}]]))
    assert (s["vectors"], s["mismatches"]) == (256, 0), s["first_mismatches"]
    # Called as a library, the engine leaves its caller's environment as it found it: the
    # bench's XLA flags once stayed in the pytest worker, which then ran xla_defaults tests
    # (tests/conftest.py) in process, compiled without XLA's passes.
    assert dict(os.environ) == before


def test_the_shared_verilator_runtime_leaves_out_what_includes_the_design(tmp_path):
    """cocotb's main (verilator.o) includes the design's Vtop.h: a copy built for another design
    constructs a model of another layout, so the run-time cache keeps only objects whose every
    dependency lies outside the build directory."""
    pytest.importorskip("cocotb_tools")
    from fpforge.sim.engines.cocotb import runtime_files
    inc = "/opt/verilator/include"
    deps = {"verilated": f"{inc}/verilated.cpp \\\n {inc}/verilated.h",
            "verilated_vpi": f"{inc}/verilated_vpi.cpp {inc}/verilated.h",
            "verilator": f"/opt/cocotb/verilator.cpp \\\n Vtop.h \\\n {inc}/verilated.h",
            "Vtop__ALL": "Vtop__ALL.cpp Vtop.h"}
    for name, text in deps.items():
        (tmp_path / f"{name}.o").write_bytes(b"")
        (tmp_path / f"{name}.d").write_text(f"{name}.o: \\\n {text}\n")
    (tmp_path / "nodeps.o").write_bytes(b"")            # no dependency file: not known safe
    assert sorted(p.name for p in runtime_files(tmp_path)) == \
        ["verilated.d", "verilated.o", "verilated_vpi.d", "verilated_vpi.o"]
    # the native loop names the design's header by an absolute path inside the design's folder
    (tmp_path / "verilated_vpi.d").write_text(f"verilated_vpi.o: {inc}/verilated.h "
                                              f"{tmp_path}/ports.h\n")
    assert sorted(p.name for p in runtime_files(tmp_path, design_root=tmp_path)) == \
        ["verilated.d", "verilated.o"]
