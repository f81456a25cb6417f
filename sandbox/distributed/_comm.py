"""The communicator: the few collectives data-parallel training needs, behind one interface.

Each rank holds a :class:`Communicator`; the collectives are called by every rank in
the same order, with this rank's contribution, and return what this rank receives.
Two implementations:

- :class:`MPIComm`: mpi4py's ``COMM_WORLD`` (the ``mpi`` extra, imported only here).
  The upper-case methods used (``Alltoall``, ``Allgather``, ``Bcast``) pass numpy
  buffers without pickling.
- :class:`VirtualRanks`: N ranks in this one process, the pure-numpy reference.
  ``VirtualRanks(n).run(fn)`` calls ``fn(comm)`` once per rank, each in a thread of
  its own, but only one runs at a time: rank 0 until its first collective, then rank
  1 until the same collective, ..., then the collective completes and rank 0 goes on.
  So the shards are computed one after another by the very code the MPI ranks run,
  and the in-process run is bitwise the MPI run.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np


class Communicator:
    """What a data-parallel run needs from its engine (see the module doc).

    Attributes
    ----------
    rank, size : int
        This rank and the number of ranks.
    local_rank, local_size : int
        This rank's index among the ranks of its node, and their number.
    nodes : int
        Nodes (machines) in the world.
    node_cores : int or None
        Cores the ranks of this node may run on together (the union of their CPU
        affinities), when known.
    """

    node_cores: int | None = None
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    nodes: int = 1

    @property
    def is_root(self) -> bool:
        """True on rank 0: the rank that writes files and prints."""
        return self.rank == 0

    def allgather(self, mine: np.ndarray) -> np.ndarray:
        """Every rank's array (same shape and dtype everywhere), stacked: ``(size, ...)``."""
        raise NotImplementedError

    def alltoall(self, mine: np.ndarray) -> np.ndarray:
        """``mine`` is ``(size, m)``: row ``j`` goes to rank ``j``.  Returns ``(size, m)``
        whose row ``k`` came from rank ``k``."""
        raise NotImplementedError

    def bcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Overwrite ``array`` in place with ``root``'s copy."""
        raise NotImplementedError

    def bcast_object(self, obj, root: int = 0):
        """``root``'s picklable ``obj`` on every rank."""
        raise NotImplementedError

    def allgather_object(self, obj) -> list:
        """Every rank's picklable ``obj``, in rank order."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Return once every rank has called it."""
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (no clean-up)."""
        raise NotImplementedError


#: seconds between flushing a rank's output and MPI_Abort (see MPIComm.abort)
ABORT_GRACE_SECONDS = 0.5


class MPIComm(Communicator):
    """:class:`Communicator` on mpi4py's ``COMM_WORLD``."""

    def __init__(self, world=None):
        from ..runtime.optional import require

        MPI = require("mpi4py.MPI", "a distributed run (mpiexec, srun, --nproc)")
        self._world = world if world is not None else MPI.COMM_WORLD
        self.size = self._world.Get_size()
        self.rank = self._world.Get_rank()
        node = self._world.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        # Bound ranks (srun's CPU binding) have disjoint affinities, unbound ones the
        # same: the union is what the node's ranks share either way.
        self.node_cores = len(set().union(*node.allgather(_affinity())))
        node.Free()
        self.nodes = int(self._world.allreduce(1 if self.local_rank == 0 else 0))

    def allgather(self, mine):
        mine = np.ascontiguousarray(mine)
        out = np.empty((self.size, *mine.shape), mine.dtype)
        self._world.Allgather(mine, out)
        return out

    def alltoall(self, mine):
        mine = np.ascontiguousarray(mine)
        out = np.empty_like(mine)
        self._world.Alltoall(mine, out)
        return out

    def bcast(self, array, root=0):
        self._world.Bcast(array, root=root)
        return array

    def bcast_object(self, obj, root=0):
        return self._world.bcast(obj, root=root)

    def allgather_object(self, obj):
        return self._world.allgather(obj)

    def barrier(self):
        self._world.Barrier()

    def abort(self, code=1):
        sys.stdout.flush()
        sys.stderr.flush()
        # the launcher relays each rank's output through a pipe and kills every rank on
        # Abort: without a moment between the two, the line that says why was sometimes
        # lost (2 of 8 runs of the watchdog test)
        time.sleep(ABORT_GRACE_SECONDS)
        self._world.Abort(code)
        os._exit(code)  # pragma: no cover - Abort does not return


