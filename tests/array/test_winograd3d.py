"""3x3x3 convolutions by 2-D Winograd summed over depth (``sandbox.array.conv._winograd3d``).

Compared with the vol2col + GEMM path (float64, where both are exact to rounding)
and in float32 within the Winograd tolerance, for every padding the path accepts,
both tile sizes, forward, input and weight gradients and bias; results must not
depend on the thread count.
"""

import numpy as np
import pytest

import sandbox
from sandbox.array import conv as conv_3d
from sandbox.array.conv import _winograd3d, tuned

FORCE = dict(winograd_min_channels=1, winograd_min_channels_weight_grad=1,
             winograd_min_pixels=1, winograd_min_pixels_input_grad=1,
             winograd_min_pixels_weight_grad=1)


def _data(rng, n, c, o, size, dtype):
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = (rng.standard_normal((o, c, 3, 3, 3)) / np.sqrt(27 * c)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b


def _run(x, w, b, pad):
    y = conv_3d.conv3d(x, w, b, 1, pad)
    gy = np.random.default_rng(7).standard_normal(y.shape).astype(x.dtype)
    return (y, *conv_3d.conv3d_backward(gy, x, w, 1, pad))


@pytest.mark.parametrize("f4", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pad,size", [
    ((1, 1, 1), (5, 6, 7)),
    ((0, 0, 0), (4, 5, 6)),
    ((2, 1, 0), (3, 7, 5)),
    ((1, 2, 2), (1, 4, 4)),   # one plane: only the centre depth tap
    ((0, 1, 2), (9, 3, 9)),
])
def test_matches_vol2col(pad, size, dtype, f4, rng, monkeypatch, transforms):
    calls = []
    for name in ("conv3x3x3", "conv3x3x3_weight_grad"):
        original = getattr(_winograd3d, name)
        monkeypatch.setattr(_winograd3d, name,
                            lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k))
    x, w, b = _data(rng, 2, 3, 4, size, dtype)
    with tuned(**FORCE, winograd_f4_min_pixels=f4, winograd_f4_min_pixels_weight_grad=f4,
               winograd_target_tiles=8):
        got = _run(x, w, b, pad)
    assert len(calls) == 3, "the Winograd path was not taken for forward, dx and dw"
    with tuned(winograd=False):
        want = _run(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), pad)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    for g, e in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, **tol)


def test_unet_layer_shapes_take_the_path_by_default(rng, monkeypatch):
    calls = []
    original = _winograd3d.conv3x3x3
    monkeypatch.setattr(_winograd3d, "conv3x3x3",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    x, w, b = _data(rng, 1, 16, 16, (8, 8, 8), np.float32)
    conv_3d.conv3d(x, w, b, 1, 1)
    assert calls
    x, w, b = _data(rng, 1, 4, 16, (8, 8, 8), np.float32)
    conv_3d.conv3d(x, w, b, 1, 1)  # 4 input channels: vol2col
    assert len(calls) == 1


def test_bitwise_equal_across_thread_counts(rng):
    x, w, b = _data(rng, 3, 16, 16, (6, 10, 10), np.float32)
    results = []
    with tuned(winograd_target_tiles=16):
        for nt in (1, 2, 3):
            with sandbox.num_threads(nt):
                results.append(_run(x, w, b, (1, 1, 1)))
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            assert np.array_equal(a, c)
