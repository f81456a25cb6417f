"""Losses and dropout: torch parity (values and gradients), gradcheck, stability, errors."""

import numpy as np
import pytest

import sandbox.functional as F
from sandbox.autograd import Tensor
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
LOGITS = RNG.standard_normal((3, 4, 2, 3))
LABELS = RNG.integers(0, 4, (3, 2, 3))
LABELS_IGN = LABELS.copy()
LABELS_IGN[0, 0, :] = -100
LABELS_IGN[2, 1, 1] = 255
WEIGHT = np.array([0.5, 2.0, 1.0, 1.5])


def _both(torch, x):
    return Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)


def _compare(torch, ours_loss, theirs_loss, ours_x, theirs_x):
    np.testing.assert_allclose(ours_loss.numpy(), theirs_loss.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = np.random.default_rng(0).standard_normal(ours_loss.shape)
    ours_loss.backward(g)
    theirs_loss.backward(torch.tensor(g))
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("ignore", [None, -100, 255])
def test_cross_entropy_parity(torch, reduction, weighted, smoothing, ignore):
    labels = LABELS if ignore is None else np.where(LABELS_IGN == -100, ignore, LABELS)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if ignore is not None:
        kw["ignore_index"] = ignore
    x, tx = _both(torch, LOGITS)
    ours = F.cross_entropy(x, Tensor(labels), weight=WEIGHT if weighted else None, **kw)
    theirs = torch.nn.functional.cross_entropy(
        tx, torch.tensor(labels), weight=torch.tensor(WEIGHT) if weighted else None, **kw
    )
    _compare(torch, ours, theirs, x, tx)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_2d_unbatched_and_probability_targets(torch, reduction):
    fn = torch.nn.functional.cross_entropy
    x, tx = _both(torch, LOGITS[:, :, 0, 0])  # (N, C)
    _compare(
        torch,
        F.cross_entropy(x, LABELS[:, 0, 0], reduction=reduction),
        fn(tx, torch.tensor(LABELS[:, 0, 0]), reduction=reduction),
        x,
        tx,
    )
    x, tx = _both(torch, LOGITS[0, :, 0, 0])  # (C,) with a scalar target
    _compare(
        torch,
        F.cross_entropy(x, np.array(2), reduction=reduction),
        fn(tx, torch.tensor(2), reduction=reduction),
        x,
        tx,
    )
    probs = np.random.default_rng(1).dirichlet(np.ones(4), size=(3, 2, 3)).transpose(0, 3, 1, 2)
    x, tx = _both(torch, LOGITS)
    kw = dict(reduction=reduction, weight=WEIGHT, label_smoothing=0.1)
    _compare(
        torch,
        F.cross_entropy(x, probs, weight=WEIGHT, reduction=reduction, label_smoothing=0.1),
        fn(tx, torch.tensor(probs), **{**kw, "weight": torch.tensor(WEIGHT)}),
        x,
        tx,
    )


def test_cross_entropy_all_ignored_is_nan_like_torch(torch):
    x, tx = _both(torch, LOGITS)
    labels = np.full(LABELS.shape, -100)
    ours = F.cross_entropy(x, labels)
    theirs = torch.nn.functional.cross_entropy(tx, torch.tensor(labels))
    assert np.isnan(ours.item()) and np.isnan(theirs.item())


def test_nll_loss_parity(torch):
    logp = np.log(np.random.default_rng(2).dirichlet(np.ones(4), size=5))
    x, tx = _both(torch, logp)
    _compare(
        torch,
        F.nll_loss(x, LABELS_IGN[0].ravel()[:5].clip(-100, 3), weight=WEIGHT),
        torch.nn.functional.nll_loss(
            tx, torch.tensor(LABELS_IGN[0].ravel()[:5].clip(-100, 3)), weight=torch.tensor(WEIGHT)
        ),
        x,
        tx,
    )


def test_cross_entropy_float32_stable_and_gradcheck():
    x = Tensor(np.array([[1000.0, -1000.0, 0.0]], np.float32), requires_grad=True)
    loss = F.cross_entropy(x, np.array([1]))
    assert loss.dtype == np.float32 and np.isclose(loss.item(), 2000.0)
    loss.backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    x64 = Tensor(LOGITS[:2, :, :1].copy(), requires_grad=True)
    fn = lambda t: F.cross_entropy(t, LABELS_IGN[:2, :1], weight=WEIGHT, label_smoothing=0.1)  # noqa: E731
    assert gradcheck(fn, (x64,))
    assert gradgradcheck(fn, (x64,))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weights", [False, True])
def test_bce_with_logits_parity(torch, reduction, weights):
    x = np.random.default_rng(3).standard_normal((2, 3, 4)) * 3
    x[0, 0, :2] = [0.0, 40.0]  # exactly 0 (zero-initialised heads) and large
    target = (np.random.default_rng(4).random((2, 3, 4)) > 0.5).astype(np.float64)
    w = np.random.default_rng(5).random((3, 1)) + 0.5 if weights else None
    pw = np.array([0.5, 2.0, 3.0]).reshape(3, 1) if weights else None
    ox, tx = _both(torch, x)
    ours = F.binary_cross_entropy_with_logits(ox, target, w, pw, reduction)
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(
        tx,
        torch.tensor(target),
        None if w is None else torch.tensor(w),
        reduction=reduction,
        pos_weight=None if pw is None else torch.tensor(pw),
    )
    _compare(torch, ours, theirs, ox, tx)


def test_bce_with_logits_stable_and_gradcheck():
    x = Tensor(np.array([-1e4, -50.0, 0.0, 50.0, 1e4], np.float32), requires_grad=True)
    t = np.array([1.0, 0.0, 1.0, 1.0, 0.0], np.float32)
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    np.testing.assert_allclose(loss.numpy(), [1e4, 0.0, np.log(2), 0.0, 1e4], rtol=1e-6, atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, 0.0, -0.5, 0.0, 1.0], atol=1e-6)
    x64 = Tensor(np.linspace(-3, 3, 6), requires_grad=True)
    t64 = Tensor(np.linspace(0, 1, 6), requires_grad=True)  # soft targets are differentiable
    pw = np.linspace(0.5, 2, 6)
    fn = lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=pw)  # noqa: E731
    assert gradcheck(fn, (x64, t64)) and gradgradcheck(fn, (x64, t64))


