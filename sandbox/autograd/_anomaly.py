"""Anomaly detection: find the op whose backward produced NaN or inf.

Inside ``with detect_anomaly():``

* every recorded :class:`~sandbox.autograd.Function` call keeps the Python stack
  of its forward call (``ctx._trace``), and
* after each node's backward, the engine checks the returned gradients; the
  first one holding NaN or inf raises a ``RuntimeError`` naming the node and
  the file:line where its forward was called.  An exception raised inside a
  backward gets the same forward location attached as a note.

Outside the context nothing is recorded or checked: ``Function.apply`` reads
one flag, the backward walk reads it once per pass.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback

import numpy as np

__all__ = ["detect_anomaly", "is_anomaly_enabled"]

# .../sandbox and .../sandbox/autograd, from the package's own file: this module may run
# compiled, from sandbox/_C/compiled/ (sandbox/runtime/compiled.py)
_PKG = os.path.dirname(os.path.abspath(sys.modules[__name__.split(".")[0]].__file__))
_ENGINE = os.path.join(_PKG, "autograd")


class _Flag:
    enabled = False  # process-wide, as torch.autograd.detect_anomaly
    check_nan = True


_flag = _Flag()
_lock = threading.Lock()


def is_anomaly_enabled() -> bool:
    """Whether :func:`detect_anomaly` is active."""
    return _flag.enabled


class detect_anomaly:
    """Context manager (and decorator) that turns on anomaly detection.

    Parameters
    ----------
    check_nan : bool
        Raise when a backward returns NaN or inf (default True).  With False, only
        the forward call sites are recorded (they still annotate errors raised
        inside a backward).

    Examples
    --------
    >>> with detect_anomaly():                      # doctest: +SKIP
    ...     loss = model(x).sum()
    ...     loss.backward()   # RuntimeError: 'LogBackward' returned nan ... log(x) at train.py:12
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self._prev = None

    def __enter__(self):
        with _lock:
            self._prev = (_flag.enabled, _flag.check_nan)
            _flag.enabled = True
            _flag.check_nan = self.check_nan
        return self

    def __exit__(self, *exc):
        with _lock:
            _flag.enabled, _flag.check_nan = self._prev

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)

        return wrapper


def capture_stack() -> traceback.StackSummary:
    """The caller's stack without the engine's own frames (source lines read lazily).

    The engine's frames are dropped by their file: compiled (``sandbox/runtime/compiled.py``),
    its functions have no Python frames at all, so no fixed number of them is skipped."""
    frames = traceback.walk_stack(sys._getframe())
    stack = traceback.StackSummary.extract(frames, lookup_lines=False)
    stack.reverse()  # outermost first, as in a traceback
    kept = [f for f in stack if not f.filename.startswith(_ENGINE)]
    return traceback.StackSummary.from_list(kept)


def call_site(stack) -> str:
    """``file:line in function`` of the innermost frame outside the sandbox package.

    That is the user's line that started the op (``y = model(x)`` or
    ``y = MyFn.apply(x)``); falls back to the innermost frame.
    """
    if not stack:
        return "<unknown>"
    frame = next((f for f in reversed(stack) if not f.filename.startswith(_PKG)), stack[-1])
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _forward_text(node) -> str:
    stack = node._trace
    if stack is None:
        return (
            f"No forward trace for {node.name()}: it was recorded before detect_anomaly() "
            "was entered; run the forward inside the context too."
        )
    lines = "".join(stack.format()).rstrip()
    return (
        f"The forward of {node.name()} was called at {call_site(stack)}.\n"
        f"Forward traceback (most recent call last):\n{lines}"
    )


def check_result(node, result) -> None:
    """Raise if a gradient returned by ``node``'s backward holds NaN or inf."""
    if not _flag.check_nan:
        return
    for i, g in enumerate(result):
        if g is None:
            continue
        data = getattr(g, "_data", g)
        data = np.asarray(data)
        if data.dtype.kind == "f" and not np.isfinite(data).all():
            what = "nan" if np.isnan(data).any() else "inf"
            raise RuntimeError(
                f"Function '{node.name()}' returned {what} values in its gradient for "
                f"input {i} (shape {tuple(data.shape)}).\n{_forward_text(node)}"
            )


def annotate(exc: BaseException, node) -> None:
    """Attach the forward location of ``node`` to an exception from its backward."""
    if hasattr(exc, "add_note"):  # Python >= 3.11
        exc.add_note(
            f"[detect_anomaly] error in the backward of {node.name()}. {_forward_text(node)}"
        )


def backward(node, grads):
    """``node``'s backward under detect_anomaly(): errors and NaN/inf name the forward line."""
    try:
        result = node._fn.backward(node._ctx, *grads)
    except Exception as exc:
        annotate(exc, node)
        raise
    check_result(node, result if isinstance(result, tuple | list) else (result,))
    return result
