"""conv3d / conv_transpose3d: float64 reference, threads, torch parity, gradients, validation."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox._C import _vol2col as kernels
from sandbox.array import conv
from sandbox.array._validate import triple
from sandbox.array.conv import _vol2col as loops
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

# (N, C, (D, H, W), O, kernel, stride, padding, dilation, groups)
CASES = [
    (2, 3, (5, 6, 7), 4, (3, 3, 3), 1, 1, 1, 1),
    (2, 4, (6, 5, 7), 6, (3, 2, 3), (1, 2, 1), (1, 0, 2), (1, 1, 2), 2),
    (1, 6, (4, 7, 5), 6, (2, 3, 2), (2, 1, 2), (0, 1, 1), (2, 1, 1), 3),
    (3, 4, (3, 4, 5), 8, (1, 1, 1), 1, 0, 1, 1),  # pointwise
    (2, 4, (5, 5, 5), 4, (1, 1, 1), 2, 1, 1, 2),  # 1x1x1 with stride and padding
    (2, 2, (3, 3, 3), 3, (4, 4, 4), 1, 2, 1, 1),  # kernel larger than the input, padded
    (9, 4, (2, 2, 3), 5, (3, 3, 3), 1, 1, 1, 1),  # several samples per chunk
]

# (N, C_in, (D, H, W), C_out, kernel, stride, padding, output_padding, groups, dilation)
TCASES = [
    (2, 4, (3, 4, 3), 6, (2, 2, 2), 2, 0, 0, 1, 1),  # the UNet's upsampling
    (2, 4, (3, 4, 5), 6, (3, 2, 3), (2, 2, 1), (1, 0, 1), (1, 0, 0), 2, (1, 2, 1)),
    (1, 3, (4, 3, 3), 3, (3, 3, 3), 2, 1, 1, 3, 1),
    (2, 2, (2, 3, 2), 4, (1, 1, 1), 1, 0, 0, 1, 1),  # pointwise
    (1, 2, (3, 3, 3), 2, (2, 2, 2), 1, 0, (1, 0, 1), 1, 2),  # output_padding < dilation
]


def _ids(case):
    return "-".join(str(v).replace(" ", "") for v in case)


def ref_conv3d(x, w, b, stride, padding, dilation, groups):
    """Float64 reference from the definition: a sum over kernel taps of strided slices."""
    s, p, d = triple(stride, "s", 1), triple(padding, "p", 0), triple(dilation, "d", 1)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *[(pi, pi) for pi in p]))
    y = np.zeros((n, o, *out))
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        for kz in range(k[0]):
            for ki in range(k[1]):
                for kj in range(k[2]):
                    patch = xg[:, :,
                               kz * d[0]:kz * d[0] + s[0] * (out[0] - 1) + 1:s[0],
                               ki * d[1]:ki * d[1] + s[1] * (out[1] - 1) + 1:s[1],
                               kj * d[2]:kj * d[2] + s[2] * (out[2] - 1) + 1:s[2]]
                    y[:, g * og:(g + 1) * og] += np.einsum(
                        "ncdhw,oc->nodhw", patch, w[g * og:(g + 1) * og, :, kz, ki, kj])
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y


def ref_conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Float64 reference: scatter every tap into a padded output, then crop."""
    s, p, d = triple(stride, "s", 1), triple(padding, "p", 0), triple(dilation, "d", 1)
    op = triple(output_padding, "op", 0)
    n, c = x.shape[:2]
    og = w.shape[1]
    k = w.shape[2:]
    size = x.shape[2:]
    out = [(size[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
    full = np.zeros((n, og * groups, *[out[i] + 2 * p[i] for i in range(3)]))
    cg = c // groups
    for g in range(groups):
        for kz in range(k[0]):
            for ki in range(k[1]):
                for kj in range(k[2]):
                    full[:, g * og:(g + 1) * og,
                         kz * d[0]:kz * d[0] + s[0] * (size[0] - 1) + 1:s[0],
                         ki * d[1]:ki * d[1] + s[1] * (size[1] - 1) + 1:s[1],
                         kj * d[2]:kj * d[2] + s[2] * (size[2] - 1) + 1:s[2]] += np.einsum(
                        "ncdhw,co->nodhw", x[:, g * cg:(g + 1) * cg],
                        w[g * cg:(g + 1) * cg, :, kz, ki, kj])
    y = full[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1], p[2]:p[2] + out[2]]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1)
    return y


def _data(case, dtype, rng):
    n, c, size, o, k, s, p, d, g = case
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((o, c // g, *k)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b, s, p, d, g


def _tdata(case, dtype, rng):
    n, c, size, o, k, s, p, op, g, d = case
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((c, o // g, *k)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b, s, p, op, g, d


def _vjp(fn, args, gy, eps_args):
    """Reference gradients of <fn(args), gy> by the linearity of fn in each of ``eps_args``."""
    grads = []
    for i in eps_args:
        arr = args[i]
        flat = np.zeros(arr.size)
        for j in range(arr.size):
            e = np.zeros(arr.size)
            e[j] = 1.0
            probe = list(args)
            probe[i] = e.reshape(arr.shape)
            if len(probe) > 2:
                probe[2] = None  # bias does not depend on x or w
            flat[j] = np.sum(fn(*probe) * gy)
        grads.append(flat.reshape(arr.shape))
    return grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv3d_matches_reference(case, dtype, rng):
    x, w, b, s, p, d, g = _data(case, dtype, rng)
    y = conv.conv3d(x, w, b, s, p, d, g)
    ref = ref_conv3d(x, w, b, s, p, d, g)
    assert y.dtype == dtype and y.shape == ref.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)
    assert y.shape[2:] == conv.conv3d_output_size(x.shape[2:], w.shape[2:], s, p, d)


@pytest.mark.parametrize("case", CASES[:3] + CASES[4:5], ids=_ids)
def test_conv3d_backward_matches_reference(case, rng):
    x, w, b, s, p, d, g = _data(case, np.float64, rng)
    x, w = x[:1, :, :4, :4, :4].copy(), w  # keep the probe loops small
    y = conv.conv3d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y.shape)
    gx, gw, gb = conv.conv3d_backward(gy, x, w, s, p, d, g)

    def fn(xx, ww, _b):
        return ref_conv3d(xx, ww, None, s, p, d, g)

    rx, rw = _vjp(fn, [x, w, None], gy, (0, 1))
    np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw, rw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gb, gy.sum(axis=(0, 2, 3, 4)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TCASES, ids=_ids)
def test_conv_transpose3d_matches_reference(case, dtype, rng):
    x, w, b, s, p, op, g, d = _tdata(case, dtype, rng)
    y = conv.conv_transpose3d(x, w, b, s, p, op, g, d)
    ref = ref_conv_transpose3d(x, w, b, s, p, op, g, d)
    assert y.dtype == dtype and y.shape == ref.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)
    assert y.shape[2:] == conv.conv_transpose3d_output_size(x.shape[2:], w.shape[2:], s, p, op, d)


@pytest.mark.parametrize("case", TCASES, ids=_ids)
def test_conv_transpose3d_is_the_adjoint(case, rng):
    """<conv_transpose3d(x), y> = <x, conv3d(y)> and the backward of each is the other."""
    x, w, _, s, p, op, g, d = _tdata(case, np.float64, rng)
    yt = conv.conv_transpose3d(x, w, None, s, p, op, g, d)
    gy = rng.standard_normal(yt.shape)
    gx, gw, gb = conv.conv_transpose3d_backward(gy, x, w, s, p, op, g, d)
    cx = conv.conv3d(gy, w, None, s, p, d, g)[:, :, :x.shape[2], :x.shape[3], :x.shape[4]]
    np.testing.assert_allclose(gx, cx, rtol=1e-12, atol=1e-12)
    assert np.sum(yt * gy) == pytest.approx(np.sum(x * gx), rel=1e-12)
    # the weight gradient of the transposed conv is the weight gradient of the conv,
    # with the roles of input and output gradient swapped
    # (x zero-padded where output_padding >= stride leaves planes no input reaches)
    full = conv.conv3d_output_size(gy.shape[2:], w.shape[2:], s, p, d)
    xpad = np.pad(x, ((0, 0), (0, 0), *[(0, full[i] - x.shape[2 + i]) for i in range(3)]))
    _, cw, _ = conv.conv3d_backward(xpad, gy, w, s, p, d, g, needs=(False, True, False))
    np.testing.assert_allclose(gw, cw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, gy.sum(axis=(0, 2, 3, 4)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_bitwise_equal_across_thread_counts(dtype, rng):
    x = rng.standard_normal((3, 4, 6, 7, 5)).astype(dtype)
    geom = (3, 2, 2, 2, 1, 1, 1, 1, 0, 1, 1, 2)
    do, ho, wo = conv.conv3d_output_size(x.shape[2:], (3, 2, 2), (2, 1, 1), (1, 1, 0), (1, 1, 2))
    cols, folds = [], []
    for nt in (1, 2, 3):
        col = np.empty((4 * 12, 2 * do * ho * wo), dtype=dtype)
        kernels.vol2col(x, col, 1, 2, 0, do, *geom, ho, wo, nt)
        cols.append(col)
        back = np.full(x.shape, np.nan, dtype=dtype)
        kernels.col2vol(col, back, 1, 2, 0, do, *geom, ho, wo, True, nt)
        folds.append(back[1:])
    for other in cols[1:]:
        assert np.array_equal(cols[0], other)
    for other in folds[1:]:
        assert np.array_equal(folds[0], other)
    assert not np.isnan(folds[0]).any()


def test_slabs_of_depth_planes_match_whole_samples(rng, monkeypatch):
    """Columns of one sample above TUNING.max_slab_bytes are built in slabs of output planes."""
    x, w, b, s, p, d, g = _data(CASES[1], np.float64, rng)
    y0 = conv.conv3d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y0.shape)
    whole = (y0, *conv.conv3d_backward(gy, x, w, s, p, d, g),
             conv.conv_transpose3d(gy, w, None, s, p, 0, g, d))
    plane = (x.shape[1] * 18) * y0.shape[3] * y0.shape[4] * 8  # bytes of one plane's columns
    monkeypatch.setattr(conv.TUNING, "max_slab_bytes", 4 * plane)  # slabs of 4 and 2 planes
    assert loops._plan(2, y0.shape[2:], x.shape[1] * 18, 8, False) == (1, 4)
    assert y0.shape[2] == 6
    slabbed = (conv.conv3d(x, w, b, s, p, d, g), *conv.conv3d_backward(gy, x, w, s, p, d, g),
               conv.conv_transpose3d(gy, w, None, s, p, 0, g, d))
    for u, v in zip(whole, slabbed, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(slabbed[0], ref_conv3d(x, w, b, s, p, d, g), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("max_bytes", [2**25, 3000])  # whole samples, or slabs of planes
@pytest.mark.parametrize("target", [64, 100_000])  # one sample per chunk, or all in one
@pytest.mark.parametrize("case", [CASES[1], CASES[6]], ids=_ids)
def test_ops_bitwise_equal_across_thread_counts(case, target, max_bytes, rng, monkeypatch):
    """Chunks are fixed by the shapes; weight/bias partials are summed in chunk order."""
    monkeypatch.setattr(conv.TUNING, "target_cols", target)
    monkeypatch.setattr(conv.TUNING, "max_slab_bytes", max_bytes)
    x, w, b, s, p, d, g = _data(case, np.float32, rng)
    y0 = conv.conv3d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y0.shape).astype(np.float32)
    bt = rng.standard_normal(x.shape[1]).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        monkeypatch.setattr(conv.TUNING, "kernel_threads", nt)
        with sandbox.num_threads(nt):
            y = conv.conv3d(x, w, b, s, p, d, g)
            grads = conv.conv3d_backward(gy, x, w, s, p, d, g)
            yt = conv.conv_transpose3d(gy, w, bt, s, p, 0, g, d)
            tgrads = conv.conv_transpose3d_backward(np.cos(yt), gy, w, s, p, 0, g, d)
        results.append((y, *grads, yt, *tgrads))
    for other in results[1:]:
        for u, v in zip(results[0], other, strict=True):
            assert np.array_equal(u, v)
    np.testing.assert_allclose(results[0][0], ref_conv3d(x, w, b, s, p, d, g), rtol=1e-4,
                               atol=1e-4)


def _torch_pair(torch, arrays):
    return ([torch.tensor(a, requires_grad=True) for a in arrays],
            [sandbox.Tensor(a, requires_grad=True) for a in arrays])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv3d_torch_parity(case, dtype, rng, torch):
    x, w, b, s, p, d, g = _data(case, dtype, rng)
    (tx, tw, tb), (sx, sw, sb) = _torch_pair(torch, (x, w, b))
    ty = torch.nn.functional.conv3d(tx, tw, tb, s, p, d, g)
    sy = F.conv3d(sx, sw, sb, s, p, d, g)
    gy = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    for s_t, t_t in ((sx, tx), (sw, tw), (sb, tb)):
        np.testing.assert_allclose(s_t.grad.numpy(), t_t.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TCASES, ids=_ids)
def test_conv_transpose3d_torch_parity(case, dtype, rng, torch):
    x, w, b, s, p, op, g, d = _tdata(case, dtype, rng)
    (tx, tw, tb), (sx, sw, sb) = _torch_pair(torch, (x, w, b))
    ty = torch.nn.functional.conv_transpose3d(tx, tw, tb, s, p, op, g, d)
    sy = F.conv_transpose3d(sx, sw, sb, s, p, op, g, d)
    gy = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    for s_t, t_t in ((sx, tx), (sw, tw), (sb, tb)):
        np.testing.assert_allclose(s_t.grad.numpy(), t_t.grad.numpy(), **tol)


def _leaves(rng, *shapes):
    return tuple(sandbox.Tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)


def test_gradcheck_conv3d(rng):
    args = _leaves(rng, (2, 4, 4, 3, 5), (2, 2, 2, 3, 2), (2,))
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 1, 0), (1, 1, 2), 2), args)


def test_gradcheck_conv_transpose3d(rng):
    args = _leaves(rng, (1, 2, 2, 3, 2), (2, 3, 2, 2, 3), (3,))
    assert gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (0, 1, 1), (1, 0, 1), 1, (1, 1, 2)), args)


