"""The run folder a training run owns: one run at a time, never replaced by accident.

- A folder that already holds a run (a checkpoint, log or config) is refused
  unless the new run continues it (``resume``) or replaces it (``overwrite``).
- A lock file (``.lock``, ``fcntl.flock``) keeps a second process from training
  into the same folder at the same time (their logs would interleave); the lock
  goes away with the process, also after ``kill -9``.
- Temporary files of checkpoint saves interrupted by a crash are deleted.
- Nothing is replaced or left behind before the new run has shown it works: the old
  run's files go (``overwrite``) and ``config.json`` is written only at
  :meth:`RunFolder.commit`, after the first training step; a run that fails before
  then leaves the folder as it found it (a folder it created is removed again).
- A folder holding only the start of a run that never wrote a checkpoint (its
  ``config.json``/``log.jsonl``, e.g. after an out-of-memory kill) holds nothing to
  resume: it is taken over with a notice instead of being refused.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from . import checkpoint

# What a run writes; "a run is there" when one of the first four exists.
RUN_FILES = ("last.ckpt", "best.ckpt", "log.jsonl", "config.json", "summary.json",
             "curves.png", "predictions.png")
LOCK_NAME = ".lock"


class RunFolderNotice(UserWarning):
    """A one-line notice about the run folder (the CLI prints it as ``notice:``)."""


class RunFolder:
    """Claim ``path`` for a run (see the module doc); :meth:`release` gives it back."""

    def __init__(self, path, resume: bool = False, overwrite: bool = False):
        self.path = Path(path)
        self.overwrite = overwrite
        self.committed = False
        self._lock = None
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"run folder {self.path} is a file, not a folder; choose another "
                             "--out")
        # What to remove again if the run fails before commit(): the folders made here
        # (outermost first) or, in an existing folder, a lock file made here.
        self._made = [p for p in (self.path, *self.path.parents) if not p.exists()][::-1]
        self._made_lock = not (self.path / LOCK_NAME).exists()
        self.path.mkdir(parents=True, exist_ok=True)
        self.acquire()
        try:
            checkpoint.remove_stale_temp_files(self.path)
            previous = self.previous_run()
            if previous and not resume and not self.has_checkpoint():
                warnings.warn(
                    f"run folder {self.path} held the start of a run that never wrote a "
                    f"checkpoint ({', '.join(previous)}): nothing to resume, replaced",
                    RunFolderNotice, stacklevel=2,
                )
                self.overwrite = True
            elif previous and not resume and not overwrite:
                raise ValueError(
                    f"run folder {self.path} already holds a run ({', '.join(previous)}); "
                    "continue it with --resume, replace it with --overwrite, or choose "
                    "another --out"
                )
        except BaseException:
            self.release()
            raise

    def previous_run(self) -> list[str]:
        """Names of the files of an earlier run in the folder."""
        return [n for n in RUN_FILES[:4] if (self.path / n).exists()]

    def has_checkpoint(self) -> bool:
        """True when a checkpoint or a finished run's summary is in the folder."""
        return any((self.path / n).exists() for n in ("last.ckpt", "best.ckpt",
                                                        "summary.json"))

    def clear_previous(self) -> None:
        """Delete the earlier run's files (``overwrite``)."""
        for name in RUN_FILES:
            (self.path / name).unlink(missing_ok=True)

    def commit(self) -> None:
        """The new run has started (its first step worked): replace the old run now."""
        if self.overwrite:
            self.clear_previous()
        self.committed = True

    def abandon(self) -> None:
        """Release, and undo what claiming the folder did (the run never started)."""
        self.release()
        if self._made:
            shutil.rmtree(self._made[0], ignore_errors=True)
        elif self._made_lock:
            (self.path / LOCK_NAME).unlink(missing_ok=True)

    def abandon_if_uncommitted(self) -> None:
        """:meth:`abandon` when the run failed before its first step was done."""
        if not self.committed:
            self.abandon()

    def acquire(self) -> None:
        """Lock the folder for this process (no-op when already held)."""
        if self._lock is not None:
            return
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no protection against a twin
            return
        lock = open(self.path / LOCK_NAME, "a+")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.seek(0)
            owner = lock.read().strip() or "unknown"
            lock.close()
            raise ValueError(
                f"run folder {self.path} is in use by another training run (pid {owner}); "
                "wait for it to finish or choose another --out"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        self._lock = lock

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing drops the flock
            self._lock = None

    def __del__(self):
        self.release()
