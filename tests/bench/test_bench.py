"""``sandbox bench``: comparison logic on synthetic results, a quick run, baselines, exit codes;
the classic UNet workload; the volume cases (registered, listed, run under --quick, agree
with PyTorch)."""

import json
import os
import time

import numpy as np
import pytest

from sandbox.bench import all_cases, main, select
from sandbox.bench._cases_3d import (
    CONV3D_LAYERS,
    RESIZE3D_VARIANTS,
    UNET3D,
    UNET3D_MODES,
    conv3d_flops,
    conv3d_layer_shape,
)
from sandbox.bench._compare import checksum, compare, drift
from sandbox.bench._report import plot_ratios, results_table
from sandbox.bench._timing import paired_ratio, peak_memory, summarize, time_pair, time_pairs
from tests.support.cli_helpers import assert_one_line_error, run_cli

TINY = ["resize/nearest/a/fwd", "max_pool2d/16@64/bwd"]


def _result(name, median, mad=0.0, outputs=None, error=None, rtol=1e-5):
    out = np.arange(100, dtype=np.float32) / 7 if outputs is None else outputs
    return {"name": name, "ours": {"median": median, "mad": mad, "iqr": 2 * mad},
            "checksum": checksum(out), "rtol": rtol, "error": error}


def _one(base, now, **kw):
    (d,) = compare([base], [now], **kw)
    return d


# --------------------------------------------------------------------------- timing rule

def test_slower_beyond_threshold_and_noise_is_flagged():
    d = _one(_result("c", 1.00, mad=0.01), _result("c", 1.30, mad=0.01))
    assert d.slower and d.flagged and d.status == "SLOWER"
    assert d.change == pytest.approx(0.30)
    assert d.allowed == pytest.approx(0.15)  # noise 3 * hypot(1.5 %, 1.1 %) < 15 %


def test_slower_but_within_noise_is_not_flagged():
    # 1.4826 * MAD / median = 15 % in each run -> allowed 3 * 21 % = 63 %
    d = _one(_result("c", 1.00, mad=0.10), _result("c", 1.30, mad=0.13))
    assert not d.flagged and d.status == "noise"
    assert d.allowed == pytest.approx(3 * np.hypot(0.14826, 0.14826), rel=1e-6)


def test_faster_and_small_changes_are_not_flagged():
    assert _one(_result("c", 1.0), _result("c", 0.5)).status == "faster"
    assert _one(_result("c", 1.0), _result("c", 1.1)).status == "ok"


def test_threshold_and_noise_factor_are_configurable():
    base, now = _result("c", 1.0), _result("c", 1.2)
    assert _one(base, now).slower
    assert not _one(base, now, threshold=0.25).slower
    noisy_base, noisy_now = _result("c", 1.0, mad=0.10), _result("c", 1.4, mad=0.14)
    assert not _one(noisy_base, noisy_now).slower  # allowed 3 * 21 % = 63 % > 40 %
    assert _one(noisy_base, noisy_now, noise_k=1.0).slower
    with pytest.raises(ValueError, match="threshold"):
        compare([base], [now], threshold=-1)


# --------------------------------------------------------------------------- drift rule

def test_drift_within_float32_rounding_is_not_flagged():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(10_000).astype(np.float32)
    # every element moved by up to 4 ulps, as a reordered float32 accumulation would
    b = a + (a * np.float32(2.0**-22)) * rng.integers(-1, 2, a.size).astype(np.float32)
    assert not np.array_equal(a, b)
    assert drift(checksum(a), checksum(b), rtol=1e-5) == []
    d = _one(_result("c", 1.0, outputs=a), _result("c", 1.0, outputs=b))
    assert not d.flagged and d.status == "ok"


def test_drift_beyond_rounding_is_flagged():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(10_000).astype(np.float32)
    b = a.copy()
    b[1] += 0.05  # one element off, at a position the samples do not see
    found = drift(checksum(a), checksum(b), rtol=1e-5)
    assert len(found) == 1 and "block_sum[0]" in found[0]  # too small for the total sum
    d = _one(_result("c", 1.0, outputs=a), _result("c", 1.0, outputs=b))
    assert d.flagged and d.status == "DRIFT"
    # a uniform relative error of 1e-3 is far beyond float32 rounding
    assert drift(checksum(a), checksum(a * np.float32(1.001)), rtol=1e-5)


