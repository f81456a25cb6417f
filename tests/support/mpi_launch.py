"""Launching ``sandbox train`` as MPI ranks on 127.0.0.1 for tests/distributed (1 thread
each, every launch bounded by a timeout)."""

import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds for one launch; a run here takes a few

#: a tiny run: 16 samples of 16x16, batches of 4 (2 per rank), 6 steps over 2 epochs
TINY = [
    "--data", "shapes", "--image-size", "16", "--depth", "2", "--width", "4",
    "--train-samples", "16", "--val-samples", "4", "--batch-size", "4", "--steps", "6",
    "--threads", "1", "--no-plots", "--quiet", "--seed", "3",
]  # fmt: skip


def environment(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("SANDBOX_FAIL_RANK", None)
    env.update(extra)
    return env


def run(command, env=None, timeout=TIMEOUT):
    """Run ``command``; every launch is bounded by ``timeout`` seconds."""
    return subprocess.run(
        command, capture_output=True, text=True, env=env or environment(), timeout=timeout,
        cwd=ROOT, stdin=subprocess.DEVNULL,
    )


def launch(mpiexec, *ranks_args, env=None, n=2):
    """``mpiexec -n n ... python -m sandbox train ARGS``; several ``ranks_args`` lists make
    an MPMD launch of 1 rank each (rank r gets ``ranks_args[r]``)."""
    host = [mpiexec, "-launcher", "fork", "-hosts", "127.0.0.1"]
    py = [sys.executable, "-m", "sandbox", "train"]
    if len(ranks_args) == 1:
        command = [*host, "-n", str(n), *py, *ranks_args[0]]
    else:
        command = list(host)
        for i, args in enumerate(ranks_args):
            command += [":"] * bool(i) + ["-n", "1", *py, *args]
    return run(command, env=env)


def weights(path) -> dict:
    from sandbox.train import checkpoint

    state = checkpoint.load_training_state(path)
    return {k: np.asarray(v) for k, v in state["model"].items()}


def assert_same_weights(a, b):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        np.testing.assert_array_equal(wa[k], wb[k], err_msg=k)