def test_mse_loss_parity_and_gradcheck(torch):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    for reduction in ("mean", "sum", "none"):
        ox, tx = _both(torch, a)
        _compare(
            torch,
            F.mse_loss(ox, b, reduction),
            torch.nn.functional.mse_loss(tx, torch.tensor(b), reduction=reduction),
            ox,
            tx,
        )
    assert gradcheck(F.mse_loss, (Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)))


def _dice_reference(logits, labels, eps, ignore=None):
    c = logits.shape[1]
    valid = np.ones(labels.shape, bool) if ignore is None else labels != ignore
    if c == 1:
        p = 1 / (1 + np.exp(-logits[:, 0]))
        pairs = [(p * valid, (labels > 0) * valid)]
    else:
        e = np.exp(logits - logits.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        pairs = [(p[:, k] * valid, (labels == k) * valid) for k in range(c)]
    dices = [(2 * (pk * tk).sum() + eps) / (pk.sum() + tk.sum() + eps) for pk, tk in pairs]
    return 1 - np.mean(dices)


def test_dice_loss_multiclass_binary_and_ignore():
    loss = F.dice_loss(Tensor(LOGITS), LABELS, num_classes=4)
    np.testing.assert_allclose(loss.item(), _dice_reference(LOGITS, LABELS, 1.0))
    lab = np.where(LABELS_IGN == 255, -100, LABELS_IGN)
    loss = F.dice_loss(Tensor(LOGITS), lab, eps=0.5, ignore_index=-100)
    np.testing.assert_allclose(loss.item(), _dice_reference(LOGITS, lab, 0.5, ignore=-100))
    binary = LOGITS[:, :1]
    fg = (LABELS > 1).astype(np.int64)
    np.testing.assert_allclose(
        F.dice_loss(Tensor(binary), fg).item(), _dice_reference(binary, fg, 1.0)
    )
    np.testing.assert_allclose(
        F.dice_loss(Tensor(binary), fg[:, None].astype(float)).item(),
        _dice_reference(binary, fg, 1.0),
    )
    perfect = F.dice_loss(
        Tensor(np.where(np.arange(4)[None, :, None, None] == LABELS[:, None], 50.0, -50.0)),
        LABELS,
        eps=1e-6,
    )
    assert perfect.item() < 1e-6


def test_dice_loss_gradcheck():
    x = Tensor(LOGITS[:2, :, :1].copy(), requires_grad=True)
    assert gradcheck(lambda t: F.dice_loss(t, LABELS_IGN[:2, :1], ignore_index=-100), (x,))
    xb = Tensor(LOGITS[:2, :1].copy(), requires_grad=True)
    assert gradcheck(lambda t: F.dice_loss(t, LABELS[:2] > 1), (xb,))


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda x: F.cross_entropy(x, LABELS, reduction="avg"), ValueError, "reduction must be"),
        (lambda x: F.cross_entropy(x, LABELS[:, :1]), ValueError, "target shape"),
        (lambda x: F.cross_entropy(x, LABELS + 4), ValueError, "out of range for 4 classes"),
        (lambda x: F.cross_entropy(x, LABELS.astype(float)), ValueError, "probability target"),
        (lambda x: F.cross_entropy(x, LABELS, weight=np.ones(3)), ValueError, r"weight.*\(4,\)"),
        (lambda x: F.cross_entropy(x, LABELS, label_smoothing=2.0), ValueError, "label_smoothing"),
        (lambda x: F.binary_cross_entropy_with_logits(x, LABELS), ValueError, "target shape"),
        (lambda x: F.mse_loss(x, np.ones(3)), ValueError, "target shape"),
        (lambda x: F.dice_loss(x, LABELS, num_classes=3), ValueError, "num_classes=3"),
        (lambda x: F.dice_loss(x, LABELS[0]), ValueError, "target shape"),
        (lambda x: F.dropout(x, 1.5), ValueError, r"p must be in \[0, 1\]"),
        (lambda x: F.dropout2d(x[0, 0], 0.5), ValueError, "dropout2d expects"),
    ],
)
def test_loss_errors(call, err, match):
    with pytest.raises(err, match=match):
        call(Tensor(LOGITS))