def test_gradgradcheck_conv3d(rng):
    args = _leaves(rng, (1, 2, 3, 4, 3), (2, 1, 2, 3, 2), (2,))
    assert gradgradcheck(lambda x, w, b: F.conv3d(x, w, b, (1, 2, 1), 1, 1, 2), args)


def test_gradgradcheck_conv_transpose3d(rng):
    args = _leaves(rng, (1, 2, 2, 2, 3), (2, 2, 2, 2, 2), (4,))
    assert gradgradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (1, 0, 0), (1, 1, 0), 2, 1), args)


def test_second_derivative_matches_torch(rng, torch):
    """Gradient of |d loss / dx|^2 with respect to the weight, against torch (float64)."""
    x, w = rng.standard_normal((1, 2, 4, 3, 4)), rng.standard_normal((2, 2, 3, 2, 3))
    results = []
    for lib, make, grad in (
        (F, lambda a: sandbox.Tensor(a, requires_grad=True), sandbox.autograd.grad),
        (torch.nn.functional, lambda a: torch.tensor(a, requires_grad=True), torch.autograd.grad),
    ):
        tx, tw = make(x), make(w)
        y = lib.conv3d(tx, tw, None, (2, 1, 1), 1)
        y = lib.conv_transpose3d(lib.tanh(y), tw, None, (2, 1, 1), 1)
        (gx,) = grad((y * y).sum(), [tx], create_graph=True)
        (gw,) = grad((gx * gx).sum(), [tw])
        results.append(gw.numpy() if isinstance(gw, sandbox.Tensor) else gw.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-10)


