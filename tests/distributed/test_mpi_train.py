"""``sandbox train`` on 2 MPI ranks: files, reproducibility, the in-process reference,
equivalence with 1 process, resume, failures and misuse (issue 24)."""

import json
import os
import shutil

import numpy as np
import pytest

from tests.support.mpi_launch import TINY, assert_same_weights, environment, launch, run


@pytest.fixture(scope="module")
def two_rank_run(mpiexec, tmp_path_factory):
    """One 2-rank run (rank 1 told another --out: it must write nothing there)."""
    base = tmp_path_factory.mktemp("mpi")
    out, other = base / "run", base / "rank1"
    done = launch(mpiexec, [*TINY, "--out", str(out)], [*TINY, "--out", str(other)])
    assert done.returncode == 0, done.stderr
    return out, other, done


def test_two_ranks_finish_and_only_rank0_writes(two_rank_run):
    out, other, done = two_rank_run
    assert "done: 6 steps" in done.stdout
    assert done.stdout.count("done:") == 1  # one report, from rank 0
    assert "2 ranks on 1 node x 1 thread" in done.stderr
    assert {"last.ckpt", "best.ckpt", "log.jsonl", "config.json", "summary.json"} <= {
        p.name for p in out.iterdir()
    }
    assert not other.exists()  # rank 1 never touched its run folder
    from sandbox.train import checkpoint

    assert checkpoint.load_training_state(out / "last.ckpt")["world_size"] == 2
    vals = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert [v["step"] for v in vals if v["kind"] == "val"] == [4, 6]


def test_two_rank_runs_are_bitwise_equal(two_rank_run, mpiexec, tmp_path):
    out, _, _ = two_rank_run
    # The same run again, through the --nproc convenience this time.
    again = run([*_python_sandbox(), "--nproc", "2", *TINY, "--out", str(tmp_path / "b")])
    assert again.returncode == 0, again.stderr
    assert_same_weights(out / "last.ckpt", tmp_path / "b" / "last.ckpt")
    assert (out / "log.jsonl").read_text() == _without_seconds(tmp_path / "b" / "log.jsonl",
                                                                like=out / "log.jsonl")


def test_two_ranks_equal_the_in_process_virtual_ranks(two_rank_run, tmp_path):
    from sandbox.cli.commands import build_parser
    from sandbox.cli.train_options import config_from_args
    from sandbox.distributed import DistributedTrainer, VirtualRanks

    out, _, _ = two_rank_run
    args = build_parser().parse_args(["train", *TINY, "--out", str(tmp_path / "v")])
    cfg = config_from_args(args)
    VirtualRanks(2).run(lambda comm: DistributedTrainer(cfg, comm).fit())
    assert_same_weights(out / "last.ckpt", tmp_path / "v" / "last.ckpt")
    got = [json.loads(x) for x in (tmp_path / "v" / "log.jsonl").read_text().splitlines()]
    want = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    for g, w in zip(got, want, strict=True):
        g.pop("seconds", None), w.pop("seconds", None)
        assert g == w  # losses and validation metrics, bit for bit


