"""``sandbox train --deform``: random affine / elastic deformation of the training pairs."""

import numpy as np
import pytest

from sandbox.cli.commands import main
from sandbox.data import RandomAffine, RandomDeform, RandomElastic
from sandbox.train import TrainConfig, checkpoint
from sandbox.train._config import build_datasets, build_loaders, deform_transform

TINY = ["--image-size", "16", "--depth", "2", "--width", "4", "--train-samples", "8",
        "--val-samples", "4", "--batch-size", "4", "--quiet", "--no-plots"]


@pytest.mark.parametrize(
    ("given", "stored"),
    [("none", "none"), ("", "none"), ("affine", "affine"), ("elastic, affine", "affine,elastic"),
     ("affine,elastic,affine", "affine,elastic")],
)
def test_config_stores_the_canonical_form(given, stored):
    assert TrainConfig(deform=given).deform == stored


def test_config_refuses_unknown_deformations():
    with pytest.raises(ValueError, match=r"deform must be 'none' or .*'affine', 'elastic'"):
        TrainConfig(deform="affine,shear")


def test_old_configs_without_the_field_mean_none():
    d = TrainConfig().to_dict()
    del d["deform"]
    assert TrainConfig.from_dict(d).deform == "none"


def test_transform_matches_the_choice():
    assert deform_transform(TrainConfig()) is None
    both = deform_transform(TrainConfig(deform="affine,elastic", image_size=32))
    assert isinstance(both, RandomDeform)
    # elastic first, then affine; one resampling for both
    assert [type(t) for t in both.transforms] == [RandomElastic, RandomAffine]
    assert both.transforms[0].magnitude == (0.0, 2.0)  # size / 16


@pytest.mark.parametrize("data", ["shapes", "shapes3d"])
def test_loader_batches_are_deformed_reproducibly(data):
    cfg = TrainConfig(data=data, deform="affine,elastic", image_size=16, depth=2,
                      train_samples=4, val_samples=2, batch_size=2)
    plain = TrainConfig(data=data, image_size=16, depth=2, train_samples=4, val_samples=2,
                        batch_size=2)
    train, val = build_datasets(cfg)
    labels = set(range(train.num_classes))
    first = [b for b in build_loaders(cfg, train, val)[0]]
    again = [b for b in build_loaders(cfg, train, val)[0]]
    undeformed = [b for b in build_loaders(plain, train, val)[0]]
    for (x, m), (x2, m2), (x0, _) in zip(first, again, undeformed, strict=True):
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(m, m2)
        assert set(np.unique(m)) <= labels
        assert x.shape == x0.shape and not np.array_equal(x, x0)


def test_train_stores_deform_and_resume_restores_it(tmp_path, capsys):
    out = str(tmp_path / "run")
    argv = ["train", "--steps", "4", "--stop-after", "2", "--deform", "elastic,affine",
            "--out", out, *TINY]
    assert main(argv) == 0
    assert checkpoint.load_training_state(tmp_path / "run" / "last.ckpt")["config"][
        "deform"] == "affine,elastic"
    # A different choice on resume is refused; the same one in another order is not.
    assert main(["train", "--resume", "--deform", "affine", "--out", out, "--quiet"]) == 2
    assert "--deform 'affine' (checkpoint: 'affine,elastic')" in capsys.readouterr().err
    assert main(["train", "--resume", "--deform", "affine,elastic", "--out", out, "--quiet",
                 "--no-plots"]) == 0
    assert "done: 4 steps" in capsys.readouterr().out
    assert checkpoint.load_training_state(tmp_path / "run" / "last.ckpt")["config"][
        "deform"] == "affine,elastic"


def test_bad_deform_is_one_line(capsys):
    assert main(["train", "--deform", "twist", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--deform" in err and "twist" in err