def _affinity() -> set:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return set(range(os.cpu_count() or 1))


class VirtualAbort(RuntimeError):
    """Another virtual rank failed: this one stops too."""


class VirtualRanks:
    """``size`` ranks in this process, taking turns (see the module doc).

    Parameters
    ----------
    size : int
    timeout : float, default 600
        Seconds a rank waits for its turn before the run is declared stuck (ranks
        that do not call the same collectives).
    """

    def __init__(self, size: int, timeout: float = 600.0):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"size must be a positive integer, got {size!r}")
        self.size = int(size)
        self.timeout = float(timeout)
        self._cond = threading.Condition()
        self._turn = 0
        self._generation = 0
        self._slots: list = [None] * self.size
        self._last: list = []
        self._failed: tuple | None = None
        self._finished = 0

    def run(self, fn) -> list:
        """``[fn(comm_0), ..., fn(comm_{size-1})]``, each rank in its turn.

        The first exception of any rank is raised here (the others stop at their next
        collective).
        """
        results = [None] * self.size
        self._turn, self._generation, self._failed, self._finished = 0, 0, None, 0

        def body(rank):
            comm = _VirtualRank(self, rank)
            try:
                self._wait_turn(rank, None)
                results[rank] = fn(comm)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                with self._cond:
                    if self._failed is None and not isinstance(exc, VirtualAbort):
                        self._failed = (rank, exc)
                    self._cond.notify_all()
            finally:
                with self._cond:
                    self._finished += 1
                    if self._turn == rank:
                        self._turn = (rank + 1) % self.size
                    self._cond.notify_all()

        threads = [threading.Thread(target=body, args=(r,), name=f"virtual-rank-{r}")
                   for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self._failed is not None:
            raise self._failed[1]
        return results

    def _wait_turn(self, rank, generation) -> None:
        """Wait (holding nothing) until it is ``rank``'s turn (after ``generation``)."""
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._failed is not None
                or (self._turn == rank and (generation is None or self._generation > generation)),
                timeout=self.timeout,
            )
            if self._failed is not None:
                raise VirtualAbort(f"rank {self._failed[0]} failed")
            if not ok:
                raise VirtualAbort(f"rank {rank} waited {self.timeout:g} s for its turn")

    def _exchange(self, rank, value) -> list:
        """Deposit ``value``; return every rank's value of this collective, in rank order."""
        with self._cond:
            generation = self._generation
            self._slots[rank] = value
            if rank == self.size - 1:  # the last contribution completes the collective
                self._last = list(self._slots)
                self._generation += 1
                self._turn = 0
            else:
                self._turn = rank + 1
            self._cond.notify_all()
        self._wait_turn(rank, generation)
        return self._last


class _VirtualRank(Communicator):
    """One rank's view of :class:`VirtualRanks`."""

    def __init__(self, world: VirtualRanks, rank: int):
        self._world = world
        self.rank, self.size = rank, world.size
        self.local_rank, self.local_size = rank, world.size

    def _exchange(self, value):
        return self._world._exchange(self.rank, value)

    def allgather(self, mine):
        return np.stack([np.array(v) for v in self._exchange(np.array(mine, copy=True))])

    def alltoall(self, mine):
        parts = self._exchange(np.array(mine, copy=True))
        return np.stack([p[self.rank] for p in parts])

    def bcast(self, array, root=0):
        parts = self._exchange(np.array(array, copy=True) if self.rank == root else None)
        array[...] = parts[root]
        return array

    def bcast_object(self, obj, root=0):
        import copy

        return copy.deepcopy(self._exchange(obj if self.rank == root else None)[root])

    def allgather_object(self, obj):
        return list(self._exchange(obj))

    def barrier(self):
        self._exchange(None)

    def abort(self, code=1):
        raise RuntimeError(f"rank {self.rank} aborted the run (code {code})")
