"""Check gradients against central finite differences (as ``torch.autograd.gradcheck``).

:func:`gradcheck` compares, for every output ``k`` and every input ``i`` that requires
grad, the Jacobian that backward computes (one backward per output element, with a
one-hot ``grad_output``) against the central difference
``(f(x + eps e_j) - f(x - eps e_j)) / (2 eps)``, one input element ``j`` at a time.
``fast_mode=True`` compares a single random projection ``v^T J u`` per (output, input)
pair instead: one finite difference along ``u`` and one backward with ``v``.
:func:`gradgradcheck` runs the same check on the gradient itself (built with
``create_graph=True``), which tests second derivatives.

The default tolerances are PyTorch's and assume float64 inputs; other inputs get a
warning.  Random vectors come from a fixed seed, so results are reproducible.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import Tensor, enable_grad, grad, no_grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` / :func:`gradgradcheck` when a check fails."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def _float_outputs(outputs):
    return [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o.dtype.kind == "f"]


def _evaluate(fn, inputs, out_idx):
    """Float outputs of ``fn`` as float64 copies (no graph)."""
    with no_grad():
        outs = _as_tuple(fn(*inputs))
    return [np.array(outs[k].numpy(), dtype=np.float64) for k in out_idx]


def _writable(t):
    if not (t.numpy().flags.writeable and t.numpy().flags.c_contiguous):
        t.data = t.numpy().copy()
    return t.numpy()


def _numerical_jacobians(fn, inputs, diff, out_idx, out_sizes, eps):
    """``J[k][i]`` of shape (numel of input i, numel of output k), by central differences."""
    jac = [{i: np.zeros((inputs[i].numel(), n)) for i in diff} for n in out_sizes]
    for i in diff:
        data = _writable(inputs[i])
        flat = data.reshape(-1)  # a view: data is C-contiguous
        for j in range(flat.size):
            orig = flat[j].copy()
            flat[j] = orig - eps
            lo = _evaluate(fn, inputs, out_idx)
            flat[j] = orig + eps
            hi = _evaluate(fn, inputs, out_idx)
            flat[j] = orig
            for k in range(len(out_idx)):
                jac[k][i][j] = (hi[k] - lo[k]).reshape(-1) / (2 * eps)
    return jac


def _analytical_jacobians(outputs, inputs, diff, out_idx):
    """``J[k][i]`` from backward with one-hot grad_outputs."""
    jac = []
    for k in out_idx:
        out = outputs[k]
        jk = {i: np.zeros((inputs[i].numel(), out.numel())) for i in diff}
        if out.requires_grad:
            for m in range(out.numel()):
                seed = np.zeros(out.numel(), out.dtype)
                seed[m] = 1
                grads = grad(
                    out,
                    [inputs[i] for i in diff],
                    seed.reshape(out.shape),
                    retain_graph=True,
                    allow_unused=True,
                )
                for i, g in zip(diff, grads, strict=True):
                    if g is not None:
                        jk[i][:, m] = g.numpy().reshape(-1)
        jac.append(jk)
    return jac


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _mismatch_message(k, i, num, ana, in_shape, out_shape, atol, rtol):
    excess = np.abs(ana - num) - (atol + rtol * np.abs(num))
    j, m = np.unravel_index(np.argmax(excess), num.shape)
    where_in = np.unravel_index(j, in_shape) if in_shape else ()
    where_out = np.unravel_index(m, out_shape) if out_shape else ()
    msg = (
        f"Jacobian mismatch for output {k} with respect to input {i}:\n"
        f"max abs error {np.max(np.abs(ana - num)):.6g}; worst element: input {i} index "
        f"{tuple(int(v) for v in where_in)}, output {k} index {tuple(int(v) for v in where_out)}: "
        f"numerical {num[j, m]:.10g} vs analytical {ana[j, m]:.10g} (atol={atol}, rtol={rtol})"
    )
    if num.size <= 64:
        msg += f"\nnumerical:\n{num}\nanalytical:\n{ana}"
    return msg


def _prepare(fn, inputs):
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck: at least one input must be a Tensor that requires grad")
    for i in diff:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point "
                f"({inputs[i].dtype}). This check will likely fail: use float64 inputs.",
                stacklevel=3,
            )
    with enable_grad():
        outputs = _as_tuple(fn(*inputs))
    return inputs, diff, outputs, _float_outputs(outputs)


def gradcheck(
    fn,
    inputs,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    fast_mode=False,
    nondet_tol=0.0,
):
    """Check the gradients of ``fn`` at ``inputs`` against finite differences.

    Parameters
    ----------
    fn : callable
        Takes ``*inputs`` and returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple
        Arguments of ``fn``; the Tensors with ``requires_grad=True`` are checked (they
        should be float64).  Their data is perturbed in place and restored.
    eps : float
        Finite-difference step.
    atol, rtol : float
        Tolerances, as ``np.allclose(analytical, numerical, rtol, atol)``.
    raise_exception : bool
        Raise :class:`GradcheckError` on failure (else return False).
    fast_mode : bool
        Compare one random projection ``v^T J u`` per (output, input) pair instead of
        the full Jacobian: much cheaper, and still catches wrong or mis-scaled rules.
    nondet_tol : float
        Allowed difference between two backward passes on the same graph.

    Returns
    -------
    bool
        True when every check passes.
    """
    inputs, diff, outputs, out_idx = _prepare(fn, inputs)
    out_sizes = [outputs[k].numel() for k in out_idx]
    if fast_mode:
        return _fast_check(fn, inputs, diff, outputs, out_idx, eps, atol, rtol, raise_exception)

    analytical = _analytical_jacobians(outputs, inputs, diff, out_idx)
    again = _analytical_jacobians(outputs, inputs, diff, out_idx)
    for kk, k in enumerate(out_idx):
        for i in diff:
            err = np.max(np.abs(analytical[kk][i] - again[kk][i]), initial=0.0)
            if err > nondet_tol:
                return _fail(
                    f"Backward is not reentrant for output {k} with respect to input {i}: two "
                    f"backward passes differ by {err:.3g} > nondet_tol={nondet_tol}",
                    raise_exception,
                )
    numerical = _numerical_jacobians(fn, inputs, diff, out_idx, out_sizes, eps)
    for kk, k in enumerate(out_idx):
        for i in diff:
            num, ana = numerical[kk][i], analytical[kk][i]
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                msg = _mismatch_message(
                    k, i, num, ana, inputs[i].shape, outputs[k].shape, atol, rtol
                )
                return _fail(msg, raise_exception)
    return True


def _fast_check(fn, inputs, diff, outputs, out_idx, eps, atol, rtol, raise_exception):
    rng = np.random.default_rng(0)

    def unit(shape):
        v = rng.standard_normal(shape)
        return v / max(np.linalg.norm(v), 1e-300)

    u = {i: unit(inputs[i].shape) for i in diff}
    v = [unit(outputs[k].shape) for k in out_idx]
    # numerical v^T (J u): one central difference along u per input
    num = {}
    for i in diff:
        data = _writable(inputs[i])
        orig = data.copy()
        data[...] = orig - eps * u[i]
        lo = _evaluate(fn, inputs, out_idx)
        data[...] = orig + eps * u[i]
        hi = _evaluate(fn, inputs, out_idx)
        data[...] = orig
        for kk in range(len(out_idx)):
            num[kk, i] = float(np.sum(v[kk] * (hi[kk] - lo[kk]) / (2 * eps)))
    # analytical (v^T J) u: one backward per output
    for kk, k in enumerate(out_idx):
        out = outputs[k]
        grads = [None] * len(diff)
        if out.requires_grad:
            grads = grad(
                out,
                [inputs[i] for i in diff],
                v[kk].astype(out.dtype),
                retain_graph=True,
                allow_unused=True,
            )
        for i, g in zip(diff, grads, strict=True):
            ana = 0.0 if g is None else float(np.sum(g.numpy() * u[i]))
            if not np.isclose(ana, num[kk, i], rtol=rtol, atol=atol):
                return _fail(
                    f"Jacobian mismatch for output {k} with respect to input {i} "
                    f"(fast mode, random projection v^T J u):\nnumerical {num[kk, i]:.10g} vs "
                    f"analytical {ana:.10g}, abs error {abs(ana - num[kk, i]):.6g} "
                    f"(atol={atol}, rtol={rtol}). Rerun with fast_mode=False to locate "
                    "the element.",
                    raise_exception,
                )
    return True


def gradgradcheck(
    fn,
    inputs,
    grad_outputs=None,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    fast_mode=False,
    nondet_tol=0.0,
):
    """Check second derivatives: :func:`gradcheck` of the vector-Jacobian product.

    The function checked is ``(inputs, grad_outputs) -> grad(fn(inputs), inputs,
    grad_outputs, create_graph=True)``; ``grad_outputs`` default to random float64
    tensors that require grad, so derivatives with respect to them are checked too.
    """
    inputs = _as_tuple(inputs)
    with enable_grad():
        outputs = _as_tuple(fn(*inputs))
    out_idx = [k for k in _float_outputs(outputs) if outputs[k].requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        grad_outputs = tuple(
            Tensor(rng.standard_normal(outputs[k].shape), requires_grad=True) for k in out_idx
        )
    grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(out_idx):
        raise ValueError(
            f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(out_idx)} "
            "differentiable outputs"
        )
    n_in = len(inputs)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]

    def vjp(*args):
        with enable_grad():
            outs = _as_tuple(fn(*args[:n_in]))
            gs = grad(
                [outs[k] for k in out_idx],
                diff,
                list(args[n_in:]),
                create_graph=True,
                allow_unused=True,
            )
        return tuple(
            Tensor(np.zeros(t.shape, t.dtype)) if g is None else g
            for t, g in zip(diff, gs, strict=True)
        )

    return gradcheck(
        vjp,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        fast_mode=fast_mode,
        nondet_tol=nondet_tol,
    )
