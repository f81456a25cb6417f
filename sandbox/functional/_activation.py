"""Activations, (log-)softmax and constant padding (Functions in :mod:`sandbox.ops`)."""

from __future__ import annotations

from ..ops import leaky_relu, log_softmax, logsumexp, pad, relu, sigmoid, softmax, softplus, tanh

__all__ = [
    "leaky_relu",
    "log_softmax",
    "logsumexp",
    "pad",
    "relu",
    "sigmoid",
    "softmax",
    "softplus",
    "tanh",
]
