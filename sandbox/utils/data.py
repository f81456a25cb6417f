"""``torch.utils.data``'s names: the datasets and the loader of :mod:`sandbox.data`.

``from sandbox.utils.data import DataLoader, Dataset, random_split`` works as in
PyTorch; the classes are :mod:`sandbox.data`'s own (one definition each).
"""

from ..data.dataset import Dataset, Subset, TensorDataset, random_split
from ..data.loader import DataLoader, default_collate, get_worker_info

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate",
           "get_worker_info", "random_split"]