def test_plain_backward_calls_the_array_kernels(rng, monkeypatch):
    calls = []
    real = conv.conv_backward
    monkeypatch.setattr(conv, "conv_backward", lambda *a, **k: calls.append(1) or real(*a, **k))
    sx, sw = _leaves(rng, (1, 2, 3, 3, 3), (2, 2, 2, 2, 2))
    F.conv3d(sx, sw).sum().backward()
    assert calls and sx.grad is not None


@pytest.mark.parametrize(
    "make, exc, match",
    [
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 1, 1, 1))),
         ValueError, r"input must be 5-D \(N, C, D, H, W\)"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1))),
         ValueError, "weight must be 5-D"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3), np.int64), np.zeros((1, 2, 1, 1, 1))),
         TypeError, "input must have dtype float32 or float64"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1, 1), np.float32)),
         TypeError, "weight dtype float32 does not match input dtype float64"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 3, 1, 1, 1))),
         ValueError, "expects 3 input channels"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 1, 1, 1, 1)), groups=2),
         ValueError, "groups=2 must divide the output channels"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), groups=0),
         ValueError, "groups must be a positive int"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), stride=(1, 2)),
         TypeError, "stride must be an int or a triple of ints"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), stride=0),
         ValueError, "stride must be positive"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), padding=-1),
         ValueError, "padding must be non-negative"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 5, 1, 1))),
         ValueError, "output size .* is not positive"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)),
                             np.zeros(3)),
         ValueError, r"bias must have shape \(2,\)"),
        (lambda: conv.conv_transpose3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((3, 2, 1, 1, 1))),
         ValueError, "expects 3 input channels"),
        (lambda: conv.conv_transpose3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 2, 2, 2)),
                                       stride=2, output_padding=2),
         ValueError, "output_padding .* must be smaller than either stride"),
        (lambda: conv.conv3d_backward(np.zeros((1, 2, 2, 2, 2)), np.zeros((1, 2, 3, 3, 3)),
                                      np.zeros((2, 2, 1, 1, 1))),
         ValueError, r"grad_output must have shape \(1, 2, 3, 3, 3\)"),
        (lambda: F.conv3d(np.zeros((1, 2, 3, 3, 3)), sandbox.Tensor(np.zeros((2, 2, 1, 1, 1)))),
         TypeError, "input must be a sandbox.Tensor"),
    ],
)
def test_validation(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("op", ["conv3d", "conv_transpose3d"])
def test_plain_and_create_graph_backward_agree_and_take_strided_gradients(op, rng):
    """The first gradient is the same whether the backward runs the kernels (plain) or
    the differentiable Functions (create_graph), and for a non-contiguous incoming gradient."""
    sx, sw, sb = _leaves(rng, (2, 2, 3, 4, 3), (2, 2, 2, 3, 2), (2,))

    def fn():
        if op == "conv3d":
            return F.conv3d(sx, sw, sb, (1, 2, 1), 1, (2, 1, 1))
        return F.conv_transpose3d(sx, sw, sb, 2, (1, 0, 1), (1, 1, 0), 1, 1)

    y = fn()
    r = rng.standard_normal(y.shape[::-1])
    plain = sandbox.autograd.grad((fn() * sandbox.Tensor(np.ascontiguousarray(r.T))).sum(),
                                  [sx, sw, sb])
    strided = sandbox.autograd.grad((y.permute(4, 3, 2, 1, 0) * sandbox.Tensor(r)).sum(),
                                    [sx, sw, sb])
    graph = sandbox.autograd.grad((fn() * sandbox.Tensor(r.T)).sum(), [sx, sw, sb],
                                  create_graph=True)
    for a, b, c in zip(plain, strided, graph, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_tuned_reaches_the_3d_slab_limit(rng):
    """The 3-D column limit is a field of ConvTuning, so ``tuned()`` changes the plan."""
    rows, out = 16 * 27, (8, 16, 16)
    plane = rows * 16 * 16 * 4
    assert loops._plan(2, out, rows, 4, False) == (1, 8)  # 8 MiB: a whole sample
    with conv.tuned(max_slab_bytes=3 * plane):
        assert conv.TUNING.max_slab_bytes == 3 * plane
        assert loops._plan(2, out, rows, 4, False) == (1, 3)
    assert conv.TUNING.max_slab_bytes == 8 * 2**20
