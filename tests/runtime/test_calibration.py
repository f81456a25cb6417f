"""The per-machine calibration: what it measures, where it keeps the winners, how the
kernels' choices and ``sandbox info`` follow it, and that a bad file changes nothing."""

import json

import numpy as np
import pytest

from sandbox.bench import calibrate as measure
from sandbox.runtime import calibration, simd


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty calibration folder of this test's own.  The process's default SIMD
    selection is read first (from the session's empty cache) and kept, so that a fake
    winner written here does not become the default of the tests that follow."""
    default = simd.default()
    monkeypatch.setenv(calibration.CACHE_ENV_VAR, str(tmp_path))
    calibration._loaded.clear()
    yield tmp_path / "calibration.json"
    calibration._loaded.clear()
    assert simd.default() is default


def _fake_medians(winners):
    """_median_ms stand-in: the named candidate of each choice takes 1 ms, others 2."""
    def medians(calls, repeat, timer):
        names = list(calls)
        choice = next(c for c, cands in calibration.CANDIDATES.items()
                      if set(cands) == set(names))
        winner = winners.get(choice, calibration.DEFAULTS[choice])
        return {n: 1.0 if n == winner else 2.0 for n in names}
    return medians


def test_without_a_file_the_defaults_hold(cache):
    assert not cache.exists()
    assert calibration.load() is None
    assert calibration.preferred("gemm") == "avx512"
    assert calibration.preferred("grid_gathers") == "avx512"


def test_calibrate_writes_this_machine_and_the_choices_follow(cache, monkeypatch):
    monkeypatch.setattr(measure, "_median_ms",
                        _fake_medians({"gemm": "blas", "grid_gathers": "portable"}))
    cal = measure.calibrate(repeat=1)
    if "avx512" not in simd.supported_paths():
        # no AVX-512 choice to make; a CPU with AVX2 and FMA still weighs the AVX2 GEMM
        # against BLAS (the fake timings let the default win)
        expected = {"gemm_avx2": "avx2"} if simd.avx2_gemm_available() else {}
        assert cal.choices == expected and calibration.preferred("gemm") == "avx512"
        return
    assert cal.choices["gemm"] == "blas"
    data = json.loads(cache.read_text())
    assert data[calibration.machine_key()]["choices"] == cal.choices
    assert calibration.preferred("gemm") == "blas"
    assert simd.resolve("auto", "auto").gemm == "blas"  # auto takes the measured winner
    assert simd.resolve("auto", "avx512").gemm == "avx512"  # an explicit request wins
    from sandbox.array.grid_sample import _dispatch

    if "grid_gathers" in cal.choices:  # portable measured faster: the AVX-512 pass is off
        assert cal.choices["grid_gathers"] == "portable"
        with simd.using(isa="avx512"):  # the loops of the avx2 path instead
            assert _dispatch.simd_code() == _dispatch._AVX2


def test_a_small_gain_keeps_the_default(cache, monkeypatch):
    def medians(calls, repeat, timer):  # the project's kernel 5 % slower: within MARGIN
        return {n: (1.0 if n in ("blas", "portable") else 1.05) for n in calls}
    monkeypatch.setattr(measure, "_median_ms", medians)
    cal = measure.calibrate(repeat=1)
    assert cal.choices and all(v == calibration.DEFAULTS[k] for k, v in cal.choices.items())


def test_other_machines_entries_are_kept_and_bad_files_ignored(cache, monkeypatch):
    cache.write_text(json.dumps({"another-machine": {"key": "another-machine",
                                                     "choices": {"gemm": "blas"}}}))
    assert calibration.load() is None  # not this machine's
    monkeypatch.setattr(measure, "_median_ms",
                        _fake_medians({"gemm": "avx512", "grid_gathers": "avx512"}))
    measure.calibrate(repeat=1)
    data = json.loads(cache.read_text())
    assert "another-machine" in data and calibration.machine_key() in data
    for bad in ("{not json", "[1, 2]", json.dumps({calibration.machine_key(): {"x": 1}})):
        cache.write_text(bad)
        calibration._loaded.clear()
        assert calibration.load() is None
        assert calibration.preferred("gemm") == "avx512"


def test_the_avx2_path_follows_its_own_choice(cache, monkeypatch):
    """gemm_avx2 (timed on convolution layers) picks the avx2 path's products; the
    avx512 path's follow gemm."""
    if "avx2" not in simd.supported_paths() or not simd.avx2_gemm_available():
        pytest.skip("no AVX2+FMA kernel on this CPU")
    monkeypatch.setattr(measure, "_median_ms", _fake_medians({"gemm_avx2": "blas"}))
    cal = measure.calibrate(repeat=1)
    assert cal.choices["gemm_avx2"] == "blas"
    assert simd.resolve("avx2", "auto").gemm == "blas"
    assert simd.resolve("avx2", "avx2").gemm == "avx2"  # an explicit request wins
    if "avx512" in simd.supported_paths():
        assert simd.resolve("avx512", "auto").gemm == "avx512"


def test_real_measurement_gives_valid_choices(cache):
    cal = measure.calibrate(repeat=3, write=False)
    assert not cache.exists()
    for choice, winner in cal.choices.items():
        assert winner in cal.timings[choice]
        assert all(np.isfinite(ms) and ms > 0 for ms in cal.timings[choice].values())


def test_cli_calibrate_and_info(cache, capsys, monkeypatch):
    from sandbox.cli.commands import main

    monkeypatch.setattr(measure, "_median_ms",
                        _fake_medians({"gemm": "avx512", "grid_gathers": "avx512"}))
    assert main(["info"]) == 0
    assert "calibration:     none for this machine" in capsys.readouterr().out
    assert main(["calibrate", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "not written (--dry-run)" in out and not cache.exists()
    assert main(["calibrate"]) == 0
    out = capsys.readouterr().out
    assert f"written: {cache}" in out
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    if "avx512" in simd.supported_paths():
        assert "gemm avx512 (2.00x the speed of blas)" in out
    assert str(cache) in out
