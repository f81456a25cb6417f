"""DataLoader: batching, (seed, epoch)-determined shuffling and augmentation."""

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import RandomCrop, RandomFlip, Shapes, collate_segmentation


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


class Indexed:
    """Sample i: image filled with i, mask filled with i."""

    def __init__(self, n, size=4):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return (np.full((1, self.size, self.size), i, np.float32),
                np.full((self.size, self.size), i, np.int64))


def ids(batches):
    return [b[1][:, 0, 0].tolist() for b in batches]


def test_batches_shapes_dtypes_and_partial_last_batch():
    loader = SegmentationLoader(Indexed(10), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert ids(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    images, masks = batches[0]
    assert images.shape == (4, 1, 4, 4) and images.dtype == np.float32
    assert masks.shape == (4, 4, 4) and masks.dtype == np.int64


def test_drop_last():
    loader = SegmentationLoader(Indexed(10), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert ids(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(SegmentationLoader(Indexed(8), batch_size=4, drop_last=True)) == 2
    assert len(SegmentationLoader(Indexed(3), batch_size=4, drop_last=True)) == 0


def test_shuffle_deterministic_by_seed_and_epoch():
    def epoch_order(seed, epoch):
        loader = SegmentationLoader(Indexed(13), batch_size=5, shuffle=True, seed=seed)
        loader.set_epoch(epoch)
        return sum(ids(loader), [])

    first = epoch_order(0, 0)
    assert sorted(first) == list(range(13)) and first != list(range(13))
    assert epoch_order(0, 0) == first
    assert epoch_order(1, 0) != first
    assert epoch_order(0, 1) != first


def test_epoch_counter_advances_and_resume_is_exact():
    loader = SegmentationLoader(Indexed(9), batch_size=2, shuffle=True, seed=3)
    run = [ids(loader) for _ in range(3)]  # epochs 0, 1, 2
    assert loader.epoch == 3
    assert run[0] != run[1]
    # Resume from a saved state in the middle of epoch 1.
    other = SegmentationLoader(Indexed(9), batch_size=2, shuffle=True)
    other.load_state_dict({"seed": 3, "epoch": 1})
    assert ids(other.batches(1, start=2)) == run[1][2:]
    assert ids(other) == run[1]


def test_augmentation_seeded_by_loader_and_independent_of_batch_size():
    ds = Shapes(6, image_size=32, seed=0)
    transform = RandomFlip()

    def collect(batch_size, seed=0, epoch=0):
        loader = SegmentationLoader(ds, batch_size=batch_size, shuffle=True, seed=seed,
                            transform=transform)
        return np.concatenate([m for _, m in loader.batches(epoch)])

    a = collect(2)
    np.testing.assert_array_equal(a, collect(4))
    assert not np.array_equal(a, collect(2, epoch=1))
    assert not np.array_equal(a, collect(2, seed=5))


def test_transform_changing_size_and_mismatched_sizes():
    ds = Shapes(4, image_size=32)
    images, masks = next(iter(SegmentationLoader(ds, batch_size=4, transform=RandomCrop(16))))
    assert images.shape == (4, 1, 16, 16) and masks.shape == (4, 16, 16)

    class Ragged(Indexed):
        def __getitem__(self, i):
            s = 4 + i
            return np.zeros((1, s, s), np.float32), np.zeros((s, s), np.int64)

    with pytest.raises(ValueError, match="different shapes"):
        next(iter(SegmentationLoader(Ragged(3), batch_size=3)))


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        SegmentationLoader(Indexed(3), batch_size=0)
    with pytest.raises(TypeError, match="transform"):
        SegmentationLoader(Indexed(3), transform=5)
    with pytest.raises(TypeError, match="dataset"):
        SegmentationLoader(5)


def test_subset_and_random_split():
    from sandbox.data import Shapes, Subset, random_split
    from sandbox.train._config import validation_split

    ds = Shapes(10, image_size=16, seed=0)
    rest, part = validation_split(ds, 0.2, seed=1)
    assert len(part) == 2 and len(rest) == 8
    assert sorted(part.indices + rest.indices) == list(range(10))
    assert part.num_classes == ds.num_classes and part.class_names == ds.class_names
    np.testing.assert_array_equal(part[0][0], ds[part.indices[0]][0])
    with pytest.raises(IndexError, match="out of range"):
        Subset(ds, [3, 10])
    with pytest.raises(ValueError, match="fraction"):
        random_split(ds, [1.5, -0.5])
