"""Files a command writes: never replace what the user did not name, fail before working.

Used by ``sandbox predict``, ``sandbox export`` and ``sandbox bench --save``: every
output is checked before any work starts (the extension, that it is not an input,
that an existing file is replaced only with ``--overwrite``, that its folder exists
and can be written), so a long run never ends in an error about where to put it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == Path(b).resolve()
    except OSError:  # pragma: no cover - a path that cannot be resolved
        return False


def check_writable_folder(folder, flag: str, create: bool = False) -> None:
    """Raise ``OSError``/``ValueError`` naming ``flag`` unless a file can be created in
    ``folder`` (tried for real: permission bits do not stop root, a read-only mount
    does).  With ``create``, a missing folder is fine when its nearest existing parent
    is writable (the folder is made later)."""
    folder = Path(folder)
    probe = folder
    if not folder.is_dir():
        if folder.exists():
            raise NotADirectoryError(f"{flag}: {folder} is not a folder")
        if not create:
            raise FileNotFoundError(f"{flag}: the folder {folder} does not exist")
        probe = next((p for p in folder.parents if p.exists()), Path("."))
        if not probe.is_dir():
            raise NotADirectoryError(f"{flag}: {probe} is a file, not a folder")
    try:
        fd, name = tempfile.mkstemp(prefix=".sandbox-write-test-", dir=probe)
    except OSError as exc:
        raise PermissionError(
            f"{flag}: cannot write in the folder {probe} ({exc.strerror or exc}); choose "
            "another place"
        ) from None
    os.close(fd)
    os.unlink(name)


def check_new_file(path, flag: str, inputs=(), overwrite: bool = False,
                   suffixes: tuple | None = None, what: str = "output") -> Path:
    """Check an output file named by ``flag`` before any work (see the module doc).

    Parameters
    ----------
    path : str or Path
    flag : str
        The option naming the file (for messages), e.g. ``--out``.
    inputs : sequence of paths
        Files the command reads: never an output, not even with ``overwrite``.
    overwrite : bool
        Allow replacing an existing file (``--overwrite``).
    suffixes : tuple of str, optional
        Allowed extensions (lower case, with the dot).
    what : str
        What the file is, for messages.
    """
    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise ValueError(
            f"{flag} {path}: {what} files take the extension {' or '.join(suffixes)}, "
            f"not {path.suffix or 'none'}"
        )
    for source in inputs:
        if source is not None and _same(path, source):
            raise ValueError(f"{flag} {path} is the input file itself; choose another {flag}")
    if path.is_dir():
        raise IsADirectoryError(f"{flag} {path} is a folder; give a file name")
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{flag} {path} already exists; pass --overwrite to replace it, or choose "
            f"another {flag}"
        )
    check_writable_folder(path.parent, flag)
    return path
