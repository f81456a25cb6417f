"""Inference from a checkpoint: image file in, label mask and overlay PNG out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..autograd import Tensor, no_grad
from . import checkpoint
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
    state = checkpoint.load_training_state(path)
    try:
        cfg = TrainConfig.from_dict(state["config"])
        info = dict(state["data"])
        model = build_model(
            cfg, info["in_channels"], info["num_classes"], info.get("spatial_dims", 2)
        )
        model.load_state_dict(state["model"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{path} is not a usable training checkpoint ({_first_line(exc)})"
        ) from exc
    model.eval()
    info["config"] = cfg
    return model, info


def read_image(path, channels: int) -> np.ndarray:
    """Read an image file (PNG/TIFF/JPEG via Pillow, or ``.npy``) as ``(C, H, W)``.

    Integer images stay in their integer range here; :func:`normalize` scales them.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not an image file")
    if not path.is_file():
        raise FileNotFoundError(f"image not found: {path}")
    if path.suffix.lower() == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except Exception as exc:  # any parse failure (ValueError, EOFError, TokenError...)
            raise ValueError(
                f"cannot read {path}: not a numpy .npy array of numbers, or a damaged one "
                f"({_first_line(exc)})"
            ) from None
        if not isinstance(array, np.ndarray):  # an .npz archive
            array.close()
            raise ValueError(f"{path} is an .npz archive, not a .npy image array")
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
                or array.dtype == bool):
            raise ValueError(f"{path}: expected an array of real numbers, got dtype {array.dtype}")
    else:
        from ..data._folder import _import_pil, _load, open_image

        with open_image(_import_pil(), path) as im:
            _load(im, path)
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
    return logits.numpy()[0].argmax(axis=0)


def predict_file(checkpoint_path, image_path, out=None, overlay_out=None) -> dict:
    """Segment ``image_path`` and write ``<stem>_mask.png`` and ``<stem>_overlay.png``.

    The mask PNG holds the class ids (0, 1, 2 ...) as 8-bit grey levels; the overlay
    shows the classes in colour over the image.  Returns the paths and class counts.
    A checkpoint of a 3-D model segments a volume instead (see
    :func:`predict_volume_file`: ``<stem>_mask.npy`` and ``<stem>_montage.png``).
    """
    from ..data._folder import _import_pil
    from ._plots import overlay

    image_path = Path(image_path)
    if image_path.is_dir():
        raise IsADirectoryError(f"{image_path} is a folder, not an image file")
    if not image_path.is_file():
        raise FileNotFoundError(f"image not found: {image_path}")
    if _is_volume_checkpoint(checkpoint_path):
        from ._predict_volume import predict_volume_file

        return predict_volume_file(checkpoint_path, image_path, out=out, montage_out=overlay_out)
    out = Path(out) if out else image_path.with_name(f"{image_path.stem}_mask.png")
    overlay_out = (
        Path(overlay_out)
        if overlay_out
        else out.with_name(out.stem.replace("_mask", "") + "_overlay.png")
    )
    _check_outputs(image_path, Path(checkpoint_path), out, overlay_out)
    model, info = load_model(checkpoint_path)
    raw = read_image(image_path, info["in_channels"])
    warnings = _check_content(raw, image_path, info["config"].depth)
    labels = predict(model, normalize(raw, info["normalization"]))
    pil = _import_pil()
    if out.suffix.lower() == ".npy":
        np.save(out, labels.astype(np.uint8))
    else:
        pil.fromarray(labels.astype(np.uint8)).save(out)
    rgb = overlay(np.nan_to_num(raw.astype(np.float32)), labels)
    pil.fromarray((rgb * 255).round().astype(np.uint8)).save(overlay_out)
    counts = np.bincount(labels.ravel(), minlength=info["num_classes"])
    result = {
        "mask": str(out),
        "overlay": str(overlay_out),
        "pixels_per_class": {
            name: int(c) for name, c in zip(info["class_names"], counts, strict=False)
        },
    }
    if warnings:
        result["warnings"] = warnings
    return result


def _is_volume_checkpoint(path) -> bool:
    """True for a readable checkpoint of a 3-D model (anything else takes the 2-D path,
    which reports what is wrong with the file)."""
    try:
        return checkpoint.load_training_state(path)["data"].get("spatial_dims", 2) == 3
    except Exception:  # missing or damaged: reported by the usual path
        return False


# Masks hold class ids: only lossless formats keep them exact.
MASK_FORMATS = (".png", ".tif", ".tiff", ".npy")
OVERLAY_FORMATS = (".png", ".tif", ".tiff", ".jpg", ".jpeg")


def _check_outputs(image: Path, ckpt: Path, out: Path, overlay_out: Path) -> None:
    """Refuse lossy mask formats and outputs that would overwrite an input or each other."""
    if out.suffix.lower() not in MASK_FORMATS:
        raise ValueError(
            f"mask file {out}: {out.suffix or 'no extension'} is not a lossless format (a "
            f"JPEG would change the class ids); use one of {', '.join(MASK_FORMATS)}"
        )
    if overlay_out.suffix.lower() not in OVERLAY_FORMATS:
        raise ValueError(
            f"overlay file {overlay_out}: use one of {', '.join(OVERLAY_FORMATS)}"
        )
    for path, what in ((out, "mask"), (overlay_out, "overlay")):
        for source in (image, ckpt):
            if path.resolve() == source.resolve():
                raise ValueError(
                    f"the {what} output {path} is the input file itself; choose another "
                    f"--{'out' if what == 'mask' else 'overlay'}"
                )
        if path.is_dir():
            raise IsADirectoryError(f"the {what} output {path} is a folder; give a file name")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"the folder of the {what} output {path} does not exist")
    if out.resolve() == overlay_out.resolve():
        raise ValueError(f"--out and --overlay are the same file {out}; give two names")


def _check_content(raw: np.ndarray, path: Path, depth: int) -> list[str]:
    """Refuse images the model cannot take; return warnings for suspicious ones."""
    h, w = raw.shape[1:]
    need = 2**depth
    if h < need or w < need:
        raise ValueError(
            f"{path} is {h}x{w} pixels; this model ({depth} down-sampling steps) needs at "
            f"least {need}x{need}"
        )
    if raw.size == 0 or np.issubdtype(raw.dtype, np.integer) or raw.dtype == bool:
        return []
    finite = np.isfinite(raw)
    if not finite.any():
        raise ValueError(f"{path} holds no finite values (all NaN or infinite): nothing to "
                         "segment")
    if not finite.all():
        return [f"{path} has {int((~finite).sum())} NaN or infinite values; the prediction "
                "there (and near them) is meaningless"]
    return []


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 160 else text[:157] + "..."
