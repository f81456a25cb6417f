"""Training end to end: configuration, the trainer, prediction and plots.

>>> from sandbox.train import TrainConfig, Trainer
>>> summary = Trainer(TrainConfig(data="shapes", epochs=2, out="runs/demo")).fit()  # doctest: +SKIP
"""

from ._config import TrainConfig, build_datasets, build_loaders, build_model
from ._predict import load_model, predict, predict_file
from ._predict_volume import predict_volume, predict_volume_file
from ._trainer import Trainer, TrainingDiverged, TrainingInterrupted, compute_loss


def train(
    config: TrainConfig | None = None, resume: bool = False, overwrite: bool = False, **overrides
) -> dict:
    """Train with ``config`` (or ``TrainConfig(**overrides)``) and return the summary.

    ``resume`` continues the run in ``config.out``; ``overwrite`` replaces it (without
    either, a folder that holds a run is refused, see :class:`Trainer`).
    """
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
