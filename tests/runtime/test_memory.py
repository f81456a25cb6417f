"""Allocator tuning: applied by ``import sandbox`` (so by the CLI too), reported by info,
opt-out by env."""

import subprocess
import sys

import numpy as np

from sandbox.runtime import allocator as _memory

CODE = """
import sys
from sandbox.runtime import allocator as _memory
from sandbox.cli import main
main(["bench", "--list", "--filter", "unet-step/bilinear"])
print("TUNED" if _memory.is_tuned() else "PLAIN")
"""

LIBRARY_CODE = """
import sandbox
from sandbox.runtime import allocator as _memory
print("TUNED" if _memory.is_tuned() else "PLAIN")
"""


def _run(env_value, code=CODE):
    env = {"PATH": "/usr/bin:/bin"}
    if env_value is not None:
        env["SANDBOX_TUNE_MALLOC"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def test_cli_tunes_the_allocator_unless_disabled():
    assert _run(None) == "TUNED"
    assert _run("0") == "PLAIN"


def test_a_users_own_script_gets_the_tuned_allocator_unless_disabled():
    assert _run(None, LIBRARY_CODE) == "TUNED"
    assert _run("0", LIBRARY_CODE) == "PLAIN"


def test_tuned_allocator_is_reported_and_still_allocates_correctly():
    # On glibc the settings apply; info reports them; big arrays still work.
    assert _memory.keep_freed_memory(True) and _memory.is_tuned()
    from sandbox.cli.info import info_dict

    assert info_dict()["malloc_tuned"] is True
    for n in (10, 1 << 22, 1 << 24):
        a = np.arange(n, dtype=np.float32)
        assert a[-1] == n - 1
        del a
