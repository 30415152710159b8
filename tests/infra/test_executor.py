"""The executor: local and Dask backends give the same results in task order; a stored result is
not computed again (resume); a task that raises is reported once; a worker killed mid-run costs
only its in-flight tasks. Dask runs on a real distributed.LocalCluster."""

import os
import signal

import pytest

from fpforge.infra.executor import (DaskExecutor, ExecutorError, LocalExecutor, ResultStore, Task,
                                    TaskFailed, digest, executor_from)


def factorials(n):
    return [Task(digest("factorial", i), "math:factorial", (i,), f"{i}!") for i in range(n)]


def counted(folder, n, seconds=0.0):
    """Tasks that each append their index to folder/count (so a test sees what really ran)."""
    return [Task(digest("counted", str(folder), i), "subprocess:check_output",
                 (["bash", "-c", f"sleep {seconds}; echo {i} >> {folder}/count; echo {i}"],),
                 f"counted {i}") for i in range(n)]


def ran(folder):
    path = folder / "count"
    return sorted(int(x) for x in path.read_text().split()) if path.exists() else []


def test_digest_is_a_content_key():
    assert digest("a", 1, {"b": 2}) == digest("a", 1, {"b": 2}) != digest("a", 2, {"b": 2})


def test_local_results_in_task_order():
    with LocalExecutor(2) as ex:
        assert ex.run(factorials(8)) == [1, 1, 2, 6, 24, 120, 720, 5040]


def test_a_stored_result_is_not_computed_again(tmp_path):
    store = ResultStore(tmp_path / "store")
    tasks = counted(tmp_path, 6)
    with LocalExecutor(2) as ex:
        first = ex.run(tasks[:4], store=store)
        assert ran(tmp_path) == [0, 1, 2, 3]
        # The "interrupted" run resumes: only the two missing tasks run.
        again = ex.run(tasks, store=store)
    assert ran(tmp_path) == [0, 1, 2, 3, 4, 5]
    assert again[:4] == first and again == [f"{i}\n".encode() for i in range(6)]


def test_a_failing_task_is_reported_with_its_label():
    with LocalExecutor(2) as ex, pytest.raises(TaskFailed, match=r"task -1! failed: ValueError"):
        ex.run([Task(digest("bad"), "math:factorial", (-1,), "-1!")])


def test_executor_names():
    assert isinstance(executor_from("local", 3), LocalExecutor)
    for bad, message in (("dask:local:0", "needs N >= 1"), ("slurm:x", "slurm:N needs N >= 1"),
                         ("farm", "must be local")):
        with pytest.raises(ExecutorError, match=message):
            executor_from(bad)


@pytest.fixture(scope="module")
def dask():
    pytest.importorskip("distributed")
    with DaskExecutor(workers=2) as ex:
        yield ex


def test_dask_gives_the_local_results(dask):
    with LocalExecutor(2) as local:
        assert dask.run(factorials(12)) == local.run(factorials(12))


def test_dask_reports_a_failing_task_once(dask):
    with pytest.raises(TaskFailed, match=r"task -1! failed: ValueError"):
        dask.run([Task(digest("bad-dask"), "math:factorial", (-1,), "-1!")])


def test_killing_a_worker_costs_only_its_in_flight_tasks(dask, tmp_path):
    tasks = counted(tmp_path, 10, seconds=0.5)
    store = ResultStore(tmp_path / "store")
    killed = []

    def kill_one_worker(task, result):
        if not killed:
            pid = next(iter(dask.client.run(os.getpid).values()))   # a worker's process
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    results = dask.run(tasks, store=store, on_done=kill_one_worker)
    assert killed
    assert results == [f"{i}\n".encode() for i in range(10)]     # every task, once, in order
    # Re-run: everything is stored, nothing runs again.
    before = ran(tmp_path)
    assert set(before) == set(range(10))
    assert dask.run(tasks, store=store) == results and ran(tmp_path) == before


def test_dask_scheduler_address_from_the_environment(monkeypatch):
    pytest.importorskip("distributed")
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster:
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        with executor_from(None) as ex:
            assert isinstance(ex, DaskExecutor) and ex.run(factorials(4)) == [1, 1, 2, 6]


@pytest.mark.parametrize("argv, message", [
    (["--scheduler", "localhost:8786"], "--scheduler takes a Dask scheduler address"),
    (["--cluster", "local:2", "--executor", "local"], "--executor and --cluster each say"),
    (["--executor", "farm"], "--executor must be local"),
    (["--cluster", "/nonexistent.json"], "needs a JSON file of dask-jobqueue options"),
])
def test_bad_executor_options_exit_2_in_one_line(tmp_path, argv, message):
    import subprocess
    import sys
    from pathlib import Path
    done = subprocess.run([sys.executable, "-m", "fpforge", "verify-exhaustive", "--unit",
                           "mul", "--format", "fp4e2m1", *argv], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cluster_option_runs_a_local_cluster(tmp_path):
    """--cluster local:2 (the issue's spelling) runs the shards on a Dask LocalCluster."""
    pytest.importorskip("distributed")
    import subprocess
    import sys
    from pathlib import Path
    done = subprocess.run([sys.executable, "-m", "fpforge", "verify-exhaustive", "--unit",
                           "mul", "--format", "fp4e2m1", "--shards", "2", "--cluster", "local:2"],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "256 of 256 vectors, 0 mismatches" in done.stdout
