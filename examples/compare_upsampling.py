"""Train the same UNet with each upsampling mode and compare accuracy and time.

Run:  python examples/compare_upsampling.py [--epochs 8] [--modes bilinear,nearest,...]

Every run starts from the same seed and sees the same batches; only the decoder's
upsampling differs. Prints a table of validation mean IoU and wall time. Each mode
writes runs/compare-<mode>/, replacing what an earlier run of this script left there.
"""

import argparse

from sandbox.train import TrainConfig, Trainer

DEFAULT_MODES = "nearest,nearest-exact,bilinear,bicubic,lanczos3,area,transposed"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--modes", default=DEFAULT_MODES)
    parser.add_argument("--train-samples", type=int, default=400)
    args = parser.parse_args()

    rows = []
    for mode in args.modes.split(","):
        cfg = TrainConfig(
            data="shapes",
            upsample=mode,
            epochs=args.epochs,
            train_samples=args.train_samples,
            out=f"runs/compare-{mode}",
            progress=False,
            plots=False,
        )
        summary = Trainer(cfg, overwrite=True).fit()
        final = summary["final"]
        rows.append((mode, final["mean_iou"], final["pixel_accuracy"], summary["seconds"]))
        print(f"{mode:14s} mean IoU {final['mean_iou']:.3f}  ({summary['seconds']:.0f} s)")

    print(f"\n{'upsample':14s} {'mean IoU':>9s} {'accuracy':>9s} {'time (s)':>9s}")
    for mode, iou, acc, sec in sorted(rows, key=lambda r: -r[1]):
        print(f"{mode:14s} {iou:9.3f} {acc:9.3f} {sec:9.1f}")


if __name__ == "__main__":
    main()
