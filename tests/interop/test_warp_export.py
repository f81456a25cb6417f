"""Warp and VecInt leave the sandbox: ONNX GridSample (run by ONNX Runtime) and to_torch."""

import numpy as np
import pytest

import sandbox
from sandbox import nn
from sandbox.interop import run_onnx, to_onnx, to_torch

RTOL = 1e-5  # float32 rounding of the same arithmetic (measured worst below 1e-6)


def inputs(shape, seed=0, reach=3.0):
    rng = np.random.default_rng(seed)
    image = rng.random(shape).astype(np.float32)
    flow = rng.uniform(-reach, reach, (shape[0], len(shape) - 2, *shape[2:])).astype(np.float32)
    return image, flow


def ours(module, *arrays):
    with sandbox.no_grad():
        return module(*(sandbox.Tensor(a) for a in arrays)).numpy()


def close(a, b, rtol=RTOL):
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_warp_2d_matches_onnx_runtime(onnx, onnxruntime, tmp_path, mode, padding_mode,
                                      align_corners):
    warp = nn.Warp(mode, padding_mode, align_corners)
    path = to_onnx(warp, ((1, 3, 9, 10), (1, 2, 9, 10)), tmp_path / "warp.onnx")
    model = onnx.load(str(path))
    assert [n.op_type for n in model.graph.node] == ["Transpose", "MatMul", "Add", "GridSample"]
    assert [i.name for i in model.graph.input] == ["input", "flow"]
    image, flow = inputs((2, 3, 9, 10))  # batch 2: the batch axis is dynamic
    close(run_onnx(path, image, flow), ours(warp, image, flow))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_warp_3d_matches_onnx_runtime_at_opset_20(onnxruntime, tmp_path, mode, padding_mode):
    warp = nn.Warp(mode, padding_mode)
    path = to_onnx(warp, ((1, 2, 5, 6, 7), (1, 3, 5, 6, 7)), tmp_path / "warp3d.onnx", opset=20)
    image, flow = inputs((1, 2, 5, 6, 7), seed=1, reach=2.0)
    close(run_onnx(path, image, flow), ours(warp, image, flow))


@pytest.mark.parametrize(("shape", "opset"), [((2, 2, 12, 11), 18), ((1, 3, 6, 7, 8), 20)])
def test_vecint_matches_onnx_runtime(onnxruntime, tmp_path, shape, opset):
    vecint = nn.VecInt(5)
    path = to_onnx(vecint, shape, tmp_path / "vecint.onnx", opset=opset)
    _, velocity = inputs((shape[0], 1, *shape[2:]), seed=2, reach=2.5)
    close(run_onnx(path, velocity), ours(vecint, velocity))


def test_vecint_in_a_sequential(onnxruntime, tmp_path):
    sandbox.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.VecInt(4, padding_mode="border"))
    path = to_onnx(model, (1, 1, 10, 10), tmp_path / "seq.onnx")
    x = np.random.default_rng(3).random((3, 1, 10, 10)).astype(np.float32) * 4
    close(run_onnx(path, x), ours(model, x))


def test_onnx_refuses_what_it_lacks(tmp_path):
    with pytest.raises(ValueError, match=r"4-D only before opset 20; pass opset=20"):
        to_onnx(nn.Warp(), ((1, 1, 4, 4, 4), (1, 3, 4, 4, 4)), tmp_path / "a.onnx")
    with pytest.raises(ValueError, match=r"mode='bicubic' on volumes.*'bilinear'.*'nearest'"):
        to_onnx(nn.VecInt(mode="bicubic"), (1, 3, 4, 4, 4), tmp_path / "b.onnx", opset=20)
    with pytest.raises(ValueError, match="example_shape for a Warp must be the shapes of its two"):
        to_onnx(nn.Warp(), (1, 1, 4, 4), tmp_path / "c.onnx")
    with pytest.raises(ValueError, match="must share N and the spatial sizes"):
        to_onnx(nn.Warp(), ((1, 1, 4, 4), (1, 2, 4, 5)), tmp_path / "d.onnx")


def test_run_onnx_checks_the_number_of_inputs(onnxruntime, tmp_path):
    path = to_onnx(nn.Warp(), ((1, 1, 4, 4), (1, 2, 4, 4)), tmp_path / "w.onnx")
    with pytest.raises(ValueError, match=r"takes 2 input\(s\) \(input, flow\), got 1"):
        run_onnx(path, np.zeros((1, 1, 4, 4), np.float32))


@pytest.mark.parametrize("shape", [(2, 3, 8, 9), (1, 2, 4, 5, 6)])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_to_torch_twins_give_the_same_values_and_gradients(torch, shape, padding_mode):
    image, flow = (a.astype(np.float64) for a in inputs(shape, seed=4))
    warp = nn.Warp(padding_mode=padding_mode, align_corners=False)
    twin = to_torch(warp)
    assert type(twin).__name__ == "Warp" and "align_corners=False" in repr(twin)
    xs, fs = sandbox.Tensor(image, requires_grad=True), sandbox.Tensor(flow, requires_grad=True)
    warp(xs, fs).sum().backward()
    xt, ft = torch.tensor(image, requires_grad=True), torch.tensor(flow, requires_grad=True)
    twin(xt, ft).sum().backward()
    np.testing.assert_allclose(twin(xt, ft).detach().numpy(), ours(warp, image, flow), atol=1e-12)
    np.testing.assert_allclose(ft.grad.numpy(), fs.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(xt.grad.numpy(), xs.grad.numpy(), atol=1e-10)

    vecint = nn.VecInt(4, padding_mode=padding_mode)
    vt = to_torch(vecint)
    assert vt.steps == 4 and not list(vt.parameters())
    np.testing.assert_allclose(vt(torch.tensor(flow)).numpy(), ours(vecint, flow), atol=1e-10)
