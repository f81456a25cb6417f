"""``sandbox gradcheck``: every differentiable op against central finite differences.

Each case builds small float64 inputs, runs :func:`sandbox.gradcheck.gradcheck` and,
for ops whose backward is itself differentiable, :func:`~sandbox.gradcheck.gradgradcheck`,
then prints one table row.  Inputs are kept away from kinks (ReLU at 0, max-pool ties)
where finite differences are not meaningful.
"""

from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .. import functional as F
from ..autograd import Tensor
from ..autograd.gradcheck import gradcheck, gradgradcheck

RESAMPLE_CASES = [
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bilinear", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"antialias": True}),
    ("bicubic", {}),
    ("bicubic", {"antialias": True}),
    ("lanczos3", {}),
    ("lanczos3", {"antialias": True}),
    ("area", {}),
]


@dataclass
class Case:
    name: str
    fn: object
    shapes: tuple
    second_order: bool = True
    kwargs: dict = field(default_factory=dict)  # passed to gradcheck
    make: object = None  # custom input builder rng -> tuple of arrays


def _away_from_zero(rng, shape):
    x = rng.uniform(0.2, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
    return x


def _distinct(rng, shape):
    """Values with no ties (for max/max-pool)."""
    n = int(np.prod(shape))
    return rng.permutation(n).reshape(shape) / n + 0.01 * rng.standard_normal(shape)


def cases() -> list[Case]:
    target = np.array([[0, 2, 1], [1, 1, 0]])
    running = (np.zeros(3), np.ones(3))
    out = [
        Case("add (broadcast)", lambda a, b: a + b, ((2, 3), (3,))),
        Case("mul (broadcast)", lambda a, b: a * b, ((2, 3), (2, 1))),
        Case(
            "div",
            lambda a, b: a / b,
            ((2, 3), (2, 3)),
            make=lambda rng: (rng.standard_normal((2, 3)), 1.5 + rng.random((2, 3))),
        ),
        Case("pow", lambda a: a**3, ((2, 3),)),
        Case("exp", lambda a: a.exp(), ((2, 3),)),
        Case("log", lambda a: a.log(), ((2, 3),), make=lambda rng: (0.5 + rng.random((2, 3)),)),
        Case("sqrt", lambda a: a.sqrt(), ((2, 3),), make=lambda rng: (0.5 + rng.random((2, 3)),)),
        Case("abs", lambda a: a.abs(), ((2, 3),), make=lambda rng: (_away_from_zero(rng, (2, 3)),)),
        Case("matmul", lambda a, b: a @ b, ((2, 3), (3, 4))),
        Case("sum / mean", lambda a: a.sum(axis=1) + a.mean(), ((3, 4),)),
        Case("amax", lambda a: a.amax(axis=1), ((3, 4),),
             make=lambda rng: (_distinct(rng, (3, 4)),)),
        Case("max(dim)", lambda a: a.max(1).values, ((3, 4),),
             make=lambda rng: (_distinct(rng, (3, 4)),)),
        Case("reshape / transpose", lambda a: a.reshape(4, 3).transpose(1, 0) * 2, ((3, 4),)),
        Case("getitem", lambda a: a[1:, ::2], ((3, 4),)),
        Case("relu", F.relu, ((3, 4),), make=lambda rng: (_away_from_zero(rng, (3, 4)),)),
        Case("sigmoid", F.sigmoid, ((3, 4),)),
        Case("tanh", F.tanh, ((3, 4),)),
        Case("softplus (beta, threshold)", lambda a: F.softplus(a, 2.0, 1.5), ((3, 4),),
             make=lambda rng: (rng.uniform(-2.0, 2.0, (3, 4)),)),
        Case(
            "conv2d (padding='same', even kernel)",
            lambda x, w: F.conv2d(x, w, padding="same"),
            ((1, 2, 4, 5), (3, 2, 2, 3)),
            second_order=False,
        ),
        Case("softmax", lambda a: F.softmax(a, 1), ((3, 4),)),
        Case("log_softmax", lambda a: F.log_softmax(a, 1), ((3, 4),)),
        Case("pad", lambda a: F.pad(a, (1, 2, 0, 1)), ((1, 1, 2, 3),)),
        Case("pad (reflect, crop)", lambda a: F.pad(a, (2, -1, 1, 1), mode="reflect"),
             ((1, 1, 3, 4),)),
        Case("adaptive_avg_pool2d", lambda a: F.adaptive_avg_pool2d(a, (2, 3)), ((1, 2, 5, 4),)),
        Case("layer_norm", lambda a, w: F.layer_norm(a, (3,), w), ((2, 4, 3), (3,))),
        Case("instance_norm", lambda a: F.instance_norm(a), ((2, 2, 3, 3),)),
        Case(
            "binary_cross_entropy",
            lambda a, b: F.binary_cross_entropy(a, b),
            ((2, 3), (2, 3)),
            second_order=False,
            make=lambda rng: (rng.uniform(0.1, 0.9, (2, 3)), rng.random((2, 3))),
        ),
        Case("cross_entropy", lambda a: F.cross_entropy(a, Tensor(target)), ((2, 4, 3),)),
        Case(
            "bce_with_logits",
            lambda a, b: F.binary_cross_entropy_with_logits(a, b),
            ((2, 3), (2, 3)),
            make=lambda rng: (rng.standard_normal((2, 3)), rng.random((2, 3))),
        ),
        Case("dice_loss", lambda a: F.dice_loss(a, Tensor(target)), ((2, 4, 3),)),
        Case(
            "conv2d",
            lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1),
            ((2, 2, 5, 4), (3, 2, 3, 2), (3,)),
        ),
        Case(
            "conv2d (groups, dilation)",
            lambda x, w: F.conv2d(x, w, padding=2, dilation=2, groups=2),
            ((1, 4, 5, 5), (2, 2, 3, 3)),
        ),
        Case(
            "conv_transpose2d",
            lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1),
            ((1, 2, 3, 3), (2, 3, 3, 3), (3,)),
        ),
        Case(
            "conv_transpose2d (out pad, groups, dilation)",
            lambda x, w: F.conv_transpose2d(
                x, w, stride=2, padding=1, output_padding=1, groups=2, dilation=2
            ),
            ((1, 4, 3, 2), (4, 1, 2, 2)),
        ),
        Case(
            "max_pool2d",
            lambda x: F.max_pool2d(x, 2),
            ((1, 2, 4, 4),),
            make=lambda rng: (_distinct(rng, (1, 2, 4, 4)),),
        ),
        Case(
            "avg_pool2d",
            lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
            ((1, 2, 5, 5),),
        ),
        Case(
            "avg_pool2d (ceil, count_include_pad=False)",
            lambda x: F.avg_pool2d(
                x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False
            ),
            ((1, 1, 6, 5),),
        ),
        Case(
            "conv3d (stride, padding, dilation, groups)",
            lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 1, 0), (1, 1, 2), 2),
            ((1, 2, 3, 3, 4), (2, 1, 2, 2, 2), (2,)),
        ),
        Case(
            "conv_transpose3d (out pad, groups)",
            lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (1, 0, 0), (1, 1, 0), 2),
            ((1, 2, 2, 2, 2), (2, 1, 2, 2, 2), (2,)),
        ),
        Case(
            "max_pool3d",
            lambda x: F.max_pool3d(x, 2, padding=(1, 0, 1), ceil_mode=True),
            ((1, 2, 3, 4, 3),),
            make=lambda rng: (_distinct(rng, (1, 2, 3, 4, 3)),),
        ),
        Case(
            "avg_pool3d (ceil, count_include_pad=False)",
            lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            ((1, 1, 4, 5, 4),),
        ),
        Case(
            "batch_norm (train)",
            lambda x, w, b: F.batch_norm(
                x, running[0].copy(), running[1].copy(), w, b, training=True
            ),
            ((3, 3, 2, 2), (3,), (3,)),
        ),
        Case(
            "batch_norm (eval)",
            lambda x, w, b: F.batch_norm(x, running[0] + 0.1, running[1] + 0.5, w, b),
            ((2, 3, 2, 2), (3,), (3,)),
        ),
        Case(
            "group_norm",
            lambda x, w, b: F.group_norm(x, 2, w, b),
            ((2, 4, 2, 3), (4,), (4,)),
        ),
    ]
    for mode, opts in RESAMPLE_CASES:
        label = "interpolate " + mode + "".join(f" {k}" for k in opts)
        out.append(
            Case(f"{label} (2-D up)", _interp(size=(7, 5), mode=mode, **opts), ((1, 2, 4, 3),))
        )
        out.append(
            Case(f"{label} (2-D down)", _interp(size=(3, 2), mode=mode, **opts), ((1, 1, 7, 5),))
        )
    out.append(
        Case(
            "interpolate trilinear (3-D)",
            _interp(scale_factor=1.5, mode="trilinear"),
            ((1, 1, 2, 3, 3),),
        )
    )
    out.append(Case("interpolate bicubic (1-D)", _interp(size=5, mode="bicubic"), ((1, 2, 3),)))
    return out


