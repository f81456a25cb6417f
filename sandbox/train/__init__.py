"""Training end to end: configuration, the trainer, prediction and plots.

>>> from sandbox.train import TrainConfig, Trainer
>>> summary = Trainer(TrainConfig(data="shapes", epochs=2, out="runs/demo")).fit()  # doctest: +SKIP
"""

from __future__ import annotations

import importlib

# Public name -> the module that defines it, imported on first use: ``sandbox.save``
# needs only :mod:`.serialize` and :mod:`.checkpoint`, not the trainer and its models.
_HOMES = {
    "TrainConfig": "_config", "build_datasets": "_config", "build_loaders": "_config",
    "build_model": "_config",
    "load_model": "_predict", "predict": "_predict", "predict_file": "_predict",
    "predict_volume": "_predict_volume", "predict_volume_file": "_predict_volume",
    "Trainer": "_trainer", "TrainingDiverged": "_trainer", "TrainingInterrupted": "_trainer",
    "compute_loss": "_trainer",
}  # fmt: skip


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def train(
    config=None, resume: bool = False, overwrite: bool = False, **overrides
) -> dict:
    """Train with ``config`` (or ``TrainConfig(**overrides)``) and return the summary.

    ``resume`` continues the run in ``config.out``; ``overwrite`` replaces it (without
    either, a folder that holds a run is refused, see :class:`Trainer`).
    """
    from ._config import TrainConfig
    from ._trainer import Trainer

    if config is None:
        config = TrainConfig(**overrides)
    elif overrides:
        config = TrainConfig.from_dict({**config.to_dict(), **overrides})
    return Trainer(config, resume=resume, overwrite=overwrite).fit()


__all__ = [
    "TrainConfig",
    "Trainer",
    "TrainingDiverged",
    "TrainingInterrupted",
    "build_datasets",
    "build_loaders",
    "build_model",
    "compute_loss",
    "load_model",
    "predict",
    "predict_file",
    "predict_volume",
    "predict_volume_file",
    "train",
]
