"""Resampling of plain numpy arrays: ``sandbox.resample.resize`` and friends.

The implementation lives in :mod:`sandbox.array.resample`; this module keeps the
short public name.  See that package for the modes and options.
"""

from .array.resample import (
    MODES,
    Table,
    check_array,
    check_options,
    output_size,
    resize,
    resize_adjoint,
    weight_matrix,
    weight_table,
)

__all__ = [
    "MODES",
    "Table",
    "check_array",
    "check_options",
    "output_size",
    "resize",
    "resize_adjoint",
    "weight_matrix",
    "weight_table",
]
