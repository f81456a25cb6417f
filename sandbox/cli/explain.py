"""``sandbox explain``: watch one tiny backward pass, step by step.

The network is ``x -> interpolate(mode, x2) -> conv2d(3x3, 2 filters) -> relu -> sum``.
:func:`explain` prints the graph the forward built (:func:`sandbox.autograd.graph`),
then runs ``loss.backward()`` with a hook on every tensor, so each step prints as
the engine reaches it: which node's backward is about to run and the gradient it
receives.  It ends with two checks: the adjoint identity of the resampling step
and a float64 finite-difference :func:`~sandbox.gradcheck.gradcheck` of the whole
network.
"""

from __future__ import annotations

import sys

import numpy as np

from ..array import resample
from ..autograd import Tensor, graph
from ..autograd.gradcheck import GradcheckError, gradcheck
from ..functional import conv2d, interpolate

__all__ = ["explain"]


def _norm(g) -> str:
    return f"|g| = {np.linalg.norm(g.numpy()):.4g}"


def _network(mode):
    """The example network as a function of (x, weight, bias)."""

    def net(x, weight, bias):
        up = interpolate(x, scale_factor=2, mode=mode)
        z = conv2d(up, weight, bias, padding=1)
        a = z.relu()
        return up, z, a, a.sum()

    return net


def explain(mode="bilinear", file=None) -> dict:
    """Print a step-by-step account of a tiny forward and backward pass.

    Parameters
    ----------
    mode : str
        Resampling mode of the ``interpolate`` step (any mode of
        :func:`sandbox.resample.resize`: nearest, nearest-exact, bilinear, bicubic,
        lanczos3, area ...).
    file : file-like, optional
        Where to print (default ``sys.stdout``).

    Returns
    -------
    dict
        ``steps``: the backward steps in order (node names, then ``leaf:<name>``),
        ``gradcheck``: True when the finite-difference check passed.
    """
    out = sys.stdout if file is None else file

    def say(text=""):
        print(text, file=out)

    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((1, 1, 3, 3)), requires_grad=True)
    weight = Tensor(rng.standard_normal((2, 1, 3, 3)) / 3, requires_grad=True)
    bias = Tensor(np.array([0.1, -0.1]), requires_grad=True)
    net = _network(mode)
    up, z, a, loss = net(x, weight, bias)

    say(f"sandbox explain --mode {mode}")
    say(
        f"forward: x (1, 1, 3, 3) -> interpolate(scale_factor=2, mode={mode!r}) -> conv2d(3x3, "
        "2 filters, padding=1) -> relu -> sum"
    )
    say()
    say("The graph the forward recorded (sandbox.autograd.graph(loss).text()):")
    names = {"x": x, "weight": weight, "bias": bias}
    for line in graph(loss, names=names).text().splitlines():
        say("  " + line)
    say()
    say("Backward: loss.backward() walks the graph from the loss to the leaves.")
    say("A hook on every tensor prints the gradient as it arrives (t.register_hook):")

    steps = []
    tensors = [("loss", loss), ("relu out", a), ("conv out", z), ("upsampled", up)]
    for name, t in tensors:
        node = t.grad_fn.name()

        def hook(g, name=name, node=node, t=t):
            steps.append(node)
            say(
                f"  step {len(steps)}: {node:<14} receives d loss/d {name:<9} "
                f"{str(tuple(g.shape)):<14} {_norm(g)}"
            )

        t.register_hook(hook)
    for name, t in names.items():

        def leaf_hook(g, name=name):
            steps.append(f"leaf:{name}")
            say(
                f"  step {len(steps)}: {'leaf ' + name:<14} .grad += d loss/d {name:<9} "
                f"{str(tuple(g.shape)):<14} {_norm(g)}"
            )

        t.register_hook(leaf_hook)
    loss.backward()
    say()
    say("Each node's backward turns the gradient of its output into gradients of its")
    say("inputs: SumBackward broadcasts ones, ReluBackward masks by (z > 0),")
    say("Conv2dBackward runs the transposed convolution (col2im) and the weight/bias")
    say("reductions, ResizeBackward applies the adjoint of the resampling map.")
    say()

    # The adjoint identity behind ResizeBackward: <A x, g> = <x, A^T g>.
    g = rng.standard_normal(up.shape)
    lhs = float(np.vdot(resample.resize(x.numpy(), scale_factor=2, mode=mode), g))
    rhs = float(np.vdot(x.numpy(), resample.resize_adjoint(g, (3, 3), scale_factor=2, mode=mode)))
    head = f"adjoint check ({mode}):"
    say(f"{head} <A x, g>   = {lhs:.12f}")
    say(f"{' ' * len(head)} <x, A^T g> = {rhs:.12f}   (difference {abs(lhs - rhs):.1e})")

    def f(x, weight, bias):
        return net(x, weight, bias)[-1]

    try:
        ok = gradcheck(
            f,
            (
                x.detach().requires_grad_(),
                weight.detach().requires_grad_(),
                bias.detach().requires_grad_(),
            ),
        )
        say("gradcheck (float64 central differences vs backward, x, weight, bias): passed")
    except GradcheckError as exc:
        ok = False
        say(f"gradcheck FAILED: {exc}")
    return {"steps": steps, "gradcheck": ok}
