"""batch_norm / group_norm: torch parity (values, grads, running stats), gradients, validation.

The array ops view any (N, C, ...) input as (N, C, L), so 5-D (N, C, D, H, W) volumes
need no code of their own; the parity tests run the 2-D (and 0-D, 1-D) inputs and a
volume through the same checks, and the volume tests below pin the rest down.
"""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox.array import norm
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

SHAPE_3D = (3, 4, 3, 5, 6)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-11)


def _weight_tol(spatial_dims, dtype):
    """Tolerance of the weight and bias gradients: the volume's are as tight as the rest."""
    if spatial_dims == 3:
        return _tol(dtype)
    return dict(rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


#: (spatial_dims, shape, affine, momentum, eps); "2" stands for the inputs of up to 2
#: spatial dimensions (an image, a sequence and plain features)
BATCH_NORM_CASES = [
    *[(2, shape, affine, 0.2, 1e-4) for shape in [(4, 6, 5, 7), (8, 3), (2, 4, 9)]
      for affine in (True, False)],
    (3, SHAPE_3D, True, 0.1, 1e-5),
]

#: (spatial_dims, shape, groups, affine, scale, offset) of the input x * scale + offset
GROUP_NORM_CASES = [
    *[(2, shape, groups, affine, 3, -1)
      for shape, groups in [((3, 6, 5, 7), 3), ((2, 4, 9), 4), ((2, 6, 4, 4), 1)]
      for affine in (True, False)],
    *[(3, SHAPE_3D, groups, True, 2, -1) for groups in (1, 2, 4)],
]


def _case_id(case):
    return "-".join(str(v).replace(" ", "") for v in case)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("spatial_dims, shape, affine, momentum, eps", BATCH_NORM_CASES,
                         ids=map(_case_id, BATCH_NORM_CASES))
def test_batch_norm_torch_parity(spatial_dims, shape, affine, momentum, eps, training, dtype,
                                 rng, torch):
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    rm = rng.standard_normal(c).astype(dtype)
    rv = (rng.random(c) + 0.5).astype(dtype)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    tx = torch.tensor(x, requires_grad=True)
    sx = sandbox.Tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True) if affine else None
    tb = torch.tensor(b, requires_grad=True) if affine else None
    sw = sandbox.Tensor(w, requires_grad=True) if affine else None
    sb = sandbox.Tensor(b, requires_grad=True) if affine else None
    ty = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training, momentum, eps)
    sy = F.batch_norm(sx, rm, rv, sw, sb, training, momentum, eps)
    gy = rng.standard_normal(shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = _tol(dtype)
    assert sy.numpy().dtype == dtype and sx.grad.numpy().dtype == dtype
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(rm, trm.numpy(), **tol)
    np.testing.assert_allclose(rv, trv.numpy(), **tol)
    if affine:
        np.testing.assert_allclose(sw.grad.numpy(), tw.grad.numpy(),
                                   **_weight_tol(spatial_dims, dtype))
        np.testing.assert_allclose(sb.grad.numpy(), tb.grad.numpy(),
                                   **_weight_tol(spatial_dims, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial_dims, shape, groups, affine, scale, offset", GROUP_NORM_CASES,
                         ids=map(_case_id, GROUP_NORM_CASES))
def test_group_norm_torch_parity(spatial_dims, shape, groups, affine, scale, offset, dtype, rng,
                                 torch):
    c = shape[1]
    x = (rng.standard_normal(shape) * scale + offset).astype(dtype)
    args = [rng.standard_normal(c).astype(dtype) for _ in range(2)] if affine else [None, None]
    tx = torch.tensor(x, requires_grad=True)
    sx = sandbox.Tensor(x, requires_grad=True)
    targs = [None if a is None else torch.tensor(a, requires_grad=True) for a in args]
    sargs = [None if a is None else sandbox.Tensor(a, requires_grad=True) for a in args]
    ty = torch.nn.functional.group_norm(tx, groups, *targs, eps=1e-5)
    sy = F.group_norm(sx, groups, *sargs, eps=1e-5)
    gy = rng.standard_normal(shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = _tol(dtype)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), **tol)
    for s, t in zip(sargs, targs, strict=True):
        if s is not None:
            weight_tol = _tol(dtype) if spatial_dims == 3 else dict(rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), **weight_tol)


@pytest.mark.parametrize("kind", ["batch_train", "batch_eval", "group"])
def test_gradcheck(kind, rng):
    x = rng.standard_normal((3, 4, 3, 2))
    w = rng.standard_normal(4)
    b = rng.standard_normal(4)
    rm0, rv0 = rng.standard_normal(4), rng.random(4) + 0.5

    def op(x_, w_, b_):
        if kind == "group":
            return F.group_norm(x_, 2, w_, b_)
        # fresh running stats every call: the forward updates them in place
        return F.batch_norm(x_, rm0.copy(), rv0.copy(), w_, b_, kind == "batch_train")

    assert gradcheck(op, tuple(sandbox.Tensor(a, requires_grad=True) for a in (x, w, b)))


