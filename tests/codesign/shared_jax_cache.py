"""A pareto run's JAX compilations kept in the test run's shared cache.

``fpforge pareto`` keeps its quality kernels' compilations under OUT/jax-cache
(codesign/pareto.py, ``quality``). Each test's run has an OUT of its own, so each compiled the
same kernels again: most of a one-configuration run's CPU. With OUT/jax-cache a link to the
test run's cache (tests/conftest.py), a run loads the executables another test's run built,
under a key covering the program and the backend, so the figures are those of the same machine
code either way."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tests.conftest import JAX_CACHE_VARIABLE


def share_jax_cache(out: Path) -> Path:
    """Make the folder ``out`` (a pareto run's --out) with its jax-cache linked to the test
    run's cache; returns ``out``."""
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR") or os.environ[JAX_CACHE_VARIABLE]
    out.mkdir(parents=True, exist_ok=True)
    (out / "jax-cache").symlink_to(folder, target_is_directory=True)
    return out


@contextlib.contextmanager
def compiled_as_users_do():
    """Within the block, a pareto run's quality workers compile under XLA's defaults. make test
    compiles without XLA's optimisation passes (tests/conftest.py), which suits kernels run on
    a few hundred elements; the quality workers run models on large arrays, where the passes
    pay for themselves (test_pareto's small run: 97 CPU-s under the defaults, 221 without the
    passes). The workers are spawned, so they read the environment as they start."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XLA_FLAGS", "")
        yield
