"""``sandbox bench``: the user-written UNet, the autograd conv cases, thread scaling, --isa."""

import json
import time

import numpy as np
import pytest

import sandbox
from sandbox.bench import _env, all_cases, main, select
from sandbox.bench._compare import compare
from sandbox.bench._timing import CORES_MIN_SAMPLE, time_pair
from sandbox.runtime import simd


def test_user_cases_are_registered():
    from sandbox.bench._cases_classic import CONV_LAYERS

    names = [c.name for c in all_cases()]
    assert len(names) == len(set(names))
    for mode in ("nearest", "bilinear", "bicubic"):
        for size in (64, 128, 256):
            assert f"unet-user/{mode}/{size}" in names
    autograd = [n for n in names if n.startswith("conv-autograd/")]
    assert autograd == [f"conv-autograd/{ci}-{co}@{hw}" for ci, co, hw in CONV_LAYERS]
    assert len(select(all_cases(), ["unet-user"])) == 9


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_the_user_unet_is_one_code_for_both_libraries(torch, mode):
    """The same source builds the sandbox and the torch model: same names, and in float64
    the same loss, gradients and Adam step."""
    from sandbox.bench._cases_user import user_step, user_unet

    sandbox.manual_seed(0)
    ours = user_unet(sandbox, widths=(4, 8, 16), mode=mode)
    theirs = user_unet(torch, widths=(4, 8, 16), mode=mode)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert type(ours.inc[2]).__name__ == type(theirs.inc[2]).__name__ == "ReLU"
    ours.double()
    theirs.double()
    theirs.load_state_dict({k: torch.from_numpy(np.array(v, copy=True))
                            for k, v in ours.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1, 16, 16))
    y = rng.integers(0, 2, size=(2, 16, 16))
    a, b = user_step(sandbox, ours, x, y)(), user_step(torch, theirs, x, y)()
    np.testing.assert_allclose(a[1].item(), b[1].item(), rtol=1e-10)
    np.testing.assert_allclose(a[0].numpy(), b[0].numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(a[2].numpy(), b[2].numpy(), rtol=1e-8, atol=1e-11)
    tstate = theirs.state_dict()
    for name, value in ours.state_dict().items():  # after one Adam step
        np.testing.assert_allclose(value, tstate[name].numpy(), rtol=1e-8, atol=1e-10,
                                   err_msg=name)


def test_timing_reports_cores_busy_for_samples_the_tick_can_count():
    """Cores for samples of at least CORES_MIN_SAMPLE (a busy loop: about one core);
    none for shorter ones, whose other threads' CPU time the kernel adds at its tick."""
    def busy():
        t = time.perf_counter()
        while time.perf_counter() - t < CORES_MIN_SAMPLE * 1.2:
            pass

    mine, other = time_pair(busy, lambda: sum(range(200)), repeat=2, warmup=0)
    # about one core on an idle machine; a loaded one may give the loop much less
    assert 0 < mine.cores < 64 and mine.as_dict()["cores"] == mine.cores
    assert other.calls > 1 and other.cores is None and other.as_dict()["cores"] is None


def test_compare_matches_by_name_and_thread_count():
    def result(name, threads, median):
        return {"name": name, "threads": threads, "ours": {"median": median, "mad": 0.0,
                                                            "iqr": 0.0}, "checksum": []}

    base = [result("c", 1, 1.0), result("c", 2, 0.5)]
    now = [result("c", 1, 1.0), result("c", 2, 1.0)]  # only the 2-thread run got slower
    deltas = {d.name: d for d in compare(base, now)}
    assert set(deltas) == {"c @1t", "c @2t"}
    assert not deltas["c @1t"].flagged and deltas["c @2t"].slower


def _run_json(tmp_path, capsys, *args):
    out = tmp_path / "r.json"
    status = main(["--quick", "--no-progress", "--repeat", "2", "--warmup", "1",
                   "--json", str(out), *args])
    captured = capsys.readouterr()
    return status, json.loads(out.read_text()) if out.exists() else None, captured


def test_quick_user_run_at_two_thread_counts(tmp_path, capsys):
    names = ["conv-layer/16-32@32", "conv-autograd/16-32@32", "unet-user/nearest/64"]
    status, doc, captured = _run_json(tmp_path, capsys, "--threads", "1,2",
                                      *(a for n in names for a in ("--filter", n)))
    assert status == 0, captured.err
    results = doc["results"]
    assert [(r["name"], r["threads"]) for r in results] == [
        (n, t) for n in names for t in (1, 2)]
    for r in results:
        assert r["error"] is None, r["error"]
        assert r["checksum"]
        # cores where the samples are long enough to count them (CORES_MIN_SAMPLE)
        for side in ("ours", "torch") if doc["environment"]["torch"] else ("ours",):
            stats = r[side]
            long_samples = stats["median"] * stats["calls"] >= CORES_MIN_SAMPLE
            assert (stats["cores"] > 0) if long_samples else stats["cores"] is None
    for r in results[2:4]:  # conv-autograd: the array API timed in the same rounds
        assert r["baseline"]["n"] == r["ours"]["n"]
        # the median of the rounds' ratios (test_bench.py checks the value on known
        # samples; two quick rounds here)
        assert 0 < r["overhead"] < float("inf")
    assert results[0]["baseline"] is None and results[0]["overhead"] is None
    # the speed-up of the rounds, on the larger count only
    for r in results:
        assert (0 < r["speedup"] < float("inf")) if r["threads"] == 2 else "speedup" not in r
    # results are bitwise identical for any thread count
    assert results[4]["checksum"] == results[5]["checksum"]
    assert doc["options"]["threads"] == [1, 2] and doc["environment"]["threads"] == [1, 2]
    env = doc["environment"]
    for key in ("cpu", "cpu_family", "cpu_model_number", "cpu_isa", "cpu_simd", "simd_path",
                "simd_paths", "conv_gemm", "blas_kernels", "torch_cpu_capability"):
        assert key in env
    assert env["simd_path"] == simd.current().isa
    for b in env["blas_kernels"]:
        assert {"internal_api", "architecture", "threads"} <= set(b)
    assert set(env["sgemm_gflops_by_threads"]) == {"1", "2"}
    text = captured.out
    assert text.startswith("cpu: ") and "family" in text.splitlines()[0]
    assert "sandbox path: " in text and "speed-up 1->2" in text and "cores 2t" in text
    assert "autograd/array" in text and "unet-user/nearest/64 @2t" in text


def test_isa_switch_runs_that_path_and_tells_how_to_limit_torch(tmp_path, capsys, monkeypatch):
    for key in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS"):
        monkeypatch.delenv(key, raising=False)  # what the bench sets is undone after the test
    isa = "avx2" if "avx2" in simd.supported_paths() else "portable"
    status, doc, captured = _run_json(tmp_path, capsys, "--isa", isa, "--filter",
                                      "conv-layer/16-32@32")
    assert status == 0, captured.err
    env = doc["environment"]
    # the avx2 path runs the project's AVX2 GEMM where it can, the portable path BLAS
    gemm = "avx2" if isa == "avx2" and simd.avx2_gemm_available() else "blas"
    assert env["simd_path"] == isa and env["conv_gemm"] == gemm
    assert doc["options"]["isa"] == isa
    limits = env["isa_limits"]
    assert limits["ATEN_CPU_CAPABILITY"] == ("avx2" if isa == "avx2" else "default")
    if isa == "avx2":
        assert limits["ONEDNN_MAX_CPU_ISA"] == "AVX2"
        assert limits["MKL_ENABLE_INSTRUCTIONS"] == "AVX2"
    if limits["unmet"]:  # torch was imported before the bench ran (as in this test process)
        assert "ATEN_CPU_CAPABILITY=" in captured.err and "python -m sandbox bench" in \
            captured.err
    assert simd.current().isa == simd.default().isa  # the run's path ended with it


def test_isa_the_cpu_lacks_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(simd, "supported_paths", lambda: ("portable",))
    assert main(["--isa", "avx2", "--list"]) == 2
    assert "--isa=avx2, but this CPU" in capsys.readouterr().err


def test_isa_helpers():
    assert _env.isa_limits(None) == {} and _env.isa_limits("avx512") == {}
    assert _env.isa_limits("avx2")["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    cmd = _env.isa_command({"ATEN_CPU_CAPABILITY": "avx2"}, ["--isa", "avx2", "--filter", "a b"])
    assert cmd == "ATEN_CPU_CAPABILITY=avx2 python -m sandbox bench --isa avx2 --filter 'a b'"
    assert not _env.started_as_bench(["--isa", "avx2"])  # pytest's argv: never re-executes
    assert main(["--threads", "1,x"]) == 2
