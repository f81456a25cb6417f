"""The memory limit (sandbox.runtime.memory): refused sizes, the setting, the environment."""

import numpy as np
import pytest


@pytest.mark.parametrize("kwargs", [dict(size=(10**9, 10**9)), dict(scale_factor=1e8)])
def test_a_huge_resize_is_refused_before_anything_is_allocated(kwargs):
    import tracemalloc

    from sandbox.array.resample import resize
    from sandbox.runtime.memory import ResampleSizeError

    x = np.zeros((1, 1, 8, 8), np.float32)
    tracemalloc.start()
    try:
        with pytest.raises(ResampleSizeError) as info:
            resize(x, mode="bilinear", **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak  # bytes: the error message and frames, no arrays
    message = str(info.value)
    assert "would need at least" in message and "PB" in message
    assert "SANDBOX_MAX_MEMORY" in message and "set_memory_limit" in message
    assert isinstance(info.value, MemoryError) and isinstance(info.value, ValueError)


def test_the_memory_limit_is_settable_and_covers_the_adjoint(monkeypatch):
    import sandbox
    from sandbox.array.resample import resize, resize_adjoint
    from sandbox.runtime.memory import ResampleSizeError, total_memory

    x = np.zeros((1, 1, 8, 8), np.float32)
    default = sandbox.memory_limit()
    assert default == int(0.5 * total_memory())
    previous = sandbox.set_memory_limit("1M")
    try:
        assert resize(x, size=(200, 200), mode="bilinear").shape == (1, 1, 200, 200)
        with pytest.raises(ResampleSizeError, match=r"memory limit of 1 MB \(set by"):
            resize(x, size=(1000, 1000), mode="bilinear")
        with pytest.raises(ResampleSizeError):
            resize_adjoint(x, (1000, 1000), size=(8, 8), mode="bilinear")
    finally:
        sandbox.set_memory_limit(previous)
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "2M")
    assert sandbox.memory_limit() == 2 << 20
    with pytest.raises(ResampleSizeError, match="from SANDBOX_MAX_MEMORY"):
        resize(x, size=(1000, 1000), mode="bilinear")
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "lots")
    with pytest.raises(ValueError, match="K/M/G/T suffix"):
        sandbox.memory_limit()
    with pytest.raises(ValueError, match="positive number of bytes"):
        sandbox.set_memory_limit(-1)
