"""Cases of grid sampling: ``grid_sample/<2d|3d>/<mode>-<padding>/b<N>/<fwd|bwd>``.

:func:`sandbox.array.grid_sample.grid_sample` and, for ``bwd``,
:func:`~sandbox.array.grid_sample.grid_sample_backward` with both gradients (input
and grid), float32, ``align_corners=False``, at one size per rank: 2-D
(N, 4, 128, 128) sampled at a 128×128 grid, 3-D (N, 2, 32³) at a 32³ grid, for
batch 1 and 8.  The grid is a smooth warp (the identity plus a low-frequency
displacement of up to ~10 % of the field of view), so some points fall outside the
input and exercise the padding, as in registration and augmentation.  PyTorch's
twin is ``torch.nn.functional.grid_sample`` (its backward: ``torch.autograd.grad``
on a retained graph, to the input and the grid); it has no 3-D bicubic, which runs
sandbox-only.

``--quick`` uses (N, 2, 16, 16) and (N, 1, 8³).
"""

from __future__ import annotations

import numpy as np

from ._cases import Case, Work, _normal, _rng

GRID_MODES = ("nearest", "bilinear", "bicubic")
GRID_PADDINGS = ("zeros", "border", "reflection")
GRID_BATCHES = (1, 8)
# rank -> (channels, side), full and --quick
GRID_SHAPES = {2: (4, 128), 3: (2, 32)}
GRID_QUICK = {2: (2, 16), 3: (1, 8)}


def warp_grid(rng, n: int, out: tuple, amplitude: float = 0.1) -> np.ndarray:
    """Identity grid (align_corners=False centres) plus a smooth random displacement."""
    nd = len(out)
    axes = [((2 * np.arange(s) + 1) / s - 1) for s in out]
    mesh = np.meshgrid(*axes, indexing="ij")
    ident = np.stack(mesh[::-1], axis=-1)  # x, y(, z)
    phases = rng.uniform(0, 2 * np.pi, (n, nd, nd))
    disp = np.zeros((n, *out, nd))
    for k in range(nd):  # one sine per component and axis: low frequency, smooth
        for a in range(nd):
            disp[..., k] += amplitude / nd * np.sin(np.pi * mesh[a][None] + phases[:, k, a]
                                                    .reshape(n, *([1] * nd)))
    return (ident[None] + disp).astype(np.float32)


def _grid_case(nd: int, mode: str, padding: str, batch: int, backward: bool) -> Case:
    name = f"grid_sample/{nd}d/{mode}-{padding}/b{batch}/{'bwd' if backward else 'fwd'}"

    def build(quick, torch):
        from ..array.grid_sample import grid_sample, grid_sample_backward

        c, side = (GRID_QUICK if quick else GRID_SHAPES)[nd]
        rng = _rng(name)
        spatial = (side,) * nd
        x = _normal(rng, (batch, c, *spatial))
        g = warp_grid(rng, batch, spatial)
        opts = dict(mode=mode, padding_mode=padding, align_corners=False)
        gy = _normal(rng, (batch, c, *spatial)) if backward else None
        desc = f"{x.shape} at grid {g.shape}"
        if backward:

            def ours():
                return grid_sample_backward(gy, x, g, **opts)
        else:

            def ours():
                return grid_sample(x, g, **opts)

        # read x and the grid, write the output (forward) or both gradients (backward)
        nbytes = x.nbytes + g.nbytes + x.nbytes + (x.nbytes + g.nbytes if backward else 0)
        if torch is None or (nd == 3 and mode == "bicubic"):
            note = None if torch is None else "PyTorch has no 3-D bicubic"
            return Work(ours, None, nbytes, desc, note)
        return Work(ours, _torch_call(torch, x, g, gy, opts), nbytes, desc)

    return Case(name, "grid_sample", build, rtol=1e-4)


def _torch_call(torch, x, g, gy, opts):
    sample = torch.nn.functional.grid_sample
    if gy is None:
        tx, tg = torch.from_numpy(x), torch.from_numpy(g)

        def forward():
            with torch.no_grad():
                return sample(tx, tg, **opts)

        return forward
    tx = torch.from_numpy(x).requires_grad_(True)
    tg = torch.from_numpy(g).requires_grad_(True)
    ty = sample(tx, tg, **opts)
    tgy = torch.from_numpy(gy)

    def backward():
        return torch.autograd.grad(ty, (tx, tg), tgy, retain_graph=True)

    return backward


def grid_cases() -> list[Case]:
    """Every rank x mode x padding x batch, forward then backward."""
    return [_grid_case(nd, mode, padding, batch, backward)
            for nd in (2, 3) for mode in GRID_MODES for padding in GRID_PADDINGS
            for batch in GRID_BATCHES for backward in (False, True)
            if not (nd == 3 and mode == "bicubic" and padding != "zeros")]
