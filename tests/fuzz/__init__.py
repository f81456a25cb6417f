"""Differential fuzzing against PyTorch: small random graphs, compared in float64.

``test_ops.py`` covers ``sandbox.ops`` (elementwise graphs with broadcasting and
fan-out, reductions with ties, softmax at large magnitudes and infinities,
indexing and setitem, shape ops, matmul, hooks with retain_graph);
``test_functional.py`` covers ``sandbox.functional`` (losses with their options,
interpolate, conv, pooling, norms; second derivatives throughout).

Hypothesis draws small computations over the ops and options of ``sandbox.ops`` and
``sandbox.functional`` (0-d and empty tensors included); :func:`tests.torch_parity.compare`
runs each in both libraries and compares the values, the first derivatives and,
where marked, the second derivatives, to 1e-9.

CI runs a few examples per family, derandomized (the same examples every run, in
seconds).  A long, random run::

    SANDBOX_FUZZ_EXAMPLES=5000 python -m pytest tests/fuzz -q

Where we deliberately differ from PyTorch, the generators avoid the case, and the
reason is in :data:`DELIBERATE_DIFFERENCES` below (the one place that lists them).
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

DELIBERATE_DIFFERENCES = {
    "negative slice steps": "x[::-1] follows numpy; torch has no negative steps, so the "
    "indexing generator draws positive steps only.",
    "advanced indexing": "indexing is numpy's (getitem hands the index to numpy); torch "
    "agrees on basic indices, one int array and one bool mask, but not on every "
    "combination of several advanced indices, so the generator draws only those forms.",
    "repeated indices in setitem": "x[idx] = v with a repeated index keeps one write in "
    "both libraries, but which one (and so which element of v gets the gradient) is "
    "unspecified in torch: the setitem generator draws unique indices.",
    "softplus at beta * x == threshold": "torch's first derivative there is the sigmoid "
    "but its second derivative is 0; ours is the sigmoid's for both: beta and threshold "
    "are chosen so that no drawn value lands on that point.",
    "pow at exponent 0": "torch zeroes d(a**b)/da where b == 0, so its mixed second "
    "derivative d2/da db is 0 there (torch's own gradgradcheck fails at that point); ours "
    "is exact (tests/fuzz/test_regressions.py checks it with gradgradcheck). The graph "
    "generator keeps exponents >= 0.1.",
    "overflow": "once a value overflows to inf, whether a derivative comes out inf or "
    "NaN depends on the order of the operations in each backward formula: the "
    "elementwise-graph generator rejects graphs whose values are not finite.",
    "antialias with output width 1": "PyTorch 2.13's antialiased resize is wrong when the "
    "output width is 1 and the height is > 1 (see tests/array/test_resample_torch.py): not drawn.",
}

# Bugs found by this fuzzer that live in code another change owns: the generators skip
# them (so a long run can find others), and a strict-xfail test pins each one.
KNOWN_BUGS: dict[str, str] = {}  # none open (the last, a 1x1 transposed conv with
# output_padding, is fixed and pinned in tests/fuzz/test_regressions.py)

_LONG = int(os.environ.get("SANDBOX_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=_LONG or 12,
    deadline=None,
    derandomize=not _LONG,  # CI: the same examples every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def th():
    import torch

    return torch


# ------------------------------------------------------------------------------ values
def draw_values(data, shape, kind="normal"):
    """A float64 array of ``shape``; ``kind`` shapes the values (ties, signs, domain)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    if kind == "ties":  # few distinct values: ties in max/min, zeros for relu/abs
        return rng.integers(-2, 3, size=shape) * 0.5
    if kind == "positive":
        return rng.uniform(0.3, 2.0, shape)
    return rng.standard_normal(shape)


def draw_shape(data, min_dims=0, max_dims=3, min_side=0, max_side=3):
    n = data.draw(st.integers(min_dims, max_dims), label="ndim")
    return tuple(data.draw(st.integers(min_side, max_side), label="side") for _ in range(n))


def draw_broadcast_partner(data, shape):
    """A shape that broadcasts with ``shape``: leading dims dropped, some dims set to 1."""
    keep = data.draw(st.integers(0, len(shape)), label="partner ndim")
    tail = shape[len(shape) - keep :]
    return tuple(1 if data.draw(st.booleans(), label="one") else n for n in tail)


def to_torch_index(index):
    """A numpy index with its arrays as torch tensors."""
    torch = th()
    items = index if isinstance(index, tuple) else (index,)
    out = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in items)
    return out if isinstance(index, tuple) else out[0]
