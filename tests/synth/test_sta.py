"""Load-aware timing with OpenSTA: fan-out costs time, an independent NLDM propagation agrees, the
registered groups are reported, and a missing ``sta`` is a clear error."""

import re
from collections import defaultdict
from pathlib import Path

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.ports import Port
from fpforge.synth import run, run_designs
from fpforge.synth.cells import CELL_BY_NAME, INPUT_SLEW_NS, OUTPUT_LOAD_FF, arcs
from fpforge.synth.records import Design

# One select, made by a gate, drives WIDE multiplexers, or one: the same logic per output bit.
WIDE = 48


def _mux(name: str, width: int) -> Design:
    text = (f"module {name}(input p, input q, input [{width - 1}:0] a, input [{width - 1}:0] b, "
            f"output [{width - 1}:0] y);\n  wire s = p ^ q;\n  assign y = s ? a : b;\n"
            "endmodule\n")
    ports = (Port("p", "input", 1, "p"), Port("q", "input", 1, "q"), Port("a", "input", width, "a"),
             Port("b", "input", width, "b"), Port("y", "output", width, "y"))
    return Design(name, text, "verilog", f"{width} multiplexers on one select", ports=ports)


def test_high_fanout_select_is_slower_than_the_same_mux_unloaded(tmp_path):
    wide, one = run_designs([_mux("mux_wide", WIDE), _mux("mux_one", 1)], out_dir=tmp_path,
                            fpga=False)
    assert wide.asic.paths["in-out"]["startpoint"] in ("p", "q")
    assert one.asic.paths["in-out"]["startpoint"] in ("p", "q")
    # The select gate drives 48 select pins (about 90 fF) against one: its delay and slew, and
    # so the multiplexers' delay, grow.
    assert wide.asic.delay_ps > 1.5 * one.asic.delay_ps, (wide.asic.delay_ps, one.asic.delay_ps)


# ----- an independent load-aware computation over the same mapped netlist --------------------
_INSTANCE = re.compile(r"^\s*(\w+_X1)\s+(\S+)\s*\((.*?)\);", re.M | re.S)
_PIN = re.compile(r"\.(\w+)\(([^()]*)\)")


def _net(text: str) -> str:
    return " ".join(text.split())


def nldm_arrival_ps(netlist: str, outputs: set[str]) -> float:
    """Worst output arrival of a combinational netlist, rise and fall propagated separately through
    each arc's unateness, slews and loads from the NLDM tables: written from the liberty's
    meaning, not from OpenSTA."""
    tables = defaultdict(list)       # an XOR's pin has a positive- and a negative-unate arc
    for a in arcs():
        if not a.timing_type:
            tables[(a.cell, a.related)].append(a)
    cells = []
    loads = defaultdict(float)
    for m in _INSTANCE.finditer(netlist):
        cell = CELL_BY_NAME[m.group(1)]
        pins = {p: _net(n) for p, n in _PIN.findall(m.group(3))}
        cells.append((cell, pins))
        for p in cell.inputs:
            loads[pins[p]] += cell.input_cap
    for net in outputs:
        loads[net] += OUTPUT_LOAD_FF
    driver = {pins[c.output]: (c, pins) for c, pins in cells}
    timing = {}    # net -> {"rise": (arrival ns, slew ns), "fall": ...}

    def at(net):
        if net in timing:
            return timing[net]
        if net not in driver:      # a primary input (or a constant)
            timing[net] = {"rise": (0.0, INPUT_SLEW_NS), "fall": (0.0, INPUT_SLEW_NS)}
            return timing[net]
        cell, pins = driver[net]
        out = {"rise": (float("-inf"), 0.0), "fall": (float("-inf"), 0.0)}
        for pin in cell.inputs:
            for arc, edge in ((a, e) for a in tables[(cell.name, pin)] for e in ("rise", "fall")):
                t = arc.tables
                other = "fall" if edge == "rise" else "rise"
                sources = {"positive_unate": [edge], "negative_unate": [other],
                           "non_unate": [edge, other]}[arc.sense]
                for src in sources:
                    arrival, slew = at(pins[pin])[src]
                    delay = t[f"cell_{edge}"].lookup(slew, loads[net])
                    out_slew = t[f"{edge}_transition"].lookup(slew, loads[net])
                    best_arrival, best_slew = out[edge]
                    out[edge] = (max(best_arrival, arrival + delay), max(best_slew, out_slew))
        timing[net] = out
        return out
    return 1000 * max(max(v[0] for v in at(net).values()) for net in outputs)


def test_opensta_agrees_with_an_independent_nldm_propagation(tmp_path):
    mul, _core = run([make_spec("mul", format="fp8e4m3")], out_dir=tmp_path, fpga=False)
    netlist = (Path(mul.directory) / "asic" / "netlist.v").read_text()
    outputs = {f"y[{i}]" for i in range(8)} | {f"flags[{i}]" for i in range(5)}
    ours = nldm_arrival_ps(netlist, outputs & set(_pin_nets(netlist)))
    # Both propagate the worst slew; OpenSTA keeps each arc's slew with its arrival, so they
    # differ by a little where a late arc has a sharp edge.
    print(f"independent NLDM propagation {ours:.1f} ps, OpenSTA {mul.asic.delay_ps:.1f} ps")
    assert ours == pytest.approx(mul.asic.delay_ps, rel=0.03), (ours, mul.asic.delay_ps)


def _pin_nets(netlist: str) -> set[str]:
    return {_net(n) for m in _INSTANCE.finditer(netlist) for _, n in _PIN.findall(m.group(3))}


def test_pipelined_unit_reports_each_path_group_and_fmax(tmp_path):
    [r] = run([make_spec("add", format="fp8e4m3", stages=2)], out_dir=tmp_path, fpga=False)
    groups = r.asic.paths
    assert set(groups) == {"in-reg", "reg-reg", "reg-out"}, groups
    assert r.asic.delay_ps == max(g["delay_ps"] for g in groups.values())
    assert r.asic.fmax_mhz == pytest.approx(1e6 / r.asic.delay_ps, abs=0.1)
    # A register-to-register path starts at a flip-flop's clock pin and pays its clock-to-Q.
    assert groups["reg-reg"]["cells"][0] == "DFF_X1"
    assert groups["reg-reg"]["delay_ps"] > 80
    assert all(c in CELL_BY_NAME for g in groups.values() for c in g["cells"])


def test_missing_sta_is_a_one_line_error_naming_the_package(tmp_path, monkeypatch):
    import subprocess
    import sys
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(Path.home())}
    (tmp_path / "out").mkdir()
    done = subprocess.run([sys.executable, "-m", "fpforge", "synth", "--format", "fp8e4m3",
                           "--unit", "mul", "--out", str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "sta not found" in lines[0] and "opensta" in lines[0], lines
    assert not any((tmp_path / "out").iterdir())
