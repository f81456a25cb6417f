"""sandbox.viz: the docs pictures are produced, and the HVP example is right."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from sandbox.cli import viz  # noqa: E402


def test_main_writes_the_pictures(tmp_path, capsys):
    assert viz.main([str(tmp_path)]) == 0
    for name in ("kernels.png", "modes.png", "gradient_maps.png", "hvp.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 100_000
    assert "graph.png" in capsys.readouterr().out  # written, or skipped with a message


@pytest.mark.parametrize("mode", ["bilinear", "lanczos3"])
def test_hvp_matches_finite_differences_and_is_symmetric(mode):
    v, hv, fd = viz.hvp_example(mode, n=5)
    np.testing.assert_allclose(hv, fd, atol=1e-7)
    assert v.sum() == 1.0
    np.testing.assert_allclose(hv, hv[::-1, ::-1], atol=1e-12)  # A^T A v, v centred
