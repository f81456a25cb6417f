"""Synchronised batch norm: statistics over the global batch, summed in the fixed order.

With ``--norm syncbatch`` every batch-norm layer of the model normalises with the
mean and variance of the *global* batch: per channel, each rank sums its shard
(float64), the ranks add the sums in rank order (:func:`small_sum`), and the
backward does the same with the two per-channel sums its input gradient needs,
``sum(dy)`` and ``sum(dy * xhat)``.  That is three small collectives per layer and
step.  The model is then the 1-rank batch-norm model up to rounding, at any B/N.

Each rank's loss is the mean over its shard and the summed gradient is scaled by
``1/N`` afterwards (:class:`DataParallel`); the input gradient below uses each
rank's unscaled ``dy``, which is ``N`` times the true one on every rank alike, so
after the final ``1/N`` every gradient is the global batch's.

Eval mode uses the running statistics, as plain batch norm does.  Not twice
differentiable (``create_graph=True`` is refused).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, is_grad_enabled
from ..nn._norm import _BatchNorm
from ._reduce import small_sum


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, comm, running_mean, running_var, momentum, eps):
        c = x.shape[1]
        axes = (0, *range(2, x.ndim))
        per_channel = (1, -1) + (1,) * (x.ndim - 2)
        x64 = x.astype(np.float64)
        first = small_sum(comm, np.concatenate([x64.sum(axis=axes), [x.size // c]]))
        count = first[c]
        mean = first[:c] / count
        centred = x64 - mean.reshape(per_channel)
        var = small_sum(comm, (centred * centred).sum(axis=axes)) / count
        invstd = 1.0 / np.sqrt(var + eps)
        xhat = centred * invstd.reshape(per_channel)
        out = xhat
        if weight is not None:
            out = out * weight.reshape(per_channel) + bias.reshape(per_channel)
        if running_mean is not None:
            unbiased = var * (count / max(count - 1.0, 1.0))
            running_mean[...] = (1 - momentum) * running_mean + momentum * mean
            running_var[...] = (1 - momentum) * running_var + momentum * unbiased
        ctx.comm, ctx.count, ctx.invstd = comm, count, invstd
        ctx.xhat, ctx.weight, ctx.dtype = xhat, weight, x.dtype
        return out.astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():
            raise RuntimeError("synchronised batch norm is not twice differentiable "
                               "(create_graph=True); use --norm batch or group")
        xhat, weight, dtype = ctx.xhat, ctx.weight, ctx.dtype
        axes = (0, *range(2, xhat.ndim))
        per_channel = (1, -1) + (1,) * (xhat.ndim - 2)
        c = xhat.shape[1]
        g = np.asarray(grad, np.float64)
        local = np.concatenate([g.sum(axis=axes), (g * xhat).sum(axis=axes)])
        gb, gw = local[:c], local[c:]  # this rank's share; DataParallel sums them
        total = small_sum(ctx.comm, local) / ctx.count
        scale = ctx.invstd if weight is None else ctx.invstd * weight
        gx = scale.reshape(per_channel) * (
            g - total[:c].reshape(per_channel) - xhat * total[c:].reshape(per_channel)
        )
        if weight is None:
            return gx.astype(dtype), None, None, None, None, None, None, None
        return (gx.astype(dtype), gw.astype(weight.dtype), gb.astype(weight.dtype),
                None, None, None, None, None)


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose training statistics span every rank's shard (see the module doc).

    Parameters
    ----------
    num_features : int
    comm : Communicator
        This rank's communicator.
    eps, momentum, affine, track_running_stats, dtype
        As for :class:`~sandbox.nn.BatchNorm2d`.
    """

    def __init__(self, num_features, comm, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, dtype=None):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats, dtype=dtype)
        self.comm = comm

    def forward(self, x):
        if not (self.training or not self.track_running_stats):
            return super().forward(x)  # eval: the running statistics
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            self.num_batches_tracked += 1
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        return _SyncBatchNormFunction.apply(
            x, self.weight, self.bias, self.comm, self.running_mean, self.running_var,
            momentum, self.eps,
        )

    def forward_relu(self, x):
        from .. import functional as F

        return F.relu(self(x))


def convert_sync_batchnorm(model, comm):
    """Replace every batch-norm layer of ``model`` by a :class:`SyncBatchNorm` that shares
    its parameters and buffers (state-dict names unchanged); returns ``model``."""
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if isinstance(child, _BatchNorm) and not isinstance(child, SyncBatchNorm):
                sync = SyncBatchNorm(child.num_features, comm, eps=child.eps,
                                     momentum=child.momentum, affine=child.affine,
                                     track_running_stats=child.track_running_stats)
                for pname in ("weight", "bias"):
                    if child._parameters.get(pname) is not None:
                        setattr(sync, pname, child._parameters[pname])
                for bname, buf in child._buffers.items():
                    sync._buffers[bname] = buf
                sync.training = child.training
                parent._modules[name] = sync  # in place: the module order is kept
    return model
