"""Top-level functions, dtype names, devices, tensor methods, save/load and inference_mode,
as PyTorch code uses them (``import sandbox as torch``)."""

import io

import numpy as np
import pytest

import sandbox
from sandbox import Tensor, nn

X = np.random.default_rng(0).standard_normal((2, 3, 4))


@pytest.mark.parametrize("name, args", [
    ("sigmoid", ()), ("exp", ()), ("tanh", ()), ("relu", ()), ("abs", ()),
    ("softmax", (1,)), ("log_softmax", (-1,)), ("sum", ()), ("mean", ()),
    ("sum", (1,)), ("mean", ((0, 2),)), ("flatten", (1,)), ("amax", (1,)),
    ("unsqueeze", (0,)), ("permute", ((2, 0, 1),)), ("logsumexp", (1,)),
])
def test_top_level_functions_match_torch(torch, name, args):
    ours = getattr(sandbox, name)(Tensor(X), *args)
    theirs = getattr(torch, name)(torch.tensor(X), *args)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-15)


def test_clamp_max_min_isnan_isinf(torch):
    y = X.copy()
    y[0, 0, :2] = [np.nan, np.inf]
    for fn in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(sandbox, fn)(Tensor(y)).numpy(),
                                      getattr(torch, fn)(torch.tensor(y)).numpy())
        np.testing.assert_array_equal(getattr(Tensor(y), fn)().numpy(),
                                      getattr(torch.tensor(y), fn)().numpy())
    np.testing.assert_allclose(sandbox.clamp(Tensor(X), -0.5, 0.5).numpy(),
                               torch.clamp(torch.tensor(X), -0.5, 0.5).numpy())
    np.testing.assert_allclose(sandbox.clamp(Tensor(X), min=0.1).numpy(),
                               torch.clamp(torch.tensor(X), min=0.1).numpy())
    v, i = sandbox.max(Tensor(X), 1)
    tv, ti = torch.max(torch.tensor(X), 1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_dtype_names_and_tensor_constructors(torch):
    assert Tensor(np.zeros(2, np.float32)).dtype == sandbox.float32 == sandbox.float
    assert sandbox.double == sandbox.float64 and sandbox.long == sandbox.int64
    for name in ("float32", "float64", "int64", "int32", "uint8", "bool", "float16", "int8"):
        assert np.dtype(getattr(sandbox, name)).itemsize == getattr(torch, name).itemsize
    assert sandbox.tensor([1, 2]).dtype == sandbox.long
    assert sandbox.tensor([1.0, 2]).dtype == sandbox.float32
    assert sandbox.tensor([1.0], dtype=sandbox.float64, device="cpu").dtype == np.float64
    assert sandbox.zeros(2, 3, dtype=sandbox.long, device=sandbox.device("cpu")).dtype == np.int64
    assert sandbox.tensor(torch.ones(2, dtype=torch.float64)).dtype == np.float64
    with pytest.raises(ValueError, match="CPU only"):
        sandbox.zeros(2, device="cuda")


def test_from_numpy_shares_memory_and_as_tensor_avoids_copies():
    a = np.arange(6.0).reshape(2, 3)
    t = sandbox.from_numpy(a)
    a[0, 0] = 42.0
    assert t.dtype == np.float64 and t[0, 0].item() == 42.0
    assert sandbox.as_tensor(t) is t
    assert sandbox.as_tensor(a).numpy() is a
    assert sandbox.as_tensor(a, dtype=sandbox.float32).dtype == np.float32
    assert sandbox.as_tensor([1, 2]).dtype == np.int64
    with pytest.raises(TypeError, match="numpy.ndarray"):
        sandbox.from_numpy([1, 2])


def test_devices_are_cpu_only():
    cpu = sandbox.device("cpu")
    assert str(cpu) == "cpu" and cpu == "cpu" and sandbox.device("cpu:0") == cpu
    assert not sandbox.cuda.is_available() and sandbox.cuda.device_count() == 0
    sandbox.cuda.manual_seed_all(0)  # nothing to seed, as torch without CUDA
    t = Tensor(X)
    assert t.device == cpu and not t.is_cuda
    assert t.to("cpu") is t and t.cpu() is t and t.to(cpu, sandbox.float64) is t
    for call in (lambda: sandbox.device("cuda"), lambda: t.to("cuda"), lambda: t.cuda(),
                 lambda: t.to(device="mps"), lambda: sandbox.device("cuda", 0)):
        with pytest.raises(ValueError, match="the sandbox runs on the CPU only"):
            call()


def test_tensor_to_dtype_is_differentiable():
    x = Tensor(X.astype(np.float32), requires_grad=True)
    y = x.to(sandbox.float64)
    assert y.dtype == np.float64 and x.to(sandbox.float32) is x
    y.sum().backward()
    assert x.grad.dtype == np.float32
    assert x.to(dtype=sandbox.float32, copy=True) is not x
    assert Tensor(np.zeros(2)).to(Tensor(np.zeros(1, np.float32))).dtype == np.float32
    with pytest.raises(TypeError, match="to\\(\\) expects"):
        x.to(3.5)


def test_tensor_methods_any_all_dim_tolist(torch):
    b = X > 0
    for dim in (None, 1):
        kw = {} if dim is None else {"dim": dim}
        np.testing.assert_array_equal(Tensor(b).any(**kw).numpy(),
                                      torch.tensor(b).any(**kw).numpy())
        np.testing.assert_array_equal(Tensor(b).all(**kw).numpy(),
                                      torch.tensor(b).all(**kw).numpy())
    assert Tensor(X).dim() == 3 and Tensor(X).tolist() == X.tolist()
    assert Tensor(X).int().dtype == np.int32 and Tensor(X).bool().dtype == np.bool_


def test_inplace_methods_match_torch(torch):
    ours, theirs = Tensor(X.copy()), torch.tensor(X.copy())
    other = np.random.default_rng(1).standard_normal((3, 4))
    assert ours.add_(Tensor(other), alpha=0.5) is ours
    theirs.add_(torch.tensor(other), alpha=0.5)
    ours.sub_(1.0).mul_(Tensor(other)).div_(2.0).clamp_(-0.3, 0.4)
    theirs.sub_(1.0).mul_(torch.tensor(other)).div_(2.0).clamp_(-0.3, 0.4)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15)
    ours.copy_(Tensor(other.astype(np.float32)))
    theirs.copy_(torch.tensor(other.astype(np.float32)))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    ours.fill_(3.0)
    assert (ours.numpy() == 3.0).all()
    count = sandbox.zeros(1, dtype=sandbox.long)
    count.add_(5)
    assert count.item() == 5
    with pytest.raises(RuntimeError, match="can't be cast"):  # int += float: torch's rule
        count.add_(0.5)


