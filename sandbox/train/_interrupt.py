"""Ctrl-C during training: the first finishes the step and checkpoints, the second stops."""

from __future__ import annotations

import signal
import sys


def install_sigint(trainer):
    """First Ctrl-C: finish the current step, checkpoint, stop. Second: stop at once."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        if trainer._stop_requested:
            last = trainer.out / "last.ckpt"
            raise KeyboardInterrupt(
                "stopped at once by a second Ctrl-C; steps since the last checkpoint are lost"
                + (f" ({last} holds the last one; continue with --resume)" if last.is_file()
                   else " (no checkpoint written yet)")
            )
        trainer._stop_requested = True
        if getattr(trainer, "writer", True):  # once per run, also when every rank gets it
            print(
                "\nCtrl-C: finishing this step and saving a checkpoint (press again to quit now)",
                file=sys.stderr,
            )

    return signal.signal(signal.SIGINT, handler)


def close_progress(bar) -> None:
    """Close the progress bar with Ctrl-C held back for the moment it takes, then deliver
    it.  A second Ctrl-C landing inside tqdm's ``close()`` left the bar open, and its
    finalizer, run when the exception's frames were freed, printed the bar once more
    after the command's last line (the CLI's one-line message)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        bar.close()
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        bar.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    if held and callable(previous):
        previous(signal.SIGINT, None)  # the trainer's handler: a second Ctrl-C raises here