def test_integer_index_target_required():
    with pytest.raises(TypeError, match="integer"):
        F.nll_loss(Tensor(LOGITS[:, :, 0, 0]), np.zeros(3, np.float32))


# ----------------------------------------------------------------------------- dropout
def test_dropout_statistics_scaling_and_gradient():
    x = Tensor(np.ones((200, 100), np.float32), requires_grad=True)
    y = F.dropout(x, 0.3, rng=np.random.default_rng(0))
    assert y.dtype == np.float32
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y.numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())  # d/dx (x * mask) = mask


def test_dropout_eval_p0_p1_and_determinism():
    x = Tensor(np.ones((4, 5)), requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not F.dropout(x, 1.0).numpy().any()
    a = F.dropout(x, 0.5, rng=np.random.default_rng(3)).numpy()
    b = F.dropout(x, 0.5, rng=np.random.default_rng(3)).numpy()
    np.testing.assert_array_equal(a, b)


def test_dropout2d_drops_whole_channels():
    x = Tensor(np.ones((8, 16, 5, 5)), requires_grad=True)
    y = F.dropout2d(x, 0.5, rng=np.random.default_rng(1)).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    assert F.dropout2d(Tensor(np.ones((3, 4, 4))), 0.5).shape == (3, 4, 4)
    assert F.dropout2d(x, 0.5, training=False) is x


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_index_cross_entropy_node_gradcheck(reduction, weighted):
    # index targets without label smoothing take the one-node path (_IndexCrossEntropy)
    x64 = Tensor(LOGITS[:2, :, :2].copy(), requires_grad=True)
    kw = dict(weight=WEIGHT if weighted else None, reduction=reduction)
    fn = lambda t: F.cross_entropy(t, LABELS_IGN[:2, :2], **kw)  # noqa: E731
    assert fn(x64).grad_fn.name() == "_IndexCrossEntropyBackward"
    assert gradcheck(fn, (x64,))
    assert gradgradcheck(fn, (x64,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"ignore_index": 1}, {"weight": "w"}])
