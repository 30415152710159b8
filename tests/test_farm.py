"""The farm path for real: a one-node SLURM cluster (tests/slurm_cluster.py) runs a small
synthesis set, a few verification cases and two exhaustive shards of an 8-bit unit as job
arrays (fpforge.infra.executor.ArrayExecutor), and the results equal the local ones.

Slow (``make test-farm``, or ``pytest -m slow tests/test_farm.py``); skipped where Debian's
slurm-wlm and munge are not installed.
"""

import os

import pytest

from fpforge.infra.executor import (ArrayExecutor, LocalExecutor, ResultStore, Task, TaskFailed,
                                    digest)
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.verify import verify_exhaustive, verify_matrix
from fpforge.synth import run_designs
from fpforge.synth.records import core_design, design_for
from tests import slurm_cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slurm():
    if slurm_cluster.missing():
        pytest.skip(f"no SLURM here ({', '.join(slurm_cluster.missing())} missing): "
                    "apt-get install slurm-wlm munge")
    env = slurm_cluster.up()
    before = os.environ.get("SLURM_CONF")
    os.environ.update(env)
    yield
    slurm_cluster.down()
    if before is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = before


def farm(tmp_path, chunks=2):
    return ArrayExecutor("slurm", chunks, tmp_path / "farm")


def test_synthesis_on_slurm_equals_local(slurm, tmp_path):
    designs = [design_for(make_spec("mul", format="fp4e2m1")), core_design("fp8e4m3"),
               design_for(make_spec("add", format="fp4e2m1", stages=1))]
    local = run_designs(designs, out_dir=tmp_path / "local", fpga=False)
    remote = run_designs(designs, out_dir=tmp_path / "slurm", fpga=False,
                         executor=farm(tmp_path), store=ResultStore(tmp_path / "store"))
    for a, b in zip(local, remote):
        assert (a.name, a.asic.ge, a.asic.delay_ps, a.asic.paths) == \
            (b.name, b.asic.ge, b.asic.delay_ps, b.asic.paths)


def test_verification_cases_on_slurm_equal_local(slurm, tmp_path):
    specs = [make_spec("mul", format="fp4e2m1"), make_spec("add", format="fp4e2m1"),
             make_spec("cvt", format="fp4e2m1", in_format="fp8e4m3")]
    local = verify_matrix(specs, sim="icarus", jobs=2, log=lambda *_: None)
    remote = verify_matrix(specs, sim="icarus", log=lambda *_: None, executor=farm(tmp_path),
                           store=ResultStore(tmp_path / "store"))
    assert [(v.name, v.ok, v.vectors, v.mismatches) for v in local] == \
        [(v.name, v.ok, v.vectors, v.mismatches) for v in remote]
    assert all(v.ok and v.vectors > 0 for v in remote)


def test_two_exhaustive_shards_on_slurm_equal_local(slurm, tmp_path):
    design = Design.of(make_spec("mul", format="fp8e4m3"))
    local = verify_exhaustive(design, shards=2, progress=False, log=lambda *_: None,
                              executor=LocalExecutor(2))
    remote = verify_exhaustive(design, shards=2, progress=False, log=lambda *_: None,
                               executor=farm(tmp_path), store=ResultStore(tmp_path / "store"))
    assert local.vectors == remote.vectors == 65536
    assert local.mismatches == remote.mismatches == 0
    assert remote.summary["per_shard"]["0"]["vectors"] == 32768


def test_a_failing_task_on_slurm_is_reported_not_resubmitted(slurm, tmp_path):
    ex = farm(tmp_path, chunks=1)
    with pytest.raises(TaskFailed, match=r"(?s)task -1! failed: .*ValueError: factorial"):
        ex.run([Task(digest("farm-bad"), "math:factorial", (-1,), "-1!")],
               store=ResultStore(tmp_path / "store"))
    assert ex.runs == 1


def test_dask_jobqueue_workers_as_slurm_jobs(slurm, tmp_path):
    """The Dask path onto a farm: dask-jobqueue submits the workers as SLURM jobs."""
    import json

    from fpforge.infra.executor import executor_from
    config = tmp_path / "slurm-dask.json"
    config.write_text(json.dumps({"system": "slurm", "jobs": 1, "cores": 1, "processes": 1,
                                  "memory": "2GB", "walltime": "00:10:00", "queue": "debug",
                                  "log_directory": str(tmp_path / "logs"),
                                  "startup_timeout": 90}))
    with executor_from(f"dask:jobqueue:{config}") as ex:
        tasks = [Task(digest("jq", i), "math:factorial", (i,), f"{i}!") for i in range(6)]
        assert ex.run(tasks) == [1, 1, 2, 6, 24, 120]