def test_drift_shape_dtype_nan_and_output_count():
    a = np.ones((2, 3), np.float32)
    assert "shape" not in drift(checksum(a), checksum(a), 1e-5)
    assert drift(checksum(a), checksum(a.reshape(3, 2)), 1e-5)
    assert drift(checksum(a), checksum(a.astype(np.float64)), 1e-5)
    nan = a.copy()
    nan[0, 0] = np.nan
    assert drift(checksum(a), checksum(nan), 1e-5)
    assert drift(checksum(nan), checksum(nan), 1e-5) == []
    assert drift(checksum((a, a)), checksum(a), 1e-5) == ["2 outputs before, 1 now"]


def test_errors_new_and_missing_cases():
    ok, broken = _result("c", 1.0), _result("c", 1.0, error="ImportError: gone")
    assert _one(ok, broken).status == "ERROR"
    assert not _one(broken, broken).flagged  # unavailable in both: nothing to compare
    deltas = compare([_result("old", 1.0)], [_result("new", 1.0)])
    assert [(d.name, d.status, d.flagged) for d in deltas] == [
        ("new", "new", False), ("old", "missing", False)]


# --------------------------------------------------------------------------- pieces

def test_summarize_and_interleaved_timing():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s.median, s.mad, s.min, s.n) == (3.0, 1.0, 1.0, 5)
    assert s.iqr == pytest.approx(2.0)
    calls = []
    mine, other = time_pair(lambda: calls.append("o"), lambda: calls.append("t"), repeat=4,
                            warmup=1, min_sample=0)  # single calls
    assert calls == ["o", "t", "o", "t", "t", "o", "o", "t", "t", "o"]
    assert mine.n == other.n == 4 and mine.calls == other.calls == 1
    assert peak_memory(lambda: np.ones(10**6)) >= 8 * 10**6


def test_paired_ratio_takes_the_rounds_ratios():
    """The median of the per-round ratios: a slow phase that takes both samples of a
    round cancels in that round's ratio, where the ratio of the medians mixes rounds of
    both phases; samples that do not pair fall back to the ratio of the medians."""
    a = summarize([1.1, 2.2, 2.2])  # 10 % slower each round; the phase halves the speed
    b = summarize([1.0, 1.0, 2.0])  # from round 2 for a, round 3 for b
    assert a.samples == (1.1, 2.2, 2.2)
    assert paired_ratio(a, b) == pytest.approx(1.1)
    assert a.median / b.median == pytest.approx(2.2)
    assert paired_ratio(a, summarize([1.0, 2.0])) == pytest.approx(2.2 / 1.5)


def test_a_result_records_the_paired_overhead_of_its_baseline():
    """A case with a baseline (conv-autograd: the array API in the same rounds) records
    the median of the rounds' ratios as its overhead, not the ratio of the medians."""
    from types import SimpleNamespace

    from sandbox.bench._runner import _record

    mine = summarize([1.1, 2.2, 2.2, 1.21])
    base = summarize([1.0, 1.0, 2.0, 1.1])
    work = SimpleNamespace(flops=0, nbytes=0)
    result = _record({}, work, mine, None, None, None, base=base)
    assert result["overhead"] == pytest.approx(1.1)  # every round's ratio but the 2nd
    assert result["baseline"] == base.as_dict() and result["ours"] == mine.as_dict()
    assert "overhead" not in _record({}, work, mine, None, None, None)


def test_the_scaling_table_takes_the_rounds_speed_up():
    """With several thread counts, a case's speed-up is the median of the rounds' ratios
    that run_case_threads records on the larger count (``speedup``, ``torch_speedup``),
    not the ratio of the medians, which mixes rounds of the VM's phases; a result file
    without them falls back to the medians."""
    from sandbox.bench._report import scaling_table

    def result(threads, ours, torch, **extra):
        stats = [{"median": m, "cores": None, "calls": 1} for m in (ours, torch)]
        return {"name": "unet-user/x", "threads": threads, "ours": stats[0],
                "torch": stats[1], "ratio": ours / torch, "error": None, **extra}

    paired = [result(1, 0.050, 0.080), result(2, 0.030, 0.050, speedup=1.71,
                                                torch_speedup=1.58)]
    row = scaling_table(paired).splitlines()[2]
    assert "1.71x" in row and "1.58x" in row  # not 0.050 / 0.030 = 1.67, 0.080 / 0.050
    row = scaling_table([result(1, 0.050, 0.080), result(2, 0.030, 0.050)]).splitlines()[2]
    assert "1.67x" in row and "1.60x" in row


