"""Cases as PyTorch users write them: a UNet of ``nn`` modules, convolutions through ``F``.

* ``unet-user/<mode>/<size>``: one training step (forward, cross-entropy,
  backward, Adam) of the classic UNet written the way PyTorch users write it
  (:func:`user_unet`: ``nn.Sequential`` of ``nn.Conv2d``, ``nn.BatchNorm2d`` and
  ``nn.ReLU(inplace=True)``, ``nn.MaxPool2d``, ``nn.Upsample(scale_factor=2)``,
  ``cat``).  The *same code* runs with ``sandbox`` and with ``torch`` as its module
  namespace (the idea of ``tests/project/scripts/torch_segmentation.py``, whose
  imports are rewritten); the torch model gets the sandbox model's initial
  weights.  Widths 16-32-64-128-256, 1 input channel, 2 classes, float32; 64² and
  128² at batch 8, 256² at batch 4; nearest, bilinear, bicubic.
* ``conv-autograd/<cin>-<cout>@<hw>``: the ``conv-layer`` shapes (every 3×3
  convolution of the classic UNet, batch 8) through the public autograd API:
  ``F.conv2d(x, w, padding=1)`` then ``y.backward(g)`` for the input and weight
  gradients, against the same in PyTorch, and against the same work through the
  array API (the ``conv-layer`` calls on the same data, the case's ``baseline``)
  timed in the same rounds: ``overhead`` is what the autograd layer costs.

``--quick`` shrinks widths, batch and pixels (same names).
"""

from __future__ import annotations

import numpy as np

from ._cases import Case, Work, _normal, _rng
from ._cases_classic import (
    CLASSIC_MODES,
    CLASSIC_WIDTHS,
    CONV_LAYERS,
    NUM_CLASSES,
    QUICK_WIDTHS,
    adam_step,
    conv_flops,
    conv_layer_data,
)

#: (pixels, batch) of the unet-user steps
USER_SIZES = ((64, 8), (128, 8), (256, 4))


def user_unet(lib, in_channels=1, num_classes=NUM_CLASSES, widths=CLASSIC_WIDTHS,
              mode="bilinear"):
    """The classic UNet as a PyTorch user writes it, built from ``lib`` (``torch`` or
    ``sandbox``: the code is the same for both).

    Parameters
    ----------
    lib : module
        ``torch`` or ``sandbox``; ``lib.nn`` provides the layers, ``lib.cat`` the
        concatenation.
    in_channels, num_classes : int
    widths : sequence of int
        Channels per level, top to bottom.
    mode : str
        ``nn.Upsample`` mode of the decoder (``align_corners`` left at its default).

    Returns
    -------
    lib.nn.Module
    """
    nn = lib.nn

    def double_conv(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    class Up(nn.Module):
        def __init__(self, cin, cskip):
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode=mode)
            self.conv = double_conv(cin + cskip, cskip)

        def forward(self, x, skip):
            return self.conv(lib.cat([skip, self.up(x)], dim=1))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = list(widths)
            self.inc = double_conv(in_channels, w[0])
            self.downs = nn.ModuleList(
                [nn.Sequential(nn.MaxPool2d(2), double_conv(w[i], w[i + 1]))
                 for i in range(len(w) - 1)])
            self.ups = nn.ModuleList([Up(w[i + 1], w[i]) for i in reversed(range(len(w) - 1))])
            self.outc = nn.Conv2d(w[0], num_classes, kernel_size=1)

        def forward(self, x):
            skips = [self.inc(x)]
            for down in self.downs:
                skips.append(down(skips[-1]))
            x = skips.pop()
            for up in self.ups:
                x = up(x, skips.pop())
            return self.outc(x)

    return UNet()


def user_step(lib, model, x, y):
    """One Adam step on ``x``, ``y`` as a user writes it, for ``lib`` ``torch`` or ``sandbox``;
    returns the logits, the loss and the first convolution's weight gradient."""
    def result(out, loss):
        return out.detach(), loss.detach(), model.inc[0].weight.grad

    return adam_step(lib, model, lib.from_numpy(x), lib.from_numpy(y), result)


def profiled_step(volume: str | None = None, size: int = 64, batch: int = 8,
                  mode: str = "bilinear"):
    """A sandbox training step for the scripts that profile or compare one
    (``benchmarks/profile_step_gaps.py``, ``ab_simd_step.py``): the bench's 3-D UNet step
    (``unet3d-step/<volume>``) where ``volume`` names its upsampling mode, else the
    user-written UNet's Adam step (``mode`` upsampling) on a seeded random batch of
    ``batch`` images of ``size``².

    Returns
    -------
    callable
        One step a call.
    """
    import sandbox

    if volume:
        from ._cases_3d import build_unet3d_step

        return build_unet3d_step(f"unet3d-step/{volume}", volume, False,
                                 libs=("sandbox",))["sandbox"]
    sandbox.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 1, size, size), dtype=np.float32)
    y = rng.integers(0, 2, (batch, size, size))
    return user_step(sandbox, user_unet(sandbox, mode=mode), x, y)


