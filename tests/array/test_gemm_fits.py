"""Which operands the project's GEMM kernels take (sandbox.array._gemm._fits)."""

from __future__ import annotations

import numpy as np

from sandbox.array._gemm import _fits


def test_fits_takes_float32_with_whole_element_strides_and_a_unit_column_output():
    a = np.ones((4, 8, 16), np.float32)
    b = np.ones((4, 16, 8), np.float32)
    out = np.empty((4, 8, 8), np.float32)
    assert _fits(a, b, out)
    assert _fits(a[:, ::-1], b.transpose(0, 2, 1)[:, :, ::-2], out)  # negative, strided views
    assert _fits(a, b, out[:, :, :1][:, :, ::1])
    assert not _fits(a.astype(np.float64), b, out)
    assert not _fits(a, b, out[:, :, ::2])  # the output's columns not adjacent
    raw = np.zeros(4 * 8 * 16 * 4 + 2, np.uint8)[2:].view(np.uint8)
    odd = np.ndarray((8, 16), np.float32, raw, strides=(66, 4))  # a row stride of 66 bytes
    assert not _fits(odd, b[0], out[0])
    assert _fits(np.ones((), np.float32), np.ones((), np.float32), np.ones(1, np.float32))
