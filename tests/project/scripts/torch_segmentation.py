"""A small PyTorch segmentation training script, written for PyTorch.

tests/project/test_torch_script.py runs this file as it is with torch, and again with only
its import lines rewritten to the sandbox (``import torch`` -> ``import sandbox as
torch`` ...), from the same initial weights, and compares the two runs.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.optim.lr_scheduler import ReduceLROnPlateau
from torch.utils.data import DataLoader, Dataset

N_CLASSES = 3


class BlobDataset(Dataset):
    """Noisy images with a disc (class 1) and a square (class 2); items are dicts."""

    def __init__(self, n, size=15, seed=0):
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[:size, :size]
        self.images, self.masks = [], []
        for _ in range(n):
            mask = np.zeros((size, size), np.int64)
            cy, cx = rng.integers(4, size - 4, 2)
            r = rng.integers(2, 4)
            mask[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = 1
            sy, sx = rng.integers(0, size - 4, 2)
            mask[sy:sy + 4, sx:sx + 4] = 2
            self.images.append(mask[None] * 0.7 + rng.normal(0.0, 0.3, (1, size, size)))
            self.masks.append(mask)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        return {
            "image": torch.from_numpy(self.images[idx]),
            "mask": torch.from_numpy(self.masks[idx]),
        }


def double_conv(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
        nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


class Up(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
        self.conv = double_conv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # the input is CHW; pad the upsampled map to the skip connection's size
        diff_y = x2.size()[2] - x1.size()[2]
        diff_x = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class TinyUNet(nn.Module):
    def __init__(self, n_channels=1, n_classes=N_CLASSES, width=4):
        super().__init__()
        self.inc = double_conv(n_channels, width)
        self.down = nn.Sequential(nn.MaxPool2d(2), double_conv(width, 2 * width))
        self.up = Up(2 * width, width)
        self.outc = nn.Conv2d(width, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down(x1)
        return self.outc(self.up(x2, x1))


def dice_loss(logits, target, n_classes, epsilon=1e-6):
    probs = F.softmax(logits, dim=1)
    one_hot = F.one_hot(target, n_classes).permute(0, 3, 1, 2).to(probs.dtype)
    dims = (0, 2, 3)
    inter = torch.sum(probs * one_hot, dims)
    sets_sum = torch.sum(probs, dims) + torch.sum(one_hot, dims)
    dice = (2 * inter + epsilon) / (sets_sum + epsilon)
    return 1 - dice.mean()


@torch.inference_mode()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for batch in loader:
        images, masks = batch["image"].to(device), batch["mask"].to(device)
        _, pred = model(images).max(1)
        correct += (pred == masks).sum().item()
        total += masks.numel()
    model.train()
    return correct / total


def train(model, device, epochs=8, batch_size=2, lr=3e-3, checkpoint="checkpoint.pth",
          amp=False):
    train_loader = DataLoader(BlobDataset(12, seed=1), batch_size=batch_size, shuffle=False,
                              num_workers=0, drop_last=True)
    val_loader = DataLoader(BlobDataset(4, seed=2), batch_size=2)
    model.to(device=device, dtype=torch.float64)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.RMSprop(model.parameters(), lr=lr, weight_decay=1e-8, momentum=0.9,
                              foreach=True)
    scheduler = ReduceLROnPlateau(optimizer, "max", patience=0, factor=0.5)
    grad_scaler = torch.amp.GradScaler("cuda", enabled=amp)
    history = {"loss": [], "grad_norm": [], "lr": [], "val_acc": []}
    for _ in range(epochs):
        model.train()
        for batch in train_loader:
            images = batch["image"].to(device=device, dtype=torch.float64)
            masks = batch["mask"].to(device=device, dtype=torch.long)
            with torch.autocast(device.type, enabled=amp):
                logits = model(images)
                loss = criterion(logits, masks) + dice_loss(logits, masks, N_CLASSES)
            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            grad_scaler.unscale_(optimizer)
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            grad_scaler.step(optimizer)
            grad_scaler.update()
            history["loss"].append(loss.item())
            history["grad_norm"].append(float(grad_norm))
        val_acc = evaluate(model, val_loader, device)
        scheduler.step(val_acc)
        history["lr"].append(optimizer.param_groups[0]["lr"])
        history["val_acc"].append(val_acc)
    torch.save({"model": model.state_dict(), "epochs": epochs}, checkpoint)
    return history


def predict(checkpoint, device, image):
    model = TinyUNet()
    model.to(device=device, dtype=torch.float64)
    state = torch.load(checkpoint, map_location=device)
    model.load_state_dict(state["model"])
    model.eval()
    with torch.inference_mode():
        logits = model(torch.from_numpy(image).unsqueeze(0).to(device))
        probs = torch.softmax(logits, dim=1)
        pred = probs.argmax(dim=1)
    return probs.cpu().numpy(), pred.cpu().numpy()


def main(model=None, checkpoint="checkpoint.pth"):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyUNet() if model is None else model
    history = train(model, device, checkpoint=checkpoint)
    probs, pred = predict(checkpoint, device, BlobDataset(1, seed=3).images[0])
    return history, probs, pred


if __name__ == "__main__":
    history, _, _ = main()
    print(history)
