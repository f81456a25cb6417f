"""The convolutions' bias add (conv._chunks.add_bias): numpy's broadcast add, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox.array.conv._chunks import add_bias


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 4, 6), (3, 2, 2, 3, 4)])
@pytest.mark.parametrize("threads", [None, 1, 2])
def test_add_bias_is_the_broadcast_add(dtype, shape, threads):
    rng = np.random.default_rng(len(shape))
    y = rng.standard_normal(shape).astype(dtype)
    y.flat[:3] = (-0.0, np.inf, np.nan)
    bias = rng.standard_normal(shape[1]).astype(dtype)
    bias[0] = -0.0
    expected = y + bias.reshape(-1, *(1,) * (y.ndim - 2))
    add_bias(y, bias, threads)
    np.testing.assert_array_equal(y.view(np.uint8), expected.view(np.uint8))


def test_add_bias_takes_views_and_other_dtypes_through_numpy():
    y = np.zeros((2, 3, 4, 6), np.float32)[:, :, :, ::2]  # not contiguous
    add_bias(y, np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(y[1, :, 0, 0], [0, 1, 2])
    z = np.zeros((2, 3, 4), np.float32)
    add_bias(z, np.arange(3, dtype=np.float64))  # another dtype: numpy's casting rules
    np.testing.assert_array_equal(z[0, :, 0], [0, 1, 2])
    add_bias(z, None)  # no bias: nothing
    np.testing.assert_array_equal(z[0, :, 0], [0, 1, 2])
