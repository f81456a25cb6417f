"""Cases of the classic UNet workload: training steps and the table of its 3×3 convolutions.

* ``unet-classic/<mode>/<size>``: one training step (forward, cross-entropy,
  backward, Adam) of :class:`sandbox.nn.ClassicUNet` (widths 16-32-64-128-256,
  1 input channel, 2 classes, batch 8, float32) at ``size``² pixels, with its
  PyTorch twin (``sandbox.interop.to_torch``: same architecture and weights).  Peak
  memory: growth of the resident set size over the first three steps, for each
  library in a fresh process.
* ``conv-layer/<cin>-<cout>@<hw>``: every 3×3 convolution shape of that UNet
  at 64² input (batch 8, padding 1, no bias): forward, input gradient and
  weight gradient in one call; reports GFLOP/s (direct-convolution FLOPs) and
  the fraction of the machine's measured SGEMM peak.

``--quick`` shrinks widths, batch and pixels (same names).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ._cases import Case, Work, _normal, _rng

CLASSIC_MODES = ("nearest", "bilinear", "bicubic")
CLASSIC_SIZES = (64, 128)
CLASSIC_WIDTHS = (16, 32, 64, 128, 256)
QUICK_WIDTHS = (4, 8, 16, 32, 64)
CLASSIC_BATCH = 8
NUM_CLASSES = 2

# (C_in, C_out, H=W) of every 3x3 convolution of ClassicUNet at 64x64 input:
# the encoder blocks, then the first convolution of each decoder block (after the
# concatenation); the decoders' second convolutions repeat encoder shapes.
CONV_LAYERS = [(1, 16, 64), (16, 16, 64), (16, 32, 32), (32, 32, 32), (32, 64, 16),
               (64, 64, 16), (64, 128, 8), (128, 128, 8), (128, 256, 4), (256, 256, 4),
               (384, 128, 8), (192, 64, 16), (96, 32, 32), (48, 16, 64)]


def conv_flops(n: int, cin: int, cout: int, h: int, w: int, passes: int = 3) -> int:
    """Direct-convolution FLOPs of a 3×3 convolution: ``2·N·Cout·Cin·9·H·W`` per pass.

    ``passes=3`` counts the forward, the input gradient and the weight gradient.
    """
    return passes * 2 * n * cout * cin * 9 * h * w


def classic_shape(size: int, quick: bool) -> tuple[tuple[int, ...], int, int]:
    """``(widths, batch, pixels)`` of the ``unet-classic/*/<size>`` case."""
    if quick:
        return QUICK_WIDTHS, 2, size // 4
    return CLASSIC_WIDTHS, CLASSIC_BATCH, size


def build_classic_step(name: str, mode: str, size: int, quick: bool, torch=None,
                       libs=("sandbox", "torch")) -> dict:
    """Training-step callables of ClassicUNet and its PyTorch twin, with identical weights.

    Parameters
    ----------
    name : str
        Case name (seeds the data).
    mode : str
        Decoder upsampling mode.
    size : int
        Nominal input size (64 or 128; smaller with ``quick``).
    quick : bool
        Small widths, batch and pixels.
    torch : module or None
        PyTorch, needed for ``"torch"`` in ``libs``.
    libs : tuple of str
        Which steps to build.

    Returns
    -------
    dict
        ``{"sandbox": step, "torch": step, "desc": str}`` (steps only for ``libs``);
        each step returns its logits, loss and the first convolution's weight gradient.
    """
    import sandbox
    from sandbox import nn

    widths, n, s = classic_shape(size, quick)
    sandbox.manual_seed(0)
    model = nn.ClassicUNet(1, NUM_CLASSES, widths=widths, upsample=mode)
    rng = _rng(name)
    x = _normal(rng, (n, 1, s, s))
    y = rng.integers(0, NUM_CLASSES, size=(n, s, s))
    built = {"desc": f"ClassicUNet {'-'.join(map(str, widths))}, batch {x.shape}"}
    if "torch" in libs:
        from ..interop import to_torch

        built["torch"] = torch_training_step(torch, to_torch(model), x, y)
    if "sandbox" in libs:
        built["sandbox"] = training_step(model, x, y)
    return built


def adam_step(lib, model, tx, ty, result):
    """One Adam step of ``model`` on ``tx``, ``ty`` with cross-entropy, for ``lib``
    ``torch`` or ``sandbox`` (the code is the same for both), as a callable that returns
    ``result(out, loss)``.

    Parameters
    ----------
    lib : module
        ``torch`` or ``sandbox``: ``lib.optim.Adam`` and ``lib.nn.functional``.
    model : lib.nn.Module
    tx, ty : lib Tensors
        Input batch and target labels.
    result : callable
        ``result(logits, loss)`` after the step: what the step returns.

    Returns
    -------
    callable
    """
    F = lib.nn.functional
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        out = model(tx)
        loss = F.cross_entropy(out, ty)
        loss.backward()
        opt.step()
        return result(out, loss)

    return step


def training_step(model, x, y):
    """One Adam step of ``model`` on ``x``, ``y`` with cross-entropy, as a callable that
    returns the logits, the loss and the first convolution's weight gradient."""
    import sandbox

    def result(out, loss):
        return out.numpy(), loss.numpy(), model.inc.conv1.weight.grad.numpy()

    return adam_step(sandbox, model, sandbox.tensor(x), sandbox.tensor(y), result)


def torch_training_step(torch, model, x, y):
    """:func:`training_step` for a PyTorch model."""
    def result(out, loss):
        return out.detach(), loss.detach(), model.inc.conv1.weight.grad

    return adam_step(torch, model, torch.from_numpy(x), torch.from_numpy(y), result)


# --------------------------------------------------------------------------- peak memory

def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def step_peak_rss(lib: str, name: str, mode: str, size: int, quick: bool, threads: int,
                  steps: int = 3) -> int:
    """In this process: growth of the peak resident set over ``steps`` steps, in bytes.

    Builds the model and data, resets the kernel's peak counter (``VmHWM``,
    Linux), runs the steps and returns ``VmHWM`` minus the resident size before
    them.  Counts everything: numpy arrays, kernel scratch, PyTorch's allocator.
    """
    from ._env import optional_torch, set_threads

    torch = optional_torch() if lib == "torch" else None
    set_threads(threads, torch)
    step = build_classic_step(name, mode, size, quick, torch, libs=(lib,))[lib]
    return rss_growth(step, steps)


def rss_growth(step, steps: int = 3) -> int:
    """Growth of the peak resident set over ``steps`` calls of ``step``, in bytes.

    Resets the kernel's peak counter (``VmHWM``, Linux), runs the steps and returns
    ``VmHWM`` minus the resident size before them.
    """
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current resident size
    base = _status_kb("VmRSS")
    for _ in range(steps):
        step()
    return (_status_kb("VmHWM") - base) * 1024


def peak_rss_in_subprocess(lib: str, name: str, mode: str, size: int, quick: bool) -> int | None:
    """:func:`step_peak_rss` in a fresh Python process (same threads and allocator settings).

    None where the kernel's peak counter cannot be reset (not Linux).
    """
    return peak_in_subprocess("sandbox.bench._cases_classic", "step_peak_rss",
                              (lib, name, mode, size, quick), lib)


def peak_in_subprocess(module: str, function: str, args: tuple, lib: str) -> int | None:
    """``module.function(*args, threads)`` in a fresh Python process; its printed result.

    The process gets this one's thread count, SIMD path and allocator settings.  None where
    the kernel's peak counter cannot be reset (not Linux).
    """
    from ..runtime import simd
    from ..runtime import threads as _config
    from ..runtime.allocator import is_tuned

    if not os.path.exists("/proc/self/clear_refs"):
        return None

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sel = simd.current()  # the same SIMD path (a --isa run, a simd.using block)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]),
        SANDBOX_TUNE_MALLOC="1" if is_tuned() else "0",
        **{simd.ISA_ENV_VAR: sel.isa, simd.GEMM_ENV_VAR: sel.gemm})
    call = ", ".join([*(repr(a) for a in args), str(_config.get_num_threads())])
    code = ("from sandbox.runtime.allocator import keep_freed_memory; keep_freed_memory();"
            f"from {module} import {function};"
            f"print({function}({call}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)
    if out.returncode:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"peak-memory subprocess ({lib}) failed: {tail}")
    return int(out.stdout.split()[-1])


# --------------------------------------------------------------------------- cases

def _classic_case(mode: str, size: int) -> Case:
    name = f"unet-classic/{mode}/{size}"

    def build(quick, torch):
        built = build_classic_step(name, mode, size, quick, torch,
                                   libs=("sandbox",) if torch is None else ("sandbox", "torch"))

        def peak():
            ours = peak_rss_in_subprocess("sandbox", name, mode, size, quick)
            theirs = (None if torch is None
                      else peak_rss_in_subprocess("torch", name, mode, size, quick))
            return ours, theirs

        return Work(built["sandbox"], built.get("torch"), None, built["desc"], peak=peak)

    # The step's outputs go through ~20 GEMMs and batch norms: allow float32 reordering.
    return Case(name, "unet-classic", build, rtol=1e-4, max_repeat=5)


def conv_layer_data(name: str, cin: int, cout: int, hw: int, quick: bool):
    """``x``, ``w``, ``g`` of a conv-layer shape (the data of ``conv-layer/...`` for
    the same shape, so both APIs see the same numbers)."""
    n, ci, co, s = CLASSIC_BATCH, cin, cout, hw
    if quick:
        n, ci, co, s = 2, max(cin // 8, 1), max(cout // 8, 2), max(hw // 4, 2)
    rng = _rng(name)
    x = _normal(rng, (n, ci, s, s))
    w = _normal(rng, (co, ci, 3, 3)) * np.float32((2.0 / (9 * ci)) ** 0.5)
    g = _normal(rng, (n, co, s, s))
    return x, w, g


def _conv_layer_case(cin: int, cout: int, hw: int) -> Case:
    name = f"conv-layer/{cin}-{cout}@{hw}"

    def build(quick, torch):

        from ..array.conv import conv2d, conv2d_backward

        x, w, g = conv_layer_data(name, cin, cout, hw, quick)
        n, ci, s = x.shape[:3]
        co = w.shape[0]

        def ours():
            y = conv2d(x, w, padding=1)
            gx, gw, _ = conv2d_backward(g, x, w, padding=1, needs=(True, True, False))
            return y, gx, gw

        desc = f"x{x.shape} w{w.shape} fwd+dx+dw"
        flops = conv_flops(n, ci, co, s, s)
        nbytes = 2 * (x.nbytes + w.nbytes + g.nbytes)  # read x, w, g; write y, dx, dw
        if torch is None:
            return Work(ours, None, nbytes, desc, flops=flops)
        tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g))
        backward = torch.ops.aten.convolution_backward

        def theirs():
            with torch.no_grad():
                y = torch.nn.functional.conv2d(tx, tw, padding=1)
                gx, gw, _ = backward(tg, tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                     [True, True, False])
            return y, gx, gw

        return Work(ours, theirs, nbytes, desc, flops=flops)

    return Case(name, "conv-layer", build)


def classic_cases() -> list[Case]:
    """The conv-layer table, then the classic UNet steps."""
    cases = [_conv_layer_case(ci, co, hw) for ci, co, hw in CONV_LAYERS]
    cases += [_classic_case(mode, size) for size in CLASSIC_SIZES for mode in CLASSIC_MODES]
    return cases
