"""Graph introspection, tensor hooks and anomaly detection (sandbox.autograd)."""

import inspect
import sys
import warnings

import numpy as np
import pytest

from sandbox import autograd
from sandbox.autograd import Function, Tensor, detect_anomaly, graph, no_grad


def leaf(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def known_graph():
    x = Tensor(np.ones((2, 3)), requires_grad=True)
    w = Tensor(np.arange(3.0), requires_grad=True)
    c = Tensor(np.ones(3))
    return x, w, (x * w + c).sum()


class Split(Function):
    """Two outputs: the positive and the negative part."""

    @staticmethod
    def forward(ctx, x):
        return np.maximum(x, 0), np.minimum(x, 0)

    @staticmethod
    def backward(ctx, gp, gn):
        return gp + gn  # a sub-gradient is enough here


# ----------------------------------------------------------------------------- graph
GOLDEN_TEXT = """\
graph: 3 ops, 2 leaves requiring grad, 1 constant
inputs
  x  : (2, 3) float64  leaf, requires_grad
  w  : (3,) float64    leaf, requires_grad
  c0 : (3,) float64    constant, no grad
ops (forward order; backward runs them bottom to top)
  %0 : (2, 3) float64  = MulBackward(x, w)
  %1 : (2, 3) float64  = AddBackward(%0, c0)
  %2 : () float64      = SumBackward(%1)  <- output"""

GOLDEN_DOT = """\
digraph autograd {
  node [fontname="Helvetica", fontsize=10, shape=box];
  "x" [label="x\\n(2, 3) float64", style=filled, fillcolor="#cfe2f3"];
  "w" [label="w\\n(3,) float64", style=filled, fillcolor="#cfe2f3"];
  "c0" [label="c0\\n(3,) float64", style=dashed];
  "%0" [label="MulBackward\\n(2, 3) float64", style="rounded,filled", fillcolor="#fff2cc"];
  "%1" [label="AddBackward\\n(2, 3) float64", style="rounded,filled", fillcolor="#fff2cc"];
  "%2" [label="SumBackward\\n() float64", style="rounded,filled", fillcolor="#d9ead3"];
  "x" -> "%0";
  "w" -> "%0";
  "%0" -> "%1";
  "c0" -> "%1";
  "%1" -> "%2";
}
"""


def test_graph_text_golden():
    x, w, y = known_graph()
    g = graph(y, names={"x": x, "w": w})
    assert g.text() == GOLDEN_TEXT
    assert str(g) == GOLDEN_TEXT
    assert repr(g) == "<Graph: 3 ops, 3 inputs>"


def test_graph_dot_golden():
    x, w, y = known_graph()
    assert graph(y, names={"x": x, "w": w}).dot() == GOLDEN_DOT


def test_graph_default_names_pairs_and_structure():
    x, w, y = known_graph()
    g = graph(y)
    assert [i["id"] for i in g.inputs] == ["leaf0", "leaf1", "c0"]
    assert [op["name"] for op in g.ops] == ["MulBackward", "AddBackward", "SumBackward"]
    assert g.ops[0]["args"] == [("leaf0", None), ("leaf1", None)]
    assert g.outputs == [("%2", None)]
    named = graph(y, names=[("input", x), ("weight", w)])  # e.g. model.named_parameters()
    assert "MulBackward(input, weight)" in named.text()


def test_graph_multi_output_and_several_roots():
    x = leaf(4)
    p, n = Split.apply(x)
    g = graph([p.exp(), n], names={"x": x})
    text = g.text()
    assert "%0 : (4,) float64, (4,) float64  = SplitBackward(x)" in text
    assert "= ExpBackward(%0.0)  <- output 0" in text
    assert "<- output 1" in text  # n is the node's second output
    assert '"%0" -> "%1" [label="0"];' in g.dot()


def test_graph_shared_subexpression_listed_once_in_order():
    x = leaf(3)
    h = x.exp()
    y = (h * h + h).sum()
    names = [op["name"] for op in graph(y).ops]
    assert names == ["ExpBackward", "MulBackward", "AddBackward", "SumBackward"]


def test_graph_after_backward_shows_freed_node():
    x, w, y = known_graph()
    y.backward()
    text = graph(y, names={"x": x}).text()
    assert "= SumBackward(<freed>)" in text and "graph: 1 op," in text


def test_graph_of_a_leaf_and_deep_chain():
    x = leaf(2)
    assert graph(x, names={"x": x}).text().startswith("graph: 0 ops, 1 leaf requiring grad")
    y = x
    for _ in range(3000):  # deeper than the recursion limit
        y = y * 1.0
    assert len(graph(y).ops) == 3000


def test_graph_dot_escapes_names():
    x = leaf(2)
    dot = graph(x.sum(), names={'enc.0."w"': x}).dot()
    assert '"enc.0.\\"w\\"" -> "%0";' in dot


def test_render_without_graphviz_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr("shutil.which", lambda name: None)
    _, _, y = known_graph()
    with pytest.raises(RuntimeError, match="Graphviz 'dot' program"):
        graph(y).render(tmp_path / "g.png")


def test_render_png_when_dot_is_available(tmp_path):
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("graphviz 'dot' not installed")
    _, _, y = known_graph()
    out = graph(y).render(tmp_path / "g.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- hooks
def test_leaf_hook_observes_summed_grad_once():
    x = leaf(3)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * 2 + x * 3).sum().backward()  # two paths into x
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 5.0)
    np.testing.assert_allclose(x.grad.numpy(), 5.0)


