"""Verification: designs (fpforge's units or any Verilog) against the golden model, bit for bit.

- design.py: what is simulated (a module, its port map onto a spec, its clocking);
- stimulus/, tiers.py: what it is fed, per kind and per tier;
- check.py: the golden reference and the one checker with decoded mismatch reports;
- engines/: batch Icarus, cocotb (Icarus, Verilator), native Verilator; one interface;
- stream.py: the one verification loop every engine runs;
- faults.py: deliberately wrong designs, so every bench shows that it fails;
- verify.py: verdicts, JUnit XML, exhaustive shards, the full matrix;
- lint.py: Verilator / Icarus / Yosys readers of Verilog.
"""
