"""The training loop: progress, validation, logs, checkpoints, exact resume, NaN guard.

Run folder layout (``cfg.out``)::

    config.json     the configuration
    log.jsonl       one JSON object per logged step and per validation
    last.ckpt       the latest checkpoint (written atomically)
    best.ckpt       the checkpoint with the best validation score
    curves.png      loss and metric curves (matplotlib)
    predictions.png input / truth / prediction overlays (matplotlib)
"""

from __future__ import annotations

import json
import math
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .. import functional as F
from ..autograd import Tensor, no_grad
from ..runtime.rng import get_rng_state, set_rng_state
from . import checkpoint
from ._config import (
    TrainConfig,
    build_datasets,
    build_loaders,
    build_model,
    build_optimizer,
    check_batch_norm,
    first_batch,
    input_normalization,
    spatial_dims,
    total_steps,
)
from ._interrupt import close_progress, install_sigint
from ._memory_plan import check_training
from ._resume import check_same_settings
from ._run_folder import RunFolder
from .metrics import ConfusionMatrix


class TrainingDiverged(RuntimeError):
    """Raised when the loss becomes NaN or infinite."""


class TrainingInterrupted(KeyboardInterrupt):
    """Raised after Ctrl-C once the checkpoint has been saved."""


def compute_loss(kind: str, logits, target, num_classes: int):
    """Cross-entropy, soft Dice, or their sum."""
    target_t = Tensor(target)
    if kind == "ce":
        return F.cross_entropy(logits, target_t)
    dice = F.dice_loss(logits, target_t, num_classes=num_classes)
    if kind == "dice":
        return dice
    return F.cross_entropy(logits, target_t) + dice


