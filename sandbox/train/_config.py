"""Training configuration and the builders that turn it into data, model and optimiser."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from ._memory_plan import cache_if_it_fits

DATA_CHOICES = ("shapes", "nuclei", "shapes3d")
LOSSES = ("ce", "dice", "ce+dice")
DEFORMATIONS = ("affine", "elastic")
SCHEDULERS = ("onecycle", "cosine", "none")


@dataclass
class TrainConfig:
    """Everything a training run needs; stored in every checkpoint.

    The defaults train a depth-3 UNet on synthetic shapes (see the README for the
    time it takes).  ``data`` is ``"shapes"``, ``"nuclei"``, ``"shapes3d"`` (synthetic
    volumes, trained by a 3-D UNet) or a folder holding ``images/`` and ``masks/``
    (volumes when they are ``.npy``/``.npz`` files or multi-page TIFFs; then
    ``image_size`` is the side of the training crop cubes).
    """

    data: str = "shapes"
    upsample: str = "bilinear"
    align_corners: bool | None = None
    antialias: bool = False
    epochs: int = 20
    steps: int | None = None
    batch_size: int = 8
    lr: float = 5e-3
    weight_decay: float = 1e-4
    scheduler: str = "onecycle"
    loss: str = "ce"
    image_size: int = 64
    depth: int = 3
    width: int = 16
    norm: str = "batch"
    train_samples: int = 400
    val_samples: int = 64
    num_classes: int | None = None  # for a folder dataset
    augment: bool = True
    deform: str = "none"  # "none", or a comma-separated subset of DEFORMATIONS
    threads: int | None = None
    seed: int = 0
    out: str = "runs/latest"
    patience: int | None = None
    log_every: int = 10
    progress: bool = True
    plots: bool = True
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.validate()
        if self.data not in DATA_CHOICES and Path(self.data).is_dir():
            # Stored absolute, so resume and predict work from any working directory.
            self.data = str(Path(self.data).resolve())

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field and its valid values."""

        def positive_int(name, allow_none=False):
            v = getattr(self, name)
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")

        for name in (
            "epochs",
            "batch_size",
            "image_size",
            "depth",
            "width",
            "train_samples",
            "val_samples",
            "log_every",
        ):
            positive_int(name)
        for name in ("steps", "threads", "patience", "num_classes"):
            positive_int(name, allow_none=True)
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        if not (isinstance(self.weight_decay, int | float) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        self.deform = normalise_deform(self.deform)
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be one of {SCHEDULERS}, got {self.scheduler!r}")
        if not isinstance(self.data, str) or not self.data:
            raise ValueError(
                f"data must be one of {DATA_CHOICES} or a folder with images/ and masks/, "
                f"got {self.data!r}"
            )
        # (A folder's existence is checked when the data is loaded: a checkpoint's
        # config stays usable for prediction after the training data has moved.)
        if self.data == "nuclei" and self.num_classes is not None:
            raise ValueError("num_classes does not apply to data='nuclei' (2 classes, fixed)")
        if self.data in ("shapes", "shapes3d") and self.num_classes is not None and not (
            2 <= self.num_classes <= 6
        ):
            raise ValueError(
                f"num_classes for {self.data} must be 2 to 6, got {self.num_classes}"
            )
        if self.upsample == "transposed" and (self.antialias or self.align_corners is not None):
            raise ValueError(
                "antialias and align_corners do not apply to upsample='transposed' (a learnt "
                "transposed convolution, no resampling); leave them out or choose a "
                "resampling mode"
            )
        if self.image_size < 2**self.depth:
            raise ValueError(
                f"image_size={self.image_size} is too small for depth={self.depth} "
                f"(needs at least {2**self.depth})"
            )
        if self.upsample != "transposed":
            from ..array.resample import check_options

            check_options(self.upsample, self.align_corners, self.antialias)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown config field(s): {sorted(unknown)}")
        return cls(**d)


def normalise_deform(value) -> str:
    """``deform`` in canonical form: ``"none"`` or the chosen names in DEFORMATIONS order."""
    if not isinstance(value, str):
        raise ValueError(f"deform must be 'none' or a comma-separated subset of "
                         f"{DEFORMATIONS}, got {value!r}")
    names = [n.strip() for n in value.split(",") if n.strip()]
    if names in ([], ["none"]):
        return "none"
    unknown = [n for n in names if n not in DEFORMATIONS]
    if unknown:
        raise ValueError(f"deform must be 'none' or a comma-separated subset of "
                         f"{DEFORMATIONS}, got {value!r}")
    return ",".join(n for n in DEFORMATIONS if n in names)


def deform_transform(cfg: TrainConfig):
    """The random deformation of ``cfg.deform`` (None for "none"), sized to the samples.

    affine: rotation up to 15 degrees (each axis on volumes), zoom 0.9-1.1, shear up to
    0.1, shift up to 5% of each side; elastic: smoothness sigma = size / 10, largest
    displacement up to size / 16 voxels. Image bilinear, mask nearest, reflected at the
    borders (so no label is invented there), one resampling for both.
    """
    if cfg.deform == "none":
        return None
    from .. import data

    size = cfg.image_size
    opts = dict(padding_mode="reflection")
    chain = []
    if "elastic" in cfg.deform:
        chain.append(data.RandomElastic(sigma=(size / 12, size / 8),
                                        magnitude=(0.0, size / 16), **opts))
    if "affine" in cfg.deform:
        chain.append(data.RandomAffine(degrees=15, scale=(0.9, 1.1), shear=0.1,
                                       translate=0.05, **opts))
    return data.RandomDeform(chain)


def build_datasets(cfg: TrainConfig):
    """Return ``(train_set, val_set)`` for ``cfg.data``."""
    from .. import data

    if cfg.data == "shapes":
        classes = {} if cfg.num_classes is None else {"num_classes": cfg.num_classes}
        train = data.Shapes(cfg.train_samples, image_size=cfg.image_size, seed=cfg.seed, **classes)
        # A different seed stream: validation images are never seen in training.
        val = data.Shapes(
            cfg.val_samples, image_size=cfg.image_size, seed=cfg.seed + 10_000, **classes
        )
        cache_if_it_fits(train, val)  # drawn once, not in every epoch
    elif cfg.data == "nuclei":
        train = data.Nuclei(
            "train", crop_size=cfg.image_size, samples_per_epoch=cfg.train_samples, seed=cfg.seed
        )
        val = data.Nuclei("val")
    elif cfg.data == "shapes3d":
        classes = {} if cfg.num_classes is None else {"num_classes": cfg.num_classes}
        train = data.Shapes3D(
            cfg.train_samples, volume_size=cfg.image_size, seed=cfg.seed, **classes
        )
        val = data.Shapes3D(
            cfg.val_samples, volume_size=cfg.image_size, seed=cfg.seed + 10_000, **classes
        )
        cache_if_it_fits(train, val)
    else:
        if not Path(cfg.data).is_dir():
            raise ValueError(
                f"data must be one of {DATA_CHOICES} or an existing folder with images/ and "
                f"masks/, got {cfg.data!r}"
            )
        if cfg.num_classes is None:
            raise ValueError("a folder dataset needs num_classes (--num-classes)")
        if data.is_volume_folder(cfg.data):
            full = data.VolumeFolder(cfg.data, cfg.num_classes)
        else:
            full = data.ImageFolder(cfg.data, cfg.num_classes)
        if len(full) < 2:
            raise ValueError(f"{cfg.data} holds {len(full)} pair(s); need at least 2 (train + val)")
        _check_crop_fits(cfg, full)
        train, val = validation_split(full, 0.2, cfg.seed)
    return train, val


def validation_split(dataset, fraction: float, seed: int):
    """``(train, val)``: ``val`` holds ``max(1, round(fraction * n))`` samples (at least
    one left for training), drawn by ``random_split`` from ``Generator(seed)``."""
    from ..data import random_split
    from ..runtime.rng import Generator

    n = len(dataset)
    k = min(max(1, round(fraction * n)), n - 1)
    val, train = random_split(dataset, [k, n - k], generator=Generator().manual_seed(seed))
    return train, val


def _check_crop_fits(cfg: TrainConfig, folder) -> None:
    """Training crops of ``image_size`` must fit in every image (or volume) of the folder."""
    index = min(range(len(folder)), key=lambda i: min(folder.sizes[i]))
    size = folder.sizes[index]
    if cfg.image_size > min(size):
        fit = min(size) // 2**cfg.depth * 2**cfg.depth
        hint = (
            f"pass --image-size {fit} (or less)"
            if fit >= 2**cfg.depth
            else f"the image is too small for depth {cfg.depth}: use a smaller --depth"
        )
        raise ValueError(
            f"training crops of --image-size {cfg.image_size} do not fit the smallest image, "
            f"{folder.pairs[index][0]} ({'x'.join(str(n) for n in size)}); {hint}"
        )


def spatial_dims(dataset) -> int:
    """2 for images, 3 for volumes (a dataset's ``spatial_dims``, default 2)."""
    return getattr(dataset, "spatial_dims", 2)


def build_loaders(cfg: TrainConfig, train_set, val_set):
    from .. import data

    if spatial_dims(train_set) == 3:
        flips = [data.RandomFlip3D(), data.RandomRotate3D()]
        crop, centre = data.RandomCrop3D, data.CenterCrop3D
    else:
        flips = [data.RandomFlip(), data.RandomRotate90()]
        crop, centre = data.RandomCrop, data.CenterCrop
    steps = flips if cfg.augment else []
    folder = cfg.data not in DATA_CHOICES
    if folder:
        # Folder images may differ in size: training batches are crops of image_size.
        steps.append(crop(cfg.image_size) if cfg.augment else centre(cfg.image_size))
    deform = deform_transform(cfg)
    if deform is not None:  # after the crop: every deformation is of image_size
        steps.append(deform)
    transform = data.Compose(steps) if steps else None
    train = data.DataLoader(
        train_set,
        cfg.batch_size,
        shuffle=True,
        seed=cfg.seed,
        drop_last=len(train_set) >= cfg.batch_size,
        transform=transform,
        collate_fn=data.collate_segmentation,
    )
    # Whole validation images: one per batch when the folder's sizes differ.
    mixed = folder and len(set(getattr(val_set, "sizes", [None]))) > 1
    val = data.DataLoader(val_set, 1 if mixed else cfg.batch_size, shuffle=False,
                          collate_fn=data.collate_segmentation)
    return train, val


def build_model(cfg: TrainConfig, in_channels: int, num_classes: int, spatial_dims: int = 2):
    """The UNet of ``cfg``: 2-D for images, ``spatial_dims=3`` for volumes."""
    from .. import nn

    return nn.UNet(
        in_channels,
        num_classes,
        depth=cfg.depth,
        base_width=cfg.width,
        upsample=cfg.upsample,
        # syncbatch: batch norm here; a distributed run synchronises its statistics
        norm="batch" if cfg.norm == "syncbatch" else cfg.norm,
        align_corners=cfg.align_corners,
        antialias=cfg.antialias,
        spatial_dims=spatial_dims,
    )


def total_steps(cfg: TrainConfig, batches_per_epoch: int) -> int:
    return cfg.steps if cfg.steps is not None else cfg.epochs * batches_per_epoch


def build_optimizer(cfg: TrainConfig, model, steps: int):
    from .. import optim

    opt = optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.scheduler == "onecycle":
        sched = optim.OneCycleLR(opt, max_lr=cfg.lr, total_steps=steps, pct_start=0.2)
    elif cfg.scheduler == "cosine":
        sched = optim.CosineAnnealingLR(opt, T_max=steps)
    else:
        sched = None
    return opt, sched


def check_batch_norm(cfg: TrainConfig, train_set, dims: int) -> None:
    """Refuse, before training, a batch-norm model whose deepest level would hold one
    value per channel (training batch norm needs more than one)."""
    if cfg.norm != "batch":
        return
    batch = min(cfg.batch_size, max(len(train_set), 1))
    side = cfg.image_size // 2**cfg.depth
    if batch * side**dims >= 2:
        return
    need = 2 ** (cfg.depth + 1)
    raise ValueError(
        f"--image-size {cfg.image_size} with --depth {cfg.depth} leaves the deepest level "
        f"1 pixel wide, and with batches of {batch} batch norm has one value per channel to "
        f"normalise; use --image-size {need} or more, --depth {cfg.depth - 1}, a larger "
        "--batch-size, or --norm group"
        if cfg.depth > 1 else
        f"--image-size {cfg.image_size} is too small for batch norm with batches of {batch}; "
        f"use --image-size {need} or more, a larger --batch-size, or --norm group"
    )


def first_batch(loader, epoch: int, start: int):
    """Read the batch training will start with (its files and labels are checked, and
    any notice about them is given, before the run prints anything)."""
    for images, masks in loader.batches(epoch, start=start):
        return images, masks
    return None


def input_normalization(dataset) -> dict:
    """How raw uint8 images map to model inputs (stored so ``predict`` can repeat it)."""
    base = getattr(dataset, "dataset", dataset)
    # "input": image files are read by sandbox.data's one reader (integers divided by
    # their type's range, floats as stored), in training and in predict alike.
    if hasattr(base, "mean") and hasattr(base, "std"):
        return {"kind": "standardize", "mean": float(base.mean), "std": float(base.std),
                "input": "dtype-range"}
    return {"kind": "scale", "divisor": 255.0, "input": "dtype-range"}
