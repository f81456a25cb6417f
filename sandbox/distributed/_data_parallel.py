"""One data-parallel training step: shard forward and backward, then the fixed-order sum.

Every rank holds a full replica of the model.  A step

1. runs forward and backward on the rank's shard of the global batch (its
   contiguous ``B/N`` positions), and packs the gradients into one flat buffer;
2. agrees, in one small all-gather, on the loss, on whether any rank's loss is not
   finite (the NaN guard) and on whether any rank was asked to stop (Ctrl-C,
   SIGTERM);
3. sums the gradient buffers in the library's fixed order
   (:func:`~sandbox.distributed.fixed_order_sum`), scales by ``1/N`` and writes the
   result back into every parameter's ``.grad``.

The optimiser then runs unchanged on every rank: identical gradients give identical
weights, with no further communication.  Each rank's loss is the mean over its
shard; with equal shards (``N`` divides the batch, one image size) the mean of the
shard means is the global mean, so the summed gradient is the 1-rank gradient up
to the order of the additions.  Dice is made global by its loss
(:mod:`sandbox.distributed._loss`).

Batch-norm running statistics stay per rank during training (as in PyTorch's DDP)
and rank 0's are the model's: they are broadcast before validation and saved in
checkpoints.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..autograd import Tensor
from ._reduce import digest, fixed_order_sum, flat_state, load_flat_state, small_sum


class ReplicasDiverged(RuntimeError):
    """The ranks' model replicas are not bit-identical."""


def check_batch_size(batch_size: int, size: int) -> None:
    """Refuse a global batch that the ranks cannot share equally (one line)."""
    if batch_size % size:
        lower = batch_size // size * size
        options = sorted({n for n in (lower, lower + size) if n > 0})
        raise ValueError(
            f"--batch-size {batch_size} is the global batch and must be divisible by the "
            f"{size} ranks; use " + " or ".join(str(n) for n in options)
        )


def shard_slice(rank: int, size: int, batch: int) -> slice:
    """Rank ``rank``'s positions within a global batch of ``batch`` samples."""
    per = batch // size
    return slice(rank * per, (rank + 1) * per)


class DataParallel:
    """The data-parallel step of one model on a :class:`Communicator`.

    Parameters
    ----------
    comm : Communicator
    model : Module
        The replica; its parameter order defines the layout of the flat gradient.
    """

    def __init__(self, comm, model):
        self.comm = comm
        self.model = model
        self.params = list(model.parameters())
        self.sizes = [p.numel() for p in self.params]
        self.numel = sum(self.sizes)
        self.dtype = np.result_type(*[p.dtype for p in self.params])
        # Seconds spent per part of the step, summed over the steps of this session.
        # (compute_cpu: the CPU time of this process during the compute part.)
        self.timings = {"compute": 0.0, "compute_cpu": 0.0, "pack": 0.0, "communicate": 0.0,
                        "steps": 0}

    @property
    def bytes_per_step(self) -> int:
        """Gradient bytes each rank sends (and receives) per step: 2 (N-1)/N buffers."""
        n = self.comm.size
        return int(2 * (n - 1) * math.ceil(self.numel / n) * np.dtype(self.dtype).itemsize)

    # ------------------------------------------------------------- replicas
    def broadcast_state(self) -> None:
        """Give every rank rank 0's parameters and buffers (start, resume)."""
        flat = flat_state(self.model)
        self.comm.bcast(flat, root=0)
        load_flat_state(self.model, flat)

    def broadcast_buffers(self) -> None:
        """Give every rank rank 0's buffers (batch-norm running statistics)."""
        buffers = list(self.model.buffers())
        if not buffers or self.comm.size == 1:
            return
        flat = np.concatenate([np.asarray(b, np.float64).ravel() for b in buffers])
        self.comm.bcast(flat, root=0)
        offset = 0
        for b in buffers:
            b[...] = flat[offset : offset + b.size].reshape(b.shape).astype(b.dtype, copy=False)
            offset += b.size

    def check_replicas(self, buffers: bool = True, when: str = "") -> None:
        """Raise :class:`ReplicasDiverged` unless every rank holds the same bits."""
        got = self.comm.allgather(np.array([digest(self.model, buffers=buffers)], np.int64))
        bad = [r for r in range(self.comm.size) if got[r, 0] != got[0, 0]]
        if bad:
            raise ReplicasDiverged(
                f"replicas diverged{' ' + when if when else ''}: the model on rank(s) "
                f"{', '.join(map(str, bad))} differs from rank 0's"
            )

    # ----------------------------------------------------------------- step
    def step(self, images, masks, loss_fn, stop: bool) -> tuple[float, bool, bool]:
        """Forward and backward on this rank's shard, then agree and sum.

        Parameters
        ----------
        images, masks : ndarray
            This rank's shard of the global batch.
        loss_fn : callable
            ``loss_fn(logits, masks) -> Tensor`` (a scalar mean over the shard).
        stop : bool
            This rank was asked to stop (Ctrl-C, SIGTERM).

        Returns
        -------
        loss : float
            Mean of the ranks' losses (added in rank order).
        diverged : bool
            Some rank's loss is NaN or infinite; the gradients are then left unsummed.
        stop : bool
            Some rank was asked to stop: every rank stops after this step.
        """
        t0, c0 = time.perf_counter(), time.process_time()
        for p in self.params:
            p.grad = None
        loss = loss_fn(self.model(Tensor(images)), masks)
        value = loss.item()
        loss.backward()
        t1 = time.perf_counter()
        self.timings["compute_cpu"] += time.process_time() - c0
        flat = self._pack()
        t2 = time.perf_counter()
        total = small_sum(self.comm, [value, 0.0 if math.isfinite(value) else 1.0, float(stop)])
        diverged = bool(total[1] > 0)
        summed = None if diverged else fixed_order_sum(self.comm, flat)
        t3 = time.perf_counter()
        if summed is not None:
            self._unpack(summed, 1.0 / self.comm.size)
        t4 = time.perf_counter()
        timings = self.timings
        timings["compute"] += t1 - t0
        timings["pack"] += (t2 - t1) + (t4 - t3)
        timings["communicate"] += t3 - t2
        timings["steps"] += 1
        return float(total[0] / self.comm.size), diverged, bool(total[2] > 0)

    def _pack(self) -> np.ndarray:
        flat = np.empty(self.numel, self.dtype)
        offset = 0
        for p, n in zip(self.params, self.sizes, strict=True):
            if p.grad is None:  # unused on this shard: contributes zeros
                flat[offset : offset + n] = 0
            else:
                flat[offset : offset + n] = np.asarray(p.grad).ravel()
            offset += n
        return flat

    def _unpack(self, summed: np.ndarray, scale: float) -> None:
        summed *= summed.dtype.type(scale)
        offset = 0
        for p, n in zip(self.params, self.sizes, strict=True):
            grad = summed[offset : offset + n].reshape(p.shape).astype(p.dtype)
            p.grad = Tensor(grad)
            offset += n