def test_running_stats_tensors_are_updated(rng):
    x = sandbox.Tensor(rng.standard_normal((4, 3, 2, 2)))
    rm, rv = sandbox.Tensor(np.zeros(3)), sandbox.Tensor(np.ones(3))
    F.batch_norm(x, rm, rv, training=True)
    assert not np.allclose(rm.numpy(), 0) and not np.allclose(rv.numpy(), 1)


def test_float32_stays_float32(rng):
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    y, mean, invstd = norm.batch_norm(x, np.zeros(3, np.float32), np.ones(3, np.float32),
                                      training=True)
    assert y.dtype == mean.dtype == invstd.dtype == np.float32
    y, mean, invstd = norm.group_norm(x, 3)
    assert y.dtype == mean.dtype == invstd.dtype == np.float32


@pytest.mark.parametrize("call, exc, match", [
    (lambda: norm.batch_norm(np.zeros(4), None, None), ValueError, "at least 2 dimensions"),
    (lambda: norm.batch_norm(np.zeros((2, 3), np.int64), None, None), TypeError,
     "input must have dtype float32"),
    (lambda: norm.batch_norm(np.zeros((2, 3)), np.zeros(4), np.ones(3)), ValueError,
     r"running_mean must have shape \(3,\)"),
    (lambda: norm.batch_norm(np.zeros((2, 3)), None, None, np.zeros(2)), ValueError,
     r"weight must have shape \(3,\)"),
    (lambda: norm.batch_norm(np.zeros((2, 3)), None, None, None, np.zeros(3, np.float32)),
     TypeError, "bias dtype float32 does not match input dtype float64"),
    (lambda: norm.batch_norm(np.zeros((2, 3)), None, None), ValueError,
     "training=False needs running_mean"),
    (lambda: norm.batch_norm(np.zeros((1, 3)), None, None, training=True), ValueError,
     "more than 1 value per channel"),
    (lambda: norm.batch_norm(np.zeros((2, 3)), None, None, training=True, eps=0), ValueError,
     "eps must be positive"),
    (lambda: norm.group_norm(np.zeros((2, 6, 3)), 4), ValueError,
     r"num_groups=4 must divide the number of channels \(6\)"),
    (lambda: norm.group_norm(np.zeros((2, 6, 3)), 0), ValueError,
     "num_groups must be a positive int"),
    (lambda: norm.group_norm(np.zeros((2, 6, 3)), 3, np.zeros(5)), ValueError,
     r"weight must have shape \(6,\)"),
])
def test_validation(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_kernels_are_bitwise_identical_for_any_thread_count(dtype, rng):
    # Large enough that the kernels really run in parallel.
    x = rng.standard_normal((4, 5, 48, 40)).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    w, b = (rng.standard_normal(5).astype(dtype) for _ in range(2))
    results = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            rm, rv = np.zeros(5, dtype), np.ones(5, dtype)
            out, mean, invstd = norm.batch_norm(x, rm, rv, w, b, training=True)
            grads = norm.batch_norm_backward(g, x, mean, invstd, w, training=True)
            results.append((out, mean, invstd, rm, rv, *grads))
    for other in results[1:]:
        for a, b_ in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b_)


def test_batch_norm_float32_statistics_accumulate_in_double(rng):
    # A large offset: a float32 running sum would lose the small variance.
    x = (1000.0 + 0.01 * rng.standard_normal((16, 2, 64, 64))).astype(np.float32)
    _, mean, invstd = norm.batch_norm(x, None, None, training=True)
    ref = x.astype(np.float64).reshape(16, 2, -1).transpose(1, 0, 2).reshape(2, -1)
    np.testing.assert_allclose(mean, ref.mean(axis=1), rtol=1e-7)
    np.testing.assert_allclose(1 / invstd**2 - 1e-5, ref.var(axis=1), rtol=1e-3)


@pytest.mark.parametrize("kind", ["batch", "group"])
def test_gradcheck_and_gradgradcheck_5d(kind, rng):
    args = (sandbox.Tensor(rng.standard_normal((2, 2, 2, 3, 2)), requires_grad=True),
            sandbox.Tensor(rng.standard_normal(2), requires_grad=True),
            sandbox.Tensor(rng.standard_normal(2), requires_grad=True))

    def op(x, w, b):
        if kind == "batch":
            return F.batch_norm(x, None, None, w, b, training=True)
        return F.group_norm(x, 2, w, b)

    assert gradcheck(op, args)
    assert gradgradcheck(op, args)


