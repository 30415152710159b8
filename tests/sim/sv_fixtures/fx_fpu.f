// fx_fpu's sources in compile order, package first. Paths are relative to the repository root
// (read with -f from there, as Verilator reads -f). The cores fx_core_mul.v and fx_core_add.v
// are exported by fpforge at test time (README.md) and given after this list.
+incdir+tests/sim/sv_fixtures
tests/sim/sv_fixtures/fx_pkg.sv
tests/sim/sv_fixtures/fx_fpu.sv
