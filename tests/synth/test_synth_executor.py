"""Synthesis through the executor: a sweep's designs on a Dask LocalCluster equal the local run
even when a worker is killed mid-run, and a re-run with the result store runs no Yosys job."""

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from fpforge.infra.executor import DaskExecutor, ResultStore
from fpforge.rtl.kinds import make_spec
from fpforge.synth import run_designs
from fpforge.synth.records import core_design, design_for

SPECS = [make_spec(u, format=f) for f in ("fp4e2m1", "fp6e2m3") for u in ("mul", "add", "cvt")]


def figures(records):
    return [(r.name, r.asic.ge, r.asic.delay_ps, r.asic.paths, r.generic.transistors)
            for r in records]


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
                             progress=kill_one)
    assert killed and figures(remote) == figures(local)


def test_a_stored_sweep_runs_no_yosys_again(designs, local, tmp_path):
    first, store, first_run = local
    assert list(first_run.rglob("yosys.log")), "the first run ran no Yosys"
    ran = []
    again = run_designs(designs, out_dir=tmp_path / "b", fpga=False, store=store,
                        progress=lambda task, result: ran.append(task.label))
    assert figures(again) == figures(first) and len(ran) == len(designs)
    # Every result came from the store: the second run directory holds no Yosys log.
    assert not list((tmp_path / "b").rglob("yosys.log"))
    # ... but its records point into it, at the netlist the store brought, with the first
    # run's folder gone: asic.netlist is relative to the record's own JSON file.
    shutil.rmtree(first_run)
    for r in again:
        json_file = Path(r.directory).parent / f"{r.name}.json"
        assert json_file.is_file() and (tmp_path / "b") in json_file.parents
        netlist = json_file.parent / json.loads(json_file.read_text())["asic"]["netlist"]
        assert f"module {r.name}(" in netlist.read_text().replace(" (", "(")
