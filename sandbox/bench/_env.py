"""What machine and build a benchmark run measured: environment and copy bandwidth."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import threading
import time

import numpy as np


def optional_torch():
    """Return the imported ``torch`` module, or None when PyTorch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def openmp_runtimes_loaded() -> list[str]:
    """File names of the OpenMP runtimes already mapped into this process (Linux only)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/" in line}
    except OSError:  # pragma: no cover - not Linux
        return []
    names = ("libgomp", "libomp", "libiomp")
    return sorted({os.path.basename(p) for p in paths
                   if any(os.path.basename(p).startswith(n) for n in names)})


def set_wait_policy(policy: str | None) -> str | None:
    """Set ``OMP_WAIT_POLICY`` for the OpenMP runtimes that have not been loaded yet.

    The sandbox kernels (system libgomp) and PyTorch (its bundled libgomp) keep
    two thread pools in one process.  With the default policy, idle threads of
    one pool spin while the other pool works; on 2 cores (and on a shared
    machine) that oversubscription made small kernels up to 1000x slower in
    our measurements.  ``passive`` makes idle threads sleep at once, which costs
    a few microseconds of wake-up per parallel region for both libraries alike.

    Parameters
    ----------
    policy : {"passive", "active"} or None
        None keeps the user's ``OMP_WAIT_POLICY`` if set, else uses ``passive``.

    Returns
    -------
    str or None
        The policy in effect for runtimes loaded from now on.
    """
    if policy is None:
        policy = os.environ.get("OMP_WAIT_POLICY") or "passive"
    os.environ["OMP_WAIT_POLICY"] = policy
    return policy


def set_threads(n: int, torch=None) -> None:
    """Use ``n`` threads in the sandbox kernels, numpy's BLAS and (if given) PyTorch."""
    import sandbox

    sandbox.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)


