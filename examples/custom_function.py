"""Write your own differentiable op as a ``Function`` and prove its gradient.

Run:  python examples/custom_function.py

``Softplus(x) = log(1 + exp(x))`` with derivative ``sigmoid(x)``. The forward works on
plain numpy arrays; the backward is written with Tensor ops, so it can itself be
differentiated (second derivatives via ``create_graph=True``).
"""

import numpy as np

import sandbox
from sandbox.autograd import Function
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck


class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # log(1 + e^x) computed without overflow: max(x, 0) + log1p(e^-|x|)
        return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()


class WrongSoftplus(Softplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid() * 1.01  # a 1 % error that gradcheck must catch


def main():
    x = sandbox.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    y = Softplus.apply(x)
    y.sum().backward()
    print("softplus'(x) == sigmoid(x):", np.allclose(x.grad.numpy(), 1 / (1 + np.exp(-x.numpy()))))

    print("gradcheck:", gradcheck(Softplus.apply, (x,)))
    print("gradgradcheck:", gradgradcheck(Softplus.apply, (x,)))
    ok = gradcheck(WrongSoftplus.apply, (x,), raise_exception=False)
    print("gradcheck of a wrong backward:", ok, "(expected False)")


if __name__ == "__main__":
    main()
