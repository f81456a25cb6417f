"""Matrix multiplication with numpy's ``matmul`` semantics (batched, 1-D cases)."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ._promote import promote
from ._util import operand


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise ValueError(
                f"matmul: both operands need at least 1 dim, got shapes "
                f"{np.shape(a)} and {np.shape(b)}"
            )
        ctx.shapes = (a.shape, b.shape)
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        try:
            return np.matmul(a, b)
        except ValueError as exc:
            raise ValueError(
                f"matmul: shapes {a.shape} and {b.shape} do not match (last dim of the first "
                "must equal the second-to-last dim of the second; batch dims must broadcast)"
            ) from exc

    @staticmethod
    def backward(ctx, grad):
        # Treat 1-D operands as matrices: a (n,) -> (1, n), b (n,) -> (n, 1); then
        # dA = G @ B^T and dB = A^T @ G, summed over broadcast batch dims.
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        sa2 = (1,) + sa if len(sa) == 1 else sa
        sb2 = sb + (1,) if len(sb) == 1 else sb
        g = grad
        if len(sa) == 1:
            g = g.unsqueeze(-2 if len(sb) > 1 else 0)
        if len(sb) == 1:
            g = g.unsqueeze(-1)
        ga = gb = None
        if na:
            b2 = b.reshape(sb2)
            ga = unbroadcast(g @ b2.transpose(-1, -2), sa2).reshape(sa)
        if nb:
            a2 = a.reshape(sa2)
            gb = unbroadcast(a2.transpose(-1, -2) @ g, sb2).reshape(sb)
        return ga, gb


def matmul(a, b):
    """Matrix product ``a @ b`` with numpy semantics (batch dims broadcast)."""
    _, (a, b) = promote(operand(a, "matmul"), operand(b, "matmul"))
    return MatMul.apply(a, b)


# ----------------------------------------------------------------------------- einsum
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(equation, ndims):
    """The equation with ``...`` spelt out: ``(input subscripts, output subscripts)``."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(ndims):
        raise ValueError(f"einsum: the equation has {len(subs)} operand(s), got {len(ndims)}")
    bad = set(eq) - set(_LETTERS) - set(",.->")
    if bad:
        raise ValueError(f"einsum: subscripts must be letters, got {sorted(bad)} in {equation!r}")
    free = [c for c in _LETTERS if c not in eq]
    n_ell = max((n - len(s.replace("...", "")) for s, n in zip(subs, ndims, strict=True)
                 if "..." in s), default=0)
    ell = "".join(free[:n_ell])
    spelt = []
    for s, n in zip(subs, ndims, strict=True):
        if "..." in s:
            k = n - len(s.replace("...", ""))
            s = s.replace("...", ell[n_ell - k:] if k else "")
        if len(s) != n:
            raise ValueError(f"einsum: subscripts {s!r} do not match an operand with {n} dims")
        spelt.append(s)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit output: the ellipsis dims, then the letters seen once, in order
        seen = "".join(spelt)
        out = ell + "".join(sorted(c for c in set(seen) if seen.count(c) == 1 and c not in ell))
    return spelt, out


class Einsum(Function):
    @staticmethod
    def forward(ctx, subs, out, *arrays):
        ctx.subs, ctx.out = subs, out
        ctx.shapes = [a.shape for a in arrays]
        ctx.save_for_backward(*arrays)
        return np.asarray(np.einsum(",".join(subs) + "->" + out, *arrays))

    @staticmethod
    def backward(ctx, grad):
        ops = ctx.saved_tensors
        grads = [None, None]
        for k, need in enumerate(ctx.needs_input_grad[2:]):
            grads.append(_einsum_grad(ctx, grad, ops, k) if need else None)
        return tuple(grads)


def _einsum_grad(ctx, grad, ops, k):
    """d(out)/d(operand k): the output's gradient contracted with the other operands."""
    target = ctx.subs[k]
    if len(set(target)) != len(target):
        raise RuntimeError(f"einsum: no gradient for an operand with a repeated subscript "
                           f"({target!r}); take the diagonal first")
    others = [(s, t) for j, (s, t) in enumerate(zip(ctx.subs, ops, strict=True)) if j != k]
    known = set(ctx.out).union(*(set(s) for s, _ in others))
    have = "".join(c for c in target if c in known)
    g = _einsum(",".join([ctx.out, *(s for s, _ in others)]) + "->" + have,
                grad, *(t for _, t in others))
    if have != target:  # letters summed only within operand k: broadcast back over them
        shape = ctx.shapes[k]
        g = g.reshape(*(n if c in known else 1 for c, n in zip(target, shape, strict=True)))
        g = g.expand(*shape)
    return g


def _einsum(equation, *operands):
    subs, out = _parse_einsum(equation, [np.ndim(o) for o in operands])
    return Einsum.apply(subs, out, *operands)


def einsum(equation, *operands):
    """Einstein summation, as ``torch.einsum``: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Supports ``...``, implicit output (letters seen once, in alphabetical order) and
    repeated subscripts (diagonals; differentiable only where no operand repeats a
    subscript).  The operands may also be given as one list.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    _, operands = promote(*(operand(o, "einsum") for o in operands))
    return _einsum(equation, *operands)
