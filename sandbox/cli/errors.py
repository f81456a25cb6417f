"""How every ``sandbox`` command ends: one line on stderr and an exit status, no traceback.

A command raises :class:`CLIError` (or one of the library's ``ValueError``,
``TypeError``, ``OSError``... naming what is wrong); :func:`run_command` turns it
into ``sandbox <command>: error: <message>`` and exit status 2.  Ctrl-C ends with
status 130, an unexpected exception (a bug) with a one-line "internal error" and
status 1.  ``--debug`` or ``SANDBOX_DEBUG=1`` prints the traceback as well.

Exit statuses: 0 success, 1 internal error (or a command's own failure, e.g. a
benchmark regression), 2 bad arguments or input, 3 training diverged, 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
import warnings

DEBUG_ENV = "SANDBOX_DEBUG"
EXIT_ERROR = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130

# Exceptions that describe bad input (a file, an option, a size): shown as one line.
USER_ERRORS = (ValueError, TypeError, OSError, KeyError, ImportError, MemoryError, EOFError)


class CLIError(Exception):
    """A user error with a ready one-line message; ``main`` exits with ``status``."""

    def __init__(self, message: str, status: int = EXIT_ERROR, prog: str | None = None):
        super().__init__(message)
        self.status = status
        self.prog = prog


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad argument raises :class:`CLIError` (one line, no usage block)."""

    def error(self, message):  # noqa: D102 - argparse hook
        raise CLIError(f"{message} (see {self.prog} --help)", prog=self.prog)


def debug_requested(argv: list) -> bool:
    """True for ``SANDBOX_DEBUG=1`` or a ``--debug`` argument (removed from ``argv``)."""
    found = False
    while "--debug" in argv[: argv.index("--") if "--" in argv else len(argv)]:
        argv.remove("--debug")
        found = True
    return found or os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (file errors as 'reason: path')."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    elif isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    elif isinstance(exc, MemoryError) and not str(exc):
        text = "out of memory; try smaller images, a smaller batch or a smaller model"
    else:
        text = str(exc) or type(exc).__name__
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def notice(prog: str, text: str) -> None:
    """Print ``<prog>: notice: <text>`` on stderr (something done for the user, not an
    error: a 0/255 mask read as 0/1, a thread count capped ...)."""
    print(f"{prog}: notice: {one_line_text(text)}", file=sys.stderr)


def one_line_text(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


@contextlib.contextmanager
def notices_as_lines(prog: str):
    """Library warnings whose category is named ``...Notice`` print as one notice line."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__name__.endswith("Notice"):
            notice(prog, str(message))
        else:
            original(message, category, filename, lineno, file, line)

    from ..data import DataNotice
    from ..train._run_folder import RunFolderNotice

    with warnings.catch_warnings():
        warnings.showwarning = show
        for category in (DataNotice, RunFolderNotice):  # every time, not once per place
            warnings.simplefilter("always", category)
        yield


def run_command(prog: str, func, debug: bool = False, exiting: bool = False) -> int:
    """Call ``func()`` and map every way it can end to an exit status (see module doc).

    ``exiting``: the process ends with this status (the console script), so once a
    Ctrl-C has stopped the command, further ones are ignored."""
    try:
        with notices_as_lines(prog):
            status = int(func() or 0)
            if exiting and status == EXIT_INTERRUPTED:  # stopped by a Ctrl-C: ignore the
                _ignore_interrupts()  # next ones, here inside the try: none falls between
            return status
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt as exc:
        if exiting:
            _ignore_interrupts()
        if debug:
            traceback.print_exc()
        detail = one_line(exc) if str(exc) else "interrupted"
        print(f"{prog}: {detail}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except CLIError as exc:
        if debug:
            traceback.print_exc()
        print(f"{exc.prog or prog}: error: {one_line(exc)}", file=sys.stderr)
        return exc.status
    except USER_ERRORS as exc:
        if debug:
            traceback.print_exc()
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(
            f"{prog}: internal error: {type(exc).__name__}: {one_line(exc)} (a bug: please "
            f"report it with the output of the same command run with --debug)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _ignore_interrupts() -> None:
    """From now on Ctrl-C does nothing: the user asked to stop and we are stopping (a
    second Ctrl-C, once the trainer has put Python's handler back, would otherwise raise
    outside every handler and print a traceback).  Only on the main thread, where
    signal handlers can be set."""
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_process(status: int) -> None:
    """End the process with ``status`` (the console script's and ``python -m sandbox``'s
    last step).  After an interrupt the user asked to stop and we are stopping: a
    further Ctrl-C during the interpreter's teardown, where Python's own handler is
    gone, would otherwise kill the process by the signal instead of exiting with 130."""
    if status == EXIT_INTERRUPTED:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(status)
