"""The communicator: the few collectives data-parallel training needs, behind one interface.

A process *plays* one or more ranks of a world of ``size`` ranks: under MPI each
process plays its own rank (``ranks == (rank,)``); the in-process reference
(:class:`~sandbox.distributed.VirtualRanks`) plays all of them, one after another.
Every collective therefore takes one contribution per rank played (a list) and
returns what each of those ranks receives.  Code written against this interface
runs unchanged on both, which is what makes the in-process run a bitwise reference
for the MPI run.

mpi4py is imported only by :class:`MPIComm` (the ``mpi`` extra).  The upper-case
mpi4py methods used here (``Alltoall``, ``Allgather``, ``Bcast``) pass numpy buffers
without pickling.
"""

from __future__ import annotations

import os
import sys

import numpy as np


class Communicator:
    """What a data-parallel run needs from its engine (see the module doc).

    Attributes
    ----------
    size : int
        Ranks in the world.
    ranks : tuple of int
        The ranks this process plays.
    local_rank, local_size : int
        This process's index among the processes of its node, and their number.
    nodes : int
        Nodes (machines) in the world.
    """

    size: int = 1
    ranks: tuple = (0,)
    local_rank: int = 0
    local_size: int = 1
    nodes: int = 1

    @property
    def rank(self) -> int:
        """The first rank this process plays (its rank under MPI)."""
        return self.ranks[0]

    @property
    def is_root(self) -> bool:
        """True in the process that plays rank 0: the one that writes files and prints."""
        return 0 in self.ranks

    def allgather(self, parts: list) -> np.ndarray:
        """Stack every rank's array (same shape and dtype everywhere): ``(size, *shape)``."""
        raise NotImplementedError

    def alltoall(self, parts: list) -> list:
        """Each part is ``(size, m)``; rank ``r`` receives row ``r`` of every rank, in rank
        order, as its own ``(size, m)`` array.  Returns one such array per rank played."""
        raise NotImplementedError

    def bcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Overwrite ``array`` in place with ``root``'s copy (one copy per process)."""
        raise NotImplementedError

    def bcast_object(self, obj, root: int = 0):
        """``root``'s picklable ``obj`` on every process."""
        raise NotImplementedError

    def allgather_object(self, obj) -> list:
        """One picklable ``obj`` per *process*, in rank order."""
        raise NotImplementedError

    def barrier(self) -> None:
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every process of the job now (no clean-up)."""
        raise NotImplementedError


class MPIComm(Communicator):
    """:class:`Communicator` on mpi4py's ``COMM_WORLD`` (one rank per process)."""

    def __init__(self, world=None):
        from ..runtime.optional import require

        MPI = require("mpi4py.MPI", "a distributed run (mpiexec, srun, --nproc)")
        self._MPI = MPI
        self._world = world if world is not None else MPI.COMM_WORLD
        self.size = self._world.Get_size()
        self.ranks = (self._world.Get_rank(),)
        node = self._world.Split_type(MPI.COMM_TYPE_SHARED, key=self.ranks[0])
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        # Node count: the number of node-local rank-0s.
        self.nodes = int(self._world.allreduce(1 if self.local_rank == 0 else 0))
        node.Free()

    def allgather(self, parts: list) -> np.ndarray:
        (mine,) = parts
        mine = np.ascontiguousarray(mine)
        out = np.empty((self.size, *mine.shape), mine.dtype)
        self._world.Allgather(mine, out)
        return out

    def alltoall(self, parts: list) -> list:
        (mine,) = parts
        mine = np.ascontiguousarray(mine)
        out = np.empty_like(mine)
        self._world.Alltoall(mine, out)
        return [out]

    def bcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        self._world.Bcast(array, root=root)
        return array

    def bcast_object(self, obj, root: int = 0):
        return self._world.bcast(obj, root=root)

    def allgather_object(self, obj) -> list:
        return self._world.allgather(obj)

    def barrier(self) -> None:
        self._world.Barrier()

    def abort(self, code: int = 1) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self._world.Abort(code)
        os._exit(code)  # pragma: no cover - Abort does not return


class VirtualRanks(Communicator):
    """All ``size`` ranks in this one process: the pure-numpy reference of a run.

    The trainer computes rank 0's shard, then rank 1's, ..., and the collectives
    combine the contributions exactly as the MPI implementation does (the same
    slices, the same order of the sums), so a run on ``VirtualRanks(n)`` is bitwise
    the run on ``n`` MPI ranks.
    """

    def __init__(self, size: int):
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"size must be a positive integer, got {size!r}")
        self.size = int(size)
        self.ranks = tuple(range(self.size))

    def _check(self, parts):
        if len(parts) != self.size:
            raise ValueError(f"expected one part per rank ({self.size}), got {len(parts)}")

    def allgather(self, parts: list) -> np.ndarray:
        self._check(parts)
        return np.stack([np.asarray(p) for p in parts])

    def alltoall(self, parts: list) -> list:
        self._check(parts)
        return [np.stack([p[r] for p in parts]) for r in range(self.size)]

    def bcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        return array  # one copy serves every rank

    def bcast_object(self, obj, root: int = 0):
        return obj

    def allgather_object(self, obj) -> list:
        return [obj]

    def barrier(self) -> None:
        pass

    def abort(self, code: int = 1) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
