"""An older build of one of the project's extension modules, loaded beside the one in
use, so that a kernel change is timed call by call in one process (the in-process A/B
scripts of ``benchmarks/``)."""

from __future__ import annotations

import importlib.util
import os


def load_extension(path: str, name: str | None = None):
    """The extension module in the file ``path`` (a build of a ``sandbox._C`` module,
    e.g. an older commit's), loaded under its own name and not registered in
    ``sys.modules``: the module in use stays as it is.

    Parameters
    ----------
    path : str
        The ``.so`` (or ``.pyd``) file.
    name : str, optional
        The module's name, whose init function the file exports (``_norm``); by default
        the file's name up to its first dot (``_norm.cpython-311-x86_64-linux-gnu.so``),
        which a renamed copy of a build does not keep.

    Returns
    -------
    module
    """
    name = name or os.path.basename(path).split(".", 1)[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path!r} is not an extension module file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
