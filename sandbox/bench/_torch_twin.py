"""PyTorch twins of :class:`sandbox.nn.UNet` and :class:`sandbox.nn.ClassicUNet` (same names).

Used by the parity tests (``tests/support/torch_unet.py`` re-exports it) and by
``sandbox bench``: weights copy by name.  ``torch`` is passed in, so importing
this module never imports PyTorch.
"""


def build_torch_unet(torch, in_channels, num_classes, depth=4, base_width=16,
                     upsample="bilinear", norm="batch", align_corners=None, antialias=False,
                     spatial_dims=2):
    """Build a ``torch.nn.Module`` with the architecture and parameter names of ``sandbox.nn.UNet``.

    Parameters
    ----------
    torch : module
        The imported ``torch`` package.
    in_channels, num_classes, depth, base_width, upsample, norm, align_corners, antialias
        As for :class:`sandbox.nn.UNet` (``lanczos3`` maps to PyTorch's ``lanczos``).
    spatial_dims : int
        2 for images, 3 for volumes (``Conv3d``, ``BatchNorm3d``, ``MaxPool3d``, ...).

    Returns
    -------
    torch.nn.Module
    """
    nn = torch.nn
    F = torch.nn.functional
    torch_mode = "lanczos" if upsample == "lanczos3" else upsample
    conv = getattr(nn, f"Conv{spatial_dims}d")

    def norm_layer(c):
        if norm == "batch":
            return getattr(nn, f"BatchNorm{spatial_dims}d")(c)
        if norm == "group":
            return nn.GroupNorm(next(g for g in (8, 4, 2, 1) if c % g == 0), c)
        return nn.Identity()

    class ConvBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            bias = norm == "none"
            self.conv1 = conv(cin, cout, 3, padding=1, bias=bias)
            self.norm1 = norm_layer(cout)
            self.conv2 = conv(cout, cout, 3, padding=1, bias=bias)
            self.norm2 = norm_layer(cout)

        def forward(self, x):
            x = F.relu(self.norm1(self.conv1(x)))
            return F.relu(self.norm2(self.conv2(x)))

    class Down(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.pool = getattr(nn, f"MaxPool{spatial_dims}d")(2)
            self.block = ConvBlock(cin, cout)

        def forward(self, x):
            return self.block(self.pool(x))

    class Up(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            half = cin // 2
            if upsample == "transposed":
                self.up = getattr(nn, f"ConvTranspose{spatial_dims}d")(cin, half, 2, stride=2)
            else:
                self.up = conv(cin, half, 1)
            self.block = ConvBlock(cout + half, cout)

        def forward(self, x, skip):
            x = self.up(x)
            size = tuple(skip.shape[2:])
            if upsample == "transposed":  # odd sizes: pad the difference, as sandbox does
                widths = []
                for m in reversed([s - n for s, n in zip(size, x.shape[2:], strict=True)]):
                    widths += [m // 2, m - m // 2]
                x = F.pad(x, widths)
            else:
                kwargs = {}
                if torch_mode in ("bilinear", "bicubic", "lanczos"):
                    kwargs["align_corners"] = align_corners
                    kwargs["antialias"] = antialias
                elif torch_mode == "trilinear":
                    kwargs["align_corners"] = align_corners
                x = F.interpolate(x, size=size, mode=torch_mode, **kwargs)
            return self.block(torch.cat([skip, x], dim=1))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            widths = [base_width * 2**level for level in range(depth + 1)]
            self.inc = ConvBlock(in_channels, widths[0])
            self.downs = nn.ModuleList(Down(widths[i], widths[i + 1]) for i in range(depth))
            self.ups = nn.ModuleList(Up(widths[i + 1], widths[i]) for i in reversed(range(depth)))
            self.head = conv(widths[0], num_classes, 1)

        def forward(self, x):
            skips = [self.inc(x)]
            for down in self.downs:
                skips.append(down(skips[-1]))
            x = skips.pop()
            for up in self.ups:
                x = up(x, skips.pop())
            return self.head(x)

    return UNet()


def build_torch_classic_unet(torch, in_channels=1, num_classes=2, widths=(16, 32, 64, 128, 256),
                             upsample="bilinear", align_corners=None):
    """Build the PyTorch twin of :class:`sandbox.nn.ClassicUNet` (same parameter names).

    Written the way the popular PyTorch UNet repositories write it:
    ``nn.Upsample(scale_factor=2)`` of all channels, ``torch.cat([skip, up])``,
    then two (conv 3×3, BatchNorm2d, ReLU).

    Parameters
    ----------
    torch : module
        The imported ``torch`` package.
    in_channels, num_classes, widths, upsample, align_corners
        As for :class:`sandbox.nn.ClassicUNet`.

    Returns
    -------
    torch.nn.Module
    """
    nn = torch.nn

    class ConvBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
            self.norm1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.norm2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.relu(self.norm1(self.conv1(x)))
            return self.relu(self.norm2(self.conv2(x)))

    class Down(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.pool = nn.MaxPool2d(2)
            self.block = ConvBlock(cin, cout)

        def forward(self, x):
            return self.block(self.pool(x))

    class Up(nn.Module):
        def __init__(self, cin, cskip):
            super().__init__()
            kwargs = {} if upsample in ("nearest", "nearest-exact", "area") else {
                "align_corners": align_corners}
            self.up = nn.Upsample(scale_factor=2, mode=upsample, **kwargs)
            self.block = ConvBlock(cin + cskip, cskip)

        def forward(self, x, skip):
            return self.block(torch.cat([skip, self.up(x)], dim=1))

    class ClassicUNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = tuple(widths)
            self.inc = ConvBlock(in_channels, w[0])
            self.downs = nn.ModuleList(Down(w[i], w[i + 1]) for i in range(len(w) - 1))
            self.ups = nn.ModuleList(Up(w[i + 1], w[i]) for i in reversed(range(len(w) - 1)))
            self.head = nn.Conv2d(w[0], num_classes, 1)

        def forward(self, x):
            skips = [self.inc(x)]
            for down in self.downs:
                skips.append(down(skips[-1]))
            x = skips.pop()
            for up in self.ups:
                x = up(x, skips.pop())
            return self.head(x)

    return ClassicUNet()


def copy_weights_to_torch(torch, ours, theirs, dtype):
    """Load the sandbox model's state dict into the torch twin (same names)."""
    theirs.to(dtype)  # first, so float64 weights are not rounded through float32
    state = {k: torch.from_numpy(v.copy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state)
    return theirs
