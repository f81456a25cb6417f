"""Compare a sandbox computation with the same computation in PyTorch, in float64.

:func:`compare` checks the value, the first derivatives (a vector-Jacobian product
with a fixed random cotangent) and, optionally, the second derivatives (the
gradient of ``<grad, v>`` for another fixed random ``v``) of every input that
requires grad.  Used by the regression tests and by the differential fuzz test.
"""

from __future__ import annotations

import numpy as np

import sandbox
from sandbox.autograd import grad as sb_grad

RTOL, ATOL = 1e-9, 1e-10


def _close(a, b, what, rtol, atol):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _as_list(x):
    return list(x) if isinstance(x, tuple | list) else [x]


def _grads_sandbox(outs, xs, cotangents, create_graph):
    live = [(o, c) for o, c in zip(outs, cotangents, strict=True) if o.requires_grad]
    if not live or not xs:
        return [None] * len(xs)
    return list(
        sb_grad(
            [o for o, _ in live],
            xs,
            grad_outputs=[sandbox.tensor(c) for _, c in live],
            create_graph=create_graph,
            allow_unused=True,
        )
    )


def _grads_torch(torch, outs, xs, cotangents, create_graph):
    live = [(o, c) for o, c in zip(outs, cotangents, strict=True) if o.requires_grad]
    if not live or not xs:
        return [None] * len(xs)
    return list(
        torch.autograd.grad(
            [o for o, _ in live],
            xs,
            grad_outputs=[torch.from_numpy(c) for _, c in live],
            create_graph=create_graph,
            allow_unused=True,
        )
    )


def _numpy(t, shape):
    if t is None:
        return np.zeros(shape)
    if isinstance(t, sandbox.Tensor):
        return t.numpy()
    return t.detach().numpy(force=True)  # torch: a ZeroTensor (all-zero grad) needs force


def compare(
    sb_fn,
    torch_fn,
    arrays,
    *,
    requires_grad=None,
    second=False,
    rtol=RTOL,
    atol=ATOL,
    seed=0,
):
    """Assert ``sb_fn(*tensors)`` and ``torch_fn(*tensors)`` agree in value and derivatives.

    ``arrays`` are float64 (or integer) ndarrays; float ones require grad unless
    ``requires_grad`` (a list of bools) says otherwise.  The functions return a
    Tensor or a tuple of Tensors.
    """
    import torch

    arrays = [np.asarray(a) for a in arrays]
    if requires_grad is None:
        requires_grad = [a.dtype.kind == "f" for a in arrays]
    sb_in = [sandbox.tensor(a, requires_grad=r) for a, r in zip(arrays, requires_grad, strict=True)]
    th_in = [
        torch.tensor(a, requires_grad=r) for a, r in zip(arrays, requires_grad, strict=True)
    ]
    sb_out = _as_list(sb_fn(*sb_in))
    th_out = _as_list(torch_fn(*th_in))
    assert len(sb_out) == len(th_out), "number of outputs"
    for k, (s, t) in enumerate(zip(sb_out, th_out, strict=True)):
        _close(s.numpy(), t.detach().numpy(), f"value of output {k}", rtol, atol)

    rng = np.random.default_rng(seed)
    xs = [i for i, r in enumerate(requires_grad) if r]
    cot = [rng.standard_normal(np.shape(t.numpy())) for t in sb_out]
    sb_g = _grads_sandbox(sb_out, [sb_in[i] for i in xs], cot, second)
    th_g = _grads_torch(torch, th_out, [th_in[i] for i in xs], cot, second)
    for i, s, t in zip(xs, sb_g, th_g, strict=True):
        shape = arrays[i].shape
        _close(_numpy(s, shape), _numpy(t, shape), f"gradient of input {i}", rtol, atol)
    if not second:
        return

    vs = [rng.standard_normal(arrays[i].shape) for i in xs]
    sb_live = [k for k, g in enumerate(sb_g) if g is not None and g.requires_grad]
    th_live = [k for k, g in enumerate(th_g) if g is not None and g.requires_grad]
    sb_gg = _grads_sandbox(
        [sb_g[k] for k in sb_live], [sb_in[i] for i in xs], [vs[k] for k in sb_live], False
    )
    th_gg = _grads_torch(
        torch, [th_g[k] for k in th_live], [th_in[i] for i in xs], [vs[k] for k in th_live], False
    )
    for i, s, t in zip(xs, sb_gg, th_gg, strict=True):
        shape = arrays[i].shape
        _close(_numpy(s, shape), _numpy(t, shape), f"second derivative of input {i}", rtol, atol)
