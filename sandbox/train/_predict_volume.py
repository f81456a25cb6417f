"""Inference on a volume from a 3-D checkpoint: label volume (``.npy``) and slice montage out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..autograd import Tensor, no_grad
from ._predict import _first_line, load_model, plan_tiles
from ._volume_output import write_volume_prediction


def predict_volume(model, volume: np.ndarray, tile: int | None = None) -> np.ndarray:
    """Class label per voxel, ``(D, H, W)``, for one ``(C, D, H, W)`` float volume
    (in overlapping cubes of side ``tile`` when given, as :func:`~._predict.predict`)."""
    if tile is not None:
        from ._predict import predict_tiled

        return predict_tiled(model, volume, tile)
    with no_grad():
        logits = model(Tensor(np.ascontiguousarray(volume[None], dtype=np.float32)))
    return logits.numpy()[0].argmax(axis=0)


def _check_outputs(volume: Path, ckpt: Path, out: Path, montage_out: Path) -> None:
    if out.suffix.lower() != ".npy":
        raise ValueError(f"mask volume file {out}: use the .npy extension")
    if montage_out.suffix.lower() != ".png":
        raise ValueError(f"montage file {montage_out}: use the .png extension")
    for path, what, flag in ((out, "mask", "--out"), (montage_out, "montage", "--overlay")):
        for source in (volume, ckpt):
            if path.resolve() == source.resolve():
                raise ValueError(
                    f"the {what} output {path} is the input file itself; choose another {flag}"
                )
        if path.is_dir():
            raise IsADirectoryError(f"the {what} output {path} is a folder; give a file name")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"the folder of the {what} output {path} does not exist")


def predict_volume_file(checkpoint_path, volume_path, out=None, montage_out=None,
                        overwrite=False, tile=None) -> dict:
    """Segment a volume file with a 3-D checkpoint.

    Parameters
    ----------
    checkpoint_path : str or Path
        A checkpoint written by training on volumes (``--data shapes3d`` or a folder of
        volumes).
    volume_path : str or Path
        ``.npy``/``.npz`` array ``(D, H, W)`` or ``(C, D, H, W)``, or a multi-page TIFF;
        read and scaled as the training volumes were (``uint8``/``uint16`` to
        ``[0, 1]``, other types as stored).
    out : str or Path, optional
        The label volume, ``.npy`` (default ``<stem>_mask.npy`` next to the input).
    montage_out : str or Path, optional
        The PNG montage of slices with the classes in colour (default
        ``<stem>_montage.png`` next to ``out``); skipped with a warning without Pillow.
    overwrite : bool, default False
        Replace existing output files (else they are refused).
    tile : int, optional
        Predict in overlapping cubes of this side (default: the whole volume, or the
        largest cubes that fit the memory limit, with a notice).

    Returns
    -------
    dict
        ``mask``, ``montage`` (paths), ``voxels_per_class`` and, if any, ``warnings``.
    """
    from ..data._volumes import as_image_volume, read_volume

    volume_path = Path(volume_path)
    out = Path(out) if out else volume_path.with_name(f"{volume_path.stem}_mask.npy")
    montage_out = (
        Path(montage_out)
        if montage_out
        else out.with_name(out.stem.replace("_mask", "") + "_montage.png")
    )
    _check_outputs(volume_path, Path(checkpoint_path), out, montage_out)
    from ._outputs import check_new_file

    check_new_file(out, "--out", overwrite=overwrite, what="mask volume")
    check_new_file(montage_out, "--overlay", overwrite=overwrite, what="montage")
    model, info = load_model(checkpoint_path)
    volume = as_image_volume(read_volume(volume_path, "image"), volume_path)
    if volume.shape[0] != info["in_channels"]:
        raise ValueError(
            f"{volume_path} has {volume.shape[0]} channel(s); this model takes "
            f"{info['in_channels']}"
        )
    need = 2 ** info["config"].depth
    if min(volume.shape[1:]) < need:
        raise ValueError(
            f"{volume_path} is {'x'.join(map(str, volume.shape[1:]))} voxels; this model "
            f"({info['config'].depth} down-sampling steps) needs at least {need} a side"
        )
    tile, notice = plan_tiles(model, volume.shape[1:], tile, volume_path)
    finite = np.isfinite(volume)
    if not finite.any():
        raise ValueError(f"{volume_path} holds no finite values: nothing to segment")
    try:
        labels = predict_volume(model, volume, tile)
    except MemoryError:
        raise MemoryError(
            f"not enough memory to segment {volume_path} "
            f"({'x'.join(map(str, volume.shape[1:]))} voxels) in one piece; crop it"
        ) from None
    except ValueError as exc:
        raise ValueError(f"cannot segment {volume_path}: {_first_line(exc)}") from None
    result = write_volume_prediction(np.nan_to_num(volume), labels, out, montage_out)
    counts = np.bincount(labels.ravel(), minlength=info["num_classes"])
    result["voxels_per_class"] = {
        name: int(c) for name, c in zip(info["class_names"], counts, strict=False)
    }
    if notice:
        result["notices"] = [notice]
    if not finite.all():
        result.setdefault("warnings", []).append(
            f"{volume_path} has {int((~finite).sum())} NaN or infinite values; the prediction "
            "there (and near them) is meaningless"
        )
    return result