def test_thread_counts_record_the_rounds_speed_up(monkeypatch):
    """run_case_threads gives every count but the smallest the median over the rounds of
    the smallest count's sample over its own in the same round."""
    from sandbox.bench import _runner
    from sandbox.bench._cases import Case, Work

    timed = {1: (summarize([1.0, 2.0, 2.2]), summarize([2.0, 2.0, 4.0]), None),
             2: (summarize([0.5, 1.0, 2.0]), summarize([1.0, 2.0, 2.0]), None)}
    work = Work(lambda: None, lambda: None, 0, "")
    monkeypatch.setattr(_runner, "_prepare", lambda case, quick, torch, result: (work, None))
    monkeypatch.setattr(_runner, "time_pairs", lambda *a, **k: timed)
    case = Case("x/y", "x", lambda quick, torch: work)
    results = _runner.run_case_threads(case, [2, 1], lambda n: None, quick=True, torch=None,
                                       repeat=3, warmup=0, bandwidth=None, memory=False)
    by_count = {r["threads"]: r for r in results}
    assert "speedup" not in by_count[1]
    assert by_count[2]["speedup"] == pytest.approx(2.0)  # rounds 2.0, 2.0, 1.1
    assert by_count[2]["torch_speedup"] == pytest.approx(2.0)  # rounds 2.0, 1.0, 2.0


def test_a_case_may_ask_for_longer_samples_than_the_suite(monkeypatch):
    """A case's ``min_sample`` is a floor on the suite's (conv-autograd's 10 ms, whose
    ratio must resolve a few percent); the result records the sample length used."""
    from sandbox.bench import _runner
    from sandbox.bench._cases import Case, Work
    from sandbox.bench._cases_user import CONV_AUTOGRAD_MIN_SAMPLE

    work = Work(lambda: None, lambda: None, 0, "")
    seen = []

    def fake_time_pairs(works, switch, **kw):
        seen.append(kw["min_sample"])
        return {n: (summarize([1.0]), None, None) for n in works}

    monkeypatch.setattr(_runner, "_prepare", lambda case, quick, torch, result: (work, None))
    monkeypatch.setattr(_runner, "time_pairs", fake_time_pairs)
    args = dict(quick=True, torch=None, repeat=1, warmup=0, bandwidth=None, memory=False)
    longer = Case("x/y", "x", lambda quick, torch: work, min_sample=0.01)
    plain = Case("x/z", "x", lambda quick, torch: work)
    r1 = _runner.run_case_threads(longer, [1], lambda n: None, min_sample=1e-3, **args)
    r2 = _runner.run_case_threads(longer, [1], lambda n: None, min_sample=0.05, **args)
    r3 = _runner.run_case_threads(plain, [1], lambda n: None, min_sample=1e-3, **args)
    assert seen == [0.01, 0.05, 1e-3]
    assert [r[0]["min_sample_ms"] for r in (r1, r2, r3)] == pytest.approx([10.0, 50.0, 1.0])
    conv = next(c for c in all_cases() if c.name.startswith("conv-autograd/"))
    assert conv.min_sample == CONV_AUTOGRAD_MIN_SAMPLE >= 0.01


def test_thread_counts_are_interleaved_round_by_round():
    """Each round times both functions at every count, the counts' order and the
    functions' order alternating; the count is set before each count's samples."""
    calls = []
    works = {n: (lambda n=n: calls.append(f"o{n}"), lambda n=n: calls.append(f"t{n}"))
             for n in (1, 2)}
    timed = time_pairs(works, lambda n: calls.append(n), repeat=2, warmup=1, min_sample=0)
    assert calls == [1, "o1", "t1", 2, "o2", "t2",              # warm-up at each count
                     1, "o1", "t1", 2, "o2", "t2",              # round 0
                     2, "t2", "o2", 1, "t1", "o1"]              # round 1
    assert set(timed) == {1, 2}
    for mine, other in timed.values():
        assert mine.n == other.n == 2
    calls.clear()
    mine, other = time_pairs({4: (lambda: calls.append("o"), None)}, calls.append, repeat=2,
                             warmup=0, min_sample=0)[4]
    assert calls == [4, "o", "o"] and other is None  # one count: set once


def test_a_baseline_is_timed_in_the_same_rounds():
    """A third function (a case's baseline) joins each round, the order reversed every
    other round; None in its place times only the other two."""
    calls = []
    works = {1: tuple(lambda k=k: calls.append(k) for k in "otb")}
    timed = time_pairs(works, lambda n: None, repeat=3, warmup=1, min_sample=0)
    assert calls == ["o", "t", "b",                    # warm-up
                     "o", "t", "b", "b", "t", "o", "o", "t", "b"]
    mine, other, base = timed[1]
    assert mine.n == other.n == base.n == 3
    calls.clear()
    works = {1: (lambda: calls.append("o"), lambda: calls.append("t"), None)}
    mine, other, base = time_pairs(works, lambda n: None, repeat=2, warmup=0,
                                   min_sample=0)[1]
    assert calls == ["o", "t", "t", "o"] and base is None