def test_inplace_on_graph_tensors_raises_and_works_under_no_grad():
    p = nn.Parameter(np.ones(3))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        p.add_(1.0)
    h = (p * 2.0).mul_(2.0)  # a non-leaf: recorded in the graph, as in torch
    h.sum().backward()
    assert p.grad.numpy().tolist() == [4.0, 4.0, 4.0]
    with sandbox.no_grad():
        p.mul_(0.5).add_(Tensor(np.ones(3)), alpha=2.0)
    assert p.numpy().tolist() == [2.5, 2.5, 2.5]


def test_inference_mode_and_manual_seed_generator():
    x = Tensor(X, requires_grad=True)
    with sandbox.inference_mode():
        assert not (x * 2.0).requires_grad
    assert (x * 2.0).requires_grad
    g = sandbox.Generator().manual_seed(3)
    a = sandbox.randn(2, 3, generator=g, dtype=sandbox.float64)
    b = sandbox.randn(2, 3, generator=sandbox.Generator().manual_seed(3), dtype=sandbox.float64)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert g.initial_seed() == 3
    sandbox.manual_seed(5)
    c = sandbox.rand(4)
    sandbox.manual_seed(5)
    np.testing.assert_array_equal(c.numpy(), sandbox.rand(4).numpy())


def test_save_load_round_trip_state_dicts_without_pickle(tmp_path, torch):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
            "tensor": Tensor(X), "torch": torch.tensor(X), "list": [1.5, "a", (2, 3)]}
    sandbox.save(ckpt, tmp_path / "ckpt.pt")
    raw = np.load(tmp_path / "ckpt.pt", allow_pickle=False)  # a plain npz: no pickle inside
    assert len(raw.files) > 3
    back = sandbox.load(tmp_path / "ckpt.pt", map_location="cpu", weights_only=True)
    assert back["epoch"] == 3 and back["list"] == [1.5, "a", (2, 3)]
    assert isinstance(back["tensor"], Tensor) and isinstance(back["torch"], Tensor)
    np.testing.assert_array_equal(back["torch"].numpy(), X)
    other = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    other.load_state_dict(back["model"])
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k], v)
    buffer = io.BytesIO()
    sandbox.save({"w": Tensor(X)}, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(sandbox.load(buffer)["w"].numpy(), X)


def test_load_state_dict_accepts_torch_tensors_arrays_and_sandbox_tensors(torch):
    tm = torch.nn.Conv2d(1, 2, 3).double()
    ours = nn.Conv2d(1, 2, 3).double()
    ours.load_state_dict(tm.state_dict())  # torch tensors
    np.testing.assert_array_equal(ours.weight.numpy(), tm.weight.detach().numpy())
    ours.load_state_dict({k: Tensor(v * 2) for k, v in ours.state_dict().items()})
    np.testing.assert_array_equal(ours.weight.numpy(), 2 * tm.weight.detach().numpy())


def test_save_load_errors(tmp_path, torch):
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(ValueError, match="pickles"):
        sandbox.load(path)
    with pytest.raises(TypeError, match="cannot store"):
        sandbox.save({"model": nn.ReLU()}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="CPU only"):
        sandbox.load(path, map_location="cuda:0")
    with pytest.raises(TypeError, match="object array"):
        sandbox.save({"x": np.array([None, 1])}, tmp_path / "o.pt")


def test_star_import_keeps_python_builtins():
    namespace = {}
    exec("from sandbox import *", namespace)
    for name in ("max", "min", "sum", "abs", "float", "int", "bool"):
        assert name not in namespace, name
        assert hasattr(sandbox, name), name
    assert "float32" in namespace and "Tensor" in namespace


def test_format_a_one_element_tensor_like_torch(torch):
    loss = Tensor(np.float64(0.123456))
    assert f"{loss:.3f}" == f"{torch.tensor(0.123456):.3f}" == "0.123"
    assert f"{loss}" == repr(loss)
    with pytest.raises(TypeError):
        f"{Tensor(X):.3f}"


def test_disabled_mixed_precision_is_a_pass_through_as_torch_without_cuda(torch):
    model = nn.Conv2d(1, 2, 3).to(memory_format=sandbox.channels_last)
    opt = sandbox.optim.SGD(model.parameters(), lr=0.1)
    x = Tensor(X[:1, None]).to(device="cpu", dtype=sandbox.float32,
                               memory_format=sandbox.channels_last)
    scaler = sandbox.cuda.amp.GradScaler(enabled=False)
    tscaler = torch.amp.GradScaler("cuda", enabled=False)
    with sandbox.autocast("cpu", enabled=False):
        loss = model(x).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled() and not tscaler.is_enabled()
    before = model.weight.numpy().copy()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(model.weight.numpy(), before - 0.1 * model.weight.grad.numpy())
    with pytest.warns(UserWarning, match="disabling"):
        assert not sandbox.amp.GradScaler(enabled=True).is_enabled()
    with pytest.raises(ValueError, match="enabled=False"):
        sandbox.autocast("cpu")


def test_more_constructors_match_torch_shapes_and_dtypes(torch):
    t = Tensor(X)
    tt = torch.tensor(X)
    pairs = [
        (sandbox.empty(2, 3), torch.empty(2, 3)),
        (sandbox.empty_like(t), torch.empty_like(tt)),
        (sandbox.full_like(t, 2.5), torch.full_like(tt, 2.5)),
        (sandbox.randn_like(t), torch.randn_like(tt)),
        (sandbox.rand_like(t), torch.rand_like(tt)),
        (sandbox.randint(0, 5, (3, 4)), torch.randint(0, 5, (3, 4))),
        (sandbox.randint(5, (3,)), torch.randint(5, (3,))),
        (sandbox.randperm(7), torch.randperm(7)),
        (sandbox.linspace(-1, 2, 7), torch.linspace(-1, 2, 7)),
        (sandbox.eye(3, 4), torch.eye(3, 4)),
        (t.new_zeros(2, 2), tt.new_zeros(2, 2)),
        (t.new_ones((3,)), tt.new_ones((3,))),
        (t.new_full((2,), 4.0), tt.new_full((2,), 4.0)),
        (t.new_tensor([1, 2]), tt.new_tensor([1, 2])),
        (sandbox.zeros(2, dtype=sandbox.long).type_as(t), torch.zeros(2).long().type_as(tt)),
    ]
    for ours, theirs in pairs:
        assert ours.shape == tuple(theirs.shape)
        assert np.dtype(ours.dtype).name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(sandbox.linspace(-1, 2, 7).numpy(), torch.linspace(-1, 2, 7).numpy())
    np.testing.assert_array_equal(sandbox.eye(3, 4).numpy(), torch.eye(3, 4).numpy())
    assert sorted(sandbox.randperm(7).tolist()) == list(range(7))
    r = sandbox.randint(2, 5, (1000,), generator=sandbox.Generator().manual_seed(0))
    assert r.numpy().min() == 2 and r.numpy().max() == 4
