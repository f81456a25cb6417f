"""Fuzzing ``sandbox.functional`` against PyTorch (see the package docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sandbox
import sandbox.functional as F
from tests.support.torch_parity import compare

from . import FUZZ, draw_broadcast_partner, draw_shape, draw_values, th

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _torch(torch):
    return torch


# ------------------------------------------------------------------------------ losses
@FUZZ
@given(st.data())
def test_fuzz_classification_losses(data):
    torch = th()
    tf = torch.nn.functional
    n_classes = data.draw(st.integers(1, 4), label="classes")
    spatial = draw_shape(data, max_dims=2, min_side=1, max_side=2)
    batched = data.draw(st.booleans(), label="batched") or spatial
    n = data.draw(st.integers(1, 3), label="batch")
    shape = (n, n_classes) + spatial if batched else (n_classes,)
    tshape = (n,) + spatial if batched else ()
    reduction = data.draw(st.sampled_from(["mean", "sum", "none"]), label="reduction")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="target seed"))
    weight = rng.uniform(0.2, 2.0, n_classes) if data.draw(st.booleans(), label="w") else None
    tw = None if weight is None else torch.from_numpy(weight)
    x = draw_values(data, shape) * 2
    loss = data.draw(st.sampled_from(["cross_entropy", "nll_loss", "ce_probs"]), label="loss")
    if loss == "ce_probs":
        smoothing = data.draw(st.sampled_from([0.0, 0.1]), label="smoothing")
        p = rng.dirichlet(np.ones(n_classes), size=int(np.prod(tshape))).reshape(
            tshape + (n_classes,)
        )
        p = np.moveaxis(p, -1, 1 if batched else 0).copy()
        compare(
            lambda a, t: F.cross_entropy(
                a, t, weight=weight, reduction=reduction, label_smoothing=smoothing
            ),
            lambda a, t: tf.cross_entropy(
                a, t, weight=tw, reduction=reduction, label_smoothing=smoothing
            ),
            [x, p],
            second=True,
        )
        return
    ignore = data.draw(st.sampled_from([-100, 0, 1]), label="ignore_index")
    target = rng.integers(0, n_classes, size=tshape)
    if data.draw(st.booleans(), label="some ignored"):
        target = np.where(rng.random(tshape) < 0.5, ignore, target)
    if data.draw(st.booleans(), label="all ignored"):
        target = np.full(tshape, ignore)
    target = np.asarray(target, np.int64)
    if loss == "cross_entropy":
        smoothing = data.draw(st.sampled_from([0.0, 0.2]), label="smoothing")
        opts = dict(ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)
        compare(
            lambda a: F.cross_entropy(a, sandbox.tensor(target), weight=weight, **opts),
            lambda a: tf.cross_entropy(a, torch.from_numpy(target), weight=tw, **opts),
            [x],
            second=True,
        )
    else:
        opts = dict(ignore_index=ignore, reduction=reduction)
        compare(
            lambda a: F.nll_loss(a.log_softmax(1 if batched else 0), sandbox.tensor(target),
                                 weight=weight, **opts),
            lambda a: tf.nll_loss(a.log_softmax(1 if batched else 0), torch.from_numpy(target),
                                  weight=tw, **opts),
            [x],
            second=True,
        )


@FUZZ
@given(st.data())
def test_fuzz_regression_losses(data):
    tf = th().nn.functional
    shape = draw_shape(data, max_dims=3)
    reduction = data.draw(st.sampled_from(["mean", "sum", "none"]), label="reduction")
    x = draw_values(data, shape) * 3
    if data.draw(st.booleans(), label="mse"):
        y = draw_values(data, shape)
        compare(lambda a, b: F.mse_loss(a, b, reduction), lambda a, b: tf.mse_loss(a, b,
                reduction=reduction), [x, y], second=True)
        return
    t = np.asarray(draw_values(data, shape) > 0, np.float64)
    w = draw_values(data, draw_broadcast_partner(data, shape), "positive")
    use_w, use_pw = data.draw(st.booleans(), label="weight"), data.draw(st.booleans(), label="pw")
    pw = draw_values(data, shape[-1:], "positive")
    compare(
        lambda a, ww, pp: F.binary_cross_entropy_with_logits(
            a, t, weight=ww if use_w else None, pos_weight=pp if use_pw else None,
            reduction=reduction),
        lambda a, ww, pp: tf.binary_cross_entropy_with_logits(
            a, th().from_numpy(t), weight=ww if use_w else None,
            pos_weight=pp if use_pw else None, reduction=reduction),
        [x, w, pw],
        requires_grad=[True, False, False],
        second=True,
    )


# ------------------------------------------------------------------------------ interpolate
INTERPOLATE = [  # (our mode, torch's mode, spatial dims, align_corners allowed, antialias)
    ("nearest", "nearest", (1, 2, 3), False, "never"),
    ("nearest-exact", "nearest-exact", (1, 2, 3), False, "never"),
    ("linear", "linear", (1,), True, "never"),
    ("bilinear", "bilinear", (2,), True, "maybe"),
    ("trilinear", "trilinear", (3,), True, "never"),
    ("bicubic", "bicubic", (2,), True, "maybe"),
    ("lanczos3", "lanczos", (2,), False, "always"),
    ("area", "area", (1, 2, 3), False, "never"),
]


@FUZZ
@given(st.data())
def test_fuzz_interpolate(data):
    """Every torch mode and dimension; of ``a * a`` so second derivatives are not trivial."""
    mode, torch_mode, nds, ac_ok, aa = data.draw(st.sampled_from(INTERPOLATE), label="mode")
    nd = data.draw(st.sampled_from(nds), label="dims")
    spatial = tuple(data.draw(st.integers(1, 5), label="in") for _ in range(nd))
    x = draw_values(data, (data.draw(st.integers(1, 2)), 2) + spatial)
    kw = {}
    if ac_ok and data.draw(st.booleans(), label="set align_corners"):
        kw["align_corners"] = data.draw(st.booleans(), label="align_corners")
    if aa == "always" or (aa == "maybe" and data.draw(st.booleans(), label="antialias")):
        kw["antialias"] = True
    if data.draw(st.booleans(), label="by size"):
        kw["size"] = tuple(data.draw(st.integers(1, 7), label="out") for _ in range(nd))
        out_w = kw["size"][-1]
    else:
        kw["scale_factor"] = data.draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), label="s")
        out_w = int(np.floor(spatial[-1] * kw["scale_factor"]))
        if min(spatial) * kw["scale_factor"] < 1:
            return  # an empty output is refused by both libraries
    if kw.get("antialias") and out_w == 1 and nd == 2:
        return  # see DELIBERATE_DIFFERENCES["antialias with output width 1"]
    tf = th().nn.functional
    compare(
        lambda a: F.interpolate(a * a, mode=mode, **kw),
        lambda a: tf.interpolate(a * a, mode=torch_mode, **kw),
        [x],
        second=True,
    )


# ------------------------------------------------------------------------------ conv, pool, norm
def _draw_image(data, channels):
    h, w = data.draw(st.integers(3, 7), label="h"), data.draw(st.integers(3, 7), label="w")
    return draw_values(data, (data.draw(st.integers(1, 2), label="n"), channels, h, w))


@FUZZ
@given(st.data())
def test_fuzz_conv2d(data):
    groups = data.draw(st.sampled_from([1, 2]), label="groups")
    x = _draw_image(data, 2 * groups)
    kh, kw = data.draw(st.integers(1, 3), label="kh"), data.draw(st.integers(1, 3), label="kw")
    w = draw_values(data, (2 * groups, 2, kh, kw))
    dilation = data.draw(st.integers(1, 2), label="dilation")
    if data.draw(st.booleans(), label="same"):
        stride, padding = 1, data.draw(st.sampled_from(["same", "valid"]), label="mode")
    else:
        stride = data.draw(st.integers(1, 2), label="stride")
        padding = data.draw(st.integers(0, 1), label="padding")
    pads = {"same": 10, "valid": 0}.get(padding, padding)
    if min(x.shape[2] - dilation * (kh - 1), x.shape[3] - dilation * (kw - 1)) + 2 * pads < 1:
        return  # kernel larger than the padded input: refused by both
    opts = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    tf = th().nn.functional
    compare(lambda a, b: F.conv2d(a, b, **opts), lambda a, b: tf.conv2d(a, b, **opts), [x, w],
            second=True)


@FUZZ
@given(st.data())
def test_fuzz_conv2d_winograd_sizes(data):
    """3x3, stride 1, 16+ channels, 64+ output pixels: the sizes that take the Winograd
    path (forward, input and weight gradients), with a batch of 1 to 3."""
    cin, cout = data.draw(st.sampled_from([(16, 16), (16, 20), (24, 16)]), label="channels")
    h, w = data.draw(st.integers(8, 11), label="h"), data.draw(st.integers(8, 11), label="w")
    x = draw_values(data, (data.draw(st.integers(1, 3), label="n"), cin, h, w))
    weight = draw_values(data, (cout, cin, 3, 3)) / 12.0
    padding = data.draw(st.sampled_from([0, 1, 2, (1, 2), "same"]), label="padding")
    tf = th().nn.functional
    compare(
        lambda a, b: F.conv2d(a, b, padding=padding),
        lambda a, b: tf.conv2d(a, b, padding=padding),
        [x, weight],
        rtol=1e-8,
        second=True,
    )


@FUZZ
@given(st.data())
def test_fuzz_conv_transpose2d(data):
    groups = data.draw(st.sampled_from([1, 2]), label="groups")
    x = _draw_image(data, 2 * groups)
    k = data.draw(st.integers(1, 3), label="k")
    w = draw_values(data, (2 * groups, 2, k, k))
    stride, dilation = (data.draw(st.integers(1, 2), label=n) for n in ("stride", "dilation"))
    opts = dict(
        stride=stride,
        padding=data.draw(st.integers(0, k // 2), label="padding"),
        output_padding=data.draw(st.integers(0, max(stride, dilation) - 1), label="out_pad"),
        groups=groups,
        dilation=dilation,
    )
    tf = th().nn.functional
    compare(
        lambda a, b: F.conv_transpose2d(a, b, **opts),
        lambda a, b: tf.conv_transpose2d(a, b, **opts),
        [x, w],
        second=True,
    )


@FUZZ
@given(st.data())
def test_fuzz_pooling(data):
    x = _draw_image(data, 2)
    k = data.draw(st.integers(1, 3), label="k")
    stride = data.draw(st.integers(1, 3), label="stride")
    padding = data.draw(st.integers(0, k // 2), label="padding")  # torch: at most k // 2
    ceil = data.draw(st.booleans(), label="ceil_mode")
    tf = th().nn.functional
    if data.draw(st.booleans(), label="max"):
        dilation = data.draw(st.integers(1, 2), label="dilation")
        if (k - 1) * dilation + 1 > min(x.shape[2:]) + 2 * padding:
            return
        opts = dict(kernel_size=k, stride=stride, padding=padding, dilation=dilation,
                    ceil_mode=ceil)
        ties = draw_values(data, x.shape, "ties")  # both send a tied max's gradient to one
        compare(lambda a: F.max_pool2d(a, **opts), lambda a: tf.max_pool2d(a, **opts), [ties],
                second=True)
    else:
        opts = dict(kernel_size=k, stride=stride, padding=padding, ceil_mode=ceil,
                    count_include_pad=data.draw(st.booleans(), label="count_include_pad"))
        compare(lambda a: F.avg_pool2d(a, **opts), lambda a: tf.avg_pool2d(a, **opts), [x],
                second=True)


@FUZZ
@given(st.data())
def test_fuzz_norms(data):
    x = _draw_image(data, 4)
    gamma, beta = draw_values(data, (4,)), draw_values(data, (4,))
    torch, tf = th(), th().nn.functional
    if data.draw(st.booleans(), label="batch_norm"):
        mean, var = draw_values(data, (4,)), draw_values(data, (4,), "positive")
        training = data.draw(st.booleans(), label="training")

        def ours(a, g, b):
            return F.batch_norm(a, mean.copy(), var.copy(), g, b, training=training)

        def theirs(a, g, b):
            running = torch.from_numpy(mean.copy()), torch.from_numpy(var.copy())
            return tf.batch_norm(a, *running, g, b, training=training)

        compare(ours, theirs, [x, gamma, beta], rtol=1e-8, second=True)
    else:
        groups = data.draw(st.sampled_from([1, 2, 4]), label="num_groups")
        compare(
            lambda a, g, b: F.group_norm(a, groups, g, b),
            lambda a, g, b: tf.group_norm(a, groups, g, b),
            [x, gamma, beta],
            rtol=1e-8,
            second=True,
        )
