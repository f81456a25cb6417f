"""Every variable a parallel loop writes through its address is private to each thread;
and in a ``with parallel()`` block, no loop but a ``prange`` follows a ``prange``.

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


# -- what orders the loops of a parallel() block ------------------------------------------
#
# Cython writes a ``prange`` inside ``with parallel()`` as ``omp for nowait``: no barrier at
# its end.  What makes the next ``prange`` see everything the previous one wrote is the
# barrier GCC (and clang) put at the start of a worksharing loop whose variable is both
# firstprivate and lastprivate, as Cython declares every ``prange`` variable.  A loop that
# is not a ``prange`` (a ``while`` over work_share.h's pieces, a plain ``for``) gets none:
# after a ``prange`` it may read what another thread has not written yet.  Measured when
# batch norm's plane loops were tried as work_share.h pieces (docs/benchmarks.md,
# nineteenth session): wrong values in 1-18 planes of 30 at 2-3 threads.

_LOOP = re.compile(r"^\s*(for|while)\b")


def loops_after_prange(text: str):
    """Line numbers of loops, other than a ``prange`` and other than those inside a
    ``prange``'s body, that come after a ``prange`` in the same ``with ... parallel(...)``
    block (at any depth: under an ``if`` too)."""
    lines = text.splitlines()
    found = []
    for first, last in _parallel_blocks(lines):
        if "parallel(" not in lines[first] or "prange(" in lines[first]:
            continue
        seen_prange, inside = False, None  # inside: the indent of the prange being read
        for k in range(first + 1, last + 1):
            code = lines[k].split("#")[0]
            if not code.strip():
                continue
            if inside is not None and _indent(code) > inside:
                continue  # a prange's own body
            inside = None
            if "prange(" in code and _LOOP.match(code):
                seen_prange, inside = True, _indent(code)
            elif seen_prange and _LOOP.match(code):
                found.append(k + 1)
    return found


def test_the_scan_finds_a_loop_after_a_prange_in_one_parallel_block():
    block = """
with nogil, parallel(num_threads=n):
    for c in prange(m, schedule="static"):
        mu[c] = total(c)
    i = 0
    while i < end:
        use(mu[i])
        i = i + 1
"""
    assert loops_after_prange(block) == [6]
    as_prange = block.replace("    while i < end:", "    for i in prange(end):")
    assert loops_after_prange(as_prange) == []
    nested = block.replace("    while i < end:", "    if flag:\n        while i < end:")
    assert loops_after_prange(nested) == [7]
    inner = """
with nogil, parallel(num_threads=n):
    for c in prange(m, schedule="static"):
        for j in range(k):
            mu[c] += x[c, j]
"""
    assert loops_after_prange(inner) == []


def test_no_parallel_block_runs_a_plain_loop_after_a_prange():
    problems = [f"{path.relative_to(ROOT)}:{line}"
                for path in SOURCES for line in loops_after_prange(path.read_text())]
    assert not problems, ("a loop that is not a prange after a prange in one parallel() "
                          "block has no barrier before it:\n" + "\n".join(problems))
