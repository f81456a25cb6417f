"""The activation kernels alone: nanoseconds an element of the forward and the gradient.

``sandbox.array.activation``'s exp, sigmoid, SiLU, GELU (exact and tanh form) and tanh on
a flat float32 array (``--size`` elements, a (8, 16, 64, 64) map's by default), against
numpy's one-thread forms where numpy has the function (``np.exp``, ``np.tanh``, the
stable sigmoid and SiLU written with ``np.exp``) and PyTorch's forward (``no_grad``),
all interleaved call by call in one process, medians of ``--repeat``, at each
``--threads`` count.  What ``pyx/vec_math.h``'s vectorised exp and erfc buy over the
C library's calls, where the op-level bench (``bench_ops_vs_torch.py``) adds the
autograd layer and the allocations.

    python benchmarks/bench_activation_kernels.py --threads 1 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _numpy_forms():
    """name -> numpy's one-thread forward, where numpy has one."""

    def sigmoid(x):
        e = np.exp(-np.abs(x))
        return np.maximum(e, x >= 0) / (1 + e)

    return {"exp": np.exp, "tanh": np.tanh, "sigmoid": sigmoid,
            "silu": lambda x: x * sigmoid(x)}


def _ops(activation, torch):
    """name -> (our forward, our gradient of (g, x), PyTorch's forward)."""
    tf = torch.nn.functional
    return {
        "exp": (activation.exp, None, torch.exp),
        "sigmoid": (activation.sigmoid,
                    lambda g, x: activation.sigmoid_backward(g, activation.sigmoid(x)),
                    torch.sigmoid),
        "silu": (activation.silu, activation.silu_backward, tf.silu),
        "gelu": (activation.gelu, activation.gelu_backward, tf.gelu),
        "gelu_tanh": (lambda x: activation.gelu(x, "tanh"),
                      lambda g, x: activation.gelu_backward(g, x, "tanh"),
                      lambda t: tf.gelu(t, approximate="tanh")),
        "tanh": (activation.tanh,
                 lambda g, x: activation.tanh_backward(g, activation.tanh(x)), torch.tanh),
    }


def _ns(fn, n):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) / n * 1e9


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--size", type=int, default=8 * 16 * 64 * 64)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)

    import torch

    import sandbox
    from sandbox.array import activation
    from sandbox.runtime import simd

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(args.size) * 3).astype(np.float32)
    g = rng.standard_normal(args.size).astype(np.float32)
    tx = torch.from_numpy(x)
    numpy_forms = _numpy_forms()
    print(f"cpu: {simd.cpu().describe()}; torch {torch.__version__}; {args.size} float32 "
          f"elements; ns an element, medians of {args.repeat} interleaved calls (numpy: one "
          "thread at any count; grad, of (g, x), includes the forward for sigmoid and "
          "tanh, whose gradient takes the output)")
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, (forward, gradient, theirs) in _ops(activation, torch).items():
            calls = {"ours": lambda f=forward: f(x)}
            if gradient is not None:
                calls["grad"] = lambda f=gradient: f(g, x)
            if name in numpy_forms:
                calls["numpy"] = lambda f=numpy_forms[name]: f(x)

            def torch_forward(f=theirs):
                with torch.no_grad():
                    f(tx)

            calls["torch"] = torch_forward
            for fn in calls.values():  # warm
                fn()
            samples = {k: [] for k in calls}
            for _ in range(args.repeat):
                for k, fn in calls.items():
                    samples[k].append(_ns(fn, args.size))
            row = "  ".join(f"{k} {statistics.median(v):6.2f}" for k, v in samples.items())
            print(f"{threads} thread(s) {name:10s} {row}")


if __name__ == "__main__":
    main()
