"""Is this process one rank of a distributed launch, and how many threads may it use?

The launcher tells its ranks who they are in the environment, so this is known
without importing mpi4py: MPICH's Hydra sets ``PMI_SIZE``/``PMI_RANK``, Open MPI
``OMPI_COMM_WORLD_SIZE``, PMIx ``PMIX_RANK`` (with the size in
``OMPI_COMM_WORLD_SIZE`` or Slurm's variables), Slurm's ``srun``
``SLURM_STEP_NUM_TASKS``.  A single process (also ``mpiexec -n 1``) trains exactly
as without MPI.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS")


def launched_world_size(environ=None) -> int:
    """The world size the launcher announced (1 when not launched as several ranks)."""
    environ = os.environ if environ is None else environ
    for name in SIZE_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def threads_per_rank(local_size: int, cores: int | None = None, own: int | None = None) -> int:
    """The default: the node's ``cores`` shared equally by its ``local_size`` ranks, at
    most the ``own`` cores this rank may run on, at least 1 (``None``: this process's)."""
    if cores is None or own is None:
        from ..runtime.threads import available_cores

        cores = available_cores() if cores is None else cores
        own = available_cores() if own is None else own
    return max(1, min(own, cores // max(1, local_size)))


def layout(size: int, nodes: int, threads: int) -> str:
    """``"4 ranks on 2 nodes x 2 threads"``: printed once at the start of a run."""

    def plural(n, word):
        return f"{n} {word}{'' if n == 1 else 's'}"

    return f"{plural(size, 'rank')} on {plural(nodes, 'node')} x {plural(threads, 'thread')}"


def find_mpiexec() -> str | None:
    """The ``mpiexec`` beside the running interpreter (a venv's, from the ``mpich``
    wheel), else the first one on ``PATH``."""
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def mpiexec_command(mpiexec: str, nproc: int, argv: list) -> list:
    """The command that runs ``python -m sandbox <argv>`` as ``nproc`` ranks on this
    machine only (MPICH's Hydra: the ``fork`` launcher, host 127.0.0.1)."""
    return [
        mpiexec, "-n", str(nproc), "-launcher", "fork", "-hosts", "127.0.0.1",
        sys.executable, "-m", "sandbox", *argv,
    ]  # fmt: skip


def have_mpi4py() -> bool:
    """True when mpi4py imports (its top-level package; importing ``mpi4py.MPI`` would
    start MPI)."""
    try:
        import mpi4py  # noqa: F401 - the package alone; MPI starts with mpi4py.MPI
    except ImportError:
        return False
    return True