@pytest.mark.parametrize(
    ("norm", "loss"), [("group", "ce"), ("syncbatch", "ce"), ("group", "ce+dice")]
)
def test_two_ranks_half_batches_equal_one_process(tmp_path, norm, loss):
    """2 ranks x B/2 = 1 process x B up to the order of the additions (group norm, or
    batch norm with synchronised statistics; CE, or CE + the global batch's Dice): the
    first step's gradient and loss."""
    from sandbox.autograd import Tensor
    from sandbox.distributed import (
        DataParallel,
        VirtualRanks,
        convert_sync_batchnorm,
        distributed_loss,
    )
    from sandbox.runtime.rng import manual_seed
    from sandbox.train import TrainConfig, build_datasets, build_loaders, build_model, compute_loss

    cfg = TrainConfig(data="shapes", image_size=16, depth=2, width=4, train_samples=16,
                      val_samples=4, batch_size=8, norm=norm, out=str(tmp_path / "x"))
    train_set, val_set = build_datasets(cfg)
    loader, _ = build_loaders(cfg, train_set, val_set)
    images, masks = next(loader.batches(0))

    def model():
        manual_seed(0)
        return build_model(cfg, train_set.in_channels, train_set.num_classes)

    def loss_fn(logits, m):
        return compute_loss(loss, logits, m, train_set.num_classes)

    one = model()
    single = loss_fn(one(Tensor(images)), masks)
    single.backward()
    whole = np.concatenate([p.grad.numpy().ravel() for p in one.parameters()])

    def rank(comm):
        replica = model()
        if norm == "syncbatch":
            convert_sync_batchnorm(replica, comm)
        half = slice(4 * comm.rank, 4 * comm.rank + 4)
        def rank_loss(logits, m):
            return distributed_loss(loss, logits, m, train_set.num_classes, comm)

        result = DataParallel(comm, replica).step(images[half], masks[half], rank_loss, False)
        return result, np.concatenate([p.grad.numpy().ravel() for p in replica.parameters()])

    results = VirtualRanks(2).run(rank)
    np.testing.assert_array_equal(results[0][1], results[1][1])  # the same bits on both
    (value, diverged, stop), split = results[0]
    assert not diverged and not stop
    assert value == pytest.approx(single.item(), rel=1e-6)
    np.testing.assert_allclose(split, whole, rtol=1e-3, atol=1e-7)
    assert np.linalg.norm(split - whole) <= 1e-6 * np.linalg.norm(whole)


def test_sync_batch_norm_two_ranks_equal_the_in_process_virtual_ranks(mpiexec, tmp_path):
    from sandbox.cli.commands import build_parser
    from sandbox.cli.train_options import config_from_args
    from sandbox.distributed import DistributedTrainer, VirtualRanks

    args = [*TINY, "--norm", "syncbatch", "--steps", "5"]
    done = launch(mpiexec, [*args, "--out", str(tmp_path / "m")])
    assert done.returncode == 0, done.stderr
    cfg = config_from_args(build_parser().parse_args(["train", *args, "--out",
                                                      str(tmp_path / "v")]))
    VirtualRanks(2).run(lambda comm: DistributedTrainer(cfg, comm).fit())
    assert_same_weights(tmp_path / "m" / "last.ckpt", tmp_path / "v" / "last.ckpt")


def test_first_step_loss_of_two_ranks_matches_one_process(mpiexec, tmp_path):
    """Group norm, CE: the 2-rank run's first loss (the mean of 2 half-batch means) is the
    1-process batch's, up to rounding."""
    args = [*TINY, "--norm", "group", "--steps", "1"]
    single = run([*_python_sandbox(), *args, "--out", str(tmp_path / "one")])
    assert single.returncode == 0, single.stderr
    two = launch(mpiexec, [*args, "--out", str(tmp_path / "two")])
    assert two.returncode == 0, two.stderr
    first = [json.loads((tmp_path / name / "log.jsonl").read_text().splitlines()[0])
             for name in ("one", "two")]
    assert first[0]["step"] == first[1]["step"] == 1
    assert first[1]["loss"] == pytest.approx(first[0]["loss"], rel=1e-5)


def test_stop_and_resume_on_two_ranks_is_bitwise_the_uninterrupted_run(
    two_rank_run, mpiexec, tmp_path
):
    out, _, _ = two_rank_run
    args = [*TINY, "--out", str(tmp_path / "r")]
    first = launch(mpiexec, [*args, "--stop-after", "3"])
    assert first.returncode == 0, first.stderr
    assert "stopped after 3 of 6 steps" in first.stdout
    shutil.copytree(tmp_path / "r", tmp_path / "one")
    second = launch(mpiexec, [*args, "--resume"])
    assert second.returncode == 0, second.stderr
    assert "warning" not in second.stderr
    assert_same_weights(out / "last.ckpt", tmp_path / "r" / "last.ckpt")
    # Another number of ranks (here 1 process) may resume, with a warning.
    alone = run([*_python_sandbox(), *TINY, "--out", str(tmp_path / "one"), "--resume"])
    assert alone.returncode == 0, alone.stderr
    assert "warning: resuming a run trained on 2 rank(s) with 1" in alone.stderr


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_ends_the_job(mpiexec, tmp_path, how):
    spec = "1:2" if how == "raise" else "1:2:kill"
    done = launch(mpiexec, [*TINY, "--out", str(tmp_path / how)],
                  env=environment(SANDBOX_FAIL_RANK=spec))
    assert done.returncode != 0
    if how == "raise":
        assert "rank 1: InjectedFailure" in done.stderr and "aborting all ranks" in done.stderr
    else:
        assert "BAD TERMINATION" in done.stdout + done.stderr or "KILLED" in done.stderr
    assert _gone_within(10.0, str(tmp_path / how))  # no rank is left behind