def user_shape(size: int, batch: int, quick: bool):
    """``(widths, batch, pixels)`` of ``unet-user/*/<size>``."""
    if quick:
        return QUICK_WIDTHS, 2, size // 4
    return CLASSIC_WIDTHS, batch, size


def _user_case(mode: str, size: int, batch: int) -> Case:
    name = f"unet-user/{mode}/{size}"

    def build(quick, torch):
        import sandbox

        widths, n, s = user_shape(size, batch, quick)
        sandbox.manual_seed(0)
        model = user_unet(sandbox, widths=widths, mode=mode)
        rng = _rng(name)
        x = _normal(rng, (n, 1, s, s))
        y = rng.integers(0, NUM_CLASSES, size=(n, s, s))
        desc = f"user-written UNet {'-'.join(map(str, widths))}, batch {x.shape}"
        theirs = None
        if torch is not None:
            tmodel = user_unet(torch, widths=widths, mode=mode)
            tmodel.load_state_dict({k: torch.from_numpy(np.array(v, copy=True))
                                    for k, v in model.state_dict().items()})
            theirs = user_step(torch, tmodel, x, y)
        return Work(user_step(sandbox, model, x, y), theirs, None, desc)

    # ~20 GEMMs and batch norms between the weights and the outputs: float32 reordering
    return Case(name, "unet-user", build, rtol=1e-4, max_repeat=5)


#: seconds a timed sample of ``conv-autograd/*`` lasts at least
CONV_AUTOGRAD_MIN_SAMPLE = 10e-3


def conv_api_calls(x, w, g):
    """``(public, array)``: one layer's forward + input and weight gradients through the
    public autograd API (``F.conv2d`` then ``backward``; returns the output and both
    gradients) and the same calls of the array API (``conv2d``, ``conv2d_backward``).

    Every array of the array call lives as long as in the public call: the output until
    the backward is done, the gradients until the next call (as ``.grad``).  Freed
    earlier, their memory came back hot from the cache for the next array, which made the
    array call up to 5-10 % faster on the larger layers for reasons that are not the
    API's overhead (``benchmarks/bench_conv_api.py``)."""
    import sandbox
    import sandbox.functional as F
    from sandbox.array.conv import conv2d, conv2d_backward

    sx = sandbox.from_numpy(x).requires_grad_()
    sw = sandbox.from_numpy(w).requires_grad_()
    sg = sandbox.from_numpy(g)
    held = []

    def public():
        sx.grad = sw.grad = None
        y = F.conv2d(sx, sw, padding=1)
        y.backward(sg)
        return y.numpy(), sx.grad.numpy(), sw.grad.numpy()

    def array():
        held.clear()
        y = conv2d(x, w, padding=1)
        held.append(conv2d_backward(g, x, w, padding=1, needs=(True, True, False)))
        del y

    return public, array


def _conv_autograd_case(cin: int, cout: int, hw: int) -> Case:
    name = f"conv-autograd/{cin}-{cout}@{hw}"

    def build(quick, torch):
        x, w, g = conv_layer_data(f"conv-layer/{cin}-{cout}@{hw}", cin, cout, hw, quick)
        n, ci, s = x.shape[0], x.shape[1], x.shape[2]
        co = w.shape[0]
        ours, array_api = conv_api_calls(x, w, g)
        desc = f"x{x.shape} w{w.shape} F.conv2d + backward"
        flops = conv_flops(n, ci, co, s, s)
        nbytes = 2 * (x.nbytes + w.nbytes + g.nbytes)
        if torch is None:
            return Work(ours, None, nbytes, desc, flops=flops, baseline=array_api)
        tx = torch.from_numpy(x).requires_grad_()
        tw = torch.from_numpy(w).requires_grad_()
        tg = torch.from_numpy(g)

        def theirs():
            tx.grad = tw.grad = None
            y = torch.nn.functional.conv2d(tx, tw, padding=1)
            y.backward(tg)
            return y.detach(), tx.grad, tw.grad

        return Work(ours, theirs, nbytes, desc, flops=flops, baseline=array_api)

    # samples of 10 ms: with the suite's 1 ms (five calls of the smallest layer) the
    # autograd/array ratio of one run spread 0.98-1.11 on the Zen 5 VM, with 10 ms and
    # 41 rounds 1.00-1.03 (docs/benchmarks.md, sixteenth session)
    return Case(name, "conv-autograd", build, min_sample=CONV_AUTOGRAD_MIN_SAMPLE)


def user_cases() -> list[Case]:
    """The conv layers through the autograd API, then the user-written UNet steps."""
    cases = [_conv_autograd_case(ci, co, hw) for ci, co, hw in CONV_LAYERS]
    cases += [_user_case(mode, size, batch) for size, batch in USER_SIZES
              for mode in CLASSIC_MODES]
    return cases
