"""The benchmarks: ``fpforge bench-executor``, ``bench-ppa``, ``bench-golden``, ``bench-mx``,
``bench-gemm``."""

from __future__ import annotations

from fpforge.rtl.elements import OCP_FP_ELEMENTS
from fpforge.rtl.mx import SCALE_RULES
from fpforge.rtl.options import OptionError
from fpforge.infra.toolchain import ToolMissing

from .common import add_jobs, existing_dir

__all__ = ["add_bench_executor", "add_bench_ppa", "add_bench_golden", "add_bench_mx",
           "add_bench_gemm", "add_bench_exhaustive"]


def add_bench_executor(sub):
    b = sub.add_parser("bench-executor", help="the Dask path's overhead against the local pool",
                       description="Synthesise one small sweep through the local pool and a "
                                   "Dask LocalCluster, alternately, and report the ratio; "
                                   "estimate make verify's matrix on 100 workers "
                                   "(docs/scale-out.md).")
    add_jobs(b)
    b.set_defaults(run=_bench_executor)


def _bench_executor(args) -> int:
    from fpforge import bench_executor
    return bench_executor.run_bench(jobs=args.jobs)


def add_bench_ppa(sub):
    b = sub.add_parser("bench-ppa", help="area/delay beside CELLS.md's references and targets")
    b.add_argument("--out", metavar="DIR", help="where the run folders go (default build/synth)")
    b.add_argument("--no-wall", action="store_true", help="skip the make synth wall-time run")
    add_jobs(b)
    b.set_defaults(run=_bench_ppa)


def _bench_ppa(args) -> int:
    from fpforge.synth import bench_ppa
    out = existing_dir(args.out, "--out") if args.out else None
    return bench_ppa.run_bench(jobs=args.jobs, wall=not args.no_wall,
                               **({"out": out} if out else {}))


def add_bench_golden(sub):
    g = sub.add_parser("bench-golden", help="golden-model throughput against ml_dtypes")
    g.add_argument("--log2n", type=int, default=24, help="log2 of the conversion size (24)")
    g.add_argument("--repeats", type=int, default=7, help="timed calls per measurement (7)")
    g.set_defaults(run=_bench_golden)


def _bench_golden(args) -> int:
    from fpforge.golden import bench_golden
    return bench_golden.run_bench(log2n=args.log2n, repeats=args.repeats)


def add_bench_mx(sub):
    m = sub.add_parser("bench-mx", help="golden MX quantization against torchao (mxref extra)")
    m.add_argument("--n", type=int, default=1 << 22, help="elements (a multiple of 1024)")
    m.add_argument("--repeat", type=int, default=5)
    # torchao's MX elements
    m.add_argument("--elem", nargs="*", default=["fp8e4m3", "fp4e2m1"],
                   choices=OCP_FP_ELEMENTS)
    m.add_argument("--rule", nargs="*", default=["floor", "rceil"], choices=SCALE_RULES)
    m.set_defaults(run=_bench_mx)


def _bench_mx(args) -> int:
    try:
        import torch  # noqa: F401
        import torchao  # noqa: F401
    except ImportError:
        raise ToolMissing("bench-mx needs torch and torchao: .venv/bin/pip install -e "
                          "'.[mxref]'") from None
    from fpforge.golden import bench_mx
    return bench_mx.run_bench(n=args.n, repeat=args.repeat, elems=args.elem, rules=args.rule)


def add_bench_gemm(sub):
    e = sub.add_parser("bench-gemm", help="the emulated matrix multiply against fake-quantize "
                                          "+ float32 matmul")
    e.add_argument("--size", type=int, default=1024, help="M = K = N (a multiple of 64, the "
                   "kind::mxf4nvf4 step; 1024)")
    e.add_argument("--repeat", type=int, default=5)
    e.set_defaults(run=_bench_gemm)


def _bench_gemm(args) -> int:
    from fpforge.golden import bench_gemm
    if args.size < 64 or args.size % 64:
        raise OptionError(f"--size must be a positive multiple of 64 (the kind::mxf4nvf4 "
                          f"step's products), not {args.size}")
    if args.repeat < 1:
        raise OptionError(f"--repeat must be at least 1, not {args.repeat}")
    return bench_gemm.run_bench(size=args.size, repeat=args.repeat)


def add_bench_exhaustive(sub):
    from .common import add_spec_options
    b = sub.add_parser("bench-exhaustive", help="an exhaustive run's rate against the bare "
                       "simulator's",
                       description="The exhaustive run's Python stages per vector, then on "
                                   "each exhaustive engine (native; gates for a unit without "
                                   "a handshake) the bare simulators' rate (no golden model, no "
                                   "comparison) and a verify-exhaustive run of the first "
                                   "--limit inputs, with their ratio (docs/verification.md).")
    add_spec_options(b)
    b.add_argument("--limit", type=int, default=1 << 28,
                   help="inputs of the measured run (default 2^28)")
    b.add_argument("--shards", type=int, default=0, help="processes (default: one per core)")
    b.set_defaults(run=_bench_exhaustive)


def _bench_exhaustive(args) -> int:
    from fpforge.rtl.kinds import make_spec
    from fpforge.sim.bench_exhaustive import run_bench
    from fpforge.sim.design import Design

    from .common import spec_values
    if args.limit < 1 or args.shards < 0:
        raise OptionError("--limit takes a positive number of inputs, --shards a count >= 0")
    return run_bench(Design.of(make_spec(args.unit, **spec_values(args))), vectors=args.limit,
                     shards=args.shards)