def test_index_cross_entropy_node_gives_the_compositions_bits(dtype, kw):
    from sandbox.functional import _loss
    from sandbox.ops import log_softmax

    rng = np.random.default_rng(5)
    logits = rng.standard_normal((4, 3, 9, 7)).astype(dtype)
    labels = rng.integers(0, 3, (4, 9, 7))
    if kw.get("weight") == "w":
        kw = {"weight": rng.random(3).astype(dtype)}
    results = []
    for fused in (True, False):
        x = Tensor(logits.copy(), requires_grad=True)
        if fused:
            loss = F.cross_entropy(x, labels, **kw)
        else:  # the composition every other case takes
            loss = _loss._nll(log_softmax(x, 1), labels, kw.get("weight"),
                              kw.get("ignore_index", -100), kw.get("reduction", "mean"), 0.0,
                              "cross_entropy")
        (loss.sum() if loss.ndim else loss).backward()
        results.append((loss.numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("limit", [None, 10])
def test_unweighted_cross_entropy_without_arrays_of_ones_gives_the_weighted_bits(
        dtype, reduction, limit, monkeypatch):
    """Without class weights every element's weight is 1: the node skips the array of ones
    (x * 1 is x; the mean divides by the count), with the bits of the weighted path given
    weights of 1, loss and gradient; past _EXACT_COUNT elements (set to 10 here) it keeps
    the array, with the same bits."""
    from sandbox.functional import _loss

    if limit is not None:
        monkeypatch.setattr(_loss, "_EXACT_COUNT", limit)
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((4, 3, 9, 7)).astype(dtype)
    labels = rng.integers(0, 3, (4, 9, 7))
    *_, wt = _loss._index_targets(Tensor(logits), labels, None, -100, "cross_entropy",
                                  unit=True)
    assert (wt is None) == (limit is None)  # the path under test is the one taken
    results = []
    for weight in (None, np.ones(3, dtype)):
        x = Tensor(logits.copy(), requires_grad=True)
        loss = F.cross_entropy(x, labels, weight=weight, reduction=reduction)
        (loss.sum() if loss.ndim else loss).backward()
        results.append((loss.numpy(), x.grad.numpy()))
    for a, b in zip(*results, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_float16_logits_take_the_composition():
    rng = np.random.default_rng(6)
    x = Tensor(rng.standard_normal((2, 3, 4)).astype(np.float16), requires_grad=True)
    loss = F.cross_entropy(x, rng.integers(0, 3, (2, 4)))
    loss.backward()
    assert loss.dtype == np.float16 and x.grad.dtype == np.float16
    assert np.isfinite(loss.item()) and loss.grad_fn.name() != "_IndexCrossEntropyBackward"


POINTWISE = {"mse": ("mse_loss", {}), "l1": ("l1_loss", {}),
             "bce_with_logits": ("binary_cross_entropy_with_logits", {})}


def _pointwise_data(kind, shape, dtype):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    x.flat[:4] = [0.0, 40.0, -40.0, 1e4]  # zero-initialised heads, saturated logits
    if kind == "bce_with_logits":
        t = (rng.random(shape) > 0.5).astype(dtype)
        t.flat[4:6] = [0.25, 0.75]  # soft targets
    else:
        t = rng.standard_normal(shape).astype(dtype)
        t.flat[4] = x.flat[4]  # equal: L1's slope is 0 there
    return x, t


@pytest.mark.parametrize("kind", list(POINTWISE))
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pointwise_losses_are_one_node_with_torchs_values_and_gradients(
        torch, kind, reduction, dtype, monkeypatch):
    """MSE, L1 and BCE on logits reduced by a mean or a sum run the kernels (one node):
    the loss and the input and target gradients as torch's, on a map of several of the
    sum's chunks; the same bits for 1-3 threads."""
    import sandbox
    from sandbox.array import pointwise_loss

    calls = []
    real_sum = pointwise_loss.loss_sum
    monkeypatch.setattr(pointwise_loss, "loss_sum",
                        lambda *a: calls.append(a[0]) or real_sum(*a))
    x, t = _pointwise_data(kind, (2, 3, 130, 170), dtype)  # 132,600: three chunks
    name, _ = POINTWISE[kind]
    runs = []
    previous = sandbox.get_num_threads()
    try:
        for threads in (1, 2, 3):
            sandbox.set_num_threads(threads)
            ox, ot = Tensor(x, requires_grad=True), Tensor(t, requires_grad=True)
            loss = getattr(F, name)(ox, ot, reduction=reduction)
            loss.backward()
            runs.append((loss.numpy().tobytes(), ox.grad.numpy().tobytes(),
                         ot.grad.numpy().tobytes()))
    finally:
        sandbox.set_num_threads(previous)
    assert calls == [kind] * 3 and runs[0] == runs[1] == runs[2]
    tx, tt = (torch.tensor(a, requires_grad=True) for a in (x, t))
    theirs = getattr(torch.nn.functional, name)(tx, tt, reduction=reduction)
    theirs.backward()
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(loss.numpy(), theirs.detach().numpy(), **tol)
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(ot.grad.numpy(), tt.grad.numpy(), **tol)
    assert loss.dtype == dtype and ox.grad.dtype == dtype


@pytest.mark.parametrize("kind", list(POINTWISE))
def test_pointwise_loss_nodes_have_second_derivatives(kind):
    """Under create_graph the node's backward is tensor ops: gradgradcheck in float64
    (L1's slope is piecewise constant, its second derivative 0)."""
    x, t = _pointwise_data(kind, (3, 5), np.float64)
    x[0, :4] = [0.3, 1.5, -1.2, 2.0]  # nothing saturated: finite differences work
    name, _ = POINTWISE[kind]
    fn = lambda a, b: getattr(F, name)(a, b)  # noqa: E731
    args = (Tensor(x, requires_grad=True), Tensor(t + 0.01, requires_grad=True))
    assert gradcheck(fn, args) and gradgradcheck(fn, args)


def test_pointwise_losses_keep_the_composition_for_none_and_trained_weights(monkeypatch):
    """reduction="none", a weight that requires grad, one that does not broadcast, and a
    target of another dtype take the composition, not the kernels."""
    from sandbox.array import pointwise_loss

    monkeypatch.setattr(pointwise_loss, "loss_sum", lambda *a: pytest.fail("kernel ran"))
    x = Tensor(np.linspace(-2, 2, 12).reshape(3, 4), requires_grad=True)
    t = np.linspace(0, 1, 12).reshape(3, 4)
    F.mse_loss(x, t, reduction="none").sum().backward()
    F.l1_loss(x, t, reduction="none")
    F.binary_cross_entropy_with_logits(x, t, weight=Tensor(np.ones(4), requires_grad=True))
    with pytest.raises(ValueError):
        F.binary_cross_entropy_with_logits(x, t, pos_weight=np.ones(3))
    F.mse_loss(x, Tensor(t.astype(np.float32)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("which", ["weight", "pos_weight", "both"])
def test_weighted_bce_with_logits_is_one_node_with_torchs_values_and_gradients(
        torch, dtype, reduction, which, monkeypatch):
    """A per-channel pos_weight (C, 1, 1) and a per-sample weight (N, 1, 1, 1), alone or
    together, run the kernel: torch's loss and input and target gradients."""
    from sandbox.array import pointwise_loss

    calls = []
    real_sum = pointwise_loss.loss_sum
    monkeypatch.setattr(pointwise_loss, "loss_sum",
                        lambda *a: calls.append(a[0]) or real_sum(*a))
    x, t = _pointwise_data("bce_with_logits", (3, 4, 20, 30), dtype)
    w = np.linspace(0.5, 2, 3).reshape(3, 1, 1, 1).astype(dtype) if which != "pos_weight" \
        else None
    pw = np.linspace(0.25, 4, 4).reshape(4, 1, 1).astype(dtype) if which != "weight" else None
    ox, ot = Tensor(x, requires_grad=True), Tensor(t, requires_grad=True)
    ours = F.binary_cross_entropy_with_logits(ox, ot, w, pw, reduction)
    ours.backward()
    tx, tt = (torch.tensor(a, requires_grad=True) for a in (x, t))
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(
        tx, tt, None if w is None else torch.tensor(w), reduction=reduction,
        pos_weight=None if pw is None else torch.tensor(pw))
    theirs.backward()
    assert calls == ["bce_with_logits"]
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **tol)
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(ot.grad.numpy(), tt.grad.numpy(), **tol)


def test_weighted_bce_with_logits_node_has_second_derivatives():
    """gradgradcheck through the weighted node's create_graph path (float64)."""
    x = np.linspace(-2, 2, 12).reshape(2, 2, 3)
    t = np.linspace(0, 1, 12).reshape(2, 2, 3)
    w, pw = np.array([0.5, 1.5]).reshape(2, 1, 1), np.array([2.0, 0.5, 1.0])
    fn = lambda a, b: F.binary_cross_entropy_with_logits(a, b, w, pw)  # noqa: E731
    args = (Tensor(x, requires_grad=True), Tensor(t, requires_grad=True))
    assert gradcheck(fn, args) and gradgradcheck(fn, args)


@pytest.mark.parametrize("kind", list(POINTWISE))
def test_pointwise_loss_nodes_take_strided_inputs_and_0d(torch, kind):
    """A strided view of the input (every other channel) and a 0-d input: torch's loss
    and input gradient."""
    x, t = _pointwise_data(kind, (4, 6, 10), np.float32)
    name, _ = POINTWISE[kind]
    for take, target in ((lambda a: a[:, ::2], t[:, ::2]), (lambda a: a[1, 1, 3], t[1, 1, 3])):
        ox, tx = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours = getattr(F, name)(take(ox), np.array(target))
        theirs = getattr(torch.nn.functional, name)(take(tx), torch.tensor(target))
        ours.backward()
        theirs.backward()
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-7)
