"""benchmarks/ab_grid_builds.py loads a second build of the grid kernels and compares
them: with a copy of the current build as the "previous" one, every case has the same
bits and the script restores the module it swapped."""

import glob
import shutil
from pathlib import Path

import pytest

from tests.support.scripts import load_benchmark


def _script():
    module = load_benchmark("ab_grid_builds")
    return module


def test_a_copy_of_the_build_gives_the_same_bits(tmp_path, capsys):
    import sandbox
    from sandbox.array.grid_sample import _dispatch

    built = glob.glob(str(Path(_dispatch._grid_sample.__file__).parent / "_grid_sample*.so"))
    if not built:  # pragma: no cover - the extension is always a .so here
        pytest.fail("no built _grid_sample extension found")
    shutil.copy(built[0], tmp_path)
    current, threads = _dispatch._grid_sample, sandbox.get_num_threads()
    _script().main([str(tmp_path), "--threads", "1", "2", "--batch", "1", "--modes",
                    "nearest", "bicubic", "--paddings", "zeros", "--rounds", "1",
                    "--calls", "1"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(
        ("nearest", "bicubic"))]
    assert len(lines) == 4
    assert all(ln.endswith("same bits") for ln in lines), lines
    assert _dispatch._grid_sample is current
    assert sandbox.get_num_threads() == threads  # the script's thread counts undone


def test_volumes_are_compared_with_nd_3(tmp_path, capsys):
    from sandbox.array.grid_sample import _dispatch

    built = glob.glob(str(Path(_dispatch._grid_sample.__file__).parent / "_grid_sample*.so"))
    shutil.copy(built[0], tmp_path)
    _script().main([str(tmp_path), "--nd", "3", "--threads", "1", "--batch", "1", "--modes",
                    "bilinear", "--paddings", "border", "--rounds", "1", "--calls", "1"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("bilinear")]
    assert len(lines) == 1 and lines[0].endswith("same bits"), lines


def test_a_folder_without_a_build_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no _grid_sample"):
        _script().main([str(tmp_path)])
