"""Resizing arrays that are not C-contiguous: a channel slice (each sample contiguous, as a
concatenation's backward hands its inputs) runs sample by sample without a copy, anything
else is copied first; both give the contiguous array's bits."""

import numpy as np
import pytest

import sandbox
from sandbox.array import resample
from sandbox.array.resample import dispatch

CASES = [
    ("bilinear", (64, 64), (128, 128)),
    ("bicubic", (40, 24), (80, 48)),
    ("nearest", (32, 32), (64, 64)),
    ("nearest-exact", (30, 20), (45, 31)),
    ("area", (64, 64), (32, 32)),
    ("trilinear", (12, 16, 16), (24, 32, 32)),
    ("bilinear", (60, 40), (30, 20)),  # a downsampling: one tap per output (single-tap)
]


@pytest.mark.parametrize("mode, small, large", CASES)
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_channel_slices_give_the_contiguous_bits(mode, small, large, adjoint, threads,
                                                monkeypatch):
    monkeypatch.setattr(resample, "_SAMPLEWISE_MIN_BYTES", 0)  # every slice sample-wise
    rng = np.random.default_rng(len(mode) + len(small))
    spatial = large if adjoint else small
    whole = rng.standard_normal((4, 40, *spatial)).astype(np.float32)
    part = whole[:, 8:32]  # 24 channels of 40: samples contiguous, the array not
    assert not part.flags.c_contiguous and dispatch.samples_contiguous(part)
    align = None if mode.startswith(("nearest", "area")) else False
    with sandbox.num_threads(threads):
        if adjoint:
            got = resample.resize_adjoint(part, small, size=large, mode=mode,
                                          align_corners=align)
            want = resample.resize_adjoint(np.ascontiguousarray(part), small, size=large,
                                           mode=mode, align_corners=align)
        else:
            got = resample.resize(part, size=large, mode=mode, align_corners=align)
            want = resample.resize(np.ascontiguousarray(part), size=large, mode=mode,
                                   align_corners=align)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_other_layouts_are_copied_first():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 6, 40, 40)).astype(np.float32)
    for view in (x[:, :, ::2], x[:, ::2], x.transpose(1, 0, 2, 3), x[::-1], x[:, 1:5, :, 1:]):
        got = resample.resize(view, size=(50, 30), mode="bilinear", align_corners=False)
        want = resample.resize(np.ascontiguousarray(view), size=(50, 30), mode="bilinear",
                               align_corners=False)
        np.testing.assert_array_equal(got, want)


def test_samples_contiguous_reads_the_strides():
    x = np.zeros((2, 8, 4, 4), np.float32)
    assert dispatch.samples_contiguous(x) and dispatch.samples_contiguous(x[:, 2:5])
    assert not dispatch.samples_contiguous(x[:, :, 1:])
    assert not dispatch.samples_contiguous(x[:, ::2])
    assert not dispatch.samples_contiguous(x[::-1])
    assert not dispatch.samples_contiguous(x[:0])
    assert not dispatch.samples_contiguous(x[:, :, :1, :])  # rows of a plane: gaps
    y = np.zeros((2, 8, 1, 4), np.float32)[:, 2:5]  # a size-1 axis: its stride is moot
    assert dispatch.samples_contiguous(np.lib.stride_tricks.as_strided(
        y, strides=(y.strides[0], y.strides[1], 999, y.strides[3])))
