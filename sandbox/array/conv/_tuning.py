"""The convolution's tuning knobs, in one place, with how each value was chosen.

The algorithm (im2col + GEMM or Winograd) and the chunk sizes depend on the
shapes only, never on the thread count, so results are bitwise identical for any
number of threads.  The values below are measurements on a 2-core x86-64 machine
(float32, batch 8, UNet layer shapes); change them through :func:`tuned` (tests,
benchmarks) rather than by assignment, so a failure cannot leave them changed.  A
setting is compared with ``python benchmarks/bench_conv_passes.py --layers ...
--tuned KNOB=VALUE`` against the same command without ``--tuned``; the figures quoted
below were taken that way, some on a loaded machine (as said), and they move by
5-20 % between runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import itertools

from ...runtime import simd
from ...runtime.threads import threads_now

__all__ = ["MIN_PARALLEL_FLOPS", "TUNING", "WEIGHT_GRAD_TARGET_TILES", "ConvTuning",
           "chunk_threads", "settings_stamp", "state", "tuned"]

#: ``ConvTuning.min_parallel_flops`` by SIMD path (:mod:`sandbox.runtime.simd`) when it is
#: None: measured on the avx512 (Zen 5) and avx2 (Zen 1) paths; ``portable`` (numpy's BLAS,
#: any CPU) takes the avx2 value unmeasured
MIN_PARALLEL_FLOPS = {"avx512": 30_000_000, "avx2": 8_000_000, "portable": 8_000_000}

#: ``ConvTuning.winograd_target_tiles_weight_grad`` by SIMD path when it is None: the
#: AVX-512 path's dot products run longer sums (256 tiles a chunk) at the same cost a
#: product, the AVX2 path keeps ``winograd_target_tiles``' 128 (see the knob)
WEIGHT_GRAD_TARGET_TILES = {"avx512": 256, "avx2": 128, "portable": 128}

#: a fresh number for every ConvTuning made or changed (see ConvTuning.stamp)
_STAMPS = itertools.count()


@dataclasses.dataclass
class ConvTuning:
    """Thresholds and chunk sizes of :mod:`sandbox.array.conv` (2-D and 3-D)."""

    #: a chunk gets at least this many GEMM columns (small planes are batched up to it).
    #: Single-threaded sgemm reaches ~90 GFLOP/s already at 16 columns (measured), so a
    #: small target keeps many chunks (parallelism) at the UNet's 8x8 and 4x4 levels.
    target_cols: int = 64
    #: upper bound for one column buffer (bytes); one sample always fits
    max_col_bytes: int = 32 * 2**20
    #: upper bound for one 3-D (vol2col) column buffer (bytes); a sample whose columns
    #: are larger runs in slabs of output depth planes.  8 MiB, not 32: the GEMMs then
    #: read their columns from cache, not memory (measured, 1 thread, batch 2, forward +
    #: both gradients: 16->16@32^3 56.9 -> 29.5 ms, 32->16@32^3 107.8 -> 59.9 ms; 2 and
    #: 4 MiB gave the same, 1 MiB was slower)
    max_slab_bytes: int = 8 * 2**20
    #: Winograd F(2x2, 3x3) for eligible 3x3 stride-1 ungrouped convs (forward and
    #: input gradient; 2.25x fewer GEMM flops)
    winograd: bool = True
    #: Winograd only when both channel counts reach this.  Measured (2 threads, batch 8,
    #: fwd/bwd ms, im2col -> Winograd): 32->16 at 128x128 12.9/25.2 -> 8.1/20.5, 16->16 at
    #: 128x128 5.4/9.8 -> 4.1/10.3, 16->16 at 64x64 1.11/2.31 -> 1.00/2.35; 8 channels
    #: gained nothing.
    winograd_min_channels: int = 16
    #: Winograd weight gradient from this many channels.  It used to pay off only at 128
    #: (its output-gradient transform was a scalar scatter, 18.8 ms for 16 channels at
    #: 64x64); with the row-wise transform (1.1 ms) it wins or ties from 16 channels.
    #: Measured (batch 8, min ms of 15 interleaved runs on a loaded machine, Winograd vs
    #: im2col, 1 thread): 16->16@64 6.5 vs 11.0, 32->32@32 2.9 vs 8.3, 48->16@64 33.7 vs
    #: 63.9, 96->32@32 19.0 vs 33.3, 32->64@16 1.59 vs 1.41, 64->64@16 2.56 vs 2.70.
    winograd_min_channels_weight_grad: int = 16
    #: F(4x4, 3x3) instead of F(2x2, 3x3) for the forward and input gradient from this
    #: many output pixels per image (0: never).  F(4x4) needs 1.78x fewer GEMM flops but
    #: its GEMMs get 4x fewer columns and its transforms cost more.  Measured (batch 8,
    #: CPU ms at 1 thread, F(2x2) -> F(4x4), forward / input grad): 16->16@128 14.7 -> 9.1
    #: / 17.3 -> 11.9, 32->16@128 29.0 -> 20.9 / 23.7 -> 14.7, 16->16@64 4.21 -> 3.68 /
    #: 4.18 -> 3.26, 48->16@64 9.30 -> 8.46 / 8.72 -> 6.58, 32->32@32 2.41 -> 2.35 /
    #: 2.64 -> 2.52, 96->32@32 6.60 -> 6.14 / 5.89 -> 4.85; but 64->64@16 2.14 -> 2.34 /
    #: 2.19 -> 2.27 and 192->64@16 5.81 -> 6.99 / 5.62 -> 5.92.  Its float32 error is
    #: ~10x F(2x2)'s (3e-6 vs 3e-7 of the output's magnitude; float64: 1e-14).
    winograd_f4_min_pixels: int = 1024
    #: ... and from this many (16x16 maps) where the two channel counts add up to at most
    #: ``winograd_f4_narrow_max_channels`` (0: never).  With the F(4x4) transforms of
    #: today, the 16x16 layers run faster so (the measurements above were taken before
    #: them), except the widest, whose one chunk of F(4x4) points (the whole batch, 7 MB
    #: for 384 -> 128) is shared step by step at 2 threads.  Measured on an AMD EPYC family
    #: 26 model 2 VM (Zen 5), batch 8 (2-D) or 2 (3-D, 16^3), ``python
    #: benchmarks/ab_conv_tuning.py winograd_f4_min_pixels=256 --threads 1 2 --parts fwd
    #: dxdw --other-bits --layers ...`` (F(2x2) time over F(4x4), forward / input + weight
    #: gradients, 1 thread; 2 threads): AVX-512 path, 32->64@16 1.28 / 1.12; 1.22 / 1.09,
    #: 64->64@16 1.28 / 1.11; 1.28 / 1.10, 192->64@16 1.34 / 1.11; 1.31 / 1.11, 64->128@16
    #: 1.13 / 1.08; 1.23 / 1.12, 128->128@16 1.30 / 1.07; 1.27 / 1.13, but 384->128@16
    #: 1.30 / 1.04; 0.83 / 0.87-0.91; the AVX2 path on the same CPU (``SANDBOX_ISA=avx2``)
    #: 1.15-1.31 / 1.06-1.12; 1.10-1.27 / 1.02-1.13 on the first three; 3-D (``--nd 3
    #: --batch 2``) 16->32, 32->32, 64->32 at 16^3 1.49-1.54 / 1.24-1.30; 1.49-1.50 /
    #: 1.20-1.23.  On 8x8 maps F(4x4) lost (64->128, 128->128, 384->128: 0.83-0.94).
    winograd_f4_min_pixels_narrow: int = 256
    #: the channel bound of ``winograd_f4_min_pixels_narrow`` (input + output channels)
    winograd_f4_narrow_max_channels: int = 256
    #: F(4x4, 3x3) for the weight gradient from this many output pixels per image (0:
    #: never).  CPU ms, 1 thread, batch 8, F(2x2) -> F(4x4): 16->16@128 22.7 -> 13.0,
    #: 32->16@128 43.8 -> 22.1, 16->16@64 5.13 -> 4.29, 48->16@64 11.4 -> 9.8, 96->32@32
    #: 10.6 -> 8.6, 32->32@32 3.22 -> 3.13, 192->64@16 8.16 -> 7.19, 64->64@16 3.10 ->
    #: 3.08, 32->64@16 1.76 -> 1.78; at 8x8 it loses (128->128@8 2.62 -> 3.67,
    #: 384->128@8 6.72 -> 9.41).  float32 error 3e-7 - 2.4e-6 of the largest value.
    winograd_f4_min_pixels_weight_grad: int = 256
    #: Winograd forward from this many output pixels per image.  With the AVX-512 GEMM
    #: the point GEMMs are fast enough for 4x4 maps (ms, im2col -> Winograd, 128->256@4 /
    #: 256->256@4: 1 thread 0.68 -> 0.45 / 1.27 -> 0.78; 2 threads 0.48 -> 0.49 / 0.83 ->
    #: 0.63); with OpenBLAS-Haswell GEMMs im2col had won there (0.92 vs 1.14 ms).
    winograd_min_pixels: int = 16
    #: ... and the input gradient from this many.  On 4x4 maps Winograd's single chunk
    #: shares its steps among the threads (transforms by channels, weight transform by
    #: OpenMP, GEMMs by points); measured (ms, Winograd vs im2col, 128->256@4 /
    #: 256->256@4): 1 thread 0.42 vs 0.44 / 0.67 vs 0.84, 2 threads 0.37 vs 0.26 / 0.54
    #: vs 0.49: Winograd is ahead on the larger layer at 1 thread and within 10 % at 2.
    winograd_min_pixels_input_grad: int = 16
    #: the Winograd weight gradient's pixel threshold: it wins already on 4x4 maps
    #: (CPU ms, 1 thread, im2col vs Winograd: 128->256@4 1.42 vs 1.28, 256->256@4 2.75 vs
    #: 2.36; 2 threads wall-min 1.37 vs 1.27, 5.33 vs 2.17), where forward and input
    #: gradient stay with im2col (128->256@4 forward 1.16 vs 1.27, input grad 1.17 vs 1.71)
    winograd_min_pixels_weight_grad: int = 16
    #: 2-D Winograd (forward and both gradients) only from this many output pixels over
    #: the whole batch: a batch-1 call on a 4x4 map has 4-16 tiles, too few to pay for
    #: the weight's transform.  Measured (1 thread, ms, Winograd vs im2col, forward /
    #: input grad / weight grad, 256->256@4): batch 1 1.38/1.28/0.83 vs 0.37/0.50/0.43,
    #: batch 2 1.54/1.24/0.63 vs 0.58-0.70/0.46/0.54, batch 4 1.28/1.19/1.14 vs
    #: 1.08/1.12/1.37; 128->128@8 at batch 1 (64 pixels) 0.35/0.34/0.32 vs
    #: 0.35/0.30/0.37, and at 2 threads 0.20/0.20/0.17 vs 0.44/0.26/0.30 (a batch-1
    #: im2col call is one chunk, one thread).  AMD EPYC family 25 model 17 (Zen 4), a
    #: throwaway script over ``conv2d`` with ``tuned(winograd_min_pixels=10**9, ...)``;
    #: a layer again: ``python benchmarks/bench_conv_passes.py --threads 1 2 --batch 1
    #: --layers 256-256-4 --tuned winograd_min_batch_pixels=1`` against the same without
    #: ``--tuned``.
    winograd_min_batch_pixels: int = 64
    #: 3-D Winograd (forward and both gradients) only from this many output voxels over
    #: the whole batch; below, vol2col (as in 2-D, its forward then leaves the weight in
    #: place and takes BLAS for narrow products).  Measured (us, forward / input grad /
    #: weight grad, Winograd vs vol2col, AMD EPYC family 25 model 17, a throwaway script
    #: over ``conv3d`` with ``tuned(winograd=False)``; ``sandbox bench --filter
    #: conv3d-layer --threads 1,2`` times the 3-D UNet's layers): 64->128@4^3 batch 1, 1
    #: thread 881/861/800 vs 642/486/663, 2 threads 3252/2974/822 vs 583/480/697;
    #: 128->128@4^3 batch 2, 2 threads 4532/2326/2347 vs 1305/1063/1372; batch 4 (256
    #: voxels) 1 thread 3973/3615/4063 vs 4653/3293/4611; 64->64@8^3 batch 1 (512), 1
    #: thread 1063/1011/1537 vs 2323/1878/2610.  That was the split form from Python;
    #: in one region (wino3d_fused.h) the forward and weight gradient win from 128
    #: voxels, the input gradient not: the 3-D UNet's 4^3 layers at batch 2, Zen 5 VM,
    #: ``python benchmarks/ab_conv_tuning.py winograd3d_min_batch_voxels=128 --nd 3 --batch
    #: 2 --threads 1 2 --parts fwd dw dxdw --other-bits --rounds 11 --layers 64-128-4
    #: 128-128-4`` (vol2col / Winograd): forward 1.53 / 1.64 at 1 thread and 1.37 / 1.37
    #: at 2, weight gradient 1.30 / 1.38 and 1.27 / 1.24, input + weight gradients 1.02 /
    #: 1.07 and 0.91 / 0.86 (so the input gradient keeps this threshold:
    #: ``winograd3d_min_batch_voxels_input_grad``).
    winograd3d_min_batch_voxels: int = 128
    #: ... and the 3-D input gradient from this many (see above)
    winograd3d_min_batch_voxels_input_grad: int = 512
    #: 3-D Winograd, where the project's GEMM takes float32 products (with
    #: ``split_in_kernels``): slabs of output planes of at least this many tiles, run one
    #: after another, each step shared among the threads inside the kernels (transforms
    #: by channels, point products by points), instead of slabs of
    #: ``winograd_target_tiles`` whole on the worker pool.  The pool's Python threads ran
    #: beside libgomp's spinning ones (three busy threads on two cores), two chunks (8^3
    #: maps, batch 2) could not be shared evenly, and small slabs made the transforms
    #: and products short.  Measured on an AMD EPYC family 25 model 1 VM (Zen 3, AVX2),
    #: batch 2, 2 threads, ``python benchmarks/ab_conv_tuning.py split_in_kernels=0 --nd 3
    #: --batch 2 --threads 2 --layers 16-16-32 32-16-32 16-32-16 32-32-16 64-32-16 32-64-8
    #: --parts fwd --rounds 9 --calls 2`` (time split / pool): 16->16@32 0.58, 32->16@32
    #: 0.81, 16->32@16 0.51, 32->32@16 0.66, 64->32@16 0.81, 32->64@8 0.69; the same with
    #: ``winograd3d_split_tiles=2048`` (--rounds 7), 1024 / 2048: 0.73-0.81 at 32^3 and
    #: 0.95-1.03 at 16^3; with ``=512`` (5 layers, --rounds 7) 0.95-1.08.  At 1 thread the
    #: full comparison is in docs/benchmarks.md (0.54-0.94 on the 16^3 and 32^3 layers).
    #: Slabs of 128 tiles split this way had cost the 32^3 layers 1.11-1.27x.  The weight
    #: gradient's slabs fix the order of its sums, so its bits follow this setting (for
    #: any thread count).
    winograd3d_split_tiles: int = 1024
    #: the 3-D split form's slab copies (input and output-gradient planes in as (planes,
    #: C, H, W), output planes out) on every thread (``_elementwise.copy_blocks``) when
    #: there are several, instead of numpy's one, which the other threads waited for
    #: (memmove was 8 % of the main thread's samples in the 3-D step at 2 threads).
    #: Measured on an AMD EPYC family 25 model 1 VM (Zen 3), batch 2, 2 threads, ``python
    #: benchmarks/ab_conv_tuning.py winograd3d_parallel_copies=0 --nd 3 --batch 2
    #: --threads 2 --layers 16-16-32 32-16-32 16-32-16 64-32-16 32-64-8 --parts fwd dxdw
    #: --rounds 11 --calls 2`` (time on / off, forward and dx+dw): 16->16@32 0.90 / 0.89,
    #: 32->16@32 0.94 / 0.96, 16->32@16 1.01 / 0.94, 64->32@16 1.00 / 0.96, 32->64@8 1.02 /
    #: 1.01 (a first run: 0.88-1.05).  At 1 thread numpy's copy was the faster (0.93-1.09
    #: with the kernel on one thread), so one thread keeps it.
    winograd3d_parallel_copies: bool = True
    #: a Winograd chunk gets at least this many output tiles (GEMM columns).  128, not 64:
    #: min ms of 15 interleaved runs (loaded machine, 1 thread, 64 -> 128 tiles):
    #: 384->128@8 forward 4.88 -> 4.39, weight grad 27.5 -> 13.1 (fewer, longer-K GEMMs
    #: and fewer partial sums); 128->128@8 weight grad 3.01 -> 2.09; others equal.
    winograd_target_tiles: int = 128
    #: the same for the Winograd weight gradient's chunks (None: by SIMD path,
    #: ``WEIGHT_GRAD_TARGET_TILES``).  Its point products are dot products over the
    #: chunk's tiles, whose fixed costs (the horizontal sums, the partial sums of each
    #: chunk) longer chunks share out; the forward keeps more, smaller chunks for its
    #: threads.  Measured on an AMD EPYC family 26 model 2 VM (Zen 5), AVX-512 path,
    #: batch 8, ``python benchmarks/ab_conv_tuning.py winograd_target_tiles_weight_grad=256
    #: --threads 1 2 --parts dw --other-bits --layers 16-32-32 32-32-32 32-64-32 96-32-32
    #: 64-64-32 192-64-32 64-64-16 128-128-8`` (default over tuned, 128 -> 256 tiles):
    #: see docs/convolution.md.  Maps of 64² and more have 256 F(4x4) tiles a sample and
    #: take one sample a chunk either way.  The weight gradient's bits follow its chunks.
    winograd_target_tiles_weight_grad: int | None = None
    #: ... but no more tiles a chunk than keep its transformed points (input and output
    #: gradient, ``(tile + 2)**2 * (c_in + c_out)`` values a tile) within this many bytes,
    #: down to ``winograd_target_tiles``: 192 -> 64 channels at 32² (256 tiles: 9.4 MB)
    #: had taken 1.17x / 1.06x the time at 1 / 2 threads with 256 tiles, where 96 -> 32
    #: (4.7 MB) took 0.85x / 0.87x (same command and machine as the knob above).
    winograd_weight_grad_chunk_bytes: int = 6 * 2**20
    #: upper bound for one transformed-input buffer (bytes); one sample always fits
    winograd_max_chunk_bytes: int = 16 * 2**20
    #: threads for the im2col/col2im/transform kernels inside a chunk; 0 means
    #: ``sandbox.get_num_threads()``.  Default 1: the chunks are the parallelism, and
    #: OpenMP teams next to the pool's threads fought for the 2 cores (measured: a
    #: 16-channel 64x64 conv forward ~30x slower when OpenMP and BLAS pools alternated).
    kernel_threads: int = 1
    #: Winograd convs run their chunks of samples one after another, each step shared
    #: among the threads inside the kernels (the transforms' ``prange`` over channels,
    #: the point GEMMs' ``prange`` over points): one OpenMP region per step and no
    #: Python per task.  Off: the chunks go to the worker pool (a single chunk's steps
    #: in 4 channel ranges and groups of 4 points).  Measured on an AMD EPYC family 26
    #: VM, ``python benchmarks/bench_conv_passes.py --threads 2 --repeat 9`` with and
    #: without ``--tuned split_in_kernels=False``: the 14 classic-UNet layers'
    #: geometric-mean speed against PyTorch 1.18x on, 0.71x off (1.25x at 1 thread);
    #: this needs the short OpenMP spin that ``import sandbox`` sets.  Either way each
    #: channel and point is computed the same, so results are identical.
    split_in_kernels: bool = True
    #: the Winograd forward and input gradient with each chunk on one thread (transform,
    #: point GEMMs and output transform in one OpenMP region, pyx/winograd/wino_fused.h)
    #: when float32 runs on the project's GEMM and there are at least two chunks a
    #: thread (or one thread).  Same bits as the split form.
    winograd_fused: bool = True
    #: the Winograd split form (fewer chunks than that; with ``split_in_kernels``) in one
    #: OpenMP region per pass (wino_fused.h), its steps separated by barriers, instead
    #: of three kernel calls a chunk from Python: no Python between the steps and no
    #: thread woken again for each; the 3-D split form's slabs too (wino3d_fused.h;
    #: about seven calls a slab before: the 3-D UNet step 0.84-0.88 of its time at 1 and
    #: 2 threads on the AVX-512 path, Zen 5 VM, ``python benchmarks/ab_simd_step.py
    #: --threads T --volume nearest avx512:avx512 avx512:avx512+winograd_one_region=0``;
    #: the AVX2 path 0.90-0.92, but 1.07-1.15 in the VM's slow phases).  Same bits.
    winograd_one_region: bool = True
    #: ... with chunks whose points (input and output planes, C + O channels) take at
    #: most this many bytes, so that a thread works in its own caches: the forward cuts
    #: a larger sample into bands of tile rows; the weight gradient (whose chunks fix
    #: the order of its sums) then runs split.  Measured on an AMD EPYC family 26 VM,
    #: user UNet step, 2 threads, ms (``python benchmarks/ab_simd_step.py --size S
    #: avx512:avx512 avx512:avx512+winograd_fused=0``, then with
    #: ``+winograd_fused_max_bytes=...``): fused vs split 64^2 39.9 vs 43.5, 128^2 139.2
    #: vs 148.3, 256^2 (batch 4) 268.7 vs 285.2; whole samples of 5-7 MB at 128^2 had
    #: been slower than split (171 vs 155); 1 MiB and 5 MiB gave the same as 2.5 within
    #: the run's noise (140.9 / 152.1 vs 143.3 at 128^2, 41.8 / 41.5 vs 42.3 at 64^2).
    winograd_fused_max_bytes: int = 5 * 2**19
    #: the fused forward's chunks a thread at least (more threads than one): chunks of
    #: fewer samples where there would be fewer, down to one sample, so that a thread on
    #: a slower core (uneven vCPUs, efficiency cores) takes fewer of them.  4 against 2
    #: (the 64^2 UNet's 16^2 and 32^2 layers at batch 8 had 4 chunks of 2 samples), Zen
    #: 3 VM with uneven vCPUs, 2 threads, two runs of ``python
    #: benchmarks/ab_conv_tuning.py winograd_fused_pieces=2 --threads 2 --layers
    #: 16-32-32 32-32-32 96-32-32 32-64-16 64-64-16 192-64-16 --parts fwd dxdw``: time
    #: 0.85-1.00 (forward) and 0.91-1.01 (dx + dw) of 2's, 16-32-32 and 32-32-32 0.99-1.03.
    winograd_fused_pieces: int = 4
    #: the fused forward's (and input gradient's) chunks have at least this many tiles
    #: (whole samples), and where the split form's chunks are fewer than two a thread
    #: (the 16² and 8² maps of a UNet at batch 8: one chunk of 128 tiles) the fused form
    #: takes chunks of this size if that makes two a thread.  Each thread then works on
    #: its own samples from the input transform to the output, where the split form
    #: shares each step of its one chunk and so reads what the other core wrote twice a
    #: call: the steps a VM's slow minutes slow most (reading the other core's data up to
    #: 1.6x slower, ``sandbox.bench._env.cross_core_cost``).  Measured on the Zen 5 VM
    #: (AMD EPYC family 26 model 2), 64² user UNet step, batch 8, 2 threads, ``python
    #: benchmarks/ab_simd_step.py --threads 2 --phases --seconds 600 avx512:avx512
    #: avx512:avx512+winograd_target_tiles=32+winograd_fused_pieces=2`` (the same chunks):
    #: 0.980 of the time in the quiet rounds (1,143), 0.962 in the slow ones (234); at 1
    #: thread 0.979 (80 rounds); per layer (``benchmarks/ab_conv_tuning.py``, quiet) 1.00-1.20x
    #: as fast at 1 thread (384->128@8 forward 1.20x: its points fit the caches), 0.98-1.07x
    #: at 2.  Chunks of one sample (16 tiles) were slower at 2 threads (64->64@16 forward
    #: 241 against 161 us).
    winograd_fused_min_tiles: int = 32
    #: an im2col/vol2col loop (a forward, or a backward's products) with fewer GEMM
    #: flops than this runs its chunks on the calling thread: below it the worker
    #: pool's Python per chunk (the GIL, lock hand-offs) costs more than the second
    #: core gains.  Measured on an AMD EPYC family 26 VM, ``python
    #: benchmarks/bench_conv_passes.py --threads 1 2 --layers 1-16-64 2-16-64 4-16-64
    #: 8-8-64 8-16-64 --head --repeat 9 --tuned winograd=False`` with and without
    #: ``min_parallel_flops=0`` (ms of forward + both gradients, batch 8, 2 threads,
    #: this threshold -> always the pool; 1 thread in brackets): 1->16@64 0.85 -> 1.39
    #: (1.08), 2->16@64 1.36 -> 1.62 (1.16), 16->2@64 1x1 0.45 -> 0.99 (0.57); the
    #: larger layers use the pool in both runs (4->16@64 2.09 / 1.91, 8->8@64 2.08 /
    #: 2.21, 8->16@64 2.83 / 3.11: the run's noise).  That was the AVX-512 path; a
    #: product of the AVX2 path does a third of the flops in the same time, so the
    #: crossover is at fewer flops (``None``, the default, takes the path's value from
    #: ``MIN_PARALLEL_FLOPS``).  On an AMD EPYC family 23 VM (Zen 1, AVX2 only), the same
    #: command with ``--layers 1-16-64 2-16-64 3-16-64 --head --repeat 31``, 2 threads:
    #: 1->16@64 3.77 -> 3.35 ms, 2->16@64 4.98 -> 3.74, 3->16@64 (RGB input, 0.79x
    #: PyTorch's speed before) 4.30, the 1x1 head 2.17 -> 2.45 (so it stays below).
    min_parallel_flops: int | None = None
    #: an im2col loop whose columns have at most ``one_pass_max_rows`` rows (input
    #: channels x kernel taps: a first layer of 1-3 channels at 3x3) and take at most
    #: ``one_pass_max_bytes`` for the whole batch runs in one pass (every sample's columns
    #: in one kernel call, their products in another, each on every thread, an input
    #: gradient's in one more; ``_im2col._one_pass``) even above ``min_parallel_flops``,
    #: where it would otherwise take the worker pool chunk by chunk.  On the AVX2 path
    #: (threshold 8 MFLOP) the first layers of a batch-8 UNet are above it.  Measured on
    #: an AMD EPYC family 25 model 1 VM (Zen 3, AVX2), batch 8, ``python
    #: benchmarks/ab_conv_tuning.py one_pass_max_rows=0 --threads 1 2 --layers 1-16-64
    #: 3-16-64 1-16-96 1-16-128 --rounds 15`` (time of the one pass over the chunks',
    #: forward / weight gradient / input + weight gradients): 1->16@64 0.74 / 0.75 / 0.74
    #: at 1 thread, 0.37 / 0.28 / 0.50 at 2; 3->16@64 0.88 / 0.89 / 0.83 and 0.73 / 0.82 /
    #: 1.05; 1->16@96 0.84 / 0.87 / 0.87 and 0.80 / 0.63 / 0.77; 1->16@128, above the byte
    #: bound, keeps the chunks (1.00-1.02).  Without the bound (an earlier run of the same
    #: comparison) the 128x128 layers, whose columns (4.7 and 14 MB) leave the caches, had
    #: taken 1.43-1.94x the time at 1 or 2 threads.
    one_pass_max_rows: int = 27
    one_pass_max_bytes: int = 4 * 2**20
    #: a 3x3 stride-1 forward of at most this many input channels (at most 4; 0: never)
    #: runs the direct kernel (``_direct``) on the AVX2 GEMM's path instead of im2col, the
    #: same values.  Measured on an AMD EPYC family 25 model 1 VM (Zen 3, AVX2), batch 8,
    #: ``python benchmarks/ab_conv_tuning.py direct_max_channels=0 --threads 1 2 --layers
    #: 1-16-64 3-16-64 1-16-128 3-16-128 --parts fwd --rounds 15`` (time direct / im2col):
    #: 0.86 / 0.91 / 0.77 / 0.56 at 1 thread, 0.81 / 0.61 / 0.71 / 0.75 at 2
    direct_max_channels: int = 4
    #: the direct weight gradient (``_direct.weight_grad``) only while the output gradient
    #: has at most this many bytes; a larger one runs im2col + the dot GEMM.  Each task of
    #: the direct kernel reads its rows of every output channel's plane (8 KB runs at
    #: 128x128), where the GEMM streams whole planes: once the output gradient leaves the
    #: caches, the direct kernel falls behind.  Measured on an AMD EPYC family 26 model 2
    #: VM (Zen 5), batch 8, ``python benchmarks/ab_conv_tuning.py direct_max_channels=0
    #: --threads 1 2 --parts dw --other-bits --rounds 15 --layers 1-16-128 1-32-128
    #: 3-32-128 1-64-128`` (time direct / im2col): 8 MB (1->16@128) 0.82 at 1 thread and
    #: 0.93 at 2; 16 MB (1->32@128) 1.14 and 1.16; 32 MB (1->64@128) 1.27 and 1.57
    direct_weight_grad_max_bytes: int = 8 * 2**20

    def __post_init__(self):
        object.__setattr__(self, "stamp", next(_STAMPS))

    def __setattr__(self, name, value):
        # every change of a setting gives these settings a new stamp, so what was
        # decided and cached under the old values (conv routes, Winograd schedules)
        # is not reused
        object.__setattr__(self, name, value)
        object.__setattr__(self, "stamp", next(_STAMPS))


_DEFAULTS = ConvTuning()  # in force wherever no tuned() block is
_settings: contextvars.ContextVar[ConvTuning | None] = contextvars.ContextVar(
    "sandbox_conv_tuning", default=None)


def _current() -> ConvTuning:
    return _settings.get() or _DEFAULTS


class _InForce:
    """The settings in force in the calling context: attribute reads go to the
    :class:`ConvTuning` that :func:`tuned` installed there (else the defaults), so a
    ``tuned`` block in one thread does not change another thread's convolutions; the
    worker pool's chunks run in a copy of the caller's context and see its settings.
    Assigning an attribute changes the settings of the calling context in place."""

    __slots__ = ()

    def __setattr__(self, name, value):
        if name not in _FIELDS:
            raise AttributeError(f"ConvTuning has no setting {name!r}")
        setattr(_current(), name, value)

    def __repr__(self) -> str:
        return repr(_current())


def _reader(name: str) -> property:
    # a property per setting: a read costs one call, not __getattr__'s failed lookup
    # first (convolutions read a few dozen settings a call)
    return property(lambda self: getattr(_settings.get() or _DEFAULTS, name),
                    doc=f"``ConvTuning.{name}`` in force")


_FIELDS = frozenset(f.name for f in dataclasses.fields(ConvTuning))
for _name in _FIELDS:
    setattr(_InForce, _name, _reader(_name))
del _name


#: the settings in force (see :class:`_InForce`)
TUNING = _InForce()


def settings_stamp() -> int:
    """The stamp of the settings in force (:attr:`ConvTuning.stamp`): a new number at
    every change and in every :func:`tuned` block."""
    return _current().stamp


def state() -> tuple:
    """What the convolutions decide from besides the shapes, as a hashable key for their
    cached routes and schedules: the settings in force (their stamp, new at every
    change and in every :func:`tuned` block), the SIMD selection
    (:func:`sandbox.runtime.simd.current`) and the thread count."""
    return (_current().stamp, simd.current(), threads_now())


def chunk_threads() -> int:
    """Threads for a kernel called inside a conv chunk (``ConvTuning.kernel_threads``; 0:
    all of them).  Not :func:`sandbox.runtime.threads.kernel_threads`, which sizes a
    ``prange`` by its work."""
    return TUNING.kernel_threads or threads_now()


#: the settings of recent tuned() blocks: (stamp of the settings changed, the changes) ->
#: (those settings, their stamp when made)
_DERIVED: dict = {}


def _derived(base: ConvTuning, changes: dict) -> ConvTuning:
    """``base`` with ``changes``: the same object (so the same stamp) as the last block
    that made these changes to these settings, unless it was changed since.  A block
    entered again (a ``with tuned(...)`` around every step of a loop, the A/B scripts'
    rounds) then finds the routes and schedules it cached the time before instead of
    planning every convolution again: with a new copy each time, an A/A run of the user
    UNet step at 64², batch 8, 2 threads (``python benchmarks/ab_simd_step.py --threads 2
    --phases --seconds 240 avx512:avx512 avx512:avx512+winograd_fused_pieces=4``, the
    default value) had the tuned steps 2 % slower (0.977-0.983 of the defaults' speed),
    0.990-1.003 after, the run's noise (AMD EPYC family 26 model 2; docs/benchmarks.md,
    thirteenth session)."""
    key = (base.stamp, tuple(sorted(changes.items())))
    try:
        hit = _DERIVED.get(key)
    except TypeError:  # an unhashable value: a new copy each time
        return dataclasses.replace(base, **changes)
    if hit is not None and hit[0].stamp == hit[1]:
        return hit[0]
    if len(_DERIVED) >= 256:
        _DERIVED.clear()
    made = dataclasses.replace(base, **changes)
    _DERIVED[key] = (made, made.stamp)
    return made


@contextlib.contextmanager
def tuned(**changes):
    """Change some of :data:`TUNING` inside a ``with`` block, restoring them after; only
    the calling thread (and the chunks it hands to the worker pool) sees the change.

    >>> from sandbox.array.conv import tuned
    >>> with tuned(winograd=False):
    ...     pass  # every conv here runs im2col + GEMM
    """
    unknown = set(changes) - {f.name for f in dataclasses.fields(ConvTuning)}
    if unknown:
        valid = ", ".join(f.name for f in dataclasses.fields(ConvTuning))
        raise TypeError(f"unknown conv tuning option(s) {sorted(unknown)}; valid: {valid}")
    # a copy for this context only: thread-safe, and nested blocks restore in order
    token = _settings.set(_derived(_current(), changes))
    try:
        yield TUNING
    finally:
        _settings.reset(token)
