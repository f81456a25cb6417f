"""Differentiable operations on :class:`sandbox.Tensor` (PyTorch's ``torch.nn.functional``).

Each op is a :class:`sandbox.autograd.Function` pairing an array-level forward
with its backward.  The submodules group them by kind.
"""
