"""The trainer of a data-parallel run: :class:`~sandbox.train.Trainer` with its hooks filled.

What changes against the single-process trainer (whose loop is reused as it is):

- only the process playing rank 0 claims the run folder and writes the config,
  the log, the checkpoints (with the world size), the summary, the plots and the
  progress bar; every rank reads the checkpoint when resuming;
- every rank loads only its shard of each global batch (positions, hence samples
  and augmentations, as in the 1-rank run) and the step is
  :meth:`DataParallel.step`: the NaN guard and the stop request (Ctrl-C, SIGTERM,
  as from Slurm's ``scancel``) are decided together, in the step's one small
  reduction, so no rank is left waiting in a collective;
- the initial (or resumed) state is broadcast from rank 0 and checked by digest at
  the start and before every checkpoint ("replicas diverged");
- validation batches are shared out between the ranks and the confusion matrix and
  the per-batch losses are summed exactly, so the metrics are the 1-rank metrics.
"""

from __future__ import annotations

import signal
import sys

import numpy as np

from ..autograd import Tensor, no_grad
from ..train._trainer import Trainer, compute_loss
from ..train.metrics import ConfusionMatrix
from ._data_parallel import DataParallel, check_batch_size
from ._faults import Watchdog, maybe_fail
from ._loss import distributed_loss
from ._reduce import small_sum
from ._sync_norm import convert_sync_batchnorm


class _NoFolder:
    """The run folder as seen by ranks that do not write it: every operation is rank 0's."""

    committed = True  # nothing of this rank's to commit

    def acquire(self):
        pass

    def release(self):
        pass

    def clear_previous(self):
        pass

    def commit(self):
        pass

    def abandon(self):
        pass

    def abandon_if_uncommitted(self):
        pass


class _SilentBar:
    """The progress bar of ranks that do not print."""

    def update(self, *args, **kwargs):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def write(self, *args, **kwargs):
        pass

    def close(self):
        pass


