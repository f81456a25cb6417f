"""Reading volumes from files: ``.npy``, ``.npz`` and multi-page TIFF (one page per slice).

Every error is a one-line ``ValueError`` (or ``FileNotFoundError``) naming the file.
Multi-page TIFF needs Pillow (``pip install "cpu-train-sandbox[images]"``), imported
only when such a file is read.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

VOLUME_EXTENSIONS = (".npy", ".npz", ".tif", ".tiff")


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


def _check_file(path) -> Path:
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a volume file")
    if not path.is_file():
        raise FileNotFoundError(f"volume file not found: {path}")
    if path.suffix.lower() not in VOLUME_EXTENSIONS:
        raise ValueError(
            f"{path}: {path.suffix or 'no extension'} is not a volume format; use one of "
            f"{', '.join(VOLUME_EXTENSIONS)}"
        )
    return path


def _npz_key(path, keys, role):
    if len(keys) == 1:
        return keys[0]
    if role in keys:
        return role
    raise ValueError(
        f"{path} holds {len(keys)} arrays ({', '.join(sorted(keys)[:6])}); store one array, "
        f"or name the one to use {role!r}"
    )


def _check_numeric(path, dtype):
    if not any(np.issubdtype(dtype, kind) for kind in (np.integer, np.floating, np.bool_)):
        raise ValueError(f"{path}: expected an array of real numbers, got dtype {dtype}")


def _tiff_pages(path, header_only):
    from ._folder import _import_pil

    pil = _import_pil()
    try:
        with pil.open(path) as im:
            n = getattr(im, "n_frames", 1)
            if header_only:
                return (n, im.size[1], im.size[0]), None
            pages = []
            for i in range(n):
                im.seek(i)
                page = np.asarray(im)
                if page.ndim != 2:
                    raise ValueError(
                        f"{path}: page {i} has mode {im.mode}; volume pages must be "
                        "single-channel (grayscale or label) images"
                    )
                pages.append(page)
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise _unreadable(path, exc) from None
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # UnidentifiedImageError, truncated pages, decoder errors
        raise _unreadable(path, exc) from None
    if len({p.shape for p in pages}) > 1:
        sizes = sorted({p.shape for p in pages})
        raise ValueError(f"{path}: the pages have different sizes {sizes}")
    return None, np.stack(pages)


def _unreadable(path, exc) -> ValueError:
    return ValueError(
        f"cannot read {path}: not a volume file of its kind, or a damaged one "
        f"({_first_line(exc)}); replace or remove it"
    )


def _npy_header(f):
    """(shape, dtype) from the header of an open .npy stream."""
    major, _ = np.lib.format.read_magic(f)
    if major == 1:
        shape, _, dtype = np.lib.format.read_array_header_1_0(f)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(f)
    return shape, dtype


def volume_shape(path, role="image"):
    """Shape of the array stored in ``path``, read from its header (no pixel data).

    ``role`` (``"image"`` or ``"mask"``) chooses the array of an ``.npz`` holding several.
    """
    path = _check_file(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            with path.open("rb") as f:
                shape, dtype = _npy_header(f)
            _check_numeric(path, dtype)
            return tuple(shape)
        if suffix == ".npz":
            with zipfile.ZipFile(path) as z:
                keys = [n[:-4] for n in z.namelist() if n.endswith(".npy")]
                key = _npz_key(path, keys, role)
                with z.open(key + ".npy") as f:
                    shape, dtype = _npy_header(f)
            _check_numeric(path, dtype)
            return tuple(shape)
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise _unreadable(path, exc) from None
    except Exception as exc:  # BadZipFile, truncated header, garbled dictionary...
        raise _unreadable(path, exc) from None
    return _tiff_pages(path, header_only=True)[0]


def read_volume(path, role="image") -> np.ndarray:
    """The array stored in ``path`` (any numeric dtype, as stored).

    Parameters
    ----------
    path : str or Path
        ``.npy``, ``.npz`` (one array, or the one named ``role``) or a multi-page TIFF
        (pages are the first axis).
    role : {"image", "mask"}
        Which array of an ``.npz`` holding several to take.
    """
    path = _check_file(path)
    suffix = path.suffix.lower()
    if suffix in (".tif", ".tiff"):
        return _tiff_pages(path, header_only=False)[1]
    try:
        loaded = np.load(path, allow_pickle=False)
        if suffix == ".npz":
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise ValueError(f"{path} is a .npy array with an .npz name")
            with loaded:
                array = loaded[_npz_key(path, list(loaded.files), role)]
        elif isinstance(loaded, np.ndarray):
            array = loaded
        else:
            loaded.close()
            raise ValueError(f"{path} is an .npz archive with an .npy name")
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise _unreadable(path, exc) from None
    except Exception as exc:  # EOFError, BadZipFile, zlib errors, a garbled header...
        raise _unreadable(path, exc) from None
    _check_numeric(path, array.dtype)
    return array


def to_float_volume(array: np.ndarray) -> np.ndarray:
    """Image values as float32: ``uint8``/``uint16`` scaled to ``[0, 1]`` (by 255 / 65535),
    ``bool`` as 0/1, every other type converted as it is."""
    if array.dtype in (np.uint8, np.uint16):
        return (array.astype(np.float32) / np.float32(np.iinfo(array.dtype).max))
    return array.astype(np.float32)


def as_image_volume(array: np.ndarray, path) -> np.ndarray:
    """``(D, H, W)`` or ``(C, D, H, W)`` stored values -> float32 ``(C, D, H, W)``."""
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4:
        raise ValueError(
            f"{path}: expected a volume (D, H, W) or (C, D, H, W), got an array of shape "
            f"{array.shape}"
        )
    return np.ascontiguousarray(to_float_volume(array))


def as_label_volume(array: np.ndarray, path) -> np.ndarray:
    """Stored labels ``(D, H, W)`` -> int64, refusing non-integer values."""
    if array.ndim != 3:
        raise ValueError(
            f"{path}: expected a label volume (D, H, W), got an array of shape {array.shape}"
        )
    if not (np.issubdtype(array.dtype, np.integer) or array.dtype == bool):
        finite = np.isfinite(array)
        if not finite.all() or not np.all(array == np.round(array)):
            raise ValueError(f"{path}: a mask must hold integer class ids, got non-integer values")
    return array.astype(np.int64)
