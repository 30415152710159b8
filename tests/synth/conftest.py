"""What the synthesis tests share: the ports of a module as Yosys elaborates it."""

import json

import pytest

from fpforge.synth.flow import run_yosys


def _yosys_ports(directory, files, top) -> dict:
    """{port: (direction, width)} of ``top`` as Yosys elaborates it from ``files`` (names in
    ``directory``): the netlist's view, against which wrappers built from port lists are
    checked."""
    done = run_yosys(directory, "".join(f'read_verilog "{f}"\n' for f in files) +
                     f"hierarchy -check -top {top}\nproc\nwrite_json ports.json\n", "ports.ys")
    assert done.ok, done.log()
    module = json.loads((directory / "ports.json").read_text())["modules"][top]
    return {n: (p["direction"], len(p["bits"])) for n, p in module["ports"].items()}


@pytest.fixture
def yosys_ports():
    return _yosys_ports