def _interp(**kwargs):
    def fn(x):
        return F.interpolate(x, **kwargs)

    return fn


def run_case(case: Case, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    arrays = case.make(rng) if case.make else tuple(rng.standard_normal(s) for s in case.shapes)
    inputs = tuple(Tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays)
    t0 = time.perf_counter()
    ok = gradcheck(case.fn, inputs, raise_exception=False, **case.kwargs)
    ok2 = gradgradcheck(case.fn, inputs, raise_exception=False) if case.second_order else None
    return {
        "name": case.name,
        "shapes": [tuple(a.shape) for a in arrays],
        "gradcheck": ok,
        "gradgradcheck": ok2,
        "seconds": time.perf_counter() - t0,
    }


def run_suite(pattern: str | None = None, verbose: bool = True, file=None) -> list[str]:
    """Run every case (or those matching ``pattern``); print a table; return failed names."""
    file = file or sys.stdout
    selected = [
        c
        for c in cases()
        if pattern is None or pattern.lower() in c.name.lower() or fnmatch.fnmatch(c.name, pattern)
    ]
    if not selected:
        raise ValueError(f"no op matches {pattern!r}")
    failures = []
    if verbose:
        print(f"{'op':46s} {'inputs':28s} {'grad':>5s} {'grad²':>5s} {'ms':>7s}", file=file)
    for case in selected:
        r = run_case(case)
        failed = (not r["gradcheck"]) or r["gradgradcheck"] is False
        if failed:
            failures.append(case.name)
        if verbose:
            mark = {True: "ok", False: "FAIL", None: "—"}
            shapes = ", ".join("x".join(map(str, s)) for s in r["shapes"])
            print(
                f"{case.name:46s} {shapes:28s} {mark[r['gradcheck']]:>5s} "
                f"{mark[r['gradgradcheck']]:>5s} {1e3 * r['seconds']:7.1f}",
                file=file,
            )
    if verbose:
        print(
            f"\n{len(selected) - len(failures)} passed, {len(failures)} failed"
            + (f": {', '.join(failures)}" if failures else ""),
            file=file,
        )
    return failures
