"""Training pictures (matplotlib is an optional extra: ``pip install cpu-train-sandbox[plot]``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

MISSING = (
    "matplotlib is not installed: skipping plots "
    "(pip install 'cpu-train-sandbox[plot]' to get curves.png and predictions.png)"
)

# Class colours for overlays: background transparent, then distinct hues.
PALETTE = (
    np.array(
        [
            [0, 0, 0],
            [230, 25, 75],
            [60, 180, 75],
            [0, 130, 200],
            [245, 130, 48],
            [145, 30, 180],
            [70, 240, 240],
            [240, 50, 230],
            [210, 245, 60],
            [250, 190, 212],
        ],
        dtype=np.float32,
    )
    / 255
)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def colorize(labels: np.ndarray) -> np.ndarray:
    """RGB image (H, W, 3) in [0, 1] for a label map."""
    return PALETTE[np.asarray(labels) % len(PALETTE)]


def overlay(image: np.ndarray, labels: np.ndarray, alpha: float = 0.45) -> np.ndarray:
    """Blend class colours over a grayscale/RGB image ``(C, H, W)``; background stays as is."""
    img = np.asarray(image, dtype=np.float32)
    img = img.mean(axis=0) if img.shape[0] != 3 else img.transpose(1, 2, 0)
    lo, hi = np.percentile(img, [1, 99])
    img = np.clip((img - lo) / max(hi - lo, 1e-6), 0, 1)
    rgb = np.repeat(img[..., None], 3, axis=2) if img.ndim == 2 else img
    fg = (np.asarray(labels) > 0)[..., None]
    return np.where(fg, (1 - alpha) * rgb + alpha * colorize(labels), rgb)


def plot_curves(history: list[dict], path: Path, plt) -> Path:
    train = [h for h in history if h["kind"] == "train"]
    val = [h for h in history if h["kind"] == "val"]
    fig, (ax_loss, ax_metric) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot([h["step"] for h in train], [h["loss"] for h in train], label="train")
    if val:
        ax_loss.plot([h["step"] for h in val], [h["loss"] for h in val], "o-", label="validation")
        for key in ("mean_iou", "mean_dice", "pixel_accuracy", "dice_fg"):
            if key in val[0]:
                ax_metric.plot([h["step"] for h in val], [h[key] for h in val], "o-", label=key)
    ax_loss.set(xlabel="step", ylabel="loss", title="loss", yscale="log")
    ax_metric.set(xlabel="step", ylabel="score", title="validation metrics", ylim=(0, 1))
    for ax in (ax_loss, ax_metric):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_predictions(trainer, path: Path, plt, count: int = 4) -> Path:
    from ..autograd import Tensor, no_grad

    images, masks = next(iter(trainer.val_loader.batches(0)))
    images, masks = images[:count], masks[:count]
    trainer.model.eval()
    with no_grad():
        pred = trainer.model(Tensor(images)).numpy().argmax(axis=1)
    trainer.model.train()
    if masks.ndim == 4:  # volumes: show each one's depth slice with the most labelled voxels
        z = (masks > 0).sum(axis=(2, 3)).argmax(axis=1)
        rows = np.arange(len(masks))
        images, masks, pred = images[rows, :, z], masks[rows, z], pred[rows, z]
    fig, axes = plt.subplots(len(images), 3, figsize=(9, 3 * len(images)), squeeze=False)
    for row, (img, mask, p) in enumerate(zip(images, masks, pred, strict=True)):
        for col, (title, labels) in enumerate(
            (("input", None), ("truth", mask), ("prediction", p))
        ):
            ax = axes[row, col]
            shown = overlay(img, np.zeros_like(mask)) if labels is None else overlay(img, labels)
            ax.imshow(shown, interpolation="nearest")
            ax.set_axis_off()
            if row == 0:
                ax.set_title(title)
    _class_legend(fig, trainer.class_names)
    fig.tight_layout(rect=(0, 0.06 if len(images) < 3 else 0.03, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _class_legend(fig, class_names) -> None:
    """One coloured patch per class (background has no colour: the image shows through)."""
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=colorize(np.array(k)), edgecolor="black", label=name)
        if k > 0
        else Patch(facecolor="none", edgecolor="black", label=f"{name} (no colour)")
        for k, name in enumerate(class_names)
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), frameon=False)


def save_all(trainer) -> list[str]:
    """Write ``curves.png`` and ``predictions.png`` into the run folder (if matplotlib is there)."""
    plt = _pyplot()
    if plt is None:
        print(MISSING, file=sys.stderr)
        return []
    return [
        str(plot_curves(trainer.history, trainer.out / "curves.png", plt)),
        str(plot_predictions(trainer, trainer.out / "predictions.png", plt)),
    ]
