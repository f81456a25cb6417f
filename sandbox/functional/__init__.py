"""Differentiable operations on :class:`sandbox.Tensor` (PyTorch's ``torch.nn.functional``).

Each op is a :class:`sandbox.autograd.Function` pairing an array-level forward
with its backward.  The submodules group them by kind.
"""

from ._activation import (  # noqa: F401
    gelu,
    leaky_relu,
    log_softmax,
    logsumexp,
    pad,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from ._adaptive_pool import adaptive_avg_pool2d, adaptive_max_pool2d  # noqa: F401
from ._bce import binary_cross_entropy  # noqa: F401
from ._conv import conv2d, conv3d, conv_transpose2d, conv_transpose3d  # noqa: F401
from ._dropout import dropout, dropout2d  # noqa: F401
from ._grid_sample import affine_grid, grid_sample  # noqa: F401
from ._layer_norm import instance_norm, layer_norm  # noqa: F401
from ._loss import (  # noqa: F401
    binary_cross_entropy_with_logits,
    cross_entropy,
    dice_loss,
    l1_loss,
    mse_loss,
    nll_loss,
)
from ._norm import batch_norm, batch_norm_relu, group_norm  # noqa: F401
from ._one_hot import one_hot  # noqa: F401
from ._pool import avg_pool2d, avg_pool3d, max_pool2d, max_pool3d  # noqa: F401
from ._resample import interpolate  # noqa: F401
