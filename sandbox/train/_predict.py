"""Inference from a checkpoint: image file in, label mask and overlay PNG out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import checkpoint
from ..autograd import Tensor, no_grad
from ._config import TrainConfig, build_model


def load_model(path):
    """Rebuild the model stored in a training checkpoint.

    Returns
    -------
    model : sandbox.nn.UNet
        In evaluation mode.
    info : dict
        ``in_channels``, ``num_classes``, ``class_names``, ``normalization`` and ``config``.
    """
    state = checkpoint.load(path)
    try:
        cfg = TrainConfig.from_dict(state["config"])
        info = dict(state["data"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a training checkpoint (missing {exc})") from exc
    model = build_model(cfg, info["in_channels"], info["num_classes"])
    model.load_state_dict(state["model"])
    model.eval()
    info["config"] = cfg
    return model, info


def read_image(path, channels: int) -> np.ndarray:
    """Read an image file (PNG/TIFF/JPEG via Pillow, or ``.npy``) as ``(C, H, W)``.

    Integer images stay in their integer range here; :func:`normalize` scales them.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image not found: {path}")
    if path.suffix.lower() == ".npy":
        array = np.load(path, allow_pickle=False)
    else:
        from ..data._folder import _import_pil

        with _import_pil().open(path) as im:
            im = im.convert("L" if channels == 1 else "RGB")
            array = np.asarray(im)
    if array.ndim == 2:
        array = array[None]
    elif array.ndim == 3 and array.shape[-1] in (1, 3) and array.shape[0] not in (1, 3):
        array = array.transpose(2, 0, 1)
    if array.ndim != 3 or array.shape[0] != channels:
        raise ValueError(
            f"{path}: expected an image with {channels} channel(s), "
            f"got an array of shape {array.shape}"
        )
    return array


def normalize(image: np.ndarray, normalization: dict) -> np.ndarray:
    """Map a raw image to the model's input range, as the training data was."""
    x = image.astype(np.float64)
    if np.issubdtype(image.dtype, np.integer):
        x = x / np.iinfo(image.dtype).max
    if normalization.get("kind") == "standardize":
        x = (x - normalization["mean"]) / normalization["std"]
    return x.astype(np.float32)


def predict(model, image: np.ndarray) -> np.ndarray:
    """Class label per pixel for one normalised ``(C, H, W)`` image."""
    with no_grad():
        logits = model(Tensor(np.ascontiguousarray(image[None], dtype=np.float32)))
    return logits.data[0].argmax(axis=0)


def predict_file(checkpoint_path, image_path, out=None, overlay_out=None) -> dict:
    """Segment ``image_path`` and write ``<stem>_mask.png`` and ``<stem>_overlay.png``.

    The mask PNG holds the class ids (0, 1, 2 ...) as 8-bit grey levels; the overlay
    shows the classes in colour over the image.  Returns the paths and class counts.
    """
    from ..data._folder import _import_pil
    from ._plots import overlay

    model, info = load_model(checkpoint_path)
    raw = read_image(image_path, info["in_channels"])
    labels = predict(model, normalize(raw, info["normalization"]))
    image_path = Path(image_path)
    out = Path(out) if out else image_path.with_name(f"{image_path.stem}_mask.png")
    overlay_out = (
        Path(overlay_out)
        if overlay_out
        else out.with_name(out.name.replace("_mask", "").replace(".png", "") + "_overlay.png")
    )
    pil = _import_pil()
    pil.fromarray(labels.astype(np.uint8)).save(out)
    rgb = overlay(raw.astype(np.float32), labels)
    pil.fromarray((rgb * 255).round().astype(np.uint8)).save(overlay_out)
    counts = np.bincount(labels.ravel(), minlength=info["num_classes"])
    return {
        "mask": str(out),
        "overlay": str(overlay_out),
        "pixels_per_class": {
            name: int(c) for name, c in zip(info["class_names"], counts, strict=False)
        },
    }
