"""sandbox.array.concat: the threaded concatenation is np.concatenate, byte for byte."""

import numpy as np
import pytest

import sandbox
from sandbox.array.concat import concatenate


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_equals_numpy_for_every_axis_and_dtype(dtype, axis):
    rng = np.random.default_rng(axis)
    shape = [4, 3, 64, 65]
    parts = []
    for k in (2, 5):  # large enough for the threaded copy
        s = list(shape)
        s[axis] = k
        parts.append((rng.standard_normal(s) * 10).astype(dtype))
    want = np.concatenate(parts, axis=axis)
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got = concatenate(parts, axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_non_contiguous_mixed_and_bad_inputs_take_numpy():
    a = np.arange(2 * 8 * 300 * 300, dtype=np.float32).reshape(2, 8, 300, 300)
    b = a[:, :, ::2]  # not contiguous
    np.testing.assert_array_equal(concatenate([b, b], 1), np.concatenate([b, b], 1))
    mixed = [a[:, :1], a[:, :1].astype(np.float64)]
    np.testing.assert_array_equal(concatenate(mixed, 1), np.concatenate(mixed, 1))
    with pytest.raises(ValueError):
        concatenate([a, a[:, :, :5]], 1)
