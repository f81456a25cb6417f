"""``sandbox train`` on several ranks: ``mpiexec -n N sandbox train``, ``srun``, ``--nproc N``.

- ``--nproc N`` re-executes the same command under the ``mpiexec`` beside the
  interpreter (the ``mpich`` wheel's) as N ranks on 127.0.0.1;
- under a launcher (N > 1 ranks announced in the environment) every rank builds
  the same configuration and a :class:`~sandbox.distributed.DistributedTrainer`.
  Errors found while setting up are agreed on (one line, from rank 0, the same
  exit status on every rank); during training, an error on one rank prints
  ``rank R: ...; aborting all ranks`` and aborts the job.
"""

from __future__ import annotations

import os
import sys

from .errors import CLIError, one_line

EXTRA_HINT = "install it with: pip install 'cpu-train-sandbox[mpi]'"


def add_distributed_args(p) -> None:
    g = p.add_argument_group("several processes (the mpi extra)")
    g.add_argument(
        "--nproc",
        type=int,
        help="train as N data-parallel ranks on this machine (re-runs the command under "
        "mpiexec on 127.0.0.1); on a cluster use mpiexec -n N or srun instead",
    )
    g.add_argument(
        "--watchdog",
        type=float,
        metavar="SECONDS",
        help="abort the whole job when no step (validation, checkpoint) finished for this "
        "long: a rank that is alive but stuck (default: off)",
    )


def wants_distributed(args) -> bool:
    from ..distributed import launched_world_size

    return getattr(args, "nproc", None) is not None or launched_world_size() > 1


def cmd_train_distributed(args, report) -> int:
    """Run ``sandbox train`` as this rank (or relaunch for ``--nproc``);
    ``report(args, cfg, trainer, summary)`` prints the lines of a finished run (rank 0)."""
    from ..distributed import launched_world_size

    if launched_world_size() > 1:
        if args.nproc is not None and args.nproc != launched_world_size():
            raise CLIError(
                f"--nproc {args.nproc} inside a launch of {launched_world_size()} ranks: "
                "leave --nproc out under mpiexec or srun"
            )
        return _train_as_rank(args, report)
    return _relaunch(args)


def _relaunch(args) -> int:
    from ..distributed import check_batch_size, find_mpiexec, have_mpi4py, mpiexec_command

    n = args.nproc
    if n < 1:
        raise CLIError(f"--nproc must be a positive number of processes, got {n}")
    if n == 1:
        raise CLIError("--nproc 1 is a single process: leave --nproc out")
    if not have_mpi4py():
        raise CLIError(f"--nproc needs the optional package 'mpi4py' (the mpi extra); {EXTRA_HINT}")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise CLIError(f"--nproc needs an 'mpiexec' beside {sys.executable} or on PATH; "
                       f"{EXTRA_HINT}")
    if args.batch_size is not None:
        try:
            check_batch_size(args.batch_size, n)
        except ValueError as exc:
            raise CLIError(str(exc)) from None
    argv = _without_nproc(args.argv)
    env = dict(os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    command = mpiexec_command(mpiexec, n, argv)
    os.execve(command[0], command, env)
    return 0  # pragma: no cover - execve does not return


def _without_nproc(argv: list) -> list:
    out, skip = [], False
    for item in argv:
        if skip:
            skip = False
        elif item == "--nproc":
            skip = True
        elif not item.startswith("--nproc="):
            out.append(item)
    return out


def _train_as_rank(args, report) -> int:
    from ..distributed import (
        DistributedTrainer,
        MPIComm,
        ReplicasDiverged,
        abort_job,
        have_mpi4py,
        launched_world_size,
        layout,
        threads_per_rank,
    )
    from ..runtime.threads import get_num_threads, set_num_threads
    from ..train import TrainingDiverged, TrainingInterrupted
    from .commands import train_header
    from .train_options import config_from_args, resume_config

    if not have_mpi4py():
        raise CLIError(f"a distributed run needs the optional package 'mpi4py'; {EXTRA_HINT}")
    comm = MPIComm()
    if comm.size != launched_world_size():
        raise CLIError(
            f"the launcher started {launched_world_size()} ranks but MPI sees {comm.size}: "
            "mpi4py is not using the launcher's MPI (use the mpiexec of the MPI mpi4py "
            "loads; under Slurm: module load it, and srun --mpi=pmix or pmi2)"
        )
    root = comm.is_root
    # Set up on every rank; an error anywhere ends every rank the same way.
    error = None
    try:
        if args.resume and args.overwrite:
            raise CLIError("--resume continues the run in OUT and --overwrite replaces it: "
                           "pick one")
        cfg = resume_config(args) if args.resume else config_from_args(args)
        set_num_threads(cfg.threads or threads_per_rank(comm.local_size, comm.node_cores))
        trainer = DistributedTrainer(
            cfg, comm, resume=args.resume, stop_after=args.stop_after, overwrite=args.overwrite,
            watchdog=args.watchdog,
        )
    except Exception as exc:  # bad options or data, or a bug: agreed, so nobody hangs
        error = exc
    failed = [e for e in comm.allgather_object(
        None if error is None else (comm.rank, one_line(error))) if e]
    if failed:
        if not root:
            raise SystemExit(2)  # rank 0 says why, once
        if error is not None:
            raise error
        rank, message = failed[0]
        raise CLIError(f"rank {rank}: {message}")
    if root:  # the layout always (--quiet only drops the header and the progress bar)
        print(layout(comm.size, comm.nodes, get_num_threads()), file=sys.stderr)
    if root and not args.quiet:
        print(train_header(cfg, trainer.model.num_parameters(), len(trainer.train_set),
                           trainer.total_steps), file=sys.stderr)
    try:
        summary = trainer.fit()
    except TrainingDiverged as exc:  # agreed by every rank
        if root:
            raise CLIError(str(exc), status=3) from exc
        raise SystemExit(3) from None
    except TrainingInterrupted:  # agreed: every rank saved and stops
        if root:
            raise
        raise SystemExit(130) from None
    except ReplicasDiverged as exc:  # found by an all-gather: every rank knows
        if root:
            raise CLIError(str(exc), status=1) from exc
        raise SystemExit(1) from None
    except BaseException as exc:  # one rank's own failure: end the whole job
        abort_job(comm, exc)
    if root:
        report(args, cfg, trainer, summary)
    return 0
