r"""Regularised SENSE reconstruction on CPU: jaxlinops (jitted) against sigpy's
`L1WaveletRecon` and `TotalVariationRecon`, the same problem and iteration count.

    python benchmarks/bench_cs.py                        # 256², 8 coils, 100 iterations, 3 runs
    python benchmarks/bench_cs.py --size 128 --coils 4 --iters 50 --repeats 2
    python benchmarks/bench_cs.py --memory               # instead: the coil-sharded PDHG's memory
    python benchmarks/bench_cs.py --quick                # tiny sizes, 1 run (a smoke test)

The problem: the modified Shepp-Logan phantom times `jaxlinops.demo.coil_maps` (unit
root-sum-of-squares), the centred orthonormal FFT, Cartesian undersampling of whole lines
along the first k-space axis (a fully sampled centre of `size / 16` lines, random lines
elsewhere, `--accel` times fewer lines in all), complex Gaussian noise; complex64.
sigpy's model `Sense(maps, weights=mask)` is $\sqrt{w}\, F S$ and it weights the data by
$\sqrt{w}$: with a 0/1 mask the objective is $\tfrac12 \|M F S x - y\|^2 + \lambda R(x)$
in both libraries, with

- **ℓ1-wavelet**: $R(x) = \|W x\|_1$, the orthogonal db4 wavelet with PyWavelets' default
  levels, solved by FISTA (`L1WaveletRecon` runs sigpy's accelerated `GradientMethod`;
  `jl.alg.fista` with `jl.alg.L1(lamda, jl.Wavelet(...))`). sigpy's own wavelet pads
  with zeros (`mode="zero"`): a redundant frame ($W^H W = I$, $W W^H \ne I$), for which
  its prox $W^H \mathrm{soft}(W v)$ is not the prox of $\|W x\|_1$, so it solves no
  problem that jaxlinops states. Here sigpy's wavelet module is run with PyWavelets'
  `mode="periodization"` (the orthogonal transform `jl.Wavelet` computes), everything
  else as shipped.
- **TV**: $R(x) = \|D x\|_1$, anisotropic total variation, periodic differences (sigpy's
  `FiniteDifference` and `L1Reg`, entry by entry), solved by PDHG (sigpy's default for
  `TotalVariationRecon`; `jl.alg.pdhg` with `G = jl.FiniteDifference`).

Both get the same steps, computed once beforehand (the power method excluded from both
timings): FISTA $1 / L$, $L = \|A\|^2$ (sigpy's default rule); PDHG $\sigma = 1$,
$\tau = 0.9 / \|K\|^2$, $K = [A; D]$. jaxlinops' PDHG updates the primal first, so its
image after `k + 1` iterations is sigpy's after `k` (its first iteration only updates the
duals): it runs `--iters + 1` (one more application of $K$ and $K^H$ than sigpy), and
both return the same iterate. Each solution's objective is evaluated by one numpy
function (float64). jaxlinops: compiled once (timed apart), one warm-up call, then
`--repeats` calls ending in `block_until_ready`; sigpy: a warm-up run of one iteration,
then `--repeats` calls of `App(...).run()` (building included). The table gives the
medians and the ratio sigpy / jaxlinops (> 1: jaxlinops faster). Target (the issue): at
least 3 for both.

Each reconstruction runs twice in jaxlinops: on one CPU device, and with the SENSE
operator split by coils over one simulated CPU device per core (`CPU_DEVICES`: the most
cores that divide the coils), `create_batched_linop(A, BatchSpec({"C": coils / d},
device_matrix=jax.devices()))`, the data sharded alike: how jaxlinops uses the cores of a
CPU with the same program as on a GPU mesh (`jax.config.update("jax_num_cpu_devices", d)`
before the first computation). On one device XLA already threads its loops, but an FFT
that follows one (the coil expansion before $F$) runs on one thread; split, each device
transforms its coils on its own core. sigpy's numpy runs on one thread either way.

`--memory` (instead of the timings: 8 simulated devices on a CPU of fewer cores share
its threads): XLA's compiled per-device memory (`memory_analysis()`: arguments +
output + temporaries) of the jitted PDHG TV reconstruction with the SENSE operator split
by coils over 8 simulated CPU devices, `create_batched_linop(A, BatchSpec({"C": 1},
device_matrix=jax.devices()))`, the data sharded alike, against the same program on one
device (the steps as above; each program also runs once, and the sharded solution's
relative difference to the one-device one is printed). Target (the issue): at most 0.3
of one device's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pywt  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

import jaxlinops as jl  # noqa: E402
from jaxlinops.demo import coil_maps, phantom  # noqa: E402

MiB = 2**20
WAVELET = "db4"
TAU_SAFETY = 0.9  # PDHG: sigma tau ||K||^2 = 0.9 < 1
DEVICES = 8  # simulated CPU devices for --memory


# --------------------------------------------------------------------------- the problem
def line_mask(size: int, accel: float, rng: np.random.Generator) -> np.ndarray:
    """`(size, size)` 0/1 float32, whole rows: a centre of `size / 16` rows and random
    others, `size / accel` rows in all."""
    centre = max(2, size // 16)
    lines = np.zeros(size, bool)
    lines[size // 2 - centre // 2 : size // 2 - centre // 2 + centre] = True
    others = np.flatnonzero(~lines)
    extra = max(0, round(size / accel) - centre)
    lines[rng.choice(others, min(extra, others.size), replace=False)] = True
    return np.broadcast_to(lines[:, None], (size, size)).astype(np.float32)


def centred_fft(x: np.ndarray) -> np.ndarray:
    axes = (-2, -1)
    return np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(x, axes=axes), norm="ortho"), axes=axes)


def problem(size: int, coils: int, accel: float, seed: int = 0):
    """`(maps, mask, y)`: complex64 maps `(C, N, N)`, the 0/1 mask `(N, N)` and masked
    noisy k-space `(C, N, N)`."""
    rng = np.random.default_rng(seed)
    maps = coil_maps(size, coils)
    mask = line_mask(size, accel, rng)
    clean = centred_fft(maps * phantom(size))
    sigma = 1e-2 * np.abs(clean).max() / np.sqrt(2)
    noise = sigma * (rng.standard_normal(clean.shape) + 1j * rng.standard_normal(clean.shape))
    return maps, mask, (mask * (clean + noise)).astype(np.complex64)


def regulariser(x: np.ndarray, kind: str) -> float:
    """$R(x)$: $\\|W x\\|_1$ (orthogonal db4, PyWavelets' default levels) or anisotropic
    periodic TV, in float64."""
    x = np.asarray(x, np.complex128)
    if kind == "wavelet":
        coefficients = pywt.wavedecn(x, WAVELET, mode="periodization")
        return float(np.abs(pywt.coeffs_to_array(coefficients)[0]).sum())
    return float(sum(np.abs(np.roll(x, 1, axis) - x).sum() for axis in range(x.ndim)))


def objective(x, maps, mask, y, lamda: float, kind: str) -> float:
    r"""$\tfrac12 \|M F S x - y\|^2 + \lambda R(x)$ in float64, numpy alone."""
    x = np.asarray(x, np.complex128)
    residual = mask * centred_fft(maps.astype(np.complex128) * x) - y
    return 0.5 * float(np.vdot(residual, residual).real) + lamda * regulariser(x, kind)


# --------------------------------------------------------------------------- jaxlinops
def sense(maps, mask) -> jl.NamedLinop:
    """$A = M F S$: `(Nx, Ny) -> (C, Kx, Ky)`."""
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.FFT(2, "C", ("Nx Ny", "Kx Ky"), centered=True)
    return jl.Diagonal(mask, "C Kx Ky", broadcast_dims="C") @ F @ S


def steps(A: jl.NamedLinop, D: jl.NamedLinop, size: int) -> tuple[float, float]:
    """FISTA's $1 / \\|A\\|^2$ and PDHG's $\\tau$ (with $\\sigma = 1$), from 100 power
    iterations each (once, outside the timings)."""
    start = np.ones((size, size), np.complex64)
    norms = []
    for normal in (A.N, A.N + D.N):
        _, lam = jl.alg.power_method(normal, v_init=start, max_iters=100, progress=False)
        norms.append(float(lam))
    return 1 / norms[0], TAU_SAFETY / norms[1]


def l1_wavelet(A, y, lamda, step, *, iters: int):
    W = jl.Wavelet("Nx Ny", wavelet=WAVELET)
    return jl.alg.fista(A, y, jl.alg.L1(lamda, W), max_num_iters=iters, step=step, progress=False)


def total_variation(A, y, lamda, tau, *, iters: int):
    D = jl.FiniteDifference("Nx Ny")
    prox = jl.alg.L1(lamda)
    return jl.alg.pdhg(A, y, prox, G=D, sigma=1.0, tau=tau, max_num_iters=iters, progress=False)


def time_jaxlinops(fn, args, repeats: int) -> tuple[float, list[float], np.ndarray]:
    """The compile time, the run times and the solution."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    x = compiled(*args).block_until_ready()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compiled(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return compile_s, times, np.asarray(x)


# --------------------------------------------------------------------------- sigpy
class _Periodization:
    """PyWavelets with `mode="periodization"` in `wavedecn` and `waverecn`: what sigpy's
    wavelet module calls, to make its `Wavelet` orthogonal (see the module doc)."""

    def __getattr__(self, name: str):
        return getattr(pywt, name)

    @staticmethod
    def wavedecn(data, wavelet, mode, **kwargs):
        return pywt.wavedecn(data, wavelet, mode="periodization", **kwargs)

    @staticmethod
    def waverecn(coeffs, wavelet, mode, **kwargs):
        return pywt.waverecn(coeffs, wavelet, mode="periodization", **kwargs)


@contextlib.contextmanager
def orthogonal_sigpy_wavelet():
    """sigpy's `Wavelet` runs PyWavelets' periodization inside this block."""
    import sigpy.wavelet

    shipped = sigpy.wavelet.pywt
    sigpy.wavelet.pywt = _Periodization()
    try:
        yield
    finally:
        sigpy.wavelet.pywt = shipped


def time_sigpy(make_app, iters: int, repeats: int) -> tuple[list[float], np.ndarray]:
    """The run times of `make_app(iters).run()` (building included) and the solution,
    after a warm-up of one iteration (sigpy's first call imports and plans)."""
    make_app(1).run()
    times, x = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        x = make_app(iters).run()
        times.append(time.perf_counter() - start)
    return times, np.asarray(x)


def sigpy_apps(maps, mask, y, lamda: float, step: float, tau: float):
    """sigpy's two apps, as factories of the iteration count: defaults but the steps (and
    no progress bar)."""
    from sigpy.mri.app import L1WaveletRecon, TotalVariationRecon

    common = dict(weights=mask, show_pbar=False)
    return {
        "wavelet": lambda iters: L1WaveletRecon(
            y, maps, lamda, wave_name=WAVELET, alpha=step, max_iter=iters, **common
        ),
        "tv": lambda iters: TotalVariationRecon(
            y, maps, lamda, sigma=1.0, tau=tau, max_iter=iters, **common
        ),
    }


# --------------------------------------------------------------------------- the table
ROWS = {"wavelet": "ℓ1-wavelet (FISTA)", "tv": "TV (PDHG)"}
HEAD = (
    "| reconstruction | devices | sigpy s | jaxlinops s | compile s | sigpy / jaxlinops "
    "| objective sigpy | objective jaxlinops | rel. diff |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def cpu_devices(coils: int) -> int:
    """One device per core, as many as divide the coils."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(d for d in range(1, (cores or 1) + 1) if coils % d == 0)


def speed(args: argparse.Namespace) -> None:
    maps, mask, y = problem(args.size, args.coils, args.accel)
    A, D = sense(maps, mask), jl.FiniteDifference("Nx Ny")
    step, tau = steps(A, D, args.size)
    lamda = np.float32(args.lamda)
    models = {1: (A, y)}
    devices = jax.devices()
    if len(devices) > 1:
        B = jl.create_batched_linop(
            A, jl.BatchSpec({"C": args.coils // len(devices)}, device_matrix=devices)
        )
        models[len(devices)] = (B, jax.device_put(y, NamedSharding(B.mesh, PartitionSpec("C"))))
    solvers = {
        "wavelet": (functools.partial(l1_wavelet, iters=args.iters), step),
        # one more: jaxlinops' first PDHG iteration updates only the duals (x_1 = x_0)
        "tv": (functools.partial(total_variation, iters=args.iters + 1), tau),
    }
    theirs = sigpy_apps(maps, mask, y, args.lamda, step, tau)
    print(
        f"SENSE {args.size}x{args.size}, {args.coils} coils, Cartesian x{args.accel:g} "
        f"({mask[:, 0].mean():.1%} of the lines), complex64, lambda {args.lamda:g}, "
        f"{args.iters} iterations, steps: FISTA {step:.4g}, PDHG sigma 1 tau {tau:.4g}; "
        f"{os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}; medians of {args.repeats}\n"
    )
    print(HEAD)
    for kind, label in ROWS.items():
        with orthogonal_sigpy_wavelet():
            other, x_theirs = time_sigpy(theirs[kind], args.iters, args.repeats)
        f_theirs = objective(x_theirs, maps, mask, y, args.lamda, kind)
        t_theirs = statistics.median(other)
        fn, step_or_tau = solvers[kind]
        for count, (op, data) in models.items():
            compile_s, mine, x_ours = time_jaxlinops(
                fn, (op, data, lamda, step_or_tau), args.repeats
            )
            f_ours = objective(x_ours, maps, mask, y, args.lamda, kind)
            t_ours = statistics.median(mine)
            print(
                f"| {label} | {count} | {t_theirs:.3f} | {t_ours:.3f} | {compile_s:.2f} | "
                f"{t_theirs / t_ours:.2f} | {f_theirs:.7g} | {f_ours:.7g} | "
                f"{abs(f_ours - f_theirs) / f_theirs:.1e} |",
                flush=True,
            )
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


# --------------------------------------------------------------------------- --memory
def compiled_memory(fn, *args):
    """`fn` compiled for `args` and XLA's per-device figures of it (MiB)."""
    compiled = jax.jit(fn).lower(*args).compile()
    stats = compiled.memory_analysis()
    out = {
        "arguments": stats.argument_size_in_bytes / MiB,
        "output": stats.output_size_in_bytes / MiB,
        "temporaries": stats.temp_size_in_bytes / MiB,
    }
    out["peak"] = sum(out.values())
    return compiled, out


def memory(args: argparse.Namespace) -> None:
    """The table of `--memory`; each program also runs once, and the sharded solution's
    relative difference to the one-device solution is printed."""
    devices = jax.devices()
    maps, mask, y = problem(args.size, args.coils, args.accel)
    A = sense(maps, mask)
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=devices))
    y_sharded = jax.device_put(y, NamedSharding(B.mesh, PartitionSpec("C")))
    _, tau = steps(A, jl.FiniteDifference("Nx Ny"), args.size)
    lamda, tau = np.float32(args.lamda), np.float32(tau)
    fn = functools.partial(total_variation, iters=args.iters + 1)
    programs = {
        "1 device": (A, y),
        f"{len(devices)} devices, C/1": (B, y_sharded),
    }
    print(
        f"\nPDHG TV ({args.iters + 1} iterations), SENSE {args.size}x{args.size}, "
        f"{args.coils} coils, complex64: XLA's compiled memory per device "
        f"({jax.default_backend()}, {len(devices)} devices)\n"
    )
    print("| program | args MiB | out MiB | temp MiB | peak MiB | / 1 device | rel. diff |")
    print("|---|---|---|---|---|---|---|")
    one = reference = None
    for label, (op, data) in programs.items():
        compiled, r = compiled_memory(fn, op, data, lamda, tau)
        x = np.asarray(compiled(op, data, lamda, tau))
        one = r["peak"] if one is None else one
        reference = x if reference is None else reference
        diff = np.linalg.norm(x - reference) / np.linalg.norm(reference)
        print(
            f"| {label} | {r['arguments']:.2f} | {r['output']:.2f} | {r['temporaries']:.2f} "
            f"| {r['peak']:.2f} | {r['peak'] / one:.3f} | {diff:.1e} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--size", type=int, default=256, help="image size n (n x n)")
    parser.add_argument("--coils", type=int, default=8, help="receive coils")
    parser.add_argument("--iters", type=int, default=100, help="iterations of each solver")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each")
    parser.add_argument("--accel", type=float, default=4.0, help="undersampling factor")
    parser.add_argument("--lamda", type=float, default=1e-2, help="regularisation weight")
    parser.add_argument("--quick", action="store_true", help="32², 8 coils, 20 iters, 1 run")
    parser.add_argument(
        "--memory", action="store_true", help=f"the PDHG's memory on {DEVICES} devices instead"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.coils, args.iters, args.repeats = 32, 8, 20, 1
    if args.memory:  # before JAX starts its backend; used where there is no accelerator
        jax.config.update("jax_num_cpu_devices", DEVICES)
        memory(args)
    else:  # one CPU device per core (where there is no accelerator)
        jax.config.update("jax_num_cpu_devices", cpu_devices(args.coils))
        speed(args)


if __name__ == "__main__":
    main()
