"""Verification: ``fpforge verify``, ``verify-exhaustive``, ``verify-equiv``."""

from __future__ import annotations

import argparse
from dataclasses import replace

from fpforge.rtl.kinds import make_spec
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.rtl.options import OptionError
from fpforge.sim.check import NAN_POLICIES
from fpforge.sim.engines import EXHAUSTIVE_ENGINES

from .common import (add_executor_options, add_jobs, add_spec_options, executor_of,
                     format_list, positive, result_store, spec_values, unit_list)

__all__ = ["add_verify", "add_verify_equiv"]


def add_verify(sub):
    """``verify`` and ``verify-exhaustive``: one set of options, the second always exhaustive."""
    for name, helptext in (("verify", "check a unit against the golden model, bit for bit"),
                           ("verify-exhaustive", "every input, sharded, on the native engine "
                                                 "(Verilator) or the gates engine")):
        c = sub.add_parser(name, help=helptext, description=helptext + " (docs/verification.md)."
                           " Exit status 0: every vector matched; 1: mismatches; 2: bad input.")
        add_spec_options(c, required=False)
        d = c.add_argument_group("any Verilog or SystemVerilog (default: fpforge's own unit "
                                 "for the spec)")
        d.add_argument("--verilog", metavar="FILE", action=_InOrder,
                       help="a Verilog (.v) or SystemVerilog (.sv) source; repeat, packages "
                            "first. SystemVerilog runs on Verilator")
        d.add_argument("-f", dest="file_list", metavar="FILE", action=_InOrder,
                       help="a file list as simulators read it: sources, +incdir+DIR, "
                            "+define+NAME[=V], -I DIR, -D NAME[=V], -f/-F FILE, // and # "
                            "comments (paths relative to the current directory; under -F, to "
                            "the list's folder)")
        d.add_argument("-I", "--include", metavar="DIR", action="append",
                       help="a directory `include searches; repeat")
        d.add_argument("--define", metavar="NAME[=VALUE]", action="append",
                       help="a preprocessor define; repeat")
        d.add_argument("--param", metavar="NAME=VALUE", action="append",
                       help="override a parameter of --top with an integer (an enum "
                            "parameter by its value); repeat")
        d.add_argument("--top", metavar="NAME", help="the module to check")
        d.add_argument("--port", metavar="ROLE=PORT", action="append",
                       help="the module's port, slice or element that carries spec port ROLE: "
                            "a=op_a, a=operands[7:0], a=operands_i[1] (an element of a packed "
                            "array), a=operands_i[1][7:0]; repeat")
        d.add_argument("--tie", metavar="PORT=VALUE", action="append",
                       help="a constant on an input (or a slice or element of one) that is no "
                            "role: op_sel=2'd1, operands_i[2]=0 (a decimal or a Verilog literal "
                            "3'b111, 4'd3, 8'hff, '1, '0); repeat. Input bits nothing drives "
                            "are driven 0, and the verdict lists them")
        d.add_argument("--flags-order", metavar="F,F,...",
                       help="the module's flag bits from the most significant, of nv, dz, of, "
                            "uf, nx (default nv,dz,of,uf,nx: fpforge's, RISC-V fflags); a "
                            "narrower flags port lists fewer, and the others are not compared")
        d.add_argument("--no-flags", action="store_true",
                       help="compare values only (the module's flags, if any, are ignored)")
        d.add_argument("--rm-codes", metavar="MODE=CODE,...|riscv",
                       help="which code of the module's rm input means which rounding mode, "
                            "e.g. rne=0,rtz=1,rdn=2,rup=3,rna=4 (= riscv, fpforge's own); only "
                            "listed codes are driven (default: fpforge's codes 0-4, never the "
                            "reserved 5-7)")
        d.add_argument("--clock", metavar="NAME", help="its clock (pipelined modules)")
        d.add_argument("--reset", metavar="NAME", help="its synchronous reset (active high)")
        d.add_argument("--reset-active-low", action="store_true", help="the reset is active low")
        d.add_argument("--valid-in", metavar="NAME", help="its input valid, if it has one")
        d.add_argument("--valid-out", metavar="NAME", help="its output valid, if it has one")
        d.add_argument("--ready-in", metavar="NAME",
                       help="its input-ready output (it takes an operation on a clock edge "
                            "where valid-in and ready-in are high); needs --valid-in")
        d.add_argument("--ready-out", metavar="NAME",
                       help="its output-ready input (the bench takes a result where "
                            "valid-out and ready-out are high); needs --valid-out")
        d.add_argument("--latency", type=positive(int), metavar="N",
                       help="cycles from inputs to outputs (default 0: combinational; not "
                            "needed with --valid-out: results are taken, in order, when the "
                            "module says they are valid, after any number of cycles)")
        d.add_argument("--nan", choices=NAN_POLICIES,
                       help="how an expected NaN is judged: any NaN code of the format (as "
                            "TestFloat; the default with --verilog) or the exact code (the "
                            "default for fpforge's own units); flags are compared either way"),
        r = c.add_argument_group("the run")
        r.add_argument("--seed", type=int, default=1, help="of every random draw (default 1)")
        r.add_argument("--shards", type=positive(int), default=0, metavar="N",
                       help="--exhaustive: processes (default: one per core)")
        r.add_argument("--shard", type=_shard, metavar="i/N", help="--exhaustive: shard i of N")
        r.add_argument("--limit", type=positive(int), default=0, metavar="N",
                       help="--exhaustive: only the first N inputs")
        r.add_argument("--fmt", type=_code, metavar="N",
                       help="--exhaustive, a unit of several --formats: hold its fmt input at "
                            "N and run every other input (that member's space; default: every "
                            "member in turn)")
        r.add_argument("--force", action="store_true",
                       help="--exhaustive: run every input even beyond 2^36 (which would take "
                            "more than half an hour)")
        r.add_argument("--junit", metavar="FILE", help="write JUnit XML there")
        r.add_argument("--dump-failing", metavar="FILE",
                       help="write the failing vectors there as TestFloat-style lines (hex: "
                            "operands, expected result, expected flags; a '# rm=NAME' line "
                            "before each mode's lines for a dynamic rounding mode), at most "
                            "1,000,000 lines; the header says how many failed")
        add_executor_options(r, "case (--matrix) or shard (--exhaustive)")
        if name == "verify":
            r.add_argument("--exhaustive", action="store_true",
                           help="every input on the native Verilator engine")
            r.add_argument("--sim", choices=("icarus", "verilator"),
                           help="the cocotb bench's simulator (default: $SIM or icarus; "
                                "verilator for SystemVerilog sources; --matrix: the faster "
                                "one per case)")
            r.add_argument("--engine", choices=("cocotb", "batch"),
                           help="cocotb (default) or batch (Icarus, no cocotb; "
                                "Verilog-2005 only)")
            r.add_argument("--bubbles", type=_probability, default=0.0, metavar="P",
                           help="chance that a cycle carries no operation (pipelined units and "
                                "handshakes; 0 <= P < 1)")
            r.add_argument("--stalls", type=_probability, default=0.0, metavar="P",
                           help="chance that the bench holds --ready-out low in a cycle "
                                "(back-pressure; 0 <= P < 1)")
            r.add_argument("--fault", metavar="NAME",
                           help="check a deliberately wrong unit instead (self-test): "
                                "force-inexact, force-invalid, rtz-instead, rna-instead, "
                                "stochastic-a-instead, satfinite-instead, "
                                "other-element-format; a unit of several --formats: "
                                "other-member, reads-unused-bits")
            r.add_argument("--vectors", metavar="FILE",
                           help="use the vectors of FILE instead of the tiers: lines of hex "
                                "operands, optionally the expected result and flags "
                                "(testfloat_gen's output, or a --dump-failing file; '# rm=NAME' "
                                "sets the mode of a dynamic rounding mode); expected columns "
                                "that differ from fpforge's golden model are reported")
            r.add_argument("--matrix", action="store_true",
                           help="the full matrix of make verify, case by case")
            add_jobs(r)
            c.set_defaults(run=_verify)
        else:
            r.add_argument("--engine", choices=EXHAUSTIVE_ENGINES, default="native",
                           help="native (default): Verilator's model of the module; gates: "
                                "Yosys's gate netlist of a Verilog module, combinational or "
                                "pipelined on one clock, 256 vectors per gate operation "
                                "(docs/verification.md)")
            c.set_defaults(run=_verify_exhaustive, sim=None)


