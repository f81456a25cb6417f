"""sandbox.utils.data: PyTorch's Dataset/DataLoader/random_split vocabulary, deterministic."""

import warnings

import numpy as np
import pytest

import sandbox
from sandbox import Tensor
from sandbox.utils.data import (
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


class Dicts(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.full((1, 2, 2), i, np.float64)
        return {"image": sandbox.from_numpy(image), "mask": np.full((2, 2), i % 3),
                "id": i, "name": f"s{i}", "weight": 0.5 * i}


def test_default_collate_matches_torch_structure_and_dtypes(torch):
    from torch.utils.data import default_collate as torch_collate

    samples = [Dicts()[i] for i in range(3)]
    ours = default_collate(samples)
    theirs = torch_collate([{k: (torch.tensor(v.numpy()) if isinstance(v, Tensor) else v)
                             for k, v in s.items()} for s in samples])
    assert list(ours) == list(theirs)
    for key in ("image", "mask", "id", "weight"):
        assert ours[key].shape == tuple(theirs[key].shape), key
        assert np.dtype(ours[key].dtype).name == str(theirs[key].dtype).split(".")[1], key
        np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    assert ours["name"] == theirs["name"] == ["s0", "s1", "s2"]
    pairs = default_collate([(np.zeros(2), 1), (np.ones(2), 2)])
    assert isinstance(pairs, list) and pairs[0].shape == (2, 2) and pairs[1].tolist() == [1, 2]


def test_loader_batches_dicts_drop_last_and_custom_collate():
    loader = DataLoader(Dicts(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b["id"].tolist() for b in batches] == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0]["image"].shape == (4, 1, 2, 2) and batches[0]["image"].dtype == np.float64
    dropped = DataLoader(Dicts(10), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and len(list(dropped)) == 2
    ids = DataLoader(Dicts(5), batch_size=2, collate_fn=lambda b: [s["id"] for s in b])
    assert list(ids) == [[0, 1], [2, 3], [4]]
    single = list(DataLoader(Dicts(2), batch_size=None))
    assert single[1]["id"] == 1


def test_shuffle_is_reproducible_from_the_generator_or_manual_seed():
    def order(**kw):
        return [i for b in DataLoader(Dicts(12), batch_size=5, shuffle=True, **kw)
                for i in b["id"].tolist()]

    a = order(generator=sandbox.Generator().manual_seed(7))
    b = order(generator=sandbox.Generator().manual_seed(7))
    assert a == b and sorted(a) == list(range(12)) and a != list(range(12))
    g = sandbox.Generator().manual_seed(7)
    loader = DataLoader(Dicts(12), batch_size=5, shuffle=True, generator=g)
    first, second = [list(loader) for _ in range(2)]
    assert [x["id"].tolist() for x in first] != [x["id"].tolist() for x in second]  # new epoch
    sandbox.manual_seed(1)
    c = order()
    sandbox.manual_seed(1)
    assert order() == c


def test_num_workers_warns_once_and_gives_the_same_batches():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = DataLoader(Dicts(7), batch_size=3, num_workers=4, pin_memory=True,
                            persistent_workers=True)
        batches = list(loader) + list(loader)
    assert len(caught) == 1 and "main process" in str(caught[0].message)
    plain = list(DataLoader(Dicts(7), batch_size=3)) * 2
    for a, b in zip(batches, plain, strict=True):
        np.testing.assert_array_equal(a["image"].numpy(), b["image"].numpy())


def test_random_split_lengths_fractions_and_generator(torch):
    ds = Dicts(10)
    a, b = random_split(ds, [7, 3], generator=sandbox.Generator().manual_seed(0))
    assert (len(a), len(b)) == (7, 3) and isinstance(a, Subset)
    ids = sorted(s["id"] for s in list(a) + list(b))
    assert ids == list(range(10))
    c, d = random_split(ds, [7, 3], generator=sandbox.Generator().manual_seed(0))
    assert a.indices == c.indices and b.indices == d.indices
    # fractions: the same lengths as torch
    for fractions in ([0.8, 0.2], [0.5, 0.3, 0.2], [0.34, 0.33, 0.33]):
        ours = [len(s) for s in random_split(ds, fractions)]
        theirs = [len(s) for s in torch.utils.data.random_split(range(10), fractions)]
        assert ours == theirs
    with pytest.raises(ValueError, match="sum to 9"):
        random_split(ds, [6, 3])


def test_tensor_dataset_and_argument_errors():
    x = Tensor(np.arange(12.0).reshape(6, 2))
    y = Tensor(np.arange(6))
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4))
    assert batches[0][0].shape == (4, 2) and batches[1][1].tolist() == [4, 5]
    with pytest.raises(ValueError, match="same first dim"):
        TensorDataset(x, Tensor(np.arange(5)))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(Dicts(), batch_size=0)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Dicts(), num_workers=-1)
    with pytest.raises(TypeError, match="map-style"):
        DataLoader(iter(range(3)))
    with pytest.raises(ValueError, match="different shapes"):
        default_collate([np.zeros(2), np.zeros(3)])