def host_steal_seconds() -> float | None:
    """CPU seconds the hypervisor has taken from this machine's CPUs since boot (the
    ``steal`` column of ``/proc/stat``, summed over every CPU), or None where the kernel
    does not report it (not Linux, or not a VM that accounts it)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _spin(n: int) -> float:
    """Seconds of a fixed pure-Python loop of ``n`` additions (integer work, no memory)."""
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i
    return time.perf_counter() - start


def cpu_balance(seconds: float = 1.0, loop: int = 50_000, max_cpus: int = 8) -> dict | None:
    """How evenly fast this process's CPUs are: a fixed loop timed on each CPU in turn
    (pinned with ``sched_setaffinity``), round after round for about ``seconds``.

    A VM's vCPUs may share physical cores with other guests, and a hybrid CPU has cores
    of two speeds: where one CPU runs slower than the others, the threads of a parallel
    region on it finish last, and a figure at 2 threads says less about the code than
    about the machine at that moment.  Each round's ratio is its slowest CPU's time over
    its fastest's.

    Returns
    -------
    dict or None
        ``cpus`` (the CPUs timed), ``rounds``, ``uneven_share`` (the share of rounds with
        a ratio above 1.25) and the ratios' ``median`` and ``p90``; None where the
        process may run on one CPU only or cannot pin itself (not Linux).
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    cpus = allowed[:max_cpus]
    if len(cpus) < 2:
        return None
    ratios = []
    end = time.perf_counter() + seconds
    try:
        while time.perf_counter() < end or len(ratios) < 3:
            times = []
            for cpu in cpus:
                os.sched_setaffinity(0, {cpu})
                _spin(loop // 10)  # settle on the CPU
                times.append(min(_spin(loop) for _ in range(2)))
            ratios.append(max(times) / min(times))
    except OSError:
        return None
    finally:
        try:
            os.sched_setaffinity(0, allowed)
        except OSError:  # pragma: no cover - restoring what we had
            pass
    ratios.sort()
    return {"cpus": cpus, "rounds": len(ratios),
            "uneven_share": sum(r > 1.25 for r in ratios) / len(ratios),
            "median": ratios[len(ratios) // 2], "p90": ratios[int(0.9 * (len(ratios) - 1))]}


def region_cost(threads: int, calls: int = 2000, idle_calls: int = 50,
                idle_seconds: float = 0.002) -> dict | None:
    """What one OpenMP parallel region costs at ``threads`` threads, in microseconds: an
    almost empty region (:func:`sandbox._C._openmp.threads_used`) called back to back
    (``spinning``: the other threads still spin) and after ``idle_seconds`` without one
    (``waking``: they have gone to sleep and are woken through the kernel).

    A VM's vCPUs may be placed farther apart for minutes (no shared L3): a cache line
    then takes longer between them and every 2-thread figure feels it.  On the Zen 5 VM
    of 7 December 2026 the region back to back took 1.6 us in quiet phases and 2.5 us in
    slow ones, where a 2-thread UNet step took 37 ms instead of 28.5 (the 1-thread step,
    :func:`cpu_balance` and the copy bandwidth unchanged).

    Returns
    -------
    dict or None
        ``threads``, ``spinning_us`` and ``waking_us`` (medians); None below 2 threads.
    """
    if threads < 2:
        return None
    from .._C import _openmp

    for _ in range(100):
        _openmp.threads_used(threads)
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls // 5):
            _openmp.threads_used(threads)
        batches.append((time.perf_counter() - start) / (calls // 5))
    woken = []
    for _ in range(idle_calls):
        time.sleep(idle_seconds)
        start = time.perf_counter()
        _openmp.threads_used(threads)
        woken.append(time.perf_counter() - start)
    batches.sort()
    woken.sort()
    return {"threads": threads, "spinning_us": 1e6 * batches[len(batches) // 2],
            "waking_us": 1e6 * woken[len(woken) // 2]}


def cross_core_cost(seconds: float = 0.5, nbytes: int = 4 * 2**20) -> dict | None:
    """What reading the other core's data costs: two threads pinned to the first two CPUs
    each scale one half of an ``nbytes`` buffer in place, round after round (a barrier
    between), either keeping their halves (``own``) or swapping them every round
    (``cross``: every value read was just written by the other core).

    Where a VM's two vCPUs share an L3 both take the same time; where they are placed on
    different caches the swapped halves come through the fabric between them.  On the
    Zen 5 VM of 7 December 2026 (4 MiB, 40 rounds): 0.042 against 0.042 ms a round in
    quiet phases, 0.055-0.060 against 0.088-0.107 ms in slow ones (the own halves slower
    too: the barrier).

    Returns
    -------
    dict or None
        ``own_ms`` and ``cross_ms`` (median ms a round) and their ``ratio``; None where
        the process cannot run pinned on two CPUs (one CPU, not Linux).
    """
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if len(allowed) < 2:
        return None
    buf = np.ones(nbytes // 4, np.float32)
    halves = (buf[: buf.size // 2], buf[buf.size // 2:])
    rounds = 40
    barrier = threading.Barrier(2)
    failed = []

    def work(tid: int, swap: bool, out: list) -> None:
        try:
            os.sched_setaffinity(0, {allowed[tid]})
        except OSError:
            failed.append(tid)
        barrier.wait()
        start = time.perf_counter()
        for r in range(rounds):
            half = halves[tid ^ (swap and r % 2)]
            np.multiply(half, 1.0, out=half)
            barrier.wait()
        out[tid] = time.perf_counter() - start

    def one(swap: bool) -> float:
        out = [0.0, 0.0]
        threads = [threading.Thread(target=work, args=(t, swap, out)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return max(out) / rounds * 1e3

    own, cross = [], []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(own) < 3:
        own.append(one(False))
        cross.append(one(True))
    if failed:
        return None
    own_ms, cross_ms = statistics.median(own), statistics.median(cross)
    return {"own_ms": own_ms, "cross_ms": cross_ms, "ratio": cross_ms / own_ms}


def copy_bandwidth(nbytes: int = 256 * 2**20, repeat: int = 5) -> float:
    """Measured memory bandwidth of ``np.copyto`` on a large float32 array, in GB/s.

    One copy reads ``nbytes`` and writes ``nbytes``; both count (``2 * nbytes``
    per copy), the same convention as the benchmark's effective GB/s.  The best
    of ``repeat`` copies is taken (the machine is shared: the fastest run is the
    one least disturbed).

    Parameters
    ----------
    nbytes : int
        Size of the source array in bytes (much larger than the last-level cache).
    repeat : int
        Number of timed copies after one warm-up copy.

    Returns
    -------
    float
        Bandwidth in GB/s (1e9 bytes per second).
    """
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / _best_seconds(lambda: np.copyto(dst, src), repeat) / 1e9


def _best_seconds(call, repeat: int) -> float:
    """The fastest of ``repeat`` timed calls of ``call()``, after one untimed (the warm-up
    that faults in the pages of a fresh array)."""
    call()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def copy_bandwidth_by_threads(counts, nbytes: int = 256 * 2**20,
                              repeat: int = 5) -> dict[int, float]:
    """The copy bandwidth of :func:`copy_bandwidth` with each thread count of ``counts``:
    the project's threaded copy (``_elementwise.copy_rows``, pieces of 64 KiB shared among
    the threads), GB/s by count.

    What a second core adds to memory-bound work on this machine: a training step's
    streaming kernels (the optimiser, batch norm on large maps, copies, the first read of
    an activation that left the cache) cannot scale from 1 to 2 threads by more than the
    bandwidth does.  On the 2-core Zen 5 VM of 7 December 2026 (256 MiB) it changed from
    minute to minute: 39-43 GB/s at 1 thread, at 2 either 43-46 (x1.1-1.2, most minutes)
    or 72-79 (x1.8-1.95), where the compute-bound kernels scale 1.9-2.0x; so each run
    records it.

    Parameters
    ----------
    counts : iterable of int
        Thread counts to measure (each at least 1).
    nbytes : int
        Size of the source array in bytes (much larger than the last-level cache).
    repeat : int
        Timed copies per count after one warm-up copy; the best is kept.

    Returns
    -------
    dict
        ``{threads: GB/s}`` (reads and writes both counted, as :func:`copy_bandwidth`).
    """
    from .._C import _elementwise

    piece = 64 * 2**10
    src = np.ones((max(nbytes // piece, 1), piece), dtype=np.uint8)
    dst = np.empty_like(src)
    return {int(n): 2 * src.nbytes / _best_seconds(
                lambda n=int(n): _elementwise.copy_rows(src, dst, 0, n), repeat) / 1e9
            for n in counts}


def sgemm_peak(threads: int, n: int = 2048, repeat: int = 5) -> float:
    """This machine's measured float32 matrix-multiply speed with ``threads`` threads, GFLOP/s.

    The best of ``repeat`` products of two ``n × n`` float32 matrices (``2·n³``
    FLOPs each), by numpy's BLAS (limited to ``threads`` threads for the
    measurement only; the sandbox pins it to one thread otherwise) and, where the
    selection runs one (AVX-512 or AVX2), by the project's own kernel (the rows split
    among ``threads`` worker threads): the faster of the two is the roofline that convolution
    GFLOP/s are compared against.  (A BLAS pinned to older kernels, e.g. by
    ``OPENBLAS_CORETYPE``, would otherwise understate what the machine can do.)
    """
    from threadpoolctl import threadpool_limits

    from ..array import _gemm
    from ..array._parallel import parallel_map

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)

    def best_of(product):
        product()  # warm-up
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            product()
            best = min(best, time.perf_counter() - t0)
        return best

    with threadpool_limits(limits=threads, user_api="blas"):
        best = best_of(lambda: np.matmul(a, b, out=out))
    if _gemm.backend() != "blas":
        bounds = [n * i // threads for i in range(threads + 1)]
        rows = [(bounds[i], bounds[i + 1]) for i in range(threads)]
        best = min(best, best_of(lambda: parallel_map(
            lambda r: _gemm.matmul(a[r[0]:r[1]], b, out[r[0]:r[1]]), rows, threads)))
    return 2 * n**3 / best / 1e9


#: what limits PyTorch (ATen's kernels, oneDNN, MKL) to a path; read when torch loads
TORCH_ISA_ENV = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "portable": {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41",
                 "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"},
}
#: OpenBLAS core names whose kernels use AVX-512 (threadpoolctl's ``architecture``)
AVX512_BLAS_CORES = ("skylakex", "cooperlake", "sapphirerapids")
REEXEC_MARK = "SANDBOX_BENCH_REEXEC"


def isa_limits(isa: str | None) -> dict:
    """Environment variables that put PyTorch and numpy's OpenBLAS on the ``isa`` path.

    ``avx2``/``portable``: PyTorch's ATen kernels, oneDNN and MKL, set before torch is
    imported; and ``OPENBLAS_CORETYPE=Haswell`` (AVX2 kernels, set before numpy loads)
    when OpenBLAS runs an AVX-512 core now.  Empty for ``auto``, ``avx512`` or None.
    """
    limits = dict(TORCH_ISA_ENV.get(isa or "", {}))
    if isa == "avx2" and any(str(b.get("architecture") or "").lower() in AVX512_BLAS_CORES
                             for b in _blas_libraries()):
        limits["OPENBLAS_CORETYPE"] = "Haswell"
    return limits


def _blas_libraries() -> list[dict]:
    from threadpoolctl import threadpool_info

    return [d for d in threadpool_info() if d.get("user_api") == "blas"]


def apply_isa_limits(limits: dict) -> dict:
    """Set the torch variables of ``limits`` while torch is not imported yet; return the
    ones that cannot take effect in this process any more (name -> value)."""
    unmet = {}
    for key, value in limits.items():
        if os.environ.get(key) == value:
            continue
        if key != "OPENBLAS_CORETYPE" and "torch" not in sys.modules:
            os.environ[key] = value  # read when torch is imported, later in this run
        else:
            unmet[key] = value
    return unmet


def isa_command(limits: dict, argv: list[str]) -> str:
    """The shell command that runs this benchmark with ``limits`` set from the start."""
    import shlex

    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in limits.items())
    return f"{env} python -m sandbox bench {' '.join(shlex.quote(a) for a in argv)}".strip()


def started_as_bench(argv: list[str]) -> bool:
    """Whether this process is ``sandbox bench`` / ``python -m sandbox.bench`` with ``argv``
    (so that it may re-execute itself), not a caller such as a test."""
    return sys.argv[1:] in (list(argv), ["bench", *argv]) and not os.environ.get(REEXEC_MARK)


def reexec(limits: dict, argv: list[str]) -> None:  # pragma: no cover - replaces the process
    """Run ``python -m sandbox bench argv`` in this process's place with ``limits`` set."""
    env = dict(os.environ, **limits, **{REEXEC_MARK: "1"})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "sandbox", "bench", *argv], env)


def cpu_environment(torch=None) -> dict:
    """The CPU (model, vendor, family, model number, SIMD sets), the sandbox's selected
    path and GEMM, the BLAS kernels numpy runs and, with ``torch``, PyTorch's CPU
    capability: the part of every result file that says which code ran."""
    from ..runtime import simd

    cpu = simd.cpu()
    sel = simd.current()
    env = {
        "cpu_vendor": cpu.vendor, "cpu_family": cpu.family, "cpu_model_number": cpu.model_number,
        "cpu_machine": cpu.machine, "cpu_isa": cpu.isa, "cpu_simd": cpu.simd_sets,
        "simd_paths": list(simd.supported_paths()), "simd_path": sel.isa, "conv_gemm": sel.gemm,
        "simd_requested": {"isa": sel.requested_isa, "gemm": sel.requested_gemm},
        "blas_kernels": [{"internal_api": b.get("internal_api"),
                          "architecture": b.get("architecture"),
                          "threads": b.get("num_threads"), "version": b.get("version"),
                          "filepath": os.path.basename(b.get("filepath") or "")}
                         for b in _blas_libraries()],
        "torch_cpu_capability": None,
    }
    if torch is not None:
        try:
            env["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        except (AttributeError, RuntimeError):  # pragma: no cover - older torch
            pass
    return env


def git_commit(path: str | None = None) -> str | None:
    """Commit hash of the sandbox source tree (with ``+dirty`` when modified), or None."""
    here = path or os.path.dirname(os.path.abspath(__file__))
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "") if sha else None


def environment(threads: int, torch=None, bandwidth: float | None = None) -> dict:
    """Everything that explains a run's numbers: CPU, threads, BLAS, OpenMP, versions, git.

    Parameters
    ----------
    threads : int
        Thread count the run used (sandbox kernels, BLAS and PyTorch).
    torch : module, optional
        PyTorch, when installed.
    bandwidth : float, optional
        Measured copy bandwidth in GB/s (:func:`copy_bandwidth`).

    Returns
    -------
    dict
        JSON-serialisable description of the environment.
    """
    from .._version import __version__
    from ..cli.info import _cpu_model, blas_info
    from ..runtime import threads as _config
    from ..runtime.allocator import is_tuned

    try:
        from .._C import _openmp

        openmp = bool(_openmp.have_openmp())
    except ImportError:  # pragma: no cover - extension not built
        openmp = None
    env = {
        "cpu": _cpu_model(),
        "cores_available": _config.available_cores(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "threads": threads,
        "sandbox_threads": _config.get_num_threads(),
        "openmp": openmp,
        "blas": blas_info(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "sandbox": __version__,
        "torch": None,
        "torch_threads": None,
        "git_commit": git_commit(),
        "copy_bandwidth_gbs": bandwidth,
        "sgemm_gflops": None,
        "sgemm_size": None,
        "malloc_keeps_freed_memory": is_tuned(),
        "env_vars": {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                                 "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                 "MKL_NUM_THREADS", "SANDBOX_TUNE_MALLOC",
                                                 _config.ENV_VAR)
                     if k in os.environ},
    }
    env.update(cpu_environment(torch))
    env["env_vars"].update({k: os.environ[k] for k in (
        "SANDBOX_ISA", "SANDBOX_GEMM", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY",
        "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS") if k in os.environ})
    if torch is not None:
        env["torch"] = torch.__version__
        env["torch_threads"] = torch.get_num_threads()
    return env