class Trainer:
    """Train a segmentation model as configured by a :class:`TrainConfig`.

    (:class:`sandbox.distributed.DistributedTrainer` fills the hooks marked "hook"
    below for data-parallel runs; this class is the single-process trainer.)

    Parameters
    ----------
    config : TrainConfig
    resume : bool, default False
        Continue from ``<out>/last.ckpt`` exactly where it stopped (same losses as an
        uninterrupted run with the same thread count).
    stop_after : int, optional
        Stop (and checkpoint) after this many optimiser steps in this session; used to
        test resuming, and handy for short trials.
    overwrite : bool, default False
        Replace the run already in ``config.out``.  Without it (or ``resume``) a folder
        holding a run is refused, so a new run never destroys an old one by accident.

    Notes
    -----
    The run folder is locked from construction until :meth:`fit` returns (or
    :meth:`close`): a second trainer on the same folder is refused meanwhile.
    Temporary files left by a checkpoint save that a crash interrupted are deleted.
    """

    #: hooks: this process writes the run folder (a distributed run: rank 0 only), and
    #: the number of ranks training together
    writer = True
    world_size = 1

    def __init__(
        self,
        config: TrainConfig,
        resume: bool = False,
        stop_after: int | None = None,
        overwrite: bool = False,
    ):
        if stop_after is not None and (
            isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 1
        ):
            raise ValueError(f"stop_after must be a positive number of steps, got {stop_after!r}")
        if resume and overwrite:
            raise ValueError("resume continues the run folder and overwrite replaces it: pick one")
        self.cfg = config
        self.out = Path(config.out)
        self.stop_after = stop_after
        # Claim the run folder first: refuse a folder in use or holding another run.
        self._folder = self._claim_folder(resume, overwrite)
        try:
            self._setup(resume)
        except BaseException:
            self._folder.abandon()  # leave the folder as it was found
            raise

    def _claim_folder(self, resume: bool, overwrite: bool):
        """hook: lock the run folder (see :class:`RunFolder`)."""
        return RunFolder(self.out, resume=resume, overwrite=overwrite)

    def _setup(self, resume: bool) -> None:
        from ..runtime.rng import manual_seed
        from ..runtime.threads import set_num_threads

        config = self.cfg
        if config.threads is not None:
            set_num_threads(config.threads)
        manual_seed(config.seed)
        self.train_set, self.val_set = build_datasets(config)
        self.num_classes = self.train_set.num_classes
        self.class_names = tuple(self.train_set.class_names)
        self.train_loader, self.val_loader = build_loaders(config, self.train_set, self.val_set)
        if len(self.train_loader) == 0:
            raise ValueError("the training set is smaller than one batch")
        self.spatial_dims = spatial_dims(self.train_set)
        check_batch_norm(config, self.train_set, self.spatial_dims)
        check_training(config, self.train_set, self.val_set, self.spatial_dims)
        self.model = build_model(
            config, self.train_set.in_channels, self.num_classes, self.spatial_dims
        )
        self.total_steps = total_steps(config, len(self.train_loader))
        self.optimizer, self.scheduler = build_optimizer(config, self.model, self.total_steps)

        # Position: the next (epoch, batch) to run and optimiser steps done so far.
        self.epoch, self.batch, self.step = 0, 0, 0
        self.best_score = -math.inf
        self.best_epoch = None
        self.bad_epochs = 0
        self.history: list[dict] = []
        self._stop_requested = False
        self.seconds_before = 0.0  # training time of earlier sessions (resume)
        if resume:
            self._load(self.out / "last.ckpt")
        first_batch(self.train_loader, self.epoch, self.batch)  # labels checked, notices now

    # ------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        return {
            "config": self.cfg.to_dict(),
            "model": dict(self.model.state_dict()),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": get_rng_state(),
            "position": {"epoch": self.epoch, "batch": self.batch, "step": self.step},
            "time": {"seconds": None if self.seconds_before is None
                     else self.seconds_before + self._session_seconds()},
            "best": {
                "score": self.best_score,
                "epoch": self.best_epoch,
                "bad_epochs": self.bad_epochs,
            },
            "data": {
                "in_channels": self.train_set.in_channels,
                "num_classes": self.num_classes,
                "class_names": list(self.class_names),
                "normalization": input_normalization(self.train_set),
                "spatial_dims": self.spatial_dims,
            },
        }

    def save(self, name: str = "last.ckpt") -> Path:
        return checkpoint.save(self.state(), self.out / name)

    def _load(self, path: Path) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"cannot resume: no checkpoint at {path}")
        state = checkpoint.load_training_state(path)
        check_same_settings(TrainConfig.from_dict(state["config"]), self.cfg)
        self._check_resume_state(state)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        pos = state["position"]
        self.epoch, self.batch, self.step = pos["epoch"], pos["batch"], pos["step"]
        # Checkpoints older than the "time" entry: the duration covers this session only.
        self.seconds_before = state.get("time", {}).get("seconds")
        best = state["best"]
        self.best_score = best["score"]
        self.best_epoch, self.bad_epochs = best["epoch"], best["bad_epochs"]
        log = self.out / "log.jsonl"
        if self.writer and log.is_file():
            self.history = [json.loads(line) for line in log.read_text().splitlines() if line]
            # Drop entries logged after the checkpoint (e.g. a crash after saving).
            self.history = [h for h in self.history if h.get("step", 0) <= self.step]
            log.write_text("".join(json.dumps(h) + "\n" for h in self.history))

    def _check_resume_state(self, state: dict) -> None:
        """hook: a checkpoint of another world size resumes, with a warning."""
        saved = int(state.get("world_size", 1))
        if saved != self.world_size and self.writer:
            print(f"warning: resuming a run trained on {saved} rank(s) with {self.world_size}: "
                  "it continues up to rounding (the gradients add in another order); the "
                  "same number of ranks resumes bitwise", file=sys.stderr)

    # ---------------------------------------------------------------- logging
    def _session_seconds(self) -> float:
        start = getattr(self, "_t_start", None)
        return 0.0 if start is None else time.perf_counter() - start

    def _commit_folder(self) -> None:
        """The first step worked: now replace the old run (``overwrite``) and write
        ``config.json``.  Until here a failure leaves the folder as it was found."""
        self._folder.commit()
        if self.writer:
            (self.out / "config.json").write_text(json.dumps(self.cfg.to_dict(), indent=2))

    def _log(self, entry: dict) -> None:
        self.history.append(entry)
        if self.writer:
            with open(self.out / "log.jsonl", "a") as f:
                f.write(json.dumps(entry) + "\n")

    # ------------------------------------------------------------- validation
    def evaluate(self, loader=None) -> dict:
        """Loss and metrics (mean IoU, Dice, pixel accuracy) on the validation set."""
        loader = loader or self.val_loader
        self.model.eval()
        cm = ConfusionMatrix(self.num_classes, class_names=self.class_names)
        losses, counts = [], []
        with no_grad():
            for images, masks in loader.batches(0):
                logits = self.model(Tensor(images))
                losses.append(compute_loss(self.cfg.loss, logits, masks, self.num_classes).item())
                counts.append(len(images))
                cm.update(logits.numpy().argmax(axis=1), masks)
        self.model.train()
        metrics = cm.compute()
        metrics["loss"] = float(np.average(losses, weights=counts))
        if self.num_classes == 2:
            metrics["dice_fg"] = metrics[f"dice/{self.class_names[1]}"]
        return metrics

    # ------------------------------------------------------------------- loop
    def fit(self) -> dict:
        """Train until the configured epochs/steps, early stop, Ctrl-C or divergence."""
        self._folder.acquire()
        previous_handler = install_sigint(self)
        try:
            return self._fit()
        except BaseException:
            self._folder.abandon_if_uncommitted()
            raise
        finally:
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)
            self.close()

    def close(self) -> None:
        """Release the run folder (done by :meth:`fit`); another run may then use it."""
        self._folder.release()

    def _progress_bar(self, **kwargs):
        """hook: the progress bar (tqdm)."""
        from tqdm.auto import tqdm

        return tqdm(**kwargs)

    def _train_batches(self, epoch: int, start: int):
        """hook: the training batches of ``epoch`` from batch ``start`` on."""
        return self.train_loader.batches(epoch, start=start)

    def _fit(self) -> dict:
        cfg = self.cfg
        epochs = math.ceil(self.total_steps / len(self.train_loader))
        bar = self._progress_bar(
            total=self.total_steps,
            initial=self.step,
            disable=not cfg.progress,
            unit="step",
            dynamic_ncols=True,
            file=sys.stderr,
        )
        steps_this_session = 0
        t_start = self._t_start = time.perf_counter()
        self.model.train()
        try:
            while self.epoch < epochs and self.step < self.total_steps:
                for images, masks in self._train_batches(self.epoch, self.batch):
                    t0 = time.perf_counter()
                    loss_value, lr = self._train_step(images, masks)
                    if not self._folder.committed:
                        self._commit_folder()
                    self.batch += 1
                    self.step += 1
                    steps_this_session += 1
                    dt = time.perf_counter() - t0
                    bar.update(1)
                    bar.set_postfix(
                        epoch=self.epoch, loss=f"{loss_value:.4f}", img_s=f"{len(images) / dt:.0f}"
                    )
                    if self.step % cfg.log_every == 0 or self.step == 1:
                        self._log(
                            {
                                "kind": "train",
                                "step": self.step,
                                "epoch": self.epoch,
                                "loss": loss_value,
                                "lr": lr,
                                "seconds": round(dt, 4),
                            }
                        )
                    if self.step >= self.total_steps:
                        break
                    if self._should_stop(steps_this_session):
                        return self._stop(bar, t_start, interrupted=self._stop_requested)
                # End of an epoch (or of the step budget): validate and checkpoint.
                finished_epoch = self.epoch
                self.epoch += 1
                self.batch = 0
                if self._end_of_epoch(finished_epoch, bar):
                    break
                if self._should_stop(steps_this_session):
                    return self._stop(bar, t_start, interrupted=self._stop_requested)
        finally:
            close_progress(bar)
        return self._finish(time.perf_counter() - t_start)

    def _should_stop(self, steps_this_session: int) -> bool:
        """Ctrl-C was pressed, or this session's ``stop_after`` budget is spent."""
        return self._stop_requested or (
            self.stop_after is not None and steps_this_session >= self.stop_after
        )

    def _train_step(self, images, masks) -> tuple[float, float]:
        # Overflow on the way to a NaN loss is reported by the NaN guard, in one message,
        # not as numpy RuntimeWarnings printed before it.  (Warnings are caught, not
        # silenced with np.errstate, which is per thread: the conv workers would still
        # warn.)  A step that does not diverge passes its warnings on.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = self._guarded_step(images, masks)
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return result

    def _diverged(self, value, where: str = "") -> TrainingDiverged:
        """The error for a non-finite loss ``value`` at this step (``where``: on which ranks)."""
        last = self.out / "last.ckpt"
        return TrainingDiverged(
            f"loss became {value} at step {self.step + 1} (epoch {self.epoch}, batch "
            f"{self.batch}){where}; stopped. The last good checkpoint is {last}"
            + ("" if last.exists() else " (none written yet)") + ". Try a lower --lr."
        )

    def _guarded_step(self, images, masks) -> tuple[float, float]:
        logits = self.model(Tensor(images))
        loss = compute_loss(self.cfg.loss, logits, masks, self.num_classes)
        value = loss.item()
        if not math.isfinite(value):
            raise self._diverged(value)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        lr = self.optimizer.param_groups[0]["lr"]
        if self.scheduler is not None:
            self.scheduler.step()
        return value, lr

    def _end_of_epoch(self, epoch: int, bar) -> bool:
        """Validate, log, checkpoint; return True to stop early."""
        metrics = self.evaluate()
        score = metrics["dice_fg"] if self.num_classes == 2 else metrics["mean_iou"]
        score = -math.inf if score is None else score
        improved = score > self.best_score
        if improved:
            self.best_score, self.best_epoch, self.bad_epochs = score, epoch, 0
        else:
            self.bad_epochs += 1
        self._log({"kind": "val", "step": self.step, "epoch": epoch, **metrics})
        # Printed also with the progress bar off (--quiet hides the bar only).
        bar.write(
            f"epoch {epoch}: val loss {metrics['loss']:.4f}  mean IoU {metrics['mean_iou']:.4f}"
            f"  Dice {metrics['mean_dice']:.4f}  acc {metrics['pixel_accuracy']:.4f}"
            + (f"  fg Dice {metrics['dice_fg']:.4f}" if "dice_fg" in metrics else "")
            + ("  *" if improved else ""),
            file=sys.stderr,
        )
        self.save("last.ckpt")
        if improved:
            self.save("best.ckpt")
        if self.cfg.patience is not None and self.bad_epochs >= self.cfg.patience:
            bar.write(f"early stop: no improvement for {self.bad_epochs} epochs")
            return True
        return False

    def _stop(self, bar, t_start, interrupted: bool) -> dict:
        path = self.save("last.ckpt")
        bar.write(
            f"{'interrupted' if interrupted else 'stopped'} at step {self.step}; "
            f"checkpoint saved to {path} (continue with --resume)"
        )
        if interrupted:
            raise TrainingInterrupted(f"interrupted at step {self.step}; saved {path}")
        return self._summary(time.perf_counter() - t_start, finished=False)

    def _finish(self, seconds: float) -> dict:
        summary = self._summary(seconds, finished=True)
        if self.cfg.plots:
            from . import _plots

            summary["plots"] = _plots.save_all(self)
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2))
        return summary

    def _summary(self, seconds: float, finished: bool) -> dict:
        vals = [h for h in self.history if h["kind"] == "val"]
        before = self.seconds_before
        return {
            "finished": finished,
            "steps": self.step,
            "epochs": self.epoch,
            # the whole run's training time; None before: a checkpoint without it
            "seconds": round(seconds + (before or 0.0), 2),
            "session_seconds": round(seconds, 2),
            "whole_run": before is not None,
            "best_epoch": self.best_epoch,
            "best_score": None if self.best_score == -math.inf else self.best_score,
            "final": vals[-1] if vals else None,
            "out": str(self.out),
        }
