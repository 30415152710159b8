"""One way to run many independent tasks: on this machine (the default) or on a Dask cluster.

fpforge's long jobs -- a sweep's Yosys runs, a verification matrix's cases, an exhaustive run's
shards -- are independent tasks. A :class:`Task` names an importable function
(``"module:function"``), its picklable arguments and a content digest (its key: the same work has
the same key wherever and whenever it runs). An executor runs tasks and returns their results in
task order:

- :class:`LocalExecutor`: a pool of ``jobs`` threads (fpforge's tasks wait on tool processes:
  Yosys, the simulators) or processes; no dependency.
- :class:`ArrayExecutor`: a farm's job array (SLURM ``sbatch --array``, LSF ``bsub -J
  name[1-N]``): the tasks go to a manifest on the shared filesystem, each array element runs a
  chunk of them (``python -m fpforge.infra.executor chunk DIR I``) into the result store, and the
  collect step reads them back; a chunk lost with its node is submitted again, once. Nothing
  but the shared filesystem crosses between nodes: what locked-down farms allow.
- :class:`DaskExecutor` (the ``dask`` extra): a ``distributed`` client of an existing scheduler
  (``tcp://host:port``, or ``DASK_SCHEDULER_ADDRESS``) or of a ``LocalCluster`` it starts. A
  worker that dies takes only its in-flight tasks with it; the scheduler runs them again
  elsewhere. A task that raises (a tool error) fails once and is reported with its label: the
  same inputs would fail again.

A :class:`ResultStore` (a folder of results by key) makes a run resumable: a task whose key has a
stored result is not run again, so an interrupted run, re-run, does only what is missing, and
nothing is counted twice.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import pickle
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

__all__ = ["Task", "TaskFailed", "ResultStore", "LocalExecutor", "DaskExecutor",
           "ArrayExecutor", "ProgressBar", "run_chunk", "digest", "executor_from", "ExecutorError",
           "EXECUTOR_HELP"]

EXECUTOR_HELP = ("where tasks run: local (default: this machine's cores), dask:local:N (a Dask "
                 "LocalCluster of N workers), dask:tcp://HOST:PORT (a running Dask scheduler; "
                 "also DASK_SCHEDULER_ADDRESS), dask:jobqueue:FILE (a dask-jobqueue cluster "
                 "from a JSON file), slurm:N or lsf:N (a job array of N elements; "
                 "docs/scale-out.md)")


class ExecutorError(ValueError):
    """An executor's name that says no executor (EXECUTOR_HELP lists the valid ones)."""


def digest(*parts: Any) -> str:
    """A content key: SHA-256 of the parts' canonical JSON (str() for what JSON cannot say)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Task:
    key: str
    function: str            # "package.module:function", importable wherever the task runs
    args: tuple = ()
    label: str = ""          # what a report calls it

    def call(self):
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)(*self.args)


def _call(task: Task):
    return task.call()


class TaskFailed(RuntimeError):
    """A task raised: reported with its label, not retried."""

    def __init__(self, task: Task, cause: BaseException):
        self.task, self.cause = task, cause
        super().__init__(f"task {task.label or task.key} failed: {type(cause).__name__}: {cause}")


class ResultStore:
    """Results by task key in a folder, written atomically (a crash leaves no half result)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def __contains__(self, key: str) -> bool:
        return self._path(key).exists()

    def get(self, key: str):
        return pickle.loads(self._path(key).read_bytes())

    def put(self, key: str, value) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh)
        os.replace(tmp, self._path(key))