def test_5d_bitwise_identical_for_any_thread_count(rng):
    x = rng.standard_normal((2, 3, 9, 17, 15)).astype(np.float32)
    gy = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        with sandbox.num_threads(nt):
            y, mean, invstd = norm.batch_norm(x, None, None, training=True)
            grads = norm.batch_norm_backward(gy, x, mean, invstd, training=True)
            gy2, gmean, ginvstd = norm.group_norm(x, 3)
            ggrads = norm.group_norm_backward(gy, x, gmean, ginvstd, 3)
        results.append((y, mean, invstd, *grads[:1], gy2, *ggrads[:1]))
    for other in results[1:]:
        for u, v in zip(results[0], other, strict=True):
            assert np.array_equal(u, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("running", ["none", "mean", "both"])
@pytest.mark.parametrize("relu", [False, True])
def test_per_channel_scalars_in_the_kernel_are_numpys_bits(dtype, affine, running, relu,
                                                           monkeypatch):
    """train_forward / backward_fused (pyx/_norm.pyx: the moments or sums, the
    per-channel scalars and the pass over the data in one parallel region) replay the
    numpy expressions of sandbox/array/norm.py: outputs, statistics, running statistics
    and all three gradients are the same bits either way, training and eval."""
    rng = np.random.default_rng(17)
    x = (rng.standard_normal((3, 5, 4, 6)) * 3 + 1).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    w = rng.uniform(0.5, 2, 5).astype(dtype) if affine else None
    b = rng.standard_normal(5).astype(dtype) if affine else None

    def run():
        rm = rng_state[0].standard_normal(5).astype(dtype) if running != "none" else None
        rv = rng_state[0].uniform(0.5, 2, 5).astype(dtype) if running == "both" else None
        fwd = norm.batch_norm_relu if relu else norm.batch_norm
        out, mean, invstd = fwd(x, rm, rv, w, b, True, 0.1, 1e-5)
        if relu:
            grads = norm.batch_norm_relu_backward(g, x, mean, invstd, w, b, True)
        else:
            grads = norm.batch_norm_backward(g, x, mean, invstd, w, True)
        evals = norm.batch_norm_backward(g, x, mean, invstd, w, False)
        return [out, mean, invstd, rm, rv, *grads, *evals]

    kernels, calls = norm._kernels, []

    def spy(f):
        return lambda *a: calls.append(1) or f(*a)

    for name in ("train_forward", "backward_fused"):
        monkeypatch.setattr(kernels, name, spy(getattr(kernels, name)))
    rng_state = [np.random.default_rng(3)]
    fast = run()
    assert len(calls) == 3  # the forward, the backward in training and in eval
    monkeypatch.setattr(norm, "_scalars_in_kernel", lambda *a: False)
    rng_state = [np.random.default_rng(3)]
    slow = run()
    for a, e in zip(fast, slow, strict=True):
        if e is None:
            assert a is None
        else:
            assert a.dtype == e.dtype
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("relu", [False, True])
def test_batch_norm_kernels_sum_by_planes_as_numpy_sums_by_channels(relu, rng, monkeypatch):
    """train_forward and backward_fused take each plane's sums on the thread that owns the
    plane (as the affine pass shares its planes) and add a channel's in sample order:
    numpy's path (channel by channel, its planes in order) gives the same bits, at 1-3
    threads, with and without the ReLU's mask; large enough to run on every thread."""
    x = (rng.standard_normal((6, 5, 40, 40)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w, b = rng.uniform(0.5, 2, 5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    fwd = norm.batch_norm_relu if relu else norm.batch_norm

    def run():
        rm, rv = np.zeros(5, np.float32), np.ones(5, np.float32)
        out, mean, invstd = fwd(x, rm, rv, w, b, True, 0.1, 1e-5)
        grads = (norm.batch_norm_relu_backward(g, x, mean, invstd, w, b, True) if relu
                 else norm.batch_norm_backward(g, x, mean, invstd, w, True))
        return [out, mean, invstd, rm, rv, *grads]

    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            runs.append(run())
    monkeypatch.setattr(norm, "_scalars_in_kernel", lambda *a: False)
    with sandbox.num_threads(2):
        expected = run()
    for got in runs:
        for a, e in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_group_norm_runs_its_kernels_with_the_same_bits_for_any_thread_count(
        dtype, rng, monkeypatch):
    """Group norm (and instance norm, a group a channel) runs one kernel a pass, a group of
    a sample an iteration, not numpy's passes: the same bits at 1-3 threads, forward and
    every gradient."""
    from sandbox._C import _norm as kernels

    calls = []
    for name in ("group_norm_forward", "group_norm_backward"):
        original = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, _f=original, _n=name: calls.append(_n)
                            or _f(*a))
    x = (rng.standard_normal((3, 8, 9, 10)) * 2 + 1).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    w, b = (rng.standard_normal(8).astype(dtype) for _ in range(2))
    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            out, mean, invstd = norm.group_norm(x, 4, w, b)
            runs.append((out, *norm.group_norm_backward(g, x, mean, invstd, 4, w)))
    assert calls == ["group_norm_forward", "group_norm_backward"] * 3
    for run in runs[1:]:
        for a, r in zip(run, runs[0], strict=True):
            np.testing.assert_array_equal(a, r)
