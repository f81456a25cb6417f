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

    Image files are read by the reader training uses (:func:`sandbox.data._folder.read_image`:
    8-bit, 16-bit, 32-bit integer and float images, scaled to float32 as training
    scaled them); a ``.npy`` array keeps its type here and :func:`normalize` scales it.
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
        from ..data._folder import read_image as read_image_file

        array = read_image_file(path, channels)
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
    """Map an image to the model's input range, as the training data was.

    Integer arrays are divided by their type's maximum (files read by
    :func:`read_image` are already scaled floats), then ``standardize`` subtracts the
    stored mean and divides by the stored standard deviation.  Every checkpoint's
    ``normalization`` entry (also from versions before the ``input`` field) reads
    this way.
    """
    x = image.astype(np.float64)
    if np.issubdtype(image.dtype, np.integer):
        x = x / np.iinfo(image.dtype).max
    if normalization.get("kind") == "standardize":
        x = (x - normalization["mean"]) / normalization["std"]
    return x.astype(np.float32)


def predict(model, image: np.ndarray, tile: int | None = None) -> np.ndarray:
    """Class label per pixel for one normalised ``(C, H, W)`` image.

    With ``tile`` (pixels a side, margins included) the image is predicted in
    overlapping tiles (:mod:`sandbox.train._tiles`): the same labels away from
    rounding ties, in the memory of one tile.
    """
    if tile is not None:
        return predict_tiled(model, image, tile)
    with no_grad():
        logits = model(Tensor(np.ascontiguousarray(image[None], dtype=np.float32)))
    return logits.numpy()[0].argmax(axis=0)


def predict_tiled(model, image: np.ndarray, tile: int, reduce=None) -> np.ndarray:
    """:func:`predict` tile by tile; ``reduce`` as in :func:`sandbox.train._tiles.predict_tiled`."""
    from ._tiles import predict_tiled as run_tiles
    from ._tiles import tile_margin

    align = 2**model.depth
    margin = tile_margin(model.depth, model.upsample)

    def forward(x):
        with no_grad():
            return model(Tensor(x)).numpy()

    return run_tiles(forward, image, tile, margin, align, reduce=reduce)


def plan_tiles(model, spatial, tile: int | None, path) -> tuple[int | None, str | None]:
    """The tile size to predict ``spatial`` with, and a notice when tiling was chosen.

    ``tile=None`` predicts the whole image when its estimate fits the memory limit,
    else the largest tile that fits; a given ``tile`` is checked.  Raises
    :class:`~sandbox.train._memory_plan.MemoryEstimateError` when not even tiles fit.
    """
    from ..runtime.memory import format_bytes, memory_limit
    from ._memory_plan import check, eval_bytes, model_widths, unet_forward_count
    from ._tiles import tile_margin

    def need(shape):
        count = unet_forward_count(model.in_channels, model.num_classes, model_widths(model),
                                   shape, model.upsample, model.norm)
        return eval_bytes(count) + 4 * model.num_classes * int(np.prod(shape))

    dims = len(spatial)
    # the image (float32, its float64 normalisation), the labels and the overlay's RGB
    # blends: about 80 bytes a pixel whatever the tiling
    fixed = 80 * int(np.prod(spatial))
    align, margin = 2**model.depth, tile_margin(model.depth, model.upsample)
    smallest = 2 * margin + align
    size = "x".join(map(str, spatial))
    if tile is not None:
        if tile % align or tile < smallest:
            raise ValueError(f"--tile {tile}: use a multiple of {align} of at least {smallest} "
                             f"(this model's overlap is {margin} pixels a side)")
        check(fixed + need((tile,) * dims), f"predicting {path} ({size}) in tiles of {tile}",
              "use a smaller --tile")
        return tile, None
    whole = fixed + need(spatial)
    limit = memory_limit()
    if whole <= limit:
        return None, None
    tile = smallest
    while max(spatial) > tile and fixed + need((2 * tile,) * dims) <= limit:
        tile *= 2
    check(fixed + need((tile,) * dims), f"predicting {path} ({size}) even in tiles of {tile}",
          "crop or downscale the image")
    return tile, (f"{path} ({size}) would need an estimated {format_bytes(whole)} in one "
                  f"piece, more than the memory limit of {format_bytes(limit)}: predicting in "
                  f"tiles of {tile} with {margin} pixels of overlap (choose with --tile)")


def predict_file(checkpoint_path, image_path, out=None, overlay_out=None, overwrite=False,
                 tile=None) -> dict:
    """Segment ``image_path`` and write ``<stem>_mask.png`` and ``<stem>_overlay.png``.

    The mask PNG holds the class ids (0, 1, 2 ...) as 8-bit grey levels; the overlay
    shows the classes in colour over the image.  Returns the paths and class counts.
    A checkpoint of a 3-D model segments a volume instead (see
    :func:`predict_volume_file`: ``<stem>_mask.npy`` and ``<stem>_montage.png``).
    Existing output files are replaced only with ``overwrite``; an image too large for
    the memory limit in one piece is predicted in tiles (``tile`` sets their size).
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

        return predict_volume_file(checkpoint_path, image_path, out=out, montage_out=overlay_out,
                                   overwrite=overwrite, tile=tile)
    out = Path(out) if out else image_path.with_name(f"{image_path.stem}_mask.png")
    overlay_out = (
        Path(overlay_out)
        if overlay_out
        else out.with_name(out.stem.replace("_mask", "") + "_overlay.png")
    )
    _check_outputs(image_path, Path(checkpoint_path), out, overlay_out, overwrite)
    model, info = load_model(checkpoint_path)
    _check_image_memory(image_path, info["in_channels"])
    raw = read_image(image_path, info["in_channels"])
    warnings = _check_content(raw, image_path, info["config"].depth)
    tile, notice = plan_tiles(model, raw.shape[1:], tile, image_path)
    labels = predict(model, normalize(raw, info["normalization"]), tile=tile)
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
    if notice:
        result["notices"] = [notice]
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


def _check_image_memory(path: Path, channels: int) -> None:
    """Refuse an image file whose decoded pixels alone exceed the limit (header only)."""
    from ._memory_plan import check

    if path.suffix.lower() == ".npy":
        try:  # the header only: shape and type
            shape = np.load(path, mmap_mode="r", allow_pickle=False).shape
        except Exception:  # not a plain .npy: read_image says what is wrong
            return
        elements, size = int(np.prod(shape)), "x".join(map(str, shape))
    else:
        from ..data._folder import _import_pil, open_image

        with open_image(_import_pil(), path) as im:
            w, h = im.size
        elements, size = channels * w * h, f"{h}x{w}"
    check(16 * elements, f"reading {path} ({size})", "crop or downscale the image")


def _check_outputs(image: Path, ckpt: Path, out: Path, overlay_out: Path,
                   overwrite: bool = False) -> None:
    """Refuse lossy mask formats, outputs that would overwrite an input or each other,
    and existing files unless ``overwrite``."""
    from ._outputs import check_new_file

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
    check_new_file(out, "--out", overwrite=overwrite, what="mask")
    check_new_file(overlay_out, "--overlay", overwrite=overwrite, what="overlay")


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
