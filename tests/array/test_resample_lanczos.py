"""lanczos3 without antialias (burn's definition) coincides with PyTorch's antialiased
``lanczos`` when upsampling: the kernel is not stretched and both skip out-of-range taps
and renormalise (docs/design.md §2)."""

import numpy as np
import pytest

from sandbox.array.resample import resize, resize_adjoint


@pytest.mark.parametrize(
    ("in_hw", "out_hw"), [((5, 7), (11, 16)), ((4, 4), (8, 8)), ((6, 3), (6, 10)), ((1, 5), (3, 9))]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_upsampling_lanczos3_equals_torch_lanczos(torch, in_hw, out_hw, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, *in_hw)).astype(dtype)
    g = rng.standard_normal((2, 3, *out_hw)).astype(dtype)
    ours = resize(x, size=out_hw, mode="lanczos3")
    ours_gx = resize_adjoint(g, in_hw, size=out_hw, mode="lanczos3")
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = torch.nn.functional.interpolate(tx, size=out_hw, mode="lanczos", antialias=True)
    ty.backward(torch.from_numpy(g))
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours, ty.detach().numpy(), **tol)
    np.testing.assert_allclose(ours_gx, tx.grad.numpy(), **tol)


def test_downsampling_lanczos3_is_not_stretched():
    # Without antialias, downsampling keeps 6 taps per output (aliasing, like burn);
    # with antialias the kernel widens to 6 * in/out taps.
    x = np.zeros((1, 1, 1, 40))
    x[..., 20] = 1.0
    plain = resize(x, size=(1, 10), mode="lanczos3")
    smooth = resize(x, size=(1, 10), mode="lanczos3", antialias=True)
    assert np.count_nonzero(np.abs(plain) > 1e-12) < np.count_nonzero(np.abs(smooth) > 1e-12)