def test_short_calls_are_timed_in_loops():
    """A sample of a short call repeats it back to back (per call: the sample's time
    over the calls); a call longer than the sample runs once per sample.  Every sample
    starts with an untimed call (its lead-in), unless ``lead_in=False``."""
    calls = []

    def slow():
        calls.append("t")
        time.sleep(0.003)

    mine, other = time_pair(lambda: calls.append("o"), slow, repeat=3, warmup=0,
                            min_sample=1e-3)
    assert mine.calls > 1 and other.calls == 1
    # three calls to size each sample, then 3 samples of a lead-in and the timed calls
    assert calls.count("o") == 3 + 3 * (1 + mine.calls)
    assert calls.count("t") == 3 + 3 * 2
    assert other.median >= 0.003 and mine.median < other.median  # each side its own
    assert mine.as_dict()["calls"] == mine.calls
    calls.clear()
    mine, other = time_pair(lambda: calls.append("o"), slow, repeat=3, warmup=0,
                            min_sample=1e-3, lead_in=False)
    assert calls.count("o") == 3 + 3 * mine.calls and calls.count("t") == 3 + 3


def test_registry_covers_the_suite_and_filters():
    names = [c.name for c in all_cases()]
    assert len(names) == len(set(names))
    for variant in ("nearest", "nearest-exact", "bilinear", "bilinear-ac", "bilinear-aa",
                    "bicubic", "bicubic-aa", "lanczos3", "lanczos3-aa", "area"):
        for key in "abcd":
            assert f"resize/{variant}/{key}/fwd" in names
            assert f"resize/{variant}/{key}/bwd" in names
    assert {"unet-step/bilinear", "unet-step/nearest", "unet-step/bicubic"} <= set(names)
    assert any(n.startswith("conv2d/") for n in names)
    cases = all_cases()
    assert [c.name for c in select(cases, ["resize/bilinear/a/*"])] == [
        "resize/bilinear/a/fwd", "resize/bilinear/a/bwd"]
    assert len(select(cases, ["unet-step"])) == 3
    assert len(select(cases, ["unet-step/nearest,unet-step/bicubic"])) == 2
    assert select(cases, None) == cases


def test_plot_and_missing_matplotlib(tmp_path, monkeypatch):
    results = [{"name": "a", "ratio": 0.5}, {"name": "b", "ratio": 2.0}, {"name": "c"}]
    path = tmp_path / "ratio.png"
    assert plot_ratios(results, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    assert not plot_ratios(results, str(tmp_path / "none.png"))


# --------------------------------------------------------------------------- the command

def _quick(tmp_path, *extra):
    args = ["--quick", "--no-progress", "--repeat", "2", "--warmup", "1"]
    for name in TINY:
        args += ["--filter", name]
    return main(args + ["--storage", str(tmp_path / "store"), *extra])


def test_quick_run_writes_valid_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert _quick(tmp_path, "--json", str(out)) == 0
    doc = json.loads(out.read_text())
    assert [r["name"] for r in doc["results"]] == TINY
    env = doc["environment"]
    for key in ("cpu", "cores_available", "threads", "openmp", "blas", "python", "numpy",
                "torch", "sandbox", "git_commit", "copy_bandwidth_gbs", "omp_wait_policy"):
        assert key in env
    assert env["threads"] == 2 and env["copy_bandwidth_gbs"] > 0
    assert doc["options"]["quick"] is True
    for r in doc["results"]:
        assert r["error"] is None, r["error"]
        assert r["ours"]["median"] > 0 and r["ours"]["n"] == 2
        assert r["gbs"] > 0 and r["peak_bytes"] >= 0
        assert r["checksum"] and r["checksum"][0]["shape"]
        assert r["host_steal"] is None or 0.0 <= r["host_steal"] <= 1.0
        if env["torch"]:
            assert r["torch"]["median"] > 0 and r["ratio"] > 0
            assert r["torch_agreement"] < 1e-5
    table = capsys.readouterr().out
    assert "ratio" in table and TINY[0] in table


def test_without_torch_the_columns_show_dashes(tmp_path, capsys):
    assert _quick(tmp_path, "--no-torch") == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(TINY[0]))
    assert row.count("—") >= 2
    assert results_table([]).startswith("case")


