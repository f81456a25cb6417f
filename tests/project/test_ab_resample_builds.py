"""benchmarks/ab_resample_builds.py loads a second build of the resize kernels and compares
them: with a copy of the current build as the "previous" one, every case has the same bits
and the script restores the module it swapped and the thread count."""

import glob
import shutil
from pathlib import Path

import pytest

from tests.support.scripts import load_benchmark


def test_a_copy_of_the_build_gives_the_same_bits(tmp_path, capsys):
    import sandbox
    from sandbox.array.resample import dispatch

    built = glob.glob(str(Path(dispatch._kernels.__file__).parent / "_resample*.so"))
    if not built:  # pragma: no cover - the extension is always a .so here
        pytest.fail("no built _resample extension found")
    shutil.copy(built[0], tmp_path)
    current, threads = dispatch._kernels, sandbox.get_num_threads()
    load_benchmark("ab_resample_builds").main(
        [str(tmp_path), "--threads", "1", "2", "--modes", "bilinear", "nearest", "--shapes",
         "2-3-5-6", "--rounds", "1", "--calls", "1"])
    lines = [ln for ln in capsys.readouterr().out.splitlines()
             if ln.startswith(("bilinear", "nearest"))]
    assert len(lines) == 4
    assert all("forward" in ln and "adjoint" in ln and ln.endswith("same bits")
               for ln in lines), lines
    assert dispatch._kernels is current
    assert sandbox.get_num_threads() == threads


def test_a_folder_without_a_build_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no _resample"):
        load_benchmark("ab_resample_builds").main([str(tmp_path)])
