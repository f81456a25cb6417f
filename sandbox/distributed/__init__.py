"""Data-parallel training on several processes and machines, on MPI (the ``mpi`` extra).

>>> # mpiexec -n 4 sandbox train ...   /   srun sandbox train ...   /   sandbox train --nproc 2
>>> from sandbox.distributed import DistributedTrainer, VirtualRanks  # doctest: +SKIP
>>> DistributedTrainer(config, VirtualRanks(2)).fit()  # the in-process reference  # doctest: +SKIP

Nothing here imports mpi4py until an :class:`MPIComm` is made, so ``import sandbox``
and single-process training do not change.  See docs/10-several-machines.md.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "Communicator": "_comm", "MPIComm": "_comm", "VirtualRanks": "_comm",
    "VirtualAbort": "_comm",
    "fixed_order_sum": "_reduce", "small_sum": "_reduce", "digest": "_reduce",
    "DataParallel": "_data_parallel", "ReplicasDiverged": "_data_parallel",
    "check_batch_size": "_data_parallel", "shard_slice": "_data_parallel",
    "DistributedTrainer": "_trainer",
    "SyncBatchNorm": "_sync_norm", "convert_sync_batchnorm": "_sync_norm",
    "AllSum": "_loss", "distributed_loss": "_loss",
    "abort_job": "_faults", "InjectedFailure": "_faults", "Watchdog": "_faults",
    "launched_world_size": "_launch", "threads_per_rank": "_launch", "layout": "_launch",
    "find_mpiexec": "_launch", "mpiexec_command": "_launch", "have_mpi4py": "_launch",
}  # fmt: skip


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_HOMES)