class DistributedTrainer(Trainer):
    """Data-parallel :class:`~sandbox.train.Trainer` on a communicator.

    Parameters
    ----------
    config : TrainConfig
        ``batch_size`` is the global batch: ``comm.size`` must divide it.
    comm : Communicator
        This rank's: :class:`MPIComm` under ``mpiexec``/``srun``, or one rank of
        ``VirtualRanks(n).run(...)``, the in-process reference.
    resume, stop_after, overwrite
        As for :class:`~sandbox.train.Trainer`.
    watchdog : float, optional
        Abort the job when no step, validation or checkpoint finished for this many
        seconds (a stuck rank).
    """

    def __init__(self, config, comm, resume=False, stop_after=None, overwrite=False,
                 watchdog=None):
        check_batch_size(config.batch_size, comm.size)
        if watchdog is not None and not (isinstance(watchdog, int | float) and watchdog > 0):
            raise ValueError(f"--watchdog must be a positive number of seconds, got {watchdog!r}")
        self._watchdog_seconds = watchdog
        self._watchdog = None
        self.comm = comm
        self.writer = comm.is_root
        self.world_size = comm.size
        self._stop_agreed = False
        super().__init__(config, resume=resume, stop_after=stop_after, overwrite=overwrite)
        if len(self.train_set) < config.batch_size:
            self.close()
            raise ValueError(
                f"the training set ({len(self.train_set)} samples) is smaller than one global "
                f"batch ({config.batch_size}); a distributed run needs whole batches"
            )
        if config.norm == "syncbatch":
            convert_sync_batchnorm(self.model, comm)
        self.parallel = DataParallel(comm, self.model)

    # ------------------------------------------------------------ hooks: files
    def _claim_folder(self, resume, overwrite):
        return super()._claim_folder(resume, overwrite) if self.writer else _NoFolder()

    def _progress_bar(self, **kwargs):
        return super()._progress_bar(**kwargs) if self.writer else _SilentBar()

    def state(self) -> dict:
        return {**super().state(), "world_size": self.comm.size}

    def save(self, name: str = "last.ckpt"):
        self.parallel.check_replicas(buffers=False, when=f"before saving {name}")
        path = super().save(name) if self.writer else self.out / name
        self.comm.barrier()  # no rank runs ahead of a checkpoint a resume could miss
        self._progress()
        return path

    def _finish(self, seconds: float) -> dict:
        if self.writer:
            return super()._finish(seconds)
        return self._summary(seconds, finished=True)

    # ------------------------------------------------------------- hooks: loop
    def _train_batches(self, epoch: int, start: int):
        shard = (self.comm.rank, self.comm.size)
        return self.train_loader.batches(epoch, start=start, shard=shard)

    def _guarded_step(self, images, masks) -> tuple[float, float]:
        maybe_fail(self.comm.rank, self.step + 1)
        value, diverged, stop = self.parallel.step(
            images,
            masks,
            lambda logits, m: distributed_loss(
                self.cfg.loss, logits, m, self.num_classes, self.comm
            ),
            self._stop_requested,
        )
        self._stop_agreed = stop
        if diverged:
            raise self._diverged(value, " on at least one rank")
        self.optimizer.step()
        lr = self.optimizer.param_groups[0]["lr"]
        if self.scheduler is not None:
            self.scheduler.step()
        self._progress()
        return value, lr

    def _progress(self) -> None:
        if self._watchdog is not None:
            self._watchdog.progress()

    def _should_stop(self, steps_this_session: int) -> bool:
        # Only what every rank agreed on: a signal that arrives after this step's
        # reduction is acted on at the next step, by every rank together.
        return self._stop_agreed or (
            self.stop_after is not None and steps_this_session >= self.stop_after
        )

    def _stop(self, bar, t_start, interrupted: bool) -> dict:
        return super()._stop(bar, t_start, interrupted=self._stop_agreed)

    # ------------------------------------------------------------- validation
    def evaluate(self, loader=None) -> dict:
        """The 1-rank metrics: validation batches shared out, exact sums of the results."""
        loader = loader or self.val_loader
        comm, k = self.comm, self.num_classes
        self.parallel.broadcast_buffers()  # everyone validates with rank 0's statistics
        nb = len(loader)
        part = np.zeros(2 * nb + k * k)
        cm = ConfusionMatrix(k)
        self.model.eval()
        with no_grad():
            for b in range(comm.rank, nb, comm.size):  # batch b on rank b mod N
                images, masks = next(iter(loader.batches(0, start=b)))
                logits = self.model(Tensor(images))
                part[b] = compute_loss(self.cfg.loss, logits, masks, k).item()
                part[nb + b] = len(images)
                cm.update(logits.numpy().argmax(axis=1), masks)
        part[2 * nb :] = cm.matrix.ravel()
        self.model.train()
        # Each value comes from one rank and zeros from the others: the sums are exact.
        total = small_sum(comm, part)
        cm = ConfusionMatrix(k, class_names=self.class_names)
        cm.matrix = total[2 * nb :].reshape(k, k).astype(np.int64)
        metrics = cm.compute()
        metrics["loss"] = float(np.average(total[:nb], weights=total[nb : 2 * nb]))
        if k == 2:
            metrics["dice_fg"] = metrics[f"dice/{self.class_names[1]}"]
        self._progress()
        return metrics

    # -------------------------------------------------------------------- fit
    def fit(self) -> dict:
        """Broadcast and check the replicas, then train; SIGTERM stops like Ctrl-C."""
        previous = _install_sigterm(self)
        if self._watchdog_seconds is not None:
            self._watchdog = Watchdog(self.comm, self._watchdog_seconds).start()
        try:
            self.parallel.broadcast_state()
            self.parallel.check_replicas(when="at the start")
            if self.writer:
                for note in model_notes(self.cfg, self.comm.size):
                    print(f"sandbox train: note: {note}", file=sys.stderr)
            return super().fit()
        finally:
            if self._watchdog is not None:
                self._watchdog.stop()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def model_notes(cfg, size: int) -> list[str]:
    """What differs from the 1-rank run beyond rounding, said once at the start."""
    notes = []
    per = cfg.batch_size // size
    if cfg.norm == "batch" and per < 8:
        notes.append(
            f"batch norm normalises each rank's {per} image(s), not the global batch of "
            f"{cfg.batch_size}: another model than the 1-rank run's; --norm syncbatch "
            "uses the global batch's statistics, --norm group is exact"
        )
    return notes


def _install_sigterm(trainer: DistributedTrainer):
    """SIGTERM (Slurm's ``scancel``, a job's time limit): finish the step, save, stop."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        if not trainer._stop_requested and trainer.writer:
            print("\nSIGTERM: finishing this step and saving a checkpoint", file=sys.stderr)
        trainer._stop_requested = True

    return signal.signal(signal.SIGTERM, handler)
