"""Synthesis through the executor: a sweep's designs on a Dask LocalCluster equal the local run
even when a worker is killed mid-run, and a re-run with the result store, or with the synthesis
cache, runs no Yosys job and restores each job's folder."""

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from fpforge import synth
from fpforge.infra.executor import DaskExecutor, ResultStore
from fpforge.rtl.kinds import make_spec
from fpforge.synth import run_designs, synthesis_cache
from fpforge.synth.records import core_design, design_for
from fpforge.synth.sta import sta_command

SPECS = [make_spec(u, format=f) for f in ("fp4e2m1", "fp6e2m3") for u in ("mul", "add", "cvt")]


def figures(records):
    return [(r.name, r.asic.ge, r.asic.delay_ps, r.asic.paths, r.generic.transistors)
            for r in records]


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    """This module's synthesis cache, empty at its start: its runs are to run Yosys (or take
    their results from the store they are given), not find another test's results."""
    folder = tmp_path_factory.mktemp("synthesis-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(synth, "synthesis_cache", lambda: ResultStore(folder))
        yield folder


def empty(folder: Path) -> Path:
    for f in folder.glob("*.pickle"):
        f.unlink()
    return folder


@pytest.fixture(scope="module")
def designs():
    return [design_for(s) for s in SPECS] + [core_design("fp4e2m1")]


@pytest.fixture(scope="module")
def local(designs, tmp_path_factory):
    """The designs synthesised here, one Yosys job each, into a result store: (records, store,
    run directory). Both tests compare against this one run."""
    tmp = tmp_path_factory.mktemp("local")
    store = ResultStore(tmp / "store")
    return run_designs(designs, out_dir=tmp / "a", fpga=False, store=store), store, tmp / "a"


def test_killing_a_worker_mid_sweep_loses_nothing(designs, local, tmp_path):
    pytest.importorskip("distributed")
    local, _, _ = local
    killed = []
    with DaskExecutor(workers=2) as dask:
        def kill_one(task, result):
            if not killed:
                pid = next(iter(dask.client.run(os.getpid).values()))
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        remote = run_designs(designs, out_dir=tmp_path / "dask", fpga=False, executor=dask,
                             progress=kill_one, cached=False)     # every job on the cluster
    assert killed and figures(remote) == figures(local)


def _header(out: Path) -> dict:
    header, = out.glob("*/header.json")
    return json.loads(header.read_text())


def _job_files(run: Path) -> dict:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in run.glob("*/asic/*")}


def test_a_stored_sweep_runs_no_yosys_again(designs, local, tmp_path):
    first, store, first_run = local
    assert list(first_run.rglob("yosys.log")), "the first run ran no Yosys"
    ran = []
    again = run_designs(designs, out_dir=tmp_path / "b", fpga=False, store=store,
                        progress=lambda task, result: ran.append(task.label), cached=False)
    assert figures(again) == figures(first) and len(ran) == len(designs)
    # Every result came from the store: each job's folder is the first run's, byte for byte,
    # Yosys's log with its CPU times included (a new run would log its own).
    run_b, = (tmp_path / "b").iterdir()
    first_dir, = first_run.iterdir()
    files = _job_files(first_dir)
    assert len(files) >= 8 * len(designs) and _job_files(run_b) == files
    # ... and its records point into it, at the netlist the store brought, with the first
    # run's folder gone: asic.netlist is relative to the record's own JSON file.
    shutil.rmtree(first_run)
    for r in again:
        json_file = Path(r.directory).parent / f"{r.name}.json"
        assert json_file.is_file() and (tmp_path / "b") in json_file.parents
        netlist = json_file.parent / json.loads(json_file.read_text())["asic"]["netlist"]
        assert f"module {r.name}(" in netlist.read_text().replace(" (", "(")


def test_a_second_run_takes_every_job_from_the_synthesis_cache(designs, tmp_path, own_cache):
    """Two runs of the same designs in different folders, no store given: the second runs no
    Yosys (its header says so), has the same figures and each job's folder byte for byte, and
    that folder is the job's own: OpenSTA rerun in it, with the first run gone, reads the same
    report."""
    empty(own_cache)
    first = run_designs(designs[:2], out_dir=tmp_path / "a", fpga=False)
    assert "synthesis cache" not in _header(tmp_path / "a")["time"]
    again = run_designs(designs[:2], out_dir=tmp_path / "b", fpga=False)
    assert figures(again) == figures(first)
    assert "(2 of 2 jobs from the synthesis cache" in _header(tmp_path / "b")["time"]
    (run_a,), (run_b,) = (tmp_path / "a").iterdir(), (tmp_path / "b").iterdir()
    assert _job_files(run_b) == _job_files(run_a)
    shutil.rmtree(tmp_path / "a")
    job = run_b / designs[0].name / "asic"
    rerun = subprocess.run([sta_command(), "-no_init", "-no_splash", "-exit", "sta.tcl"],
                           cwd=job, capture_output=True, text=True)
    assert rerun.returncode == 0 and "slack" in rerun.stdout
    assert rerun.stdout == (job / "sta.log").read_text()
    # another library is another key: the cache does not answer for it
    other = run_designs(designs[:1], out_dir=tmp_path / "c", fpga=False, lib="sky130hd")
    assert "synthesis cache" not in _header(tmp_path / "c")["time"]
    assert other[0].asic.ge != first[0].asic.ge


def test_a_cache_that_cannot_be_made_costs_only_the_jobs(designs, tmp_path, monkeypatch):
    """The cache's folder below a file (root writes anywhere else): no cache, the run as
    without one."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("FPFORGE_CACHE", str(tmp_path / "file" / "cache"))
    assert synthesis_cache() is None
    monkeypatch.setattr(synth, "synthesis_cache", synthesis_cache)
    records = run_designs(designs[:1], out_dir=tmp_path / "a", fpga=False)
    assert records[0].asic.ge > 0 and "synthesis cache" not in _header(tmp_path / "a")["time"]
