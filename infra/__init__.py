"""The ground floor: infrastructure every part may use, and that uses no part of fpforge.

- executor.py: one way to run many independent tasks (local threads or processes, a Dask
  cluster, a farm's job array), with a result store that makes a run resumable;
- toolchain.py: where the external tools are (Icarus, Verilator, Yosys, nextpnr, OpenSTA).
"""
