"""Every variable a parallel loop writes through its address is private to each thread.

Cython makes a variable private to each thread of a ``prange`` loop (or a ``parallel()``
block) when the body assigns it; a variable the body only passes by address
(``kernel(..., &mean)``) stays shared, so two threads write the same memory and each may
read the other's value.  Layer norm's forward once passed ``&mu`` so, and rows got
another row's mean now and then at 2 threads (and the shared line cost its scaling).
This scans the kernel sources: a variable whose address a parallel body takes must be
assigned in that body (``v = 0  # private`` is the idiom).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.joinpath("pyx").rglob("*.pyx"), *ROOT.joinpath("pyx").rglob("*.pxi")])

_OPENS = re.compile(r"\b(prange|parallel)\s*\(")
_ADDRESS = re.compile(r"&\s*([A-Za-z_]\w*)\s*(?=[,)])")  # &name, not &name[...] or &a.b


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parallel_blocks(lines):
    """(first, last) line indices of each outermost prange loop or parallel() block."""
    blocks, i = [], 0
    while i < len(lines):
        line = lines[i]
        if _OPENS.search(line) and not line.lstrip().startswith("#"):
            base, j = _indent(line), i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                j += 1
            blocks.append((i, j - 1))
            i = j
        else:
            i += 1
    return blocks


def shared_addresses(text: str):
    """``(line number, name)`` of each variable a parallel body passes by address without
    assigning it anywhere in that body."""
    lines = text.splitlines()
    found = []
    for first, last in _parallel_blocks(lines):
        body = "\n".join(line.split("#")[0] for line in lines[first:last + 1])
        for k in range(first, last + 1):
            for name in _ADDRESS.findall(lines[k].split("#")[0]):
                if not re.search(rf"^\s*{name}\s*(=|\+=|-=)(?!=)", body, re.M):
                    found.append((k + 1, name))
    return found


def test_the_scan_finds_a_shared_address_and_passes_a_private_one():
    shared = """
with nogil:
    for r in prange(rows, num_threads=t):
        stats(&x[r, 0], n, &mu, &var)
        var = var / n
        m = <float> mu
"""
    assert shared_addresses(shared) == [(4, "mu")]
    private = shared.replace("        stats(", "        mu = 0  # private\n        stats(")
    assert shared_addresses(private) == []


def test_no_parallel_body_shares_a_variable_it_writes_through_its_address():
    assert len(SOURCES) >= 12
    problems = [f"{path.relative_to(ROOT)}:{line}: &{name}"
                for path in SOURCES for line, name in shared_addresses(path.read_text())]
    assert not problems, "assign these in the parallel body so each thread has its own:\n" \
        + "\n".join(problems)
