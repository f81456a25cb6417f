"""Unsupervised deformable registration of synthetic shape pairs (VoxelMorph-style, 2-D).

Each pair is a synthetic shapes image (the moving image) and the same image under a
random smooth deformation (the fixed image; sandbox.data.RandomDeform). A small UNet
reads both and predicts a displacement field in pixels (or, with --integrate N, a
velocity field integrated by N squarings, nn.VecInt); nn.Warp resamples the moving
image with it. Loss = MSE(warped, fixed) + --smooth * mean squared field gradient:
no labels are used. The masks only score the result: the mean Dice of the warped
moving masks against the fixed masks, before and after registration.

Run:  python examples/register_shapes.py [--steps 600] [--integrate 7] [--figure out.png]
Prints the numbers it ends with, e.g. "mean Dice: before 0.62, after 0.85, gain +0.23".
"""

import argparse
import time

import numpy as np

import sandbox
from sandbox import nn, optim
from sandbox.data import RandomAffine, RandomDeform, RandomElastic, Shapes


class Pairs:
    """``(moving, fixed, moving_mask, fixed_mask)`` pairs; the deformation of pair i in
    epoch e comes from ``default_rng([seed, e, i])``."""

    def __init__(self, n, size, seed, magnitude):
        self.shapes = Shapes(n, image_size=size, num_classes=3, seed=seed,
                             shapes_per_image=(1, 2), noise=(0.01, 0.02))
        self.seed = seed
        self.deform = RandomDeform([
            RandomElastic(sigma=(5.0, 7.0), magnitude=(0.5 * magnitude, magnitude),
                          padding_mode="border"),
            RandomAffine(degrees=10, scale=(0.92, 1.08), translate=0.1, padding_mode="border"),
        ])

    def batch(self, indices, epoch):
        out = [[], [], [], []]
        for i in indices:
            image, mask = self.shapes[int(i)]
            rng = np.random.default_rng([self.seed, epoch, int(i)])
            fixed, fixed_mask = self.deform(image, mask, rng)
            for k, a in enumerate((image, fixed, mask, fixed_mask)):
                out[k].append(a)
        return [np.stack(a) for a in out]


class Registration(nn.Module):
    """UNet on [moving, fixed] -> field (2 channels, pixels, (dy, dx)); then warp."""

    def __init__(self, width, integrate):
        super().__init__()
        self.unet = nn.UNet(2, 2, depth=3, base_width=width, norm="batch")
        # Start near the identity: a tiny output layer (VoxelMorph draws it from N(0, 1e-5)).
        nn.init.normal_(self.unet.head.weight, 0.0, 1e-5)
        nn.init.zeros_(self.unet.head.bias)
        self.integrate = nn.VecInt(integrate) if integrate else None
        self.warp = nn.Warp()

    def forward(self, moving, fixed):
        field = self.unet(sandbox.cat([moving, fixed], dim=1))
        flow = self.integrate(field) if self.integrate is not None else field
        return self.warp(moving, flow), flow


def smoothness(flow):
    """Mean squared forward difference of the field along H and W."""
    dy = flow[:, :, 1:, :] - flow[:, :, :-1, :]
    dx = flow[:, :, :, 1:] - flow[:, :, :, :-1]
    return (dy * dy).mean() + (dx * dx).mean()


def mean_dice(a, b, classes=(1, 2)):
    """Dice per image and foreground class present in either mask, averaged."""
    scores = []
    for x, y in zip(a, b, strict=True):
        for c in classes:
            inter, total = np.sum((x == c) & (y == c)), np.sum(x == c) + np.sum(y == c)
            if total:
                scores.append(2 * inter / total)
    return float(np.mean(scores))


def warp_masks(masks, flow):
    """Moving masks resampled with the field (nearest: labels stay labels)."""
    with sandbox.no_grad():
        m = sandbox.Tensor(masks[:, None].astype(np.float32))
        return np.rint(nn.Warp(mode="nearest")(m, flow).numpy()[:, 0]).astype(np.int64)


