"""The SystemVerilog test FPU fx_fpu (tests/sim/sv_fixtures/README.md): its sources around the
cores fpforge exports for it, and the ``fpforge verify`` arguments that judge it under issue 31's
options. Shared by every test that reads, simulates or judges it."""

from __future__ import annotations

from pathlib import Path

from fpforge.rtl.export import write_export
from fpforge.rtl.kinds import make_spec

FOLDER = Path(__file__).resolve().parent / "sim" / "sv_fixtures"
SOURCES = ("fx_pkg.sv", "fx_fpu.sv")
# module name -> unit: fpforge's own E4M3 units with dynamic rounding do the arithmetic
CORES = {"fx_core_mul": "mul", "fx_core_add": "add"}
# FAULT -> what it breaks (fx_fpu.sv)
FAULTS = {0: "correct", 1: "UF dropped at the subnormal/normal boundary",
          2: "RNE rounds ties away", 3: "NaN sign flipped"}
# fpforge unit -> the op_i code of fx_pkg::operation_e
OPS = {"mul": 0, "add": 1, "sub": 2}


def build(folder) -> Path:
    """Export the cores into ``folder`` and write ``folder/fx_fpu.f``, a file list with absolute
    paths (valid from any working folder); return the list's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cores = []
    for name, unit in CORES.items():
        spec = make_spec(unit, format="fp8e4m3", rounding="dynamic")
        cores.append(folder / f"{name}.v")
        write_export(spec, cores[-1], name=name)
    lines = [f"+incdir+{FOLDER}", *(str(FOLDER / s) for s in SOURCES), *map(str, cores)]
    file_list = folder / "fx_fpu.f"
    file_list.write_text("\n".join(lines) + "\n")
    return file_list


def verify_argv(unit: str, file_list, fault: int = 0, *, nan: str = "any") -> list[str]:
    """``fpforge verify`` arguments (after ``verify``) that judge fx_fpu as ``unit`` with
    ``FAULT=fault``: the operands on ``operands_i[0]``/``[1]``, the rm enum's five defined codes
    only (5-7 are reserved), the status struct as the flags, the valid/ready pipeline under random
    back-pressure and bubbles."""
    return ["--unit", unit, "--format", "fp8e4m3", "--rounding", "dynamic", "--nan", nan,
            "-f", str(file_list), "--top", "fx_fpu", "--param", f"FAULT={fault}",
            "--port", "a=operands_i[0]", "--port", "b=operands_i[1]",
            "--tie", "operands_i[2]=0", "--tie", f"op_i={OPS[unit]}", "--tie", "tag_i=0",
            "--port", "rm=rnd_mode_i", "--rm-codes", "rne=0,rtz=1,rdn=2,rup=3,rna=4",
            "--port", "y=result_o", "--port", "flags=status_o",
            "--clock", "clk_i", "--reset", "rst_ni", "--reset-active-low",
            "--valid-in", "in_valid_i", "--ready-in", "in_ready_o",
            "--valid-out", "out_valid_o", "--ready-out", "out_ready_i",
            "--stalls", "0.3", "--bubbles", "0.3"]
