"""Segment real nuclei with a UNet and compare it with a classical Otsu threshold.

Run:  python examples/train_nuclei_vs_otsu.py

The image is a fluorescence microscopy image from the 2018 Data Science Bowl
(shipped with the package). The UNet trains on crops from the top 384 rows; both
methods are scored on the bottom 128 rows, which the UNet never sees. The run goes to
runs/example-nuclei/ (or --out), replacing an earlier run of this script there.
"""

import argparse

import numpy as np

from sandbox.data import Nuclei, load_nuclei, otsu_segment
from sandbox.train import TrainConfig, Trainer
from sandbox.train.metrics import ConfusionMatrix


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--upsample", default="bilinear")
    parser.add_argument("--out", default="runs/example-nuclei")
    args = parser.parse_args()

    # Classical baseline: one global Otsu threshold on the validation rows.
    image, instances = load_nuclei()
    val_rows = slice(384, 512)
    truth = (instances[val_rows] > 0).astype(np.int64)
    otsu = otsu_segment(image[val_rows]).astype(np.int64)
    cm_otsu = ConfusionMatrix(2)
    cm_otsu.update(otsu, truth)

    config = TrainConfig(
        data="nuclei",
        image_size=96,
        train_samples=64,
        epochs=args.epochs,
        loss="ce+dice",
        upsample=args.upsample,
        out=args.out,
    )
    summary = Trainer(config, overwrite=True).fit()
    unet = summary["final"]

    print(f"\nvalidation (rows 384-511, {len(Nuclei('val'))} tiles):")
    print(f"  {'method':8s} {'fg Dice':>8s} {'mean IoU':>9s} {'accuracy':>9s}")
    print(
        f"  {'Otsu':8s} {cm_otsu.dice[1]:8.3f} {cm_otsu.mean_iou:9.3f} "
        f"{cm_otsu.pixel_accuracy:9.3f}"
    )
    print(
        f"  {'UNet':8s} {unet['dice_fg']:8.3f} {unet['mean_iou']:9.3f} "
        f"{unet['pixel_accuracy']:9.3f}"
    )
    verdict = "beats" if unet["dice_fg"] > cm_otsu.dice[1] else "does not beat"
    print(f"The UNet {verdict} the Otsu baseline.")


if __name__ == "__main__":
    main()
