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


def test_killing_a_worker_mid_sweep_loses_nothing(designs, tmp_path):
    pytest.importorskip("distributed")
    local = run_designs(designs, out_dir=tmp_path / "local", fpga=False)
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


def test_a_stored_sweep_runs_no_yosys_again(designs, tmp_path):
    store = ResultStore(tmp_path / "store")
    first = run_designs(designs, out_dir=tmp_path / "a", fpga=False, store=store)
    ran = []
    again = run_designs(designs, out_dir=tmp_path / "b", fpga=False, store=store,
                        progress=lambda task, result: ran.append(task.label))
    assert figures(again) == figures(first) and len(ran) == len(designs)
    # Every result came from the store: the second run directory holds no Yosys log.
    assert not list((tmp_path / "b").rglob("yosys.log"))
    # ... but its records point into it, at the netlist the store brought, with the first
    # run's folder gone: asic.netlist is relative to the record's own JSON file.
    shutil.rmtree(tmp_path / "a")
    for r in again:
        json_file = Path(r.directory).parent / f"{r.name}.json"
        assert json_file.is_file() and (tmp_path / "b") in json_file.parents
        netlist = json_file.parent / json.loads(json_file.read_text())["asic"]["netlist"]
        assert f"module {r.name}(" in netlist.read_text().replace(" (", "(")