def test_save_compare_round_trip_and_exit_codes(tmp_path, capsys):
    store = tmp_path / "store"
    assert _quick(tmp_path, "--save", "base") == 0
    saved = store / "base.json"
    assert saved.exists()
    # Same code, same inputs: no drift; a huge threshold keeps machine noise out of it.
    assert _quick(tmp_path, "--compare", "base", "--threshold", "100") == 0
    assert "0 of 2 cases flagged" in capsys.readouterr().out

    # The slowdown and the drift are injected into the baseline, and every case the
    # test does not mean to flag gets a baseline 10 s slow: machine noise cannot flag it
    # (a loaded machine made this test fail when it compared two real timings).
    doc = json.loads(saved.read_text())
    for result in doc["results"]:
        result["ours"].update(median=10.0)
    doc["results"][0]["ours"].update(median=1e-9, mad=0.0, iqr=0.0)  # baseline "much faster"
    saved.write_text(json.dumps(doc))
    assert _quick(tmp_path, "--compare", "base") == 1
    out = capsys.readouterr().out
    assert "SLOWER" in out and "1 of 2 cases flagged" in out

    doc["results"][0]["ours"].update(median=10.0)  # now fast again, but outputs changed
    doc["results"][1]["checksum"][0]["sum"] += 1.0
    saved.write_text(json.dumps(doc))
    assert _quick(tmp_path, "--compare", str(saved)) == 1
    assert "DRIFT" in capsys.readouterr().out


def test_save_into_a_read_only_folder_is_refused_before_running(tmp_path, capsys,
                                                                monkeypatch):
    import stat
    import tempfile

    store = tmp_path / "ro"
    store.mkdir()
    store.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0:  # root writes through permission bits: a read-only mount instead
        def refuse(*args, **kwargs):
            raise PermissionError(13, "Read-only file system")

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    try:
        status = main(["--quick", "--no-torch", "--no-progress", "--filter", TINY[0],
                       "--storage", str(store / "sub"), "--save", "base"])
    finally:
        store.chmod(stat.S_IRWXU)
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""  # nothing was timed
    assert "--save" in captured.err and "cannot write in the folder" in captured.err


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["--list", "--filter", "unet-step"]) == 0
    assert capsys.readouterr().out.split() == [
        "unet-step/bilinear", "unet-step/nearest", "unet-step/bicubic"]
    assert main(["--help"]) == 0
    assert main(["--threads", "0"]) == 2
    assert main(["--bogus"]) == 2
    assert main(["--filter", "no-such-case"]) == 2
    assert "no case matches" in capsys.readouterr().err
    assert _quick(tmp_path, "--compare", "absent") == 2
    assert "does not exist" in capsys.readouterr().err
    assert _quick(tmp_path, "--save", "../evil") == 2
    full = tmp_path / "full.json"
    full.write_text(json.dumps({"options": {"quick": False}, "results": []}))
    assert _quick(tmp_path, "--compare", str(full)) == 2
    assert "--quick" in capsys.readouterr().err


# --------------------------------------------------------------------------- classic UNet workload

def test_classic_cases_are_registered():
    from sandbox.bench._cases_classic import CONV_LAYERS

    names = [c.name for c in all_cases()]
    for mode in ("nearest", "bilinear", "bicubic"):
        for size in (64, 128):
            assert f"unet-classic/{mode}/{size}" in names
    layers = [n for n in names if n.startswith("conv-layer/")]
    assert len(layers) == len(CONV_LAYERS) == 14
    assert "conv-layer/1-16@64" in layers and "conv-layer/384-128@8" in layers
    assert len(select(all_cases(), ["unet-classic/*/128"])) == 3


@pytest.mark.parametrize("spatial_dims", [2, 3])
def test_conv_layers_are_the_unets_3x3_convolutions(spatial_dims):
    """The conv-layer cases are the 3x3 convolutions of the classic UNet (2-D) and the
    conv3d-layer cases those of the 3-D UNet: the same channels, at the sizes they run at."""
    from sandbox import nn
    from sandbox.bench._cases_classic import CONV_LAYERS, conv_flops

    if spatial_dims == 2:
        model, conv_type, layers = nn.ClassicUNet(), nn.Conv2d, CONV_LAYERS
        side_times_channels = 64 * 16  # 64x64 input: 16 channels at 64², 32 at 32², ...
    else:
        model, conv_type = nn.UNet(**UNET3D, spatial_dims=3), nn.Conv3d
        layers = CONV3D_LAYERS
        side_times_channels = 32 * 16  # 32^3 input: 16 channels at 32^3, 32 at 16^3, ...
    convs = {(m.in_channels, m.out_channels) for m in model.modules()
             if isinstance(m, conv_type) and m.kernel_size == (3,) * spatial_dims}
    assert convs == {(ci, co) for ci, co, _ in layers}
    for _, co, side in layers:
        assert side * co == side_times_channels
    if spatial_dims == 2:
        assert conv_flops(8, 384, 128, 8, 8) == 3 * 2 * 8 * 128 * 384 * 9 * 64
    else:
        assert conv3d_flops(2, 16, 32, 16) == 3 * 2 * 2 * 32 * 16 * 27 * 16**3
        assert conv3d_layer_shape(128, 64, 8, quick=True) == (2, 16, 8, 2)


