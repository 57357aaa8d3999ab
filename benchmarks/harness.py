"""Timing, machine description and measured peaks for the benchmark suite (`suite.py`).

An *implementation* of a case is one library's way to compute it: a callable on that
library's arrays, a way to make a fresh input from a numpy array, and a way to read its
output back. `time_impl` times it:

- `warmup` calls, then at least `min_runs` runs and `min_time` seconds (a case whose
  first warm-up call predicts more than `cap_s` seconds for all of them gets no more
  warm-up and `capped_runs` runs only);
- every run gets a fresh random input, made and moved to the device outside the timed
  region, so no cache holds the answer;
- every run ends in a device synchronisation (`block_until_ready`, `torch.cuda.synchronize`);
- the result is the median and the interquartile range of `time.perf_counter` intervals.

Peaks (`measure_peaks`): the bandwidth of a large copy (`y = x + 0` on complex64, read and
write) and the throughput of a large complex64 2-D FFT ($5 N \\log_2 N$ flops), both through
jax on its default device, so that each case can be placed against what the machine does.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata

import jax
import jax.numpy as jnp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Budget:
    """Repetition rules (see the module docstring)."""

    warmup: int = 3
    min_runs: int = 10
    min_time: float = 0.2
    max_runs: int = 2000
    cap_s: float = 30.0
    capped_runs: int = 3


QUICK = Budget(warmup=1, min_runs=3, min_time=0.02, cap_s=5.0)


@dataclasses.dataclass
class Impl:
    """One library's implementation of a case.

    - `call(x)`: the timed operation; it returns when the result is computed (it
      synchronises the device itself).
    - `fresh(a)`: the library's input for the numpy array `a` (made outside the timing).
    - `read(y)`: the output of `call` as a numpy array, for the accuracy check.
    - `compile(a)`: for jax, lower and compile for the numpy input `a` ahead of time and
      return XLA's memory figures (bytes); None for eager libraries, whose first call is
      timed instead.
    - `peak_bytes()`: the library's own peak-memory counter since the previous call, or
      None (torch on CUDA: `max_memory_allocated`, which the call then resets; the
      operator's tensors count, as XLA's arguments do).
    """

    call: Callable
    fresh: Callable[[np.ndarray], object]
    read: Callable[[object], np.ndarray]
    compile: Callable[[np.ndarray], dict] | None = None
    peak_bytes: Callable[[], int | None] = lambda: None


def jax_impl(fn: Callable, *static_args) -> Impl:
    """`fn(*static_args, x)` under `jax.jit`, the arguments passed as pytrees (so operator
    arrays are inputs, not constants folded into the program)."""
    jitted = jax.jit(fn)

    def compile_(a: np.ndarray) -> dict:
        compiled = jitted.lower(*static_args, jax.device_put(a)).compile()
        stats = compiled.memory_analysis()
        return {
            "arguments": stats.argument_size_in_bytes,
            "output": stats.output_size_in_bytes,
            "temporaries": stats.temp_size_in_bytes,
        }

    return Impl(
        call=lambda x: jax.block_until_ready(jitted(*static_args, x)),
        fresh=lambda a: jax.device_put(a).block_until_ready(),
        read=lambda y: np.asarray(y),
        compile=compile_,
    )


def torch_impl(fn: Callable, device) -> Impl:
    """A torch callable under `torch.inference_mode()` on `device`."""
    import torch

    cuda = device.type == "cuda"

    def call(x):
        with torch.inference_mode():
            y = fn(x)
        if cuda:
            torch.cuda.synchronize(device)
        return y

    def fresh(a):
        x = torch.from_numpy(np.ascontiguousarray(a)).to(device)
        if cuda:
            torch.cuda.synchronize(device)
        return x

    def peak():
        if not cuda:
            return None
        peak = torch.cuda.max_memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        return peak

    return Impl(call, fresh, lambda y: y.detach().cpu().numpy(), peak_bytes=peak)


def numpy_impl(fn: Callable) -> Impl:
    """A host callable on numpy arrays (finufft, sigpy on CPU)."""
    return Impl(fn, np.ascontiguousarray, np.asarray)


def random_input(rng: np.random.Generator, shape, dtype=np.complex64) -> np.ndarray:
    """Standard normal entries (real and imaginary parts for a complex dtype)."""
    if np.dtype(dtype).kind != "c":
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    pairs = rng.standard_normal((*shape, 2), dtype=np.float32)
    return pairs.view(np.complex64).reshape(shape).astype(dtype)


def time_impl(impl: Impl, rng, shape, dtype, budget: Budget) -> dict:
    """Time `impl` on fresh inputs of `shape` (see the module docstring)."""

    def once() -> float:
        x = impl.fresh(random_input(rng, shape, dtype))
        start = time.perf_counter()
        impl.call(x)
        return time.perf_counter() - start

    warm = [once()]
    capped = warm[0] * (budget.warmup + budget.min_runs) > budget.cap_s
    if not capped:  # a slow case needs no more warm-up than its first calls
        warm += [once() for _ in range(budget.warmup - 1)]
    estimate = min(warm[1:] or warm)
    if capped:
        runs = budget.capped_runs
    else:
        wanted = math.ceil(budget.min_time / max(estimate, 1e-9))
        runs = min(max(budget.min_runs, wanted), budget.max_runs)
    times = np.array([once() for _ in range(runs)]) * 1e3
    p25, median, p75 = np.percentile(times, [25, 50, 75])
    return {
        "median_ms": float(median),
        "p25_ms": float(p25),
        "p75_ms": float(p75),
        "runs": runs,
        "capped": bool(capped),
        "warmup_ms": [round(t * 1e3, 3) for t in warm],
    }


def time_turns(impls: list[Impl], rng, shape, dtype, budget: Budget) -> list[dict]:
    """Time implementations of the same case in turns, each run of each on the same fresh
    input, so that drift of the machine (load, frequency) falls on all: one timing per
    implementation, each as from [`time_impl`][] (without the warm-up list)."""

    def once(impl: Impl, a: np.ndarray) -> float:
        x = impl.fresh(a)
        start = time.perf_counter()
        impl.call(x)
        return time.perf_counter() - start

    for impl in impls:
        for _ in range(max(budget.warmup, 1)):
            once(impl, random_input(rng, shape, dtype))
    runs = max(2 * budget.min_runs, 6)
    times = np.zeros((len(impls), runs))
    for k in range(runs):
        a = random_input(rng, shape, dtype)
        times[:, k] = [once(impl, a) for impl in impls]
    out = []
    for row in times * 1e3:
        p25, median, p75 = np.percentile(row, [25, 50, 75])
        out.append({"median_ms": float(median), "p25_ms": float(p25), "p75_ms": float(p75),
                    "runs": runs, "capped": False})  # fmt: skip
    return out


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    """`||a - b|| / ||b||`, or NaN when the shapes differ."""
    if a.shape != b.shape:
        return float("nan")
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


# --------------------------------------------------------------------------- peaks
def _median_time(fn, x, runs: int = 10) -> float:
    jax.block_until_ready(fn(x))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure_peaks(quick: bool) -> dict:
    """Copy bandwidth (GB/s) and 2-D FFT throughput (GFLOP/s) through jax, complex64."""
    gpu = jax.default_backend() != "cpu"
    n_copy = (2**27 if gpu else 2**24) // (16 if quick else 1)  # 1 GiB / 128 MiB
    n_fft = (4096 if gpu else 2048) // (4 if quick else 1)
    x = jnp.ones(n_copy, jnp.complex64)
    copy_s = _median_time(jax.jit(lambda v: v + 0), x)
    del x
    y = jnp.ones((n_fft, n_fft), jnp.complex64)
    fft_s = _median_time(jax.jit(jnp.fft.fft2), y)
    points = n_fft * n_fft
    return {
        "copy_GBps": 2 * 8 * n_copy / copy_s / 1e9,
        "copy_bytes": 2 * 8 * n_copy,
        "fft_GFLOPps": 5 * points * math.log2(points) / fft_s / 1e9,
        "fft_size": [n_fft, n_fft],
    }


# --------------------------------------------------------------------------- machine
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git(*args) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def machine_info() -> dict:
    """Where and with what the suite ran: hardware, load, versions, the source commit."""
    status = _git("status", "--porcelain", "--", "jaxlinops")
    info = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": _git("rev-parse", "HEAD"),
        "jaxlinops_dirty": None if status is None else bool(status),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
        "loadavg_start": list(os.getloadavg()),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "device_kind": jax.devices()[0].device_kind,
    }
    for dist in ("jax", "jaxlib", "equinox", "numpy", "torch", "torch-named-linops",
                 "sigpy", "finufft", "numba"):  # fmt: skip
        info[dist] = _version(dist)
    return info
