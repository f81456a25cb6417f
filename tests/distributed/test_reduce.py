"""The fixed-order sum, the in-process ranks and the pieces that need no MPI."""

import numpy as np
import pytest

from sandbox.distributed import (
    VirtualRanks,
    check_batch_size,
    fixed_order_sum,
    launched_world_size,
    layout,
    shard_slice,
    small_sum,
    threads_per_rank,
)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("length", [1, 7, 1000])
def test_fixed_order_sum_adds_in_rank_order(rng, n, length):
    parts = [rng.standard_normal(length).astype(np.float32) * 10.0**k for k in range(n)]
    got = VirtualRanks(n).run(lambda comm: fixed_order_sum(comm, parts[comm.rank]))
    expected = parts[0].copy()
    for p in parts[1:]:
        expected = expected + p  # ((x0 + x1) + x2) + ...: the order the library fixes
    for g in got:  # every rank holds the same bits
        assert g.dtype == np.float32 and g.shape == (length,)
        np.testing.assert_array_equal(g, expected)


def test_virtual_ranks_take_turns_and_exchange():
    order = []

    def body(comm):
        order.append(("start", comm.rank))
        sent = np.arange(6).reshape(3, 2) + 10 * comm.rank
        received = comm.alltoall(sent)
        order.append(("after alltoall", comm.rank))
        gathered = comm.allgather(np.array([comm.rank]))
        flags = small_sum(comm, [float(comm.rank), 1.0])
        value = np.array([7.0]) if comm.rank == 1 else np.zeros(1)
        comm.bcast(value, root=1)
        return received, gathered, flags, value, comm.allgather_object(comm.rank * 2)

    results = VirtualRanks(3).run(body)
    # One rank at a time: each runs up to the collective, then the next one.
    assert order == [("start", 0), ("start", 1), ("start", 2), ("after alltoall", 0),
                     ("after alltoall", 1), ("after alltoall", 2)]
    for r, (received, gathered, flags, value, objects) in enumerate(results):
        for k in range(3):  # row k came from rank k: its row r
            np.testing.assert_array_equal(received[k], np.arange(6).reshape(3, 2)[r] + 10 * k)
        np.testing.assert_array_equal(gathered, [[0], [1], [2]])
        np.testing.assert_array_equal(flags, [3.0, 3.0])
        np.testing.assert_array_equal(value, [7.0])
        assert objects == [0, 2, 4]


def test_a_failing_virtual_rank_stops_the_others():
    def body(comm):
        comm.barrier()
        if comm.rank == 1:
            raise KeyError("rank 1 broke")
        comm.barrier()  # rank 0 waits here: it must be released, not hang
        return comm.rank

    with pytest.raises(KeyError, match="rank 1 broke"):
        VirtualRanks(2, timeout=30).run(body)


def test_batch_must_divide_among_ranks():
    check_batch_size(8, 2)
    with pytest.raises(ValueError, match="--batch-size 6 .* divisible by the 4 ranks; use 4 or 8"):
        check_batch_size(6, 4)
    assert [shard_slice(r, 2, 8) for r in range(2)] == [slice(0, 4), slice(4, 8)]


def test_loader_shards_are_the_batch_position_for_position():
    from sandbox import data

    loader = data.DataLoader(
        data.Shapes(12, image_size=16, seed=3), 4, shuffle=True, seed=5, drop_last=True,
        transform=data.Compose([data.RandomFlip(), data.RandomRotate90()]),
    )
    whole = list(loader.batches(1, start=1))
    halves = [list(loader.batches(1, start=1, shard=(r, 2))) for r in range(2)]
    assert len(whole) == 2
    for b, (images, masks) in enumerate(whole):
        np.testing.assert_array_equal(np.concatenate([h[b][0] for h in halves]), images)
        np.testing.assert_array_equal(np.concatenate([h[b][1] for h in halves]), masks)
    with pytest.raises(ValueError, match="shard must be"):
        next(loader.batches(0, shard=(0, 3)))


def test_launch_environment_and_layout():
    assert launched_world_size({}) == 1
    assert launched_world_size({"PMI_SIZE": "4", "PMI_RANK": "1"}) == 4
    assert launched_world_size({"OMPI_COMM_WORLD_SIZE": "2"}) == 2
    assert launched_world_size({"SLURM_STEP_NUM_TASKS": "8"}) == 8
    assert threads_per_rank(2, cores=2, own=2) == 1 and threads_per_rank(3, cores=2, own=2) == 1
    assert threads_per_rank(2, cores=16, own=16) == 8  # unbound: the node's cores shared
    assert threads_per_rank(2, cores=16, own=8) == 8  # bound by the launcher: its own 8
    assert threads_per_rank(4, cores=16, own=2) == 2  # never more than it may run on
    assert layout(4, 2, 2) == "4 ranks on 2 nodes x 2 threads"
    assert layout(2, 1, 1) == "2 ranks on 1 node x 1 thread"


def test_import_sandbox_does_not_import_mpi4py():
    import subprocess
    import sys

    code = (
        "import sys, sandbox, sandbox.train, sandbox.distributed, sandbox.cli;"
        "print('mpi4py' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_nan_guard_and_stop_requests_are_agreed_by_every_rank():
    from sandbox import nn
    from sandbox.autograd import Tensor
    from sandbox.distributed import DataParallel
    from sandbox.functional import cross_entropy
    from sandbox.runtime.rng import manual_seed

    images = np.zeros((2, 1, 4, 4), np.float32)
    masks = np.zeros((2, 4, 4), np.int64)

    def rank(comm):
        manual_seed(0)
        model = nn.Conv2d(1, 2, 3, padding=1)

        def loss_fn(logits, m):  # rank 1's loss is NaN; rank 0 asks to stop
            loss = cross_entropy(logits, Tensor(m))
            return loss * float("nan") if comm.rank == 1 else loss

        dp = DataParallel(comm, model)
        return dp.step(images[comm.rank : comm.rank + 1], masks[:1], loss_fn, comm.rank == 0)

    first, second = VirtualRanks(2).run(rank)
    assert first[1:] == second[1:] == (True, True)  # diverged and stop, on both ranks


def test_virtual_ranks_can_run_again_after_a_failure():
    world = VirtualRanks(2, timeout=30)

    def fails(comm):
        raise ValueError("first run")

    with pytest.raises(ValueError, match="first run"):
        world.run(fails)
    assert world.run(lambda comm: int(comm.allgather(np.array([comm.rank])).sum())) == [1, 1]
