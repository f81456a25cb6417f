"""The one SIMD switch (sandbox.runtime.simd): CPU detection, the environment, ``using``."""

import threading

import numpy as np
import pytest

import sandbox
from sandbox.array import _gemm, _parallel, conv
from sandbox.array import conv as conv_3d
from sandbox.runtime import simd

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9354 32-Core Processor
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512bw avx512vl

processor\t: 1
model name\t: another core
"""
AVX2_ONLY = X86.replace(" avx512f avx512dq avx512bw avx512vl", "")
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_cpuinfo_is_parsed_for_x86_and_arm():
    c = simd.cpu_from_cpuinfo(X86, "x86_64")
    assert (c.model, c.vendor, c.family, c.model_number) == (
        "AMD EPYC 9354 32-Core Processor", "AuthenticAMD", 25, 17)
    assert c.avx512 and c.avx2 and not c.neon and c.isa == "avx512"
    assert "family 25 model 17" in c.describe() and "AVX-512F/BW/DQ/VL" in c.describe()
    c2 = simd.cpu_from_cpuinfo(AVX2_ONLY, "x86_64")
    assert not c2.avx512 and c2.isa == "avx2" and c2.simd_sets == ["AVX2+FMA"]
    # AVX-512F alone is not enough: the path needs BW, DQ and VL too
    assert simd.cpu_from_cpuinfo(X86.replace(" avx512vl", ""), "x86_64").isa == "avx2"
    arm = simd.cpu_from_cpuinfo(ARM, "aarch64")
    assert arm.neon and arm.isa == "neon" and arm.family is None and arm.model_number is None


def test_environment_names_and_defaults():
    sel = simd.from_environment({})
    assert sel.isa == simd.supported_paths()[0] and sel.requested_isa == "auto"
    assert sel.gemm == {"avx512": "avx512", "portable": "blas"}.get(
        sel.isa, "avx2" if simd.avx2_gemm_available() else "blas")
    assert simd.from_environment({"SANDBOX_ISA": "portable"}) == simd.Selection(
        "portable", "blas", "portable", "auto")
    with pytest.raises(ValueError, match="SANDBOX_ISA must be one of auto, avx512, avx2, "
                                         "portable; got 'sse'"):
        simd.from_environment({"SANDBOX_ISA": "sse"})
    with pytest.raises(ValueError, match="SANDBOX_GEMM=avx512 needs the avx512 path"):
        simd.from_environment({"SANDBOX_ISA": "portable", "SANDBOX_GEMM": "avx512"})


def test_a_path_the_cpu_lacks_is_refused(monkeypatch):
    simd.current()  # the default is read once: before the CPU is faked, not inside
    monkeypatch.setattr(simd, "supported_paths", lambda: ("avx2", "portable"))
    with pytest.raises(ValueError, match="isa=avx512, but this CPU .* cannot run it; it runs "
                                         "avx2, portable"):
        simd.resolve("avx512")
    with pytest.raises(ValueError, match="gemm=avx512 needs the avx512 path, but this CPU has "
                                         "no AVX-512"):
        simd.resolve(gemm="avx512")
    assert simd.resolve() == simd.Selection(
        "avx2", "avx2" if simd.avx2_gemm_available() else "blas", "auto", "auto")
    with pytest.raises(ValueError, match="isa"):
        with simd.using(isa="avx512"):
            pass


needs_avx2_gemm = pytest.mark.skipif(not simd.avx2_gemm_available(),
                                     reason="CPU without AVX2+FMA (or no AVX2 kernel)")


@needs_avx2_gemm
def test_the_avx2_gemm_choice(monkeypatch):
    """``gemm="avx2"`` runs on the avx512 and avx2 paths, ``auto`` takes it on the avx2
    path; the portable path keeps BLAS; without the kernel, auto falls back to BLAS."""
    assert simd.resolve("avx2") == simd.Selection("avx2", "avx2", "avx2", "auto")
    assert simd.resolve("avx2", "avx2").gemm == "avx2"
    assert simd.resolve("avx2", "blas").gemm == "blas"
    assert simd.resolve("portable").gemm == "blas"
    assert simd.from_environment({"SANDBOX_ISA": "avx2"}).gemm_own
    with pytest.raises(ValueError, match="SANDBOX_GEMM=avx2 needs the avx512 or avx2 path of "
                                         "a CPU with AVX2.FMA, but SANDBOX_ISA=portable"):
        simd.from_environment({"SANDBOX_ISA": "portable", "SANDBOX_GEMM": "avx2"})
    with pytest.raises(ValueError, match="gemm=avx512 needs the avx512 path"):
        simd.resolve("avx2", "avx512")
    if "avx512" in simd.supported_paths():
        sel = simd.resolve("avx512", "avx2")
        assert (sel.isa, sel.gemm, sel.winograd_avx512, sel.gemm_avx512) == (
            "avx512", "avx2", True, False)
    with simd.using(isa="avx2", gemm="avx2"):  # the avx2 path: whatever $SANDBOX_ISA says
        with simd.using(isa="portable") as sel:  # the request falls back to auto there
            assert (sel.gemm, sel.requested_gemm) == ("blas", "auto")
        with simd.using(isa="avx2") as sel:
            assert sel.gemm == "avx2" and sel.requested_gemm == "avx2"
    monkeypatch.setattr(simd, "avx2_gemm_available", lambda: False)
    assert simd.resolve("avx2").gemm == "blas"
    with pytest.raises(ValueError, match="has no AVX2.FMA kernel"):
        simd.resolve("avx2", "avx2")


def test_using_nests_restores_and_keeps_to_its_thread():
    outer = simd.current()
    seen = {}
    with simd.using(isa="portable") as sel:
        assert sel.isa == "portable" and sel.gemm == "blas" and not sel.winograd_avx512
        assert simd.current() is sel
        with simd.using(gemm="blas"):
            assert simd.current().isa == "portable"  # the path in force is kept
        other = threading.Thread(target=lambda: seen.setdefault("isa", simd.current().isa))
        other.start()
        other.join()
        # the worker pool runs chunks in the caller's context
        with sandbox.num_threads(2):
            isas = _parallel.parallel_map(lambda _: simd.current().isa, range(8))
        assert isas == ["portable"] * 8
        assert _gemm.backend() == "blas"
    assert simd.current() == outer
    assert seen["isa"] == outer.isa  # another thread kept the default


def _spy(monkeypatch, module, name, log):
    original = getattr(module, name)
    where = 9 if name == "input_transform" else 7  # the avx512 argument, after num_threads

    def spy(*args, **kwargs):
        log.append(args[where])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize("isa", ["auto", "portable"])
def test_winograd_kernels_get_the_path_as_an_argument_in_2d_and_3d(isa, rng, monkeypatch):
    from sandbox._C import _winograd

    log = []
    for name in ("input_transform", "output_transform", "grad_transform"):
        _spy(monkeypatch, _winograd, name, log)
    want = isa == "auto" and simd.supported_paths()[0] == "avx512"
    x = rng.standard_normal((2, 32, 8, 8)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    x3 = rng.standard_normal((1, 8, 4, 6, 6)).astype(np.float32)
    w3 = rng.standard_normal((8, 8, 3, 3, 3)).astype(np.float32)
    force = dict(winograd_min_pixels=1, winograd_min_batch_pixels=1,
                 winograd3d_min_batch_voxels=1, winograd3d_min_batch_voxels_input_grad=1,
                 winograd_min_pixels_input_grad=1,
                 winograd_min_pixels_weight_grad=1, winograd_min_channels=1,
                 winograd_min_channels_weight_grad=1, winograd_f4_min_pixels=0,
                 winograd_f4_min_pixels_weight_grad=0,
                 winograd_one_region=False)  # the transforms called from Python
    with simd.using(isa=isa), conv.tuned(**force), sandbox.num_threads(2):
        y = conv.conv2d(x, w, None, 1, 1)
        conv.conv2d_backward(y, x, w, 1, 1)
        calls_2d = len(log)
        y3 = conv_3d.conv3d(x3, w3, None, 1, 1)
        conv_3d.conv3d_backward(y3, x3, w3, 1, 1)
    assert calls_2d >= 3 and len(log) > calls_2d, "the Winograd kernels did not run"
    assert log == [want] * len(log)


def test_paths_agree_to_rounding(rng):
    x = rng.standard_normal((2, 64, 16, 16)).astype(np.float32)
    w = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32)
    results = {}
    paths = ["auto", *(p for p in ("avx2",) if p in simd.supported_paths()), "portable"]
    for isa in dict.fromkeys(paths):
        with simd.using(isa=isa):
            results[isa] = conv.conv2d(x, w, None, 1, 1)
    for isa in results:
        np.testing.assert_allclose(results[isa], results["portable"], rtol=1e-4, atol=1e-4)


@needs_avx2_gemm
@pytest.mark.parametrize("winograd", [True, False])
def test_avx2_path_convolutions_match_float64_for_any_thread_count(winograd, rng):
    """The avx2 path (AVX2 GEMM, portable Winograd transforms): 2-D and 3-D forward and
    backward passes against float64 (BLAS), bitwise equal on 1 and 2 threads (the Winograd
    chunks then run one after another, the point GEMMs' threads inside the kernel)."""
    x = rng.standard_normal((3, 24, 12, 12)).astype(np.float32)
    w = (rng.standard_normal((32, 24, 3, 3)) / 12).astype(np.float32)
    x3 = rng.standard_normal((2, 8, 5, 6, 6)).astype(np.float32)
    w3 = (rng.standard_normal((8, 8, 3, 3, 3)) / 12).astype(np.float32)
    force = dict(winograd_min_pixels=1, winograd_min_batch_pixels=1,
                 winograd3d_min_batch_voxels=1, winograd3d_min_batch_voxels_input_grad=1,
                 winograd_min_pixels_input_grad=1,
                 winograd_min_pixels_weight_grad=1, winograd_min_channels=1,
                 winograd_min_channels_weight_grad=1) if winograd else dict(
        winograd_min_pixels=10**9, winograd_min_pixels_input_grad=10**9,
        winograd_min_pixels_weight_grad=10**9)

    def passes(x, w, x3, w3):
        y = conv.conv2d(x, w, None, 1, 1)
        y3 = conv_3d.conv3d(x3, w3, None, 1, 1)
        return (y, *conv.conv2d_backward(y, x, w, 1, 1), y3,
                *conv_3d.conv3d_backward(y3, x3, w3, 1, 1))

    runs = []
    with conv.tuned(**force):
        for threads in (1, 2):
            with simd.using(isa="avx2") as sel, sandbox.num_threads(threads):
                assert sel.gemm == "avx2"
                runs.append(passes(x, w, x3, w3))
        exact = passes(*(t.astype(np.float64) for t in (x, w, x3, w3)))
    for got, other, want in zip(*runs, exact, strict=True):
        if got is None:
            continue
        assert got.dtype == np.float32 and np.array_equal(got, other)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * scale)


def test_a_selection_hashes_as_its_fields_also_after_pickling():
    # hashed once (it keys every cached conv route); equal selections hash equal, and an
    # unpickled one is made again (string hashes differ between processes)
    import copy
    import pickle

    a = simd.Selection("avx2", "blas", "avx2", "blas")
    for b in (simd.Selection("avx2", "blas", "avx2", "blas"), pickle.loads(pickle.dumps(a)),
              copy.deepcopy(a)):
        assert b == a and hash(b) == hash(a) and len({a, b}) == 1
    assert pickle.loads(pickle.dumps(a)).__dict__["_hash"] == hash(("avx2", "blas", "avx2",
                                                                    "blas"))
    assert simd.Selection("avx2", "avx2") != a