class _Executor:
    """What every backend shares: stored results are taken, the rest run, results come back in
    task order, each stored as it completes (so an interruption loses only in-flight work)."""

    name = ""

    def run(self, tasks: list[Task], *, store: ResultStore | None = None,
            on_done: Callable[[Task, Any], None] | None = None) -> list:
        keys = [t.key for t in tasks]
        if len(set(keys)) != len(keys):
            raise ValueError("tasks must have distinct keys (the same work twice?)")
        results: dict[str, Any] = {}
        todo = []
        for t in tasks:
            if store is not None and t.key in store:
                results[t.key] = store.get(t.key)
                if on_done:
                    on_done(t, results[t.key])
            else:
                todo.append(t)
        for t, value in self._run(todo):
            results[t.key] = value
            if store is not None:
                store.put(t.key, value)
            if on_done:
                on_done(t, value)
        return [results[k] for k in keys]

    def _run(self, tasks: list[Task]):
        """Yield (task, result) as tasks complete; raise TaskFailed for the first that raised."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LocalExecutor(_Executor):
    """``jobs`` threads, or with ``processes`` spawned worker processes (for tasks that are not
    thread-safe, such as a cocotb run)."""

    name = "local"

    def __init__(self, jobs: int = 2, processes: bool = False):
        self.jobs, self.processes = max(1, jobs), processes

    def _run(self, tasks):
        pool = ProcessPoolExecutor(self.jobs, mp_context=get_context("spawn")) \
            if self.processes else ThreadPoolExecutor(self.jobs)
        with pool:
            futures = {pool.submit(_call, t): t for t in tasks}
            for fut in as_completed(futures):
                t = futures[fut]
                try:
                    yield t, fut.result()
                except Exception as err:
                    for other in futures:
                        other.cancel()
                    raise TaskFailed(t, err) from err


class DaskExecutor(_Executor):
    """A ``distributed`` client: of ``address``, or of a LocalCluster of ``workers`` processes
    (one thread each: fpforge's tasks run one tool process each)."""

    name = "dask"

    JOBQUEUE = {"slurm": "SLURMCluster", "lsf": "LSFCluster", "pbs": "PBSCluster",
                "sge": "SGECluster", "htcondor": "HTCondorCluster"}

    def __init__(self, address: str | None = None, workers: int | None = None,
                 jobqueue: dict | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            from .toolchain import ToolMissing
            raise ToolMissing("the dask executor needs the dask extra: pip install -e "
                              "'.[dask]' (make setup installs it)") from None
        self.cluster = None
        if jobqueue is not None:
            # A dask-jobqueue cluster: workers are the farm's batch jobs, which connect back
            # to this scheduler (docs/scale-out.md says when that is allowed).
            import dask_jobqueue
            options = dict(jobqueue)
            system, jobs = options.pop("system"), int(options.pop("jobs", 1))
            wait = float(options.pop("startup_timeout", 300))
            self.cluster = getattr(dask_jobqueue, self.JOBQUEUE[system])(**options)
            self.cluster.scale(jobs=jobs)
            self.client = Client(self.cluster)
            self.client.wait_for_workers(1, timeout=wait)
            return
        if address is None:
            self.cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1,
                                        processes=True, dashboard_address=":0")
            address = self.cluster
        self.client = Client(address)

    def _run(self, tasks):
        from distributed import as_completed as dask_completed
        # Content keys: the scheduler runs one copy of identical work; retries=0: a task that
        # raised would raise again. A lost worker's tasks are rescheduled by the scheduler.
        futures = self.client.map(_call, tasks, key=[f"fpforge-{t.key}" for t in tasks],
                                  pure=False, retries=0)
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for fut in dask_completed(futures):
            t = by_key[fut.key]
            if fut.status == "error":
                err = fut.exception()
                self.client.cancel(futures)
                raise TaskFailed(t, err)
            yield t, fut.result()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


ARRAY_SYSTEMS = {
    # system: (index variable, first index, submit-and-wait command of a script for N chunks)
    "slurm": ("SLURM_ARRAY_TASK_ID", 0,
              lambda name, n, log, script: ["sbatch", "--wait", "--parsable", f"--array=0-{n - 1}",
                                            f"--job-name={name}", f"--output={log}/%a.log",
                                            str(script)]),
    "lsf": ("LSB_JOBINDEX", 1,
            lambda name, n, log, script: ["bsub", "-K", "-J", f"{name}[1-{n}]",
                                          "-o", f"{log}/%I.log", str(script)]),
}


class ArrayExecutor(_Executor):
    """Tasks as a job array of ``chunks`` elements on ``system`` (slurm or lsf), through
    ``folder`` (on a filesystem every node sees)."""

    name = "array"

    def __init__(self, system: str, chunks: int, folder: Path):
        if system not in ARRAY_SYSTEMS:
            raise ValueError(f"system must be one of {', '.join(ARRAY_SYSTEMS)}, not {system!r}")
        self.system, self.chunks, self.folder = system, max(1, chunks), Path(folder).resolve()
        self.runs = 0

    def prepare(self, tasks: list[Task], store: ResultStore) -> Path:
        """Write the manifest and the array script; return the script (submit it by hand, or
        let run() do it)."""
        self.runs += 1
        run_dir = self.folder / f"array{self.runs}"
        (run_dir / "log").mkdir(parents=True, exist_ok=True)
        n = min(self.chunks, len(tasks))
        manifest = {"store": str(store.folder), "chunks": n, "tasks": tasks}
        (run_dir / "manifest.pickle").write_bytes(pickle.dumps(manifest))
        var, first, _ = ARRAY_SYSTEMS[self.system]
        script = run_dir / "array.sh"
        script.write_text("#!/bin/bash\n# fpforge job array: each element runs one chunk of "
                          "manifest.pickle into the result store\nset -e\n"
                          f"cd {shlex.quote(os.getcwd())}\n"
                          f"exec {shlex.quote(sys.executable)} -m fpforge.infra.executor chunk "
                          f"{shlex.quote(str(run_dir))} $(( ${var} - {first} ))\n")
        script.chmod(0o755)
        return script

    def _submit(self, tasks: list[Task], store: ResultStore) -> None:
        script = self.prepare(tasks, store)
        n = min(self.chunks, len(tasks))
        cmd = ARRAY_SYSTEMS[self.system][2](f"fpforge-{self.runs}", n, script.parent / "log",
                                            script)
        done = subprocess.run(cmd, capture_output=True, text=True)
        # A failed element makes sbatch --wait exit non-zero; what it did finish is stored.
        if done.returncode != 0 and not list(store.folder.glob("*.pickle")):
            raise RuntimeError(f"{cmd[0]} failed (exit {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()}")

    def _run(self, tasks):
        if not tasks:
            return
        store = self._store or ResultStore(self.folder / "results")
        for attempt in range(2):
            missing = [t for t in tasks if t.key not in store]
            if not missing:
                break
            failed = [t for t in missing if (store.folder / f"{t.key}.failed").exists()]
            if failed:
                t = failed[0]
                raise TaskFailed(t, RuntimeError((store.folder / f"{t.key}.failed").read_text()))
            self._submit(missing, store)
        for t in tasks:
            if t.key not in store:
                failure = store.folder / f"{t.key}.failed"
                cause = failure.read_text() if failure.exists() else "its array element was lost"
                raise TaskFailed(t, RuntimeError(cause))
            yield t, store.get(t.key)

    def run(self, tasks, *, store=None, on_done=None):
        self._store = store
        return super().run(tasks, store=store, on_done=on_done)


class ProgressBar:
    """A rich progress bar advanced by completed tasks (use ``on_done`` as ``run``'s callback)."""

    def __init__(self, total: int | None, label: str = "tasks"):
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TimeRemainingColumn(), transient=True)
        self.task = self.bar.add_task(label, total=total)

    def on_done(self, task: Task, result) -> None:
        self.bar.advance(self.task)

    def __enter__(self):
        self.bar.start()
        return self

    def __exit__(self, *exc):
        self.bar.stop()


