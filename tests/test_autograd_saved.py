"""What a node saves for backward: 0-d outputs, the version counter, and release."""

import numpy as np
import pytest

import sandbox
from sandbox.autograd import grad


@pytest.mark.parametrize("op", ["relu", "exp", "sqrt", "sigmoid", "tanh"])
def test_zero_dim_saved_outputs_are_arrays(op):
    # ufuncs on 0-d arrays return numpy scalars; a saved scalar output must come
    # back as the node's output (relu's backward reads .data of it)
    x = sandbox.tensor(np.float64(0.7), requires_grad=True)
    y = getattr(x, op)()
    (g,) = grad(y, x, create_graph=True)
    ref = sandbox.tensor(np.array([0.7]), requires_grad=True)
    (g1,) = grad(getattr(ref, op)().sum(), ref, create_graph=True)
    assert g.shape == () and np.isclose(g.item(), g1.item())
    if op != "relu":  # relu's gradient is piecewise constant: no graph to differentiate
        (gg,) = grad(g, x)
        (gg1,) = grad(g1.sum(), ref)
        assert np.isclose(gg.item(), gg1.item())