class _InOrder(argparse.Action):
    """--verilog and -f, appended to their own list and, in command-line order, to
    ``sources`` (a simulator reads its files and file lists in the order given)."""

    def __call__(self, parser, namespace, value, option_string=None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), value])
        words = [value] if self.dest == "verilog" else ["-f", value]
        namespace.sources = [*(getattr(namespace, "sources", None) or []), *words]


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like i/N (e.g. 0/4), not {text!r}")
    if not (n >= 1 and 0 <= i < n):
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= i < N")
    return i, n


def _code(text: str) -> int:
    try:
        n = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}")
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text!r}")
    return n


def _probability(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}")
    if not 0 <= p < 1:
        raise argparse.ArgumentTypeError(f"must be 0 <= P < 1, not {text!r}")
    return p


def _verify(args) -> int:
    from fpforge.sim import verify as vf
    from fpforge.sim.faults import faulty_design
    from fpforge.sim.tiers import full_matrix, verify_formats

    if args.matrix:
        # --formats (a unit's run-time formats) selects the matrix's formats here.
        unit_values = {k: v for k, v in spec_values(args).items() if k != "formats"}
        if args.unit or unit_values or _sources_given(args) or args.vectors or \
                args.dump_failing:
            raise OptionError("--matrix runs the whole matrix of make verify; it takes "
                              "--formats, --sim, --jobs and --junit, not unit options")
        specs = full_matrix(verify_formats(args.formats))
        multi = sum(isinstance(s, MultiFormatSpec) for s in specs)
        print(f"make verify: {len(specs):,} cases ({len(specs) - multi:,} single-format, "
              f"{multi} multi-format)")
        with executor_of(args, processes=True) as executor:
            verdicts = vf.verify_matrix(specs, sim=args.sim, jobs=args.jobs, seed=args.seed,
                                        junit=args.junit, executor=executor,
                                        store=result_store(args, "verify"))
        bad = [v.name for v in verdicts if not v.ok]
        print(f"{len(verdicts) - len(bad)} of {len(verdicts)} matrix cases passed" +
              (f"; failed: {', '.join(bad)}" if bad else ""))
        return 1 if bad else 0
    if not args.unit:
        raise OptionError(f"fpforge {args.command} needs --unit" +
                          (" (or --matrix)" if args.command == "verify" else ""))
    spec = make_spec(args.unit, **spec_values(args))
    if args.exhaustive:         # refused before any work: nothing built, nothing written
        if args.vectors:
            raise OptionError("--vectors is the stimulus of a run of fpforge verify; "
                              "--exhaustive runs every input")
        members = [args.fmt] if args.fmt is not None or len(getattr(spec, "members", ())) < 2 \
            else list(range(len(spec.members)))
        for code in members:
            vf.check_exhaustive_size(spec, limit=args.limit, force=args.force, fmt=code)
    elif args.fmt is not None:
        raise OptionError("--fmt holds a member for an exhaustive run: it goes with "
                          "--exhaustive (fpforge verify draws fmt per vector)")
    design = _design(args, spec)
    if args.fault:
        if _sources_given(args):
            raise OptionError("--fault swaps fpforge's own unit for a wrong one; it does not "
                              "apply to --verilog")
        design = faulty_design(spec, args.fault)
    if args.exhaustive:
        if args.stalls or args.bubbles:
            raise OptionError("--stalls and --bubbles go with the cocotb engine; --exhaustive "
                              "offers an operation every cycle and takes every result")
        # verify-exhaustive's --engine: native or gates; verify's names the engine of its
        # tiers (cocotb, batch), so verify --exhaustive runs on the native engine
        exhaustive_engine = args.engine if args.engine in EXHAUSTIVE_ENGINES else "native"
        # A unit of several formats: every member in turn, each with fmt held (--fmt: one).
        with executor_of(args) as executor:
            verdicts = [vf.verify_exhaustive(design, shards=args.shards, shard=args.shard,
                                             limit=args.limit, force=args.force, seed=args.seed,
                                             executor=executor,
                                             store=result_store(args, "exhaustive"),
                                             dump=_member_path(args.dump_failing, code,
                                                               len(members)),
                                             fmt=code, engine=exhaustive_engine)
                        for code in members]
        for verdict in verdicts:
            print(verdict.explain())
        if args.junit:
            vf.write_junit(args.junit, verdicts)
        return 0 if all(v.ok for v in verdicts) else 1
    else:
        if args.shards or args.shard or args.limit or args.force:
            raise OptionError("--shards, --shard, --limit and --force go with --exhaustive")
        engine = args.engine or "cocotb"
        if args.stalls and not design.ready_out:
            raise OptionError("--stalls holds the module's output-ready low: it needs "
                              "--ready-out NAME")
        verdict = vf.verify(design, engine=engine, sim=args.sim, seed=args.seed,
                            bubbles=args.bubbles, stalls=args.stalls, vectors=args.vectors,
                            dump=args.dump_failing)
    print(verdict.explain())
    if args.junit:
        vf.write_junit(args.junit, [verdict])
    return 0 if verdict.ok else 1


