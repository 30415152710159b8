"""The command line run in the test's own process: ``fpforge(*args)`` is ``fpforge ARGS`` with its
exit status and printed text. A subprocess per call pays the interpreter, the imports and every
golden kernel's compilation again (1.3 CPU-seconds a call, measured over the 29 calls of
tests/sim/test_noncomp.py); in process, the worker's compiled kernels serve every call. The
console script itself is tested by tests/fpforge/test_cli.py."""

from __future__ import annotations

import contextlib
import io
import subprocess

from fpforge.cli import main


def fpforge(*args: str) -> subprocess.CompletedProcess:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return subprocess.CompletedProcess(["fpforge", *args], status, out.getvalue(),
                                       err.getvalue())
