"""The run folder a training run owns: one run at a time, never replaced by accident.

- A folder that already holds a run (a checkpoint, log or config) is refused
  unless the new run continues it (``resume``) or replaces it (``overwrite``).
- A lock file (``.lock``, ``fcntl.flock``) keeps a second process from training
  into the same folder at the same time (their logs would interleave); the lock
  goes away with the process, also after ``kill -9``.
- Temporary files of checkpoint saves interrupted by a crash are deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import checkpoint

# What a run writes; "a run is there" when one of the first four exists.
RUN_FILES = ("last.ckpt", "best.ckpt", "log.jsonl", "config.json", "summary.json",
             "curves.png", "predictions.png")
LOCK_NAME = ".lock"


class RunFolder:
    """Claim ``path`` for a run (see the module doc); :meth:`release` gives it back."""

    def __init__(self, path, resume: bool = False, overwrite: bool = False):
        self.path = Path(path)
        self.overwrite = overwrite
        self._lock = None
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"run folder {self.path} is a file, not a folder; choose another "
                             "--out")
        self.path.mkdir(parents=True, exist_ok=True)
        self.acquire()
        try:
            checkpoint.remove_stale_temp_files(self.path)
            previous = self.previous_run()
            if previous and not resume and not overwrite:
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

    def clear_previous(self) -> None:
        """Delete the earlier run's files (``overwrite``), once the new run is set up."""
        for name in RUN_FILES:
            (self.path / name).unlink(missing_ok=True)

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