def test_quick_classic_run_reports_flops_and_both_peaks(tmp_path, capsys):
    from sandbox.bench._cases_classic import conv_flops

    out = tmp_path / "classic.json"
    names = ["conv-layer/16-32@32", "unet-classic/nearest/64"]
    args = ["--quick", "--no-progress", "--repeat", "2", "--warmup", "1", "--json", str(out)]
    for name in names:
        args += ["--filter", name]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    env = doc["environment"]
    assert env["sgemm_gflops"] > 0 and env["sgemm_size"] == 512
    conv, step = doc["results"]
    assert [conv["name"], step["name"]] == names
    assert conv["error"] is None and step["error"] is None
    assert conv["flops"] == conv_flops(2, 2, 4, 8, 8)  # quick: channels / 8, pixels / 4
    assert conv["gflops"] == pytest.approx(conv["flops"] / conv["ours"]["median"] / 1e9)
    assert conv["sgemm_frac"] == pytest.approx(conv["gflops"] / env["sgemm_gflops"])
    assert conv["peak_method"] == "tracemalloc"
    assert step["peak_method"] == "rss" and step["peak_bytes"] > 0
    assert step["flops"] is None and step["checksum"]
    if env["torch"]:
        assert conv["torch_gflops"] > 0 and conv["torch_agreement"] < 1e-5
        assert step["torch_peak_bytes"] > 0 and step["torch_agreement"] < 1e-3
    text = capsys.readouterr().out
    assert "GFLOP/s" in text and "%sgemm" in text and "torch MB" in text


def test_bench_refuses_a_bad_save_name_before_running(tmp_path, capsys):
    status, out, err = run_cli(capsys, "bench", "--quick", "--no-torch", "--save", "../x",
                               "--filter", "resize/nearest/a/fwd", "--no-progress")
    assert_one_line_error(status, err, "baseline name", "'../x'", command="bench")
    assert out == ""  # nothing was timed
    status, out, err = run_cli(capsys, "bench", "--quick", "--json", tmp_path / "no" / "x.json",
                               "--filter", "resize/nearest/a/fwd")
    assert_one_line_error(status, err, "does not exist", command="bench")


def test_a_lucky_quiet_baseline_does_not_flag_normal_jitter():
    from sandbox.bench import compare

    def result(times):
        from sandbox.bench._timing import summarize

        return {"name": "c", "ours": summarize(np.array(times)).as_dict(), "checksum": []}

    # Three repeats where two agree by chance: the MAD is ~0, the spread is not.
    base = result([1.000, 1.001, 1.35])
    now = result([1.20, 1.22, 1.25])
    (delta,) = compare([base], [now])
    assert not delta.slower, delta
    (delta,) = compare([result([1.0, 1.01, 1.02])], [result([1.5, 1.52, 1.55])])
    assert delta.slower  # a real slowdown still counts


# 3-D --------------------------------------------------------------------------
# PyTorch's interpolate on 5-D input: these modes, no antialias.
TORCH_3D = {"nearest", "nearest-exact", "trilinear", "trilinear-ac", "area"}


def test_volume_cases_are_registered_and_listed(capsys):
    names = [c.name for c in all_cases()]
    assert len(names) == len(set(names))
    for variant in ("nearest", "nearest-exact", "trilinear", "trilinear-ac", "bicubic", "cubic",
                    "lanczos3", "lanczos5", "area", "trilinear-aa", "bicubic-aa", "lanczos3-aa"):
        assert f"resize3d/{variant}/fwd" in names and f"resize3d/{variant}/bwd" in names
    assert {f"unet3d-step/{m}" for m in ("trilinear", "nearest", "bicubic", "lanczos3")} <= set(
        names)
    assert sum(n.startswith("conv3d-layer/") for n in names) == len(CONV3D_LAYERS)
    # the 2-D families keep their names and counts under substring filters
    assert len(select(all_cases(), ["unet-step"])) == 3
    assert not any("3d" in c.name for c in select(all_cases(), ["conv-layer"]))
    assert main(["--list", "--filter", "unet3d-step"]) == 0
    assert capsys.readouterr().out.split() == [f"unet3d-step/{m}" for m in UNET3D_MODES]


