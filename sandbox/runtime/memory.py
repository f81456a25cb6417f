"""A memory limit for resampling: refuse, before allocating, a size nobody can afford.

``resize(x, size=(10**9, 10**9))`` would otherwise build per-axis weight tables and
an output of 10**18 elements, taking minutes and most of the machine's memory
before failing.  :func:`check_memory` estimates a lower bound of what a request
needs (the output array and the weight tables) and raises
:class:`ResampleSizeError` when it exceeds the limit.

The limit is, in order of precedence: the value given to :func:`set_memory_limit`;
the environment variable ``SANDBOX_MAX_MEMORY`` (bytes, or a number with a K/M/G/T
suffix, e.g. ``64G``); else ``DEFAULT_FRACTION`` of the machine's physical memory.
"""

from __future__ import annotations

import functools
import math
import os
import re

ENV_VAR = "SANDBOX_MAX_MEMORY"
DEFAULT_FRACTION = 0.5
_FALLBACK_TOTAL = 8 << 30  # when the machine's memory cannot be read
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# Bytes per output index of one axis's weight table (start, tap count, >= 1 weight).
_TABLE_BYTES_PER_INDEX = 24

_explicit_limit: int | None = None


class ResampleSizeError(MemoryError, ValueError):
    """A resampling request that would need more memory than the limit allows."""


@functools.lru_cache(maxsize=1)
def total_memory() -> int | None:
    """Physical memory of this machine in bytes (None when it cannot be read); read once
    (every kernel wrapper's size check asks)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return None


def parse_size(text: str, name: str = ENV_VAR) -> int:
    """``"123"``, ``"512M"``, ``"64G"``, ``"1.5T"`` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)i?B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ValueError(
            f"{name} must be a number of bytes, optionally with a K/M/G/T suffix "
            f"(e.g. 64G), got {text!r}"
        )
    value = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if value < 1:
        raise ValueError(f"{name} must be at least 1 byte, got {text!r}")
    return int(value)


# the variable's key as CPython's os.environ stores it (bytes on POSIX)
_ENV_KEY = os.environ.encodekey(ENV_VAR) if hasattr(os.environ, "encodekey") else ENV_VAR


def _env_text() -> str:
    """``SANDBOX_MAX_MEMORY`` as set now, or ``""``.

    Every resize and grid-sampling call reads it (the limit may change between calls).
    ``os.environ.get`` of an unset variable raises and catches a KeyError inside the
    mapping: 2.1 us a call on the AMD EPYC family 23 machine, more than the grid-sampling
    wrapper's own checks.  CPython's ``os.environ`` keeps its encoded items in a dict,
    which a lookup reads without raising; other mappings take ``get``.
    """
    data = getattr(os.environ, "_data", None)
    if type(data) is dict:
        raw = data.get(_ENV_KEY)
        return "" if raw is None else os.environ.decodevalue(raw)
    return os.environ.get(ENV_VAR, "")  # pragma: no cover - not CPython's os.environ


def memory_limit() -> int:
    """The limit in bytes a single resampling request may need (see the module doc)."""
    if _explicit_limit is not None:
        return _explicit_limit
    env = _env_text().strip()
    if env:
        return parse_size(env)
    return int(DEFAULT_FRACTION * (total_memory() or _FALLBACK_TOTAL))


def set_memory_limit(limit) -> int | None:
    """Set the resampling memory limit; return the previous explicit setting.

    Parameters
    ----------
    limit : int, str or None
        Bytes (int), a size such as ``"64G"``, or None to go back to the default
        (``SANDBOX_MAX_MEMORY``, else half the machine's memory).
    """
    global _explicit_limit
    previous = _explicit_limit
    if limit is None:
        _explicit_limit = None
    elif isinstance(limit, str):
        _explicit_limit = parse_size(limit, "limit")
    elif isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1:
        _explicit_limit = int(limit)
    else:
        raise ValueError(f"limit must be a positive number of bytes, a size like '64G' or None, "
                         f"got {limit!r}")
    return previous


def format_bytes(n: float) -> str:
    """``3.2 GB``-style text (powers of 1024), with an exponent for absurd sizes."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            break
        n /= 1024
    return f"{n:.3g} {unit}" if n < 1e6 else f"{n:.2e} {unit}"


def needed_bytes(in_sizes, out_sizes, lead: int = 1, itemsize: int = 4) -> int:
    """Lower bound of the bytes a resize (or its adjoint) between these sizes allocates.

    The larger of the input and output arrays (``lead`` = batch x channels elements
    per spatial point) plus one weight table per axis for both directions.
    """
    points = max(math.prod(in_sizes), math.prod(out_sizes))
    tables = sum(_TABLE_BYTES_PER_INDEX * (n + m) for n, m in zip(in_sizes, out_sizes,
                                                                    strict=True))
    return lead * itemsize * points + tables


def check_memory(in_sizes, out_sizes, lead: int = 1, itemsize: int = 4) -> None:
    """Raise :class:`ResampleSizeError` when the request needs more than :func:`memory_limit`."""
    needed = needed_bytes(in_sizes, out_sizes, lead, itemsize)
    limit = memory_limit()
    if needed <= limit:
        return
    if _explicit_limit is not None:
        source = "set by sandbox.set_memory_limit"
    elif _env_text().strip():
        source = f"from {ENV_VAR}"
    else:
        total = total_memory()
        machine = f"this machine's {format_bytes(total)}" if total else (
            f"an assumed {format_bytes(_FALLBACK_TOTAL)}")
        source = f"{DEFAULT_FRACTION:.0%} of {machine}"
    raise ResampleSizeError(
        f"resampling from spatial size {tuple(in_sizes)} to {tuple(out_sizes)} would need at "
        f"least {format_bytes(needed)}, more than the memory limit of {format_bytes(limit)} "
        f"({source}); check size/scale_factor, or if this size is intended raise the limit "
        f"with sandbox.set_memory_limit('64G') or the environment variable {ENV_VAR}=64G"
    )
