"""What ``--resume`` must find unchanged: the options that set the optimisation path."""

from __future__ import annotations

from ._config import DATA_CHOICES, TrainConfig

#: options a resumed run must share with its checkpoint (the others may change)
FIXED_ON_RESUME = (
    "data", "upsample", "align_corners", "antialias", "batch_size", "lr", "image_size",
    "depth", "width", "norm", "seed", "scheduler", "loss", "train_samples", "epochs", "steps",
)


def check_same_settings(saved: TrainConfig, cfg: TrainConfig) -> None:
    """Raise ValueError naming every option in :data:`FIXED_ON_RESUME` that ``cfg``
    changes from the checkpoint's ``saved`` configuration."""
    changed = [k for k in FIXED_ON_RESUME if getattr(saved, k) != getattr(cfg, k)]
    if "data" in changed and not {saved.data, cfg.data} & set(DATA_CHOICES):
        changed.remove("data")  # the same folder dataset, found somewhere else
    if changed:
        raise ValueError(
            "cannot resume with different settings for: "
            + ", ".join(f"{k} (checkpoint {getattr(saved, k)!r}, now {getattr(cfg, k)!r})"
                        for k in changed)
        )