def run_chunk(run_dir: Path, index: int) -> None:
    """One array element: tasks index, index + chunks, ... of the manifest, each result (or the
    traceback of a task that raised) into the store."""
    import traceback
    manifest = pickle.loads((Path(run_dir) / "manifest.pickle").read_bytes())
    store = ResultStore(Path(manifest["store"]))
    for task in manifest["tasks"][index::manifest["chunks"]]:
        if task.key in store:
            continue
        try:
            store.put(task.key, task.call())
        except Exception:
            (store.folder / f"{task.key}.failed").write_text(
                f"{task.label or task.key}: {traceback.format_exc()}")


def executor_from(text: str | None, jobs: int = 2, folder: Path | None = None,
                  processes: bool = False) -> _Executor:
    """The executor a command-line value names (EXECUTOR_HELP); None: local, unless
    DASK_SCHEDULER_ADDRESS names a scheduler. ``folder``: where a job array's manifests go."""
    text = text or ("dask:" + os.environ["DASK_SCHEDULER_ADDRESS"]
                    if os.environ.get("DASK_SCHEDULER_ADDRESS") else "local")
    if text == "local":
        return LocalExecutor(jobs, processes)
    if text.startswith("dask:local:"):
        n = text.removeprefix("dask:local:")
        if not n.isdigit() or int(n) < 1:
            raise ExecutorError(f"--executor dask:local:N needs N >= 1 workers, not {n!r}")
        return DaskExecutor(workers=int(n))
    if text.startswith("dask:tcp://"):
        return DaskExecutor(address=text.removeprefix("dask:"))
    if text.startswith("dask:jobqueue:"):
        path = Path(text.removeprefix("dask:jobqueue:"))
        try:
            options = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ExecutorError(f"--executor dask:jobqueue:FILE needs a JSON file of "
                              f"dask-jobqueue options: {err}") from None
        if options.get("system") not in DaskExecutor.JOBQUEUE:
            raise ExecutorError(f"{path}: \"system\" must be one of "
                              f"{', '.join(DaskExecutor.JOBQUEUE)}")
        return DaskExecutor(jobqueue=options)
    system, _, n = text.partition(":")
    if system in ARRAY_SYSTEMS:
        if not n.isdigit() or int(n) < 1:
            raise ExecutorError(f"--executor {system}:N needs N >= 1 array elements, not {n!r}")
        return ArrayExecutor(system, int(n), Path(folder or "build/farm"))
    raise ExecutorError(f"--executor must be local, dask:local:N, dask:tcp://HOST:PORT, "
                      f"slurm:N or lsf:N, not {text!r}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "chunk":
        run_chunk(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit("usage: python -m fpforge.infra.executor chunk RUN_DIR INDEX")