def test_the_watchdog_ends_a_job_with_a_stuck_rank(mpiexec, tmp_path):
    done = launch(mpiexec, [*TINY, "--watchdog", "2", "--out", str(tmp_path / "w")],
                  env=environment(SANDBOX_FAIL_RANK="1:2:hang"))
    assert done.returncode != 0
    assert "no progress for" in done.stderr and "aborting all ranks" in done.stderr
    assert _gone_within(10.0, str(tmp_path / "w"))


def test_sigterm_on_one_rank_stops_every_rank_at_the_same_step(mpiexec, tmp_path):
    from sandbox.train import checkpoint

    done = launch(mpiexec, [*TINY, "--out", str(tmp_path / "t")],
                  env=environment(SANDBOX_FAIL_RANK="1:2:term"))
    assert done.returncode == 130, done.stderr
    assert "interrupted at step 2" in done.stderr
    state = checkpoint.load_training_state(tmp_path / "t" / "last.ckpt")
    assert state["position"]["step"] == 2


def test_batch_not_divisible_is_one_line(mpiexec, tmp_path):
    done = launch(mpiexec, [*TINY, "--batch-size", "3", "--out", str(tmp_path / "b")])
    assert done.returncode == 2
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert lines == [
        "sandbox train: error: --batch-size 3 is the global batch and must be divisible "
        "by the 2 ranks; use 2 or 4"
    ]
    nproc = run([*_python_sandbox(), "--nproc", "2", *TINY, "--batch-size", "3",
                 "--out", str(tmp_path / "c")])
    assert nproc.returncode == 2 and nproc.stderr.strip() == lines[0]


def test_nproc_without_the_extra_is_one_line(tmp_path):
    hidden = tmp_path / "hide"
    (hidden / "mpi4py").mkdir(parents=True)
    (hidden / "mpi4py" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    env = environment()
    env["PYTHONPATH"] = os.pathsep.join([str(hidden), env["PYTHONPATH"]])
    done = run([*_python_sandbox(), "--nproc", "2", *TINY, "--out", str(tmp_path / "o")],
               env=env)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "sandbox train: error: --nproc needs the optional package 'mpi4py' (the mpi "
        "extra); install it with: pip install 'cpu-train-sandbox[mpi]'"
    )


def _python_sandbox():
    import sys

    return [sys.executable, "-m", "sandbox", "train"]


def _without_seconds(path, like):
    """``path``'s log with the timing field of ``like``'s entries (timings differ)."""
    mine = [json.loads(x) for x in path.read_text().splitlines()]
    theirs = [json.loads(x) for x in like.read_text().splitlines()]
    for m, t in zip(mine, theirs, strict=True):
        if "seconds" in t:
            m["seconds"] = t["seconds"]
    return "".join(json.dumps(m) + "\n" for m in mine)


def _gone_within(seconds, text):
    """True once no process mentions ``text`` in its command line (polled; the launcher
    may still be reaping the ranks when it returns)."""
    import time

    deadline = time.monotonic() + seconds
    while _processes_mentioning(text):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _processes_mentioning(text):
    found = []
    for proc in os.listdir("/proc"):
        if not proc.isdigit():
            continue
        try:
            with open(f"/proc/{proc}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(proc))
        except OSError:
            continue
    return found
