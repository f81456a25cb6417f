"""Module mechanics: registration, naming, modes, state dicts, repr."""

import numpy as np
import pytest

import sandbox
from sandbox import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.norm = nn.BatchNorm2d(3)
        self.blocks = nn.ModuleList([nn.Conv2d(3, 3, 1), nn.Conv2d(3, 1, 1, bias=False)])
        self.scale = nn.Parameter(np.ones(1, np.float32))

    def forward(self, x):
        x = self.norm(self.conv(x))
        for b in self.blocks:
            x = b(x)
        return x * self.scale


def test_named_parameters_are_dotted_in_registration_order():
    names = [n for n, _ in Tiny().named_parameters()]
    assert names == [
        "scale",
        "conv.weight",
        "conv.bias",
        "norm.weight",
        "norm.bias",
        "blocks.0.weight",
        "blocks.0.bias",
        "blocks.1.weight",
    ]


def test_state_dict_has_buffers_and_round_trips():
    a, b = Tiny(), Tiny()
    state = a.state_dict()
    assert list(state)[:3] == ["scale", "conv.weight", "conv.bias"]
    assert {"norm.running_mean", "norm.running_var", "norm.num_batches_tracked"} <= set(state)
    state["norm.running_mean"][:] = 7  # a copy: the model is unchanged
    assert not np.any(a.norm.running_mean == 7)
    b.load_state_dict(a.state_dict())
    for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert na == nb
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())


def test_load_state_dict_errors_name_the_keys():
    m = Tiny()
    state = m.state_dict()
    del state["conv.weight"]
    state["extra.weight"] = np.zeros(1)
    with pytest.raises(
        RuntimeError,
        match=r'(?s)Missing key\(s\) in state_dict: "conv\.weight".*Unexpected key\(s\) in '
        r'state_dict: "extra\.weight"',
    ) as info:
        m.load_state_dict(state)
    assert isinstance(info.value, KeyError)  # the type it raised before, too
    result = m.load_state_dict(state, strict=False)
    missing, unexpected = result
    assert missing == ["conv.weight"] and unexpected == ["extra.weight"]
    assert result.missing_keys == missing and result.unexpected_keys == unexpected
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    state = m.state_dict()
    state["conv.bias"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"conv\.bias: checkpoint \(5,\), model \(3,\)"):
        m.load_state_dict(state)


def test_train_eval_children_and_zero_grad():
    m = Tiny()
    assert m.training and m.conv.training
    m.eval()
    assert not m.training and not m.blocks[1].training
    assert [type(c).__name__ for c in m.children()] == ["Conv2d", "BatchNorm2d", "ModuleList"]
    m.train()
    x = sandbox.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 5)).astype(np.float32))
    m(x).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_assigning_wrong_types_is_rejected():
    m = Tiny()
    with pytest.raises(TypeError, match="expects a Parameter"):
        m.scale = np.zeros(1)
    with pytest.raises(TypeError, match="buffer"):
        m.norm.running_mean = [0.0]

    class NoInit(nn.Module):
        def __init__(self):
            self.x = 1

    with pytest.raises(AttributeError, match="super"):
        NoInit()


def test_repr_is_readable():
    text = repr(Tiny())
    assert "(conv): Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in text
    assert "(1): Conv2d(3, 1, kernel_size=(1, 1), stride=(1, 1), bias=False)" in text


def test_to_double_casts_parameters_and_buffers():
    m = Tiny().double()
    assert all(p.numpy().dtype == np.float64 for p in m.parameters())
    assert m.norm.running_var.dtype == np.float64
    assert m.norm.num_batches_tracked.dtype == np.int64


def test_default_init_matches_pytorch_bounds():
    sandbox.manual_seed(0)
    conv = nn.Conv2d(8, 4, 3)
    bound = 1 / np.sqrt(8 * 9)
    assert np.abs(conv.weight.numpy()).max() <= bound
    assert np.abs(conv.weight.numpy()).max() > 0.8 * bound
    assert np.abs(conv.bias.numpy()).max() <= bound
    tconv = nn.ConvTranspose2d(8, 4, 2)
    assert tconv.weight.shape == (8, 4, 2, 2)
    assert np.abs(tconv.weight.numpy()).max() <= 1 / np.sqrt(4 * 4)


def test_manual_seed_makes_init_reproducible():
    sandbox.manual_seed(3)
    a = nn.UNet(1, 2, depth=2, base_width=4)
    sandbox.manual_seed(3)
    b = nn.UNet(1, 2, depth=2, base_width=4)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(norm="layer"), "norm must be one of"),
        (dict(depth=0), "depth must be a positive integer"),
        (dict(upsample="cubic-spline"), "mode"),
        (dict(upsample="nearest", align_corners=True), "align_corners"),
    ],
)
def test_unet_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.UNet(1, 2, **kwargs)


@pytest.mark.parametrize("upsample", ["bilinear", "nearest", "transposed", "lanczos3", "area"])
@pytest.mark.parametrize("size", [(32, 32), (20, 28)])
def test_unet_output_shape_any_size(upsample, size):
    m = nn.UNet(3, 4, depth=2, base_width=4, upsample=upsample)
    x = sandbox.tensor(np.zeros((2, 3, *size), np.float32))
    assert m(x).shape == (2, 4, *size)
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        m(sandbox.tensor(np.zeros((2, 1, 8, 8), np.float32)))


def test_upsample_validates_at_construction_and_matches_interpolate():
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.Upsample(scale_factor=2, mode="spline")
    with pytest.raises(ValueError, match="exactly one of size or scale_factor"):
        nn.Upsample(mode="nearest")
    up = nn.Upsample(scale_factor=2, mode="bicubic", antialias=False)
    assert "scale_factor=2, mode='bicubic'" in repr(up)
    x = sandbox.tensor(np.arange(16.0).reshape(1, 1, 4, 4))
    import sandbox.functional as F

    np.testing.assert_array_equal(
        up(x).numpy(), F.interpolate(x, scale_factor=2, mode="bicubic").numpy()
    )


def test_sequential_and_module_list_behave_like_lists():
    seq = nn.Sequential(nn.ReLU(), nn.Identity(), nn.ReLU())
    assert len(seq) == 3 and isinstance(seq[1], nn.Identity)
    assert isinstance(seq[:2], nn.Sequential) and len(seq[:2]) == 2
    assert [type(m).__name__ for m in seq] == ["ReLU", "Identity", "ReLU"]
    x = sandbox.tensor(np.array([-1.0, 2.0]))
    np.testing.assert_array_equal(seq(x).numpy(), [0.0, 2.0])
    ml = nn.ModuleList([nn.Conv2d(1, 1, 1)]).append(nn.Conv2d(1, 2, 1))
    assert len(ml) == 2 and isinstance(ml[:1], nn.ModuleList)
    assert [n for n, _ in ml.named_parameters()][-1] == "1.bias"


def test_submodules_are_reachable_from_the_package():
    import subprocess
    import sys

    code = "import sandbox; print(sandbox.nn.UNet.__name__, sandbox.optim.Adam.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["UNet", "Adam"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        sandbox.nothing  # noqa: B018


def test_dtype_mismatch_error_says_how_to_fix_it():
    m = nn.UNet(1, 2, depth=1, base_width=4)
    with pytest.raises(TypeError, match=r"model\.to\(np\.float64\)"):
        m(sandbox.tensor(np.zeros((2, 1, 8, 8), np.float64)))
