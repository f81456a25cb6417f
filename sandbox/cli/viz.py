"""Pictures for the docs: ``python -m sandbox.cli.viz [OUTDIR]`` (default ``docs/images``).

Each ``plot_*`` function draws one figure with matplotlib (an optional
dependency: ``pip install matplotlib``) and returns it; :func:`main` saves them
all as small PNGs.

* :func:`plot_kernels` -- each mode's 1-D kernel (the response to one input
  sample) and its weight table ``weight_matrix(8, 12, mode)``.
* :func:`plot_modes` -- the five modes upsampling a small test image, and a
  step edge (ringing of bicubic and lanczos3).
* :func:`plot_gradient_maps` -- what the backward of an upsampling layer does
  to a uniform upstream gradient, next to transposed and strided convolution.
* :func:`plot_hvp` -- a Hessian-vector product by double backward, checked
  against finite differences.
* :func:`render_graph` -- the graph of the ``sandbox explain`` network
  (needs Graphviz's ``dot``; skipped without it).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

from ..array import conv, resample
from ..autograd import Tensor, grad, graph
from ..functional import conv2d, interpolate

__all__ = [
    "MODES",
    "main",
    "plot_gradient_maps",
    "plot_hvp",
    "plot_kernels",
    "plot_modes",
    "render_graph",
]

MODES = ("nearest", "nearest-exact", "bilinear", "bicubic", "lanczos3")


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is a test dependency
        raise ImportError("sandbox.viz needs matplotlib: pip install matplotlib") from exc
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9})
    return plt


def _noticks(ax):
    ax.set_xticks([])
    ax.set_yticks([])


def plot_kernels(n_in=8, n_out=12, zoom=16):
    """Top: response to one input sample (upsampled ``zoom`` x); bottom: weight tables."""
    plt = _plt()
    fig, axes = plt.subplots(2, len(MODES), figsize=(10, 4.8), height_ratios=[1, 1.3])
    fig.subplots_adjust(left=0.07, right=0.88, top=0.88, bottom=0.1, hspace=0.5, wspace=0.3)
    n = 9
    delta = np.zeros((1, 1, n))
    delta[0, 0, n // 2] = 1.0
    for k, mode in enumerate(MODES):
        resp = resample.resize(delta, scale_factor=zoom, mode=mode)[0, 0]
        # output o sits at input coordinate (o + 0.5) / zoom - 0.5 (half-pixel centres)
        s = (np.arange(resp.size) + 0.5) / zoom - 0.5 - n // 2
        ax = axes[0, k]
        ax.axhline(0, color="0.7", lw=0.6)
        ax.plot(s, resp, color="C0", lw=1.4)
        ax.set_xlim(-3.5, 3.5)
        ax.set_ylim(-0.25, 1.1)
        ax.set_title(mode)
        if k == len(MODES) // 2:
            ax.set_xlabel("offset from the input sample (input pixels)")
        if k:
            ax.set_yticklabels([])
        w = resample.weight_matrix(n_in, n_out, mode=mode)
        ax = axes[1, k]
        im = ax.imshow(w, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
        ax.set_xlabel(f"input index (0..{n_in - 1})")
        ax.set_ylabel(f"output index (0..{n_out - 1})" if k == 0 else "")
        ax.set_xticks([0, n_in - 1])
        ax.set_yticks([0, n_out - 1])
    fig.colorbar(im, ax=axes[1, :].tolist(), shrink=0.8, label="weight")
    fig.suptitle(
        f"Top: what one input sample becomes (resize x{zoom}).  "
        f"Bottom: weight_matrix({n_in}, {n_out}, mode) -- row o holds the weights output o reads",
        fontsize=9,
    )
    return fig


def _test_image(n=10):
    y, x = np.mgrid[0:n, 0:n]
    img = np.where(x + y < n - 1, 0.15, 0.85)  # a diagonal step edge
    img[2:4, 2:4] = 1.0  # a small bright square
    img[n - 3, n - 3] = 0.0  # a single dark pixel
    return img


def plot_modes(zoom=4):
    """The five modes upsampling a 10x10 test image, and a 1-D step edge."""
    plt = _plt()
    img = _test_image()
    fig = plt.figure(figsize=(10, 4))
    grid = fig.add_gridspec(2, len(MODES) + 1, height_ratios=[1.25, 1])
    ax = fig.add_subplot(grid[0, 0])
    ax.imshow(img, cmap="gray", vmin=0, vmax=1, interpolation="nearest")
    ax.set_title("input 10x10")
    _noticks(ax)
    step = np.r_[np.zeros(6), np.ones(6)][None, None]
    line = fig.add_subplot(grid[1, :])
    s_in = np.arange(step.shape[-1])
    line.plot(s_in, step[0, 0], "ko", ms=4, label="input samples")
    for k, mode in enumerate(MODES):
        out = resample.resize(img[None, None], scale_factor=zoom, mode=mode)[0, 0]
        ax = fig.add_subplot(grid[0, k + 1])
        ax.imshow(np.clip(out, 0, 1), cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"{mode} x{zoom}")
        _noticks(ax)
        prof = resample.resize(step, scale_factor=8, mode=mode)[0, 0]
        s = (np.arange(prof.size) + 0.5) / 8 - 0.5
        line.plot(s, prof, lw=1.3, label=mode)
    line.set_xlim(2.5, 8.5)
    line.set_xlabel("input coordinate")
    line.set_title("a step edge upsampled x8: bicubic and lanczos3 over- and undershoot (ringing)")
    line.legend(ncol=6, fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig


def _uniform_input_grad(mode, n_in, n_out):
    """Backward of ``sum(resize(x))``: A^T 1, how much each input pixel is read."""
    g = np.ones((1, 1, n_out, n_out))
    return resample.resize_adjoint(g, (n_in, n_in), size=n_out, mode=mode)[0, 0]


def plot_gradient_maps(n_in=10, n_out=16):
    """Row 1: input gradient of ``sum(upsample(x))`` per mode; row 2: (transposed) convs."""
    plt = _plt()
    fig, axes = plt.subplots(2, len(MODES), figsize=(10, 4.4))
    fig.subplots_adjust(left=0.08, right=0.9, top=0.86, bottom=0.03, hspace=0.45)
    for k, mode in enumerate(MODES):
        gx = _uniform_input_grad(mode, n_in, n_out)
        gx = gx / gx[2:-2, 2:-2].mean()
        ax = axes[0, k]
        im = ax.imshow(gx, cmap="magma", vmin=0.3, vmax=1.7, interpolation="nearest")
        spread = gx[2:-2, 2:-2]
        ax.set_title(f"{mode}\ninterior {spread.min():.2f}..{spread.max():.2f}")
        _noticks(ax)
    fig.colorbar(im, ax=axes[0, :].tolist(), shrink=0.8, label="gradient / mean")
    axes[0, 0].set_ylabel(f"d sum(up(x))/dx\n{n_in}x{n_in} -> {n_out}x{n_out}")

    # Row 2: stride-2 3x3 transposed conv (all-ones weights) and its dual, the strided conv.
    w = np.ones((1, 1, 3, 3))
    x = np.ones((1, 1, 8, 8))
    y_t = conv.conv_transpose2d(x, w, None, 2, 1, 1, 1, 1)[0, 0]
    xs = Tensor(np.ones((1, 1, 16, 16)), requires_grad=True)
    conv2d(xs, Tensor(w), stride=2, padding=1).sum().backward()
    bl = Tensor(np.ones((1, 1, 8, 8)), requires_grad=True)
    y_bl = interpolate(bl, scale_factor=2, mode="bilinear")
    y_bl.sum().backward()
    panels = [
        (y_t, "transposed conv s2 k3:\nforward of a constant"),
        (
            xs.grad.numpy()[0, 0],
            "strided conv s2 k3:\ninput gradient (its\nbackward is a transposed conv)",
        ),
        (y_bl.numpy()[0, 0], "bilinear x2:\nforward of a constant"),
        (bl.grad.numpy()[0, 0], "bilinear x2:\ninput gradient"),
    ]
    for ax, (img, title) in zip(axes[1, :4], panels, strict=True):
        ax.imshow(
            img / img[2:-2, 2:-2].mean(), cmap="magma", vmin=0.3, vmax=1.7, interpolation="nearest"
        )
        ax.set_title(title, fontsize=7.5)
        _noticks(ax)
    axes[1, 4].axis("off")
    axes[1, 4].text(
        0,
        0.5,
        "Uniform upstream gradient.\nStripes = some inputs are\nread twice as often as\n"
        "others; a network must\nlearn to undo them.",
        fontsize=7.5,
        va="center",
    )
    return fig


def hvp_example(mode="bicubic", n=9, eps=1e-4, seed=0):
    """Hessian-vector product of ``f(x) = 0.5 ||up(x) - t||^2`` by double backward.

    Returns ``(v, hv, hv_fd)``: a one-pixel direction ``v``, ``H v`` from
    ``grad(<grad f, v>)``, and ``(grad f(x + eps v) - grad f(x - eps v)) / (2 eps)``.
    Here ``H = A^T A`` (A the upsampling map), so ``H v`` is the spread of one
    pixel through up- and back-sampling.
    """
    rng = np.random.default_rng(seed)
    t = Tensor(rng.standard_normal((1, 1, 2 * n, 2 * n)))
    x = Tensor(rng.standard_normal((1, 1, n, n)), requires_grad=True)
    v = np.zeros((1, 1, n, n))
    v[0, 0, n // 2, n // 2] = 1.0

    def f(x):
        r = interpolate(x, scale_factor=2, mode=mode) - t
        return 0.5 * (r * r).sum()

    (g,) = grad(f(x), x, create_graph=True)
    (hv,) = grad((g * Tensor(v)).sum(), x)

    def grad_at(xd):
        xt = Tensor(xd, requires_grad=True)
        return grad(f(xt), xt)[0].numpy()

    hv_fd = (grad_at(x.numpy() + eps * v) - grad_at(x.numpy() - eps * v)) / (2 * eps)
    return v[0, 0], hv.numpy()[0, 0], hv_fd[0, 0]


def plot_hvp():
    """H v for three smooth modes (double backward) and the finite-difference check."""
    plt = _plt()
    modes = ("bilinear", "bicubic", "lanczos3")
    fig, axes = plt.subplots(1, len(modes) + 2, figsize=(10, 2.6))
    v, hv, fd = hvp_example("bicubic")
    axes[0].imshow(v, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    axes[0].set_title("direction v\n(one pixel)")
    for ax, mode in zip(axes[1:], modes, strict=False):
        _, h, f = hvp_example(mode)
        lim = np.abs(h).max()
        ax.imshow(h, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
        ax.set_title(f"H v, {mode}\n(max |H v - FD| {np.abs(h - f).max():.0e})")
    err = hv - fd
    lim = max(np.abs(err).max(), 1e-30)
    axes[-1].imshow(err, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    axes[-1].set_title(f"H v - FD (bicubic)\nscale {lim:.0e}")
    for ax in axes:
        _noticks(ax)
    fig.suptitle(
        "f(x) = 0.5 |up(x) - t|^2, up = x2 resize:  H v = grad(<grad f, v>) = A^T A v",
        fontsize=9,
    )
    fig.tight_layout()
    fig.subplots_adjust(top=0.72)
    return fig


def render_graph(path):
    """Render the ``sandbox explain`` network's graph with Graphviz (None without ``dot``)."""
    if shutil.which("dot") is None:
        return None
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((1, 1, 3, 3)), requires_grad=True)
    weight = Tensor(rng.standard_normal((2, 1, 3, 3)), requires_grad=True)
    bias = Tensor(np.zeros(2), requires_grad=True)
    up = interpolate(x, scale_factor=2, mode="bilinear")
    loss = conv2d(up, weight, bias, padding=1).relu().sum()
    return graph(loss, names={"x": x, "weight": weight, "bias": bias}).render(path)


def main(argv=None) -> int:
    """Write every picture to OUTDIR (default ``docs/images``)."""
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    figures = {
        "kernels.png": plot_kernels,
        "modes.png": plot_modes,
        "gradient_maps.png": plot_gradient_maps,
        "hvp.png": plot_hvp,
    }
    for name, make in figures.items():
        fig = make()
        fig.savefig(out / name, dpi=80)
        plt.close(fig)
        print(f"wrote {out / name}")
    if render_graph(out / "graph.png") is None:
        print("skipped graph.png: Graphviz 'dot' is not on PATH")
    else:
        print(f"wrote {out / 'graph.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