def _member_path(path, code, members: int):
    """--dump-failing's file of one member's run when several run in turn."""
    return path if path is None or members == 1 else f"{path}.fmt{code}"


def _verify_exhaustive(args) -> int:
    args.exhaustive = True
    args.matrix, args.fault = False, None
    args.bubbles = args.stalls = 0
    args.vectors = None
    return _verify(args)


def _design(args, spec):
    """The design ``fpforge verify`` checks: fpforge's own unit, or the user's Verilog."""
    from fpforge.sim.binding import Binding
    from fpforge.sim.design import Design
    from fpforge.sim.frontend import Sources
    if not _sources_given(args):
        for flag in ("top", "port", "tie", "flags_order", "rm_codes", "clock", "reset",
                     "valid_in", "valid_out", "ready_in", "ready_out", "latency", "include",
                     "define", "param"):
            if getattr(args, flag) not in (None, []):
                raise OptionError(f"--{flag.replace('_', '-')} describes a module given with "
                                  "--verilog FILE or -f FILE; without them fpforge checks its "
                                  "own unit")
        if args.no_flags:
            raise OptionError("--no-flags describes a module given with --verilog FILE or "
                              "-f FILE; without them fpforge checks its own unit")
        design = Design.of(spec)
        return design if args.nan is None else replace(design, nan=args.nan)
    if not args.top:
        raise OptionError("--verilog / -f need --top NAME (the module to check)")
    latency = args.latency if args.latency is not None else 0
    binding = Binding.parse(ports=args.port or (), ties=args.tie or (),
                            flags_order=args.flags_order, rm_codes=args.rm_codes,
                            no_flags=args.no_flags)
    words = [*args.sources, *(w for d in args.include or [] for w in ("-I", d)),
             *(w for d in args.define or [] for w in ("-D", d))]
    sources = Sources.from_args(words, params=args.param or [])
    return Design.from_files(spec, sources, args.top, binding=binding, latency=latency,
                             clock=args.clock, reset=args.reset,
                             reset_low=args.reset_active_low, valid_in=args.valid_in,
                             valid_out=args.valid_out, ready_in=args.ready_in,
                             ready_out=args.ready_out, nan=args.nan or "any")


def _sources_given(args) -> bool:
    return bool(getattr(args, "sources", None))


def add_verify_equiv(sub):
    e = sub.add_parser("verify-equiv", help="prove the matrix's Verilog equivalent to a commit's",
                       description="Prove (Yosys SAT) that every matrix spec's Verilog, and every "
                                   "block unit of the sweep, computes what --base's did.")
    e.add_argument("--base", required=True, metavar="COMMIT", help="the reference commit")
    e.add_argument("--formats", type=format_list, metavar="F[,F...]",
                   help="only these formats' part of the matrix")
    e.add_argument("--unit", type=unit_list, metavar="U[,U...]", help="only these units")
    add_jobs(e)
    e.set_defaults(run=_verify_equiv)


def _verify_equiv(args) -> int:
    from fpforge.synth import equiv
    try:
        return equiv.run(args.base, formats=args.formats, units=args.unit, jobs=args.jobs)
    except ValueError as err:      # a base commit that does not exist or cannot export
        raise OptionError(str(err)) from None