def test_leaf_hook_replaces_before_accumulation():
    x = leaf(3)
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    x.register_hook(lambda g: g * 10)  # runs after the first, sees its input
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_allclose(seen, [[2.0] * 3, [2.0] * 3])  # the new grad, not .grad
    np.testing.assert_allclose(x.grad.numpy(), 40.0)  # 20 + 20


def test_hooks_chain_in_registration_order():
    x = leaf(2)
    order = []
    x.register_hook(lambda g: order.append("a") or g + 1)
    x.register_hook(lambda g: order.append("b") or g * 3)
    x.sum().backward()
    assert order == ["a", "b"]
    np.testing.assert_allclose(x.grad.numpy(), 6.0)  # (1 + 1) * 3


def test_non_leaf_hook_changes_upstream_grads():
    x = leaf(3)
    h = x.exp()
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    h.register_hook(lambda g: g * 0.5)
    (h * 4 + h).sum().backward()  # h fans out: hook gets the sum, once
    np.testing.assert_allclose(seen, [[5.0] * 3])
    np.testing.assert_allclose(x.grad.numpy(), 2.5 * np.exp(x.numpy()))


def test_non_leaf_hook_survives_the_tensor_object_and_feeds_retain_grad():
    x = leaf(3)
    h = x * 2
    h.retain_grad()
    h.register_hook(lambda g: g * 3)
    y = h.sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(h.grad.numpy(), 3.0)  # retain_grad sees the hooked grad
    np.testing.assert_allclose(x.grad.numpy(), 6.0)
    calls = []
    h2 = x * 5
    h2.register_hook(lambda g: calls.append(1))
    y2 = h2.sum()
    del h2  # the hook lives on the node, as in PyTorch
    y2.backward()
    assert calls == [1]


def test_hook_order_follows_the_backward_walk():
    x = leaf(2)
    a = x.exp()
    b = a * 3
    order = []
    for name, t in (("x", x), ("a", a), ("b", b)):
        t.register_hook(lambda g, name=name: order.append(name))
    b.sum().backward()
    assert order == ["b", "a", "x"]


def test_remove_handle_and_context_manager():
    x = leaf(2)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1) or g * 100)
    handle.remove()
    handle.remove()  # twice is fine
    x.sum().backward()
    assert calls == [] and np.allclose(x.grad.numpy(), 1.0)
    y = x * 2
    with y.register_hook(lambda g: calls.append(2)):
        y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert calls == [2]