def test_quick_run_of_the_volume_cases(tmp_path, capsys):
    names = ["resize3d/trilinear/bwd", "resize3d/area/fwd", "resize3d/nearest-exact/fwd",
             "resize3d/lanczos3-aa/fwd", "resize3d/bicubic/bwd", "conv3d-layer/16-32@16",
             "unet3d-step/trilinear", "unet3d-step/bicubic"]
    out = tmp_path / "vol.json"
    args = ["--quick", "--no-progress", "--repeat", "2", "--warmup", "1", "--json", str(out)]
    for name in names:
        args += ["--filter", name]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    results = {r["name"]: r for r in doc["results"]}
    assert sorted(results) == sorted(names)  # in registry order
    has_torch = bool(doc["environment"]["torch"])
    for r in results.values():
        assert r["error"] is None, r["error"]
        assert r["ours"]["median"] > 0 and r["checksum"]
    # --quick shapes: (1, 2, 8^3) -> 16^3 up, (1, 2, 16^3) -> 8^3 down
    assert results["resize3d/trilinear/bwd"]["shape"] == "(1, 2, 8, 8, 8)->(16, 16, 16)"
    assert results["resize3d/lanczos3-aa/fwd"]["shape"] == "(1, 2, 16, 16, 16)->(8, 8, 8)"
    conv = results["conv3d-layer/16-32@16"]
    assert conv["flops"] == conv3d_flops(2, 2, 4, 4) and conv["gflops"] > 0
    assert doc["environment"]["sgemm_gflops"] > 0
    step = results["unet3d-step/trilinear"]
    assert "depth 2 width 4" in step["shape"] and step["peak_method"] == "rss"
    assert step["peak_bytes"] > 0
    for name, r in results.items():
        variant = name.split("/")[1]
        compared = variant in TORCH_3D or name.startswith("conv3d") or name.endswith("trilinear")
        if not has_torch:
            assert r["torch"] is None
        elif compared:  # the same numbers as PyTorch, within float32 rounding
            assert r["torch"]["median"] > 0 and r["ratio"] > 0
            assert r["torch_agreement"] < (1e-3 if name.startswith("unet3d") else 1e-5), name
        else:  # a mode PyTorch lacks in 3-D: timed sandbox-only, and said why
            assert r["torch"] is None and r["torch_agreement"] is None
            assert "PyTorch has no" in r["torch_note"], name
    if has_torch:
        assert step["torch_peak_bytes"] > 0
        assert results["unet3d-step/bicubic"]["torch_peak_bytes"] is None
    text = capsys.readouterr().out
    assert "resize3d/bicubic/bwd" in text and "GFLOP/s" in text


@pytest.mark.parametrize("variant", sorted(RESIZE3D_VARIANTS))
def test_every_variant_equals_the_float64_reference(variant):
    """Where PyTorch cannot check a case, the float64 dense-matrix reference does (fwd, bwd)."""
    from sandbox.array.resample.reference import axis_matrix, reference_adjoint, reference_resize
    from sandbox.bench._cases import _normal, _rng
    from sandbox.bench._cases_3d import RESIZE3D_QUICK

    mode, opts, _, down = RESIZE3D_VARIANTS[variant]
    n, c, small, large = RESIZE3D_QUICK
    side_in, side_out = (large, small) if down else (small, large)
    mats = [axis_matrix(mode, side_in, side_out, align_corners=bool(opts.get("align_corners")),
                        antialias=opts.get("antialias", False))] * 3
    for direction in ("fwd", "bwd"):
        name = f"resize3d/{variant}/{direction}"
        (case,) = select(all_cases(), [name])
        got = case.build(True, None).ours()
        rng = _rng(name)  # the case's own data: same seed, same order of draws
        x = _normal(rng, (n, c, side_in, side_in, side_in))
        if direction == "fwd":
            ref = reference_resize(x, mats)
        else:
            ref = reference_adjoint(_normal(rng, (n, c, side_out, side_out, side_out)), mats)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * np.abs(ref).max(), err_msg=name)


def test_the_hosts_steal_is_read_and_reported(monkeypatch):
    from sandbox.bench import _env, _report

    stolen = _env.host_steal_seconds()
    assert stolen is None or stolen >= 0.0  # None where /proc/stat has no steal column
    row = {"name": "x/y", "ours": {"median": 1e-3, "mad": 0.0}, "threads": 2}
    calm = results_table([dict(row, host_steal=0.01)])
    assert "host took" not in calm
    stolen_row = results_table([dict(row, host_steal=0.12)]).splitlines()[-1]
    assert stolen_row.endswith("host took 12% of the CPU")
    line = _report.steal_summary([dict(row, host_steal=0.12), dict(row, host_steal=0.02)])
    assert "12.0% in the worst case, 7.0% on average" in line
    assert _report.steal_summary([dict(row, host_steal=None)]) is None
    monkeypatch.setattr("builtins.open", lambda *a, **k: (_ for _ in ()).throw(OSError()))
    assert _env.host_steal_seconds() is None


