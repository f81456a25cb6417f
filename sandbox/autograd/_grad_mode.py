"""Grad mode: whether :meth:`Function.apply` records graph nodes (thread-local).

``no_grad`` / ``enable_grad`` are context managers *and* decorators;
``set_grad_enabled(mode)`` sets the mode at once and restores it when used with
``with``.  The backward walk also switches the mode: off while running the
``backward`` methods, unless ``create_graph=True``.
"""

from __future__ import annotations

import functools
import threading

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]


class _GradState(threading.local):
    enabled = True  # class attribute = the default in every thread


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation."""
    return _state.enabled


class _GradMode:
    """Context manager that sets grad mode and restores it; also usable as a decorator."""

    _mode = True

    def __new__(cls, func=None):
        self = super().__new__(cls)
        self._prev = []
        if callable(func):  # used bare: @no_grad
            return self(func)
        return self

    def __init__(self, func=None):
        pass

    def __enter__(self):
        self._prev.append(_state.enabled)
        _state.enabled = self._mode

    def __exit__(self, *exc):
        _state.enabled = self._prev.pop()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)():  # a fresh instance per call: reentrant and thread safe
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Disable recording: ``with no_grad(): ...`` or ``@no_grad()`` / ``@no_grad``."""

    _mode = False


class enable_grad(_GradMode):
    """Enable recording inside a ``no_grad`` region (context manager or decorator)."""

    _mode = True


class set_grad_enabled:
    """Set grad mode to ``mode`` now; as a context manager, restore it on exit."""

    def __init__(self, mode):
        self._prev = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state.enabled = self._prev


class inference_mode(_GradMode):
    """``with inference_mode():`` (or as a decorator): no recording, as ``torch.inference_mode``.

    Here it is :class:`no_grad` (the sandbox has no separate inference tensors);
    ``inference_mode(False)`` leaves grad mode as it is.
    """

    def __new__(cls, mode=True):
        if callable(mode):  # used bare: @inference_mode
            return super().__new__(cls, mode)
        self = super().__new__(cls)
        self._enabled = bool(mode)
        return self

    def __init__(self, mode=True):
        pass

    def __enter__(self):
        self._prev.append(_state.enabled)
        if getattr(self, "_enabled", True):
            _state.enabled = False

    def __call__(self, func):
        enabled = getattr(self, "_enabled", True)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with inference_mode(enabled):
                return func(*args, **kwargs)

        return wrapper