def test_hooks_apply_to_grad_inputs():
    x = leaf(2)
    h = x * 3
    x.register_hook(lambda g: g + 1)
    h.register_hook(lambda g: g * 2)
    gx, gh = autograd.grad(h.sum(), [x, h])
    np.testing.assert_allclose(gh.numpy(), 2.0)
    np.testing.assert_allclose(gx.numpy(), 7.0)  # 2 * 3 + 1
    assert x.grad is None


def test_hook_under_create_graph_gets_differentiable_grad():
    x = leaf(3)
    handle = x.register_hook(lambda g: g * x)  # the replacement is recorded too
    (g,) = autograd.grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() * x.numpy())
    handle.remove()  # hooks run in every pass; without it the next grad is hooked too
    (gg,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 4 * x.numpy(), rtol=1e-12)


def test_hook_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(np.ones(2)).register_hook(lambda g: None)
    with pytest.raises(TypeError, match="callable"):
        leaf(2).register_hook(3)
    x = leaf(2)
    x.register_hook(lambda g: np.zeros(5))
    with pytest.raises(RuntimeError, match=r"shape \(5,\), expected \(2,\)"):
        x.sum().backward()


# ----------------------------------------------------------------------------- anomaly
class NaNBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * np.nan


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom")


def _line():
    return inspect.currentframe().f_back.f_lineno


def test_anomaly_names_op_and_forward_line():
    x = leaf(3)
    with detect_anomaly():
        line = _line() + 1
        y = NaNBackward.apply(x)
        loss = (y.exp() * 2).sum()
        with pytest.raises(RuntimeError) as info:
            loss.backward()
    msg = str(info.value)
    assert msg.startswith("Function 'NaNBackwardBackward' returned nan values")
    assert f"{__file__}:{line} in test_anomaly_names_op_and_forward_line" in msg
    assert "y = NaNBackward.apply(x)" in msg  # the forward traceback shows the source line


def test_anomaly_through_builtin_op_points_at_user_line():
    x = Tensor(np.array([1.0, 0.0]), requires_grad=True)
    with detect_anomaly(), np.errstate(divide="ignore"):
        line = _line() + 1
        y = x.log().sum()
        with pytest.raises(RuntimeError, match="'LogBackward' returned inf") as info:
            y.backward()
    assert f"{__file__}:{line}" in str(info.value)


def test_anomaly_inactive_records_nothing_and_lets_nan_through():
    x = leaf(3)
    y = NaNBackward.apply(x)
    assert y.grad_fn._trace is None
    assert not autograd.is_anomaly_enabled()
    y.sum().backward()
    assert np.isnan(x.grad.numpy()).all()


def test_anomaly_graph_recorded_outside_context():
    x = leaf(3)
    y = NaNBackward.apply(x).sum()
    with detect_anomaly(), pytest.raises(RuntimeError, match="No forward trace"):
        y.backward()


def test_anomaly_check_nan_off_and_decorator_and_restore():
    x = leaf(3)

    @detect_anomaly(check_nan=False)
    def run():
        assert autograd.is_anomaly_enabled()
        NaNBackward.apply(x).sum().backward()

    run()
    assert not autograd.is_anomaly_enabled()
    assert np.isnan(x.grad.numpy()).all()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes need 3.11")
def test_anomaly_annotates_errors_raised_in_backward():
    x = leaf(2)
    with detect_anomaly():
        y = Boom.apply(x).sum()
        with pytest.raises(ValueError, match="boom") as info:
            y.backward()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "BoomBackward" in notes and __file__ in notes


def test_anomaly_no_false_alarm_and_no_grad():
    x = leaf(3)
    with detect_anomaly():
        with no_grad():
            assert NaNBackward.apply(x).grad_fn is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (x.exp() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.numpy()) * (1 + x.numpy()))
