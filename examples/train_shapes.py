"""Train a UNet on synthetic shapes and look at what it learned.

Run:  python examples/train_shapes.py [--upsample bicubic] [--epochs 20]

Writes runs/example-shapes/ (checkpoints, log.jsonl, curves.png, predictions.png),
replacing an earlier run of this script there (or in the --out folder).
Takes about 20-130 s on a 2-core machine.
"""

import argparse

from sandbox.train import TrainConfig, Trainer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upsample", default="bilinear")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--out", default="runs/example-shapes")
    args = parser.parse_args()

    config = TrainConfig(data="shapes", upsample=args.upsample, epochs=args.epochs, out=args.out)
    trainer = Trainer(config, overwrite=True)
    print(trainer.model)
    print(f"{trainer.model.num_parameters():,} parameters; classes: {trainer.class_names}")
    summary = trainer.fit()

    final = summary["final"]
    print(f"\nvalidation after {summary['steps']} steps ({summary['seconds']:.0f} s):")
    for name in trainer.class_names:
        print(f"  {name:12s} IoU {final[f'iou/{name}']:.3f}  Dice {final[f'dice/{name}']:.3f}")
    print(f"  mean IoU {final['mean_iou']:.3f}, pixel accuracy {final['pixel_accuracy']:.3f}")
    print(f"pictures: {', '.join(summary.get('plots', [])) or '(install matplotlib)'}")


if __name__ == "__main__":
    main()
