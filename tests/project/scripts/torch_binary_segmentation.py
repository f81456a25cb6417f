"""A binary segmentation script written for PyTorch (float64 through set_default_dtype).

tests/project/test_torch_script.py runs it with torch and, with only its imports rewritten, on
the sandbox, from the same weights, and compares the runs.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, TensorDataset


def make_data(n, size=12, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:size, :size]
    images, masks = [], []
    for _ in range(n):
        cy, cx = rng.uniform(3, size - 3, 2)
        mask = ((yy - cy) ** 2 + (xx - cx) ** 2 <= 9.0).astype(np.float64)
        images.append(mask + rng.normal(0.0, 0.5, mask.shape))
        masks.append(mask)
    return torch.from_numpy(np.stack(images)[:, None]), torch.from_numpy(np.stack(masks)[:, None])


class ContextNet(nn.Module):
    """Conv features gated by their global average (squeeze-and-excitation style)."""

    def __init__(self, width=6):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, width, 3, padding="same", padding_mode="reflect"),
            nn.GroupNorm(2, width),
            nn.LeakyReLU(0.1, inplace=True),
            nn.Conv2d(width, width, 3, padding=1),
            nn.InstanceNorm2d(width, affine=True),
            nn.ReLU(inplace=True),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.gate = nn.Conv2d(width, width, 1)
        self.head = nn.Conv2d(width, 1, 1)

    def forward(self, x):
        features = self.body(x)
        features = features * torch.sigmoid(self.gate(self.pool(features)))
        return self.head(features)


def soft_dice(logits, target, eps=1.0):
    probs = F.sigmoid(logits)
    inter = (probs * target).sum(dim=(2, 3))
    total = probs.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    return 1 - ((2 * inter + eps) / (total + eps)).mean()


def run(model, epochs=6, checkpoint="binary.pt"):
    images, masks = make_data(16, seed=1)
    loader = DataLoader(TensorDataset(images, masks), batch_size=4, shuffle=False)
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=1e-4, foreach=False)
    scheduler = LambdaLR(optimizer, lambda epoch: 0.8**epoch)
    history = {"loss": [], "lr": [], "iou": []}
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            logits = model(x)
            loss = criterion(logits, y) + soft_dice(logits, y)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), 0.5)
            optimizer.step()
            history["loss"].append(loss.item())
        scheduler.step()
        history["lr"].append(scheduler.get_last_lr()[0])
        model.eval()
        with torch.no_grad():
            vx, vy = make_data(4, seed=2)
            pred = (torch.sigmoid(model(vx)) > 0.5).float()
            inter = (pred * vy).sum().item()
            union = torch.clamp(pred + vy, max=1).sum().item()
            history["iou"].append(inter / union)
    torch.save({"model": model.state_dict(), "history": history}, checkpoint)
    state = torch.load(checkpoint)
    model.load_state_dict(state["model"])
    with torch.inference_mode():
        out = torch.sigmoid(model(make_data(2, seed=3)[0]))
    return history, out.numpy()


def main(model=None, checkpoint="binary.pt"):
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    return run(ContextNet() if model is None else model, checkpoint=checkpoint)
