"""Two local processes (loopback coordinator, CPU collectives, 4 simulated devices each)
run a batched SENSE-type operator and a grid-split NUFFT on one mesh spanning both, and
agree with the single-process result (`multihost_worker.py` does the work in each
process)."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("multihost_worker.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_share_one_mesh():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(WORKER.parents[1]), env.get("PYTHONPATH", "")])
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(i), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    results = []
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
        line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
        results.append(json.loads(line[len("RESULT ") :]))
    assert sorted(r["process"] for r in results) == [0, 1]
    for r in results:
        assert r["devices"] == 8 and r["local_devices"] == 4
        assert r["forward_shards_here"] == 4  # each process holds its 4 coils
        # complex128: the same FFTs in a different order of summation
        assert r["forward_error"] < 1e-12, r
        assert r["adjoint_error"] < 1e-12, r
        # the grid split: slab FFTs, halos and point exchanges across the two processes
        assert r["grid_split"] == "GridSplitLinop"
        assert r["grid_forward_error"] < 1e-10 and r["grid_adjoint_error"] < 1e-10, r