def evaluate(model, pairs, n):
    model.eval()
    moving, fixed, mmask, fmask = pairs.batch(range(n), epoch=0)
    with sandbox.no_grad():
        warped, flow = model(sandbox.Tensor(moving), sandbox.Tensor(fixed))
    model.train()
    out = warp_masks(mmask, flow)
    return dict(before=mean_dice(mmask, fmask), after=mean_dice(out, fmask),
                mse_before=float(np.mean((moving - fixed) ** 2)),
                mse_after=float(np.mean((warped.numpy() - fixed) ** 2)),
                arrays=(moving, fixed, warped.numpy(), flow.numpy(), mmask, fmask, out))


def figure(path, arrays, k=0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    moving, fixed, warped, flow, *_ = arrays
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))
    for ax, img, title in zip(axes, (moving[k, 0], fixed[k, 0], warped[k, 0]),
                              ("moving", "fixed", "moving, warped"), strict=False):
        ax.imshow(img, cmap="gray", vmin=0, vmax=1)
        ax.set_title(title)
    # The learned deformation: a grid drawn at the positions each output pixel reads.
    h, w = flow.shape[2:]
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    py, px = ys + flow[k, 0], xs + flow[k, 1]
    ax = axes[3]
    ax.imshow(warped[k, 0], cmap="gray", vmin=0, vmax=1, alpha=0.35)
    for i in range(0, h, 3):
        ax.plot(px[i], py[i], color="tab:red", lw=0.7)
    for j in range(0, w, 3):
        ax.plot(px[:, j], py[:, j], color="tab:red", lw=0.7)
    ax.quiver(xs[::4, ::4], ys[::4, ::4], flow[k, 1, ::4, ::4], flow[k, 0, ::4, ::4],
              angles="xy", scale_units="xy", scale=1, color="tab:blue", width=0.006)
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    ax.set_title("learned displacement (sampling grid)")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--image-size", type=int, default=48)
    parser.add_argument("--width", type=int, default=8, help="UNet base width")
    parser.add_argument("--integrate", type=int, default=0,
                        help="predict a velocity field and integrate it with N squarings")
    parser.add_argument("--magnitude", type=float, default=4.0,
                        help="largest elastic displacement of the pairs (pixels)")
    parser.add_argument("--smooth", type=float, default=0.05, help="smoothness weight")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--train-pairs", type=int, default=256)
    parser.add_argument("--val-pairs", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--figure", help="write a PNG of one validation pair and its field")
    args = parser.parse_args()

    sandbox.manual_seed(args.seed)
    train = Pairs(args.train_pairs, args.image_size, args.seed, args.magnitude)
    val = Pairs(args.val_pairs, args.image_size, args.seed + 10_000, args.magnitude)
    model = Registration(args.width, args.integrate)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    sched = optim.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    order_rng = np.random.default_rng(args.seed)
    start = time.time()
    cpu = time.process_time()
    for step in range(args.steps):
        epoch = step * args.batch_size // args.train_pairs
        idx = order_rng.integers(0, args.train_pairs, size=args.batch_size)
        moving, fixed, _, _ = train.batch(idx, epoch + 1)
        warped, flow = model(sandbox.Tensor(moving), sandbox.Tensor(fixed))
        similarity = ((warped - sandbox.Tensor(fixed)) ** 2).mean()
        loss = similarity + args.smooth * smoothness(flow)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % max(1, args.steps // 8) == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.5f}  mse {similarity.item():.5f}")
    seconds, cpu = time.time() - start, time.process_time() - cpu
    result = evaluate(model, val, args.val_pairs)
    kind = f"velocity, {args.integrate} squarings" if args.integrate else "displacement"
    print(f"\n{args.steps} steps ({kind}) in {seconds:.0f} s wall, {cpu:.0f} s CPU")
    print(f"validation MSE: before {result['mse_before']:.5f}, after {result['mse_after']:.5f}")
    gain = result["after"] - result["before"]
    print(f"mean Dice: before {result['before']:.3f}, after {result['after']:.3f}, "
          f"gain {gain:+.3f}")
    if args.figure:
        figure(args.figure, result["arrays"])
        print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
