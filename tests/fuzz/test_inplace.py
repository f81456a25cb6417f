"""Fuzzing in-place ops on graph tensors against PyTorch: chains of ``add_``, ``mul_``,
``+=``, ``clamp_`` ... on a non-leaf, recorded in the graph as PyTorch records them
(values, first and second derivatives); see the package docstring."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import sandbox
from tests.support.torch_parity import compare

from . import FUZZ, draw_broadcast_partner, draw_shape, draw_values, th

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _torch(torch):
    return torch


#: in-place steps on h (a non-leaf) with the other operand o (broadcasting into h)
STEPS = {
    "add_": lambda h, o: h.add_(o, alpha=0.5),
    "sub_": lambda h, o: h.sub_(o),
    "mul_": lambda h, o: h.mul_(o),
    "iadd": lambda h, o: h.__iadd__(o),
    "imul": lambda h, o: h.__imul__(o),
    "isub_scalar": lambda h, o: h.__isub__(1.25),
    "clamp_": lambda h, o: h.clamp_(-0.5, 0.75),
    "tanh_": lambda h, o: h.tanh_(),
    "sigmoid_": lambda h, o: h.sigmoid_(),
    "copy_": lambda h, o: h.copy_(o * 2.0),
    "fill_": lambda h, o: h.fill_(0.5),
}


@FUZZ
@given(st.data())
def test_fuzz_in_place_chains_on_graph_tensors(data):
    shape = draw_shape(data, min_dims=1)
    partner = draw_broadcast_partner(data, shape)
    assume(np.broadcast_shapes(shape, partner) == tuple(shape))  # o must fit into h
    a, b = draw_values(data, shape), draw_values(data, partner)
    steps = data.draw(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
                      label="steps")

    def program(x, y):
        h = x * 1.5  # a non-leaf: in-place writes are recorded
        alias = h
        for name in steps:
            STEPS[name](h, y)
        return alias * alias + x  # alias is h: it saw every write

    torch = th()
    with torch.no_grad(), np.errstate(all="ignore"):
        value = program(torch.tensor(a), torch.tensor(b)).numpy()
    assume(np.isfinite(value).all())
    try:  # a step that overwrote a saved result (sigmoid_ then add_): torch refuses
        tx = torch.tensor(a, requires_grad=True)
        program(tx, torch.tensor(b)).sum().backward()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
        x = sandbox.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            program(x, sandbox.tensor(b)).sum().backward()
        return
    compare(program, program, [a, b], second=True)
