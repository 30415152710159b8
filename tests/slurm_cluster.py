"""A one-node SLURM cluster on this machine (Debian's slurm-wlm and munge), for the farm tests.

``python -m tests.slurm_cluster up`` writes a slurm.conf under build/slurm, starts munged,
slurmctld and slurmd, and waits for the node; ``down`` stops them. ``make slurm-up`` /
``make slurm-down`` call these; tests/test_farm.py starts and stops it itself. Jobs see the
configuration through ``SLURM_CONF`` (``export SLURM_CONF=build/slurm/slurm.conf``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "build" / "slurm"
CONF = HOME / "slurm.conf"
DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch")


def missing() -> list[str]:
    return [d for d in DAEMONS if shutil.which(d) is None]


def memory_mb() -> int:
    """Most of this machine's memory: jobs that ask for memory (--mem) must fit."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 * 9 // 10
    return 1024


def config(cpus: int) -> str:
    host = socket.gethostname()
    return f"""# fpforge's one-node test cluster (tests/slurm_cluster.py)
ClusterName=fpforge
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={HOME}/state
SlurmdSpoolDir={HOME}/spool
SlurmctldPidFile={HOME}/slurmctld.pid
SlurmdPidFile={HOME}/slurmd.pid
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldLogFile={HOME}/slurmctld.log
SlurmdLogFile={HOME}/slurmd.log
NodeName={host} CPUs={cpus} RealMemory={memory_mb()} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _pid(name: str) -> int | None:
    path = HOME / f"{name}.pid"
    try:
        pid = int(path.read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def up(cpus: int | None = None, timeout: float = 60) -> dict:
    """Start the cluster (if not running); return the environment its jobs need."""
    gone = missing()
    if gone:
        raise RuntimeError(f"SLURM test cluster needs {', '.join(gone)}: apt-get install "
                           "slurm-wlm munge")
    env = {**os.environ, "SLURM_CONF": str(CONF)}
    for d in ("state", "spool"):
        (HOME / d).mkdir(parents=True, exist_ok=True)
    CONF.write_text(config(cpus or os.cpu_count() or 1))
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    if subprocess.run(["munge", "-n"], capture_output=True).returncode != 0:
        subprocess.run(["munged", "--force"], check=True, capture_output=True)
    for daemon in ("slurmctld", "slurmd"):
        if _pid(daemon) is None:
            subprocess.run([daemon, "-f", str(CONF)], check=True, env=env, capture_output=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip() in ("idle", "mixed", "allocated"):
            return {"SLURM_CONF": str(CONF)}
        time.sleep(0.5)
    raise RuntimeError(f"the SLURM node did not come up in {timeout:.0f} s; see {HOME}/*.log")


def down() -> None:
    for daemon in ("slurmd", "slurmctld"):
        pid = _pid(daemon)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    if sys.argv[1:] == ["up"]:
        print(f"SLURM up: export SLURM_CONF={up()['SLURM_CONF']}")
    elif sys.argv[1:] == ["down"]:
        down()
        print("SLURM down")
    else:
        sys.exit("usage: python -m tests.slurm_cluster up|down")