def test_cpu_balance_times_every_cpu_and_restores_the_affinity(monkeypatch):
    import os

    from sandbox.bench import _env, _report

    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    balance = _env.cpu_balance(seconds=0.05, loop=2000)
    if before is None or len(before) < 2:
        assert balance is None
    else:
        assert os.sched_getaffinity(0) == before  # pinned while timing, then released
        assert balance["cpus"] == sorted(before)[:8] and balance["rounds"] >= 3
        assert 0.0 <= balance["uneven_share"] <= 1.0
        assert 1.0 <= balance["median"] <= balance["p90"]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert _env.cpu_balance(seconds=0.01) is None  # one CPU: nothing to compare
    env = {"cpu_balance_before": {"cpus": [0, 1], "rounds": 40, "uneven_share": 0.25,
                                  "median": 1.04, "p90": 1.83},
           "cpu_balance_after": None}
    line = _report.balance_summary(env)
    assert "CPUs 0, 1" in line and "before: 25% of 40 rounds uneven" in line
    assert "p90 1.83" in line and "after" not in line
    assert _report.balance_summary({}) is None


def test_region_cost_times_a_region_spinning_and_waking():
    """The bench's OpenMP region figure: positive medians at 2 threads (timing is not
    asserted beyond that), none at 1 thread, and the report's line from what was
    measured."""
    from sandbox.bench import _env, _report

    cost = _env.region_cost(2, calls=50, idle_calls=3, idle_seconds=0.0005)
    assert cost["threads"] == 2 and cost["spinning_us"] > 0 and cost["waking_us"] > 0
    assert _env.region_cost(1) is None
    env = {"region_cost_before": {"threads": 2, "spinning_us": 1.5, "waking_us": 30.46},
           "region_cost_after": None}
    line = _report.region_summary(env)
    assert "at 2 threads" in line and "before: 1.5 us back to back, 30.5 us" in line
    assert "after:" not in line and _report.region_summary({}) is None


def test_load_extension_loads_a_second_build_beside_the_one_in_use(tmp_path):
    import shutil
    import sys

    import sandbox._C._norm as in_use

    from sandbox.bench._builds import load_extension

    copy = tmp_path / "old_build.so"  # another build: another file
    shutil.copy(in_use.__file__, copy)
    other = load_extension(str(copy), "_norm")
    assert other is not in_use and other.backward_fused is not in_use.backward_fused
    assert other.__file__ == str(copy)
    assert sys.modules["sandbox._C._norm"] is in_use  # the module in use stays
    with pytest.raises(ImportError):
        load_extension(str(copy))  # a renamed copy needs the module's name


def test_compare_builds_reports_differing_bits_and_restores_the_new_build():
    """The A/B scripts' shared case: both builds' results compared bit for bit (a
    differing build is reported, -0.0 against 0.0 included), each call timed, and the
    new build in use afterwards."""
    import numpy as np

    from sandbox.bench._builds import compare_builds

    in_use = []
    values = {"previous": np.array([0.0, 1.0]), "new": np.array([-0.0, 1.0])}

    def call():
        return values[in_use[-1]], None

    line = compare_builds(in_use.append, {"previous": "previous", "new": "new"},
                          {"forward": call}, rounds=2, calls=1)
    assert line.startswith("forward ") and line.endswith("BITS DIFFER"), line
    assert in_use[-1] == "new"
    values["new"] = np.array([0.0, 1.0])
    assert compare_builds(in_use.append, {"previous": "previous", "new": "new"},
                          {"forward": call}, rounds=1, calls=1).endswith("same bits")


def test_copy_bandwidth_by_threads_measures_each_count_and_the_summary_gives_the_ratio():
    """The threaded copy's bandwidth at each count (positive, keyed by count) and the
    header's words for it: every count, and the last count's over the first's."""
    from sandbox.bench import _env
    from sandbox.bench._report import env_summary

    by = _env.copy_bandwidth_by_threads([1, 2], nbytes=2 * 2**20, repeat=2)
    assert sorted(by) == [1, 2] and all(v > 0 for v in by.values())
    env = {"copy_bandwidth_gbs": 40.0,
           "copy_bandwidth_by_threads": {"1": 40.0, "2": 50.0}}
    line = env_summary(env).splitlines()[0]
    assert "copy bandwidth 40.0 GB/s (threaded: 1 thread 40.0, 2 threads 50.0 GB/s, x1.25)" in line
    assert "threaded" not in env_summary({"copy_bandwidth_gbs": 40.0})
