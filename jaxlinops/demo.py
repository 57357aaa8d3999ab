"""The main job: CG-SENSE reconstruction of synthetic radial multi-coil MRI, across devices.

`python -m jaxlinops.demo` (see `--help`) runs the whole pipeline, with no data to download:

1. a Shepp–Logan phantom, smooth complex coil maps (unit root-sum-of-squares), a
   golden-angle radial trajectory and a ramp density compensation (DCF) $w$;
2. k-space by an exact DFT of every coil image, plus complex Gaussian noise;
3. $A = \\sqrt{w} \\cdot \\mathrm{NUFFT} \\cdot S$ (oversampling 2, width 6, Toeplitz normal),
   scaled to $\\|A\\| = 1$ with the power method;
4. $A^H A$ split by coils across the devices (`jl.create_batched_linop`; on a CPU-only
   machine it simulates `--devices` devices, 8 by default) and CG on
   $A^H A x = A^H \\sqrt{w} y$;
5. a report (problem, devices and mesh, compile and solve times, relative errors of the
   reconstruction and of the best-scaled adjoint against the phantom) and a PNG with the
   truth, the adjoint, the reconstruction and 5× the error.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl
from jaxlinops._arrays import Device

# importing jax does not start its backends: `select_devices` can still set the number of
# simulated CPU devices

Say = Callable[..., None]  # prints on process 0, does nothing on the others

# (intensity, semi-axes, centre, angle in degrees) of the modified Shepp–Logan phantom
SHEPP_LOGAN = (
    (1.0, 0.69, 0.92, 0.0, 0.0, 0),
    (-0.8, 0.6624, 0.874, 0.0, -0.0184, 0),
    (-0.2, 0.11, 0.31, 0.22, 0.0, -18),
    (-0.2, 0.16, 0.41, -0.22, 0.0, 18),
    (0.1, 0.21, 0.25, 0.0, 0.35, 0),
    (0.1, 0.046, 0.046, 0.0, 0.1, 0),
    (0.1, 0.046, 0.046, 0.0, -0.1, 0),
    (0.1, 0.046, 0.023, -0.08, -0.605, 0),
    (0.1, 0.023, 0.023, 0.0, -0.606, 0),
    (0.1, 0.023, 0.046, 0.06, -0.605, 0),
)


def phantom(n: int) -> np.ndarray:
    """The modified Shepp–Logan phantom on an `n × n` grid over $[-1, 1]^2$ (float32)."""
    y, x = np.mgrid[1 : -1 : n * 1j, -1 : 1 : n * 1j]
    image = np.zeros((n, n), np.float32)
    for value, a, b, x0, y0, angle in SHEPP_LOGAN:
        t = np.deg2rad(angle)
        u = (x - x0) * np.cos(t) + (y - y0) * np.sin(t)
        v = -(x - x0) * np.sin(t) + (y - y0) * np.cos(t)
        image[(u / a) ** 2 + (v / b) ** 2 <= 1] += value
    return image


def coil_maps(n: int, coils: int) -> np.ndarray:
    """`(coils, n, n)` complex64 sensitivities: Gaussians centred around the field of view
    with a linear phase each, normalised to unit root-sum-of-squares."""
    y, x = np.mgrid[-1 : 1 : n * 1j, -1 : 1 : n * 1j]
    angles = 2 * np.pi * np.arange(coils) / coils
    maps = np.stack([
        np.exp(-((x - 1.5 * np.cos(a)) ** 2 + (y - 1.5 * np.sin(a)) ** 2) / 2)
        * np.exp(1j * (np.pi * (x * np.cos(a) + y * np.sin(a)) / 2 + a))
        for a in angles
    ])  # fmt: skip
    return (maps / np.sqrt(np.sum(np.abs(maps) ** 2, axis=0))).astype(np.complex64)


def radial_trajectory(n: int, spokes: int, readouts: int) -> np.ndarray:
    """`(spokes, readouts, 2)` golden-angle radial points in cycles per field of view,
    within $[-n/2, n/2)$ (float32)."""
    angles = np.arange(spokes) * np.pi * (np.sqrt(5) - 1) / 2  # the golden angle, 111.25°
    radius = (np.arange(readouts) - readouts / 2) * n / readouts
    direction = np.stack([np.cos(angles), np.sin(angles)], axis=-1)
    return (radius[None, :, None] * direction[:, None, :]).astype(np.float32)


def ramp_dcf(locs: np.ndarray) -> np.ndarray:
    """A ramp density compensation $|k|$, floored at one readout step, normalised to mean 1."""
    radius = np.linalg.norm(locs, axis=-1)
    step = np.min(radius[radius > 0])
    dcf = np.maximum(radius, step)
    return (dcf / dcf.mean()).astype(np.float32)


def exact_kspace(image: np.ndarray, maps: np.ndarray, locs: np.ndarray) -> np.ndarray:
    r"""$y_c(p) = N^{-1} \sum_n S_c[n]\, x[n]\, e^{-2\pi i p \cdot (n - N/2) / N}$: the exact
    DFT at every point (the NUFFT's convention), separable in the two axes."""
    n = image.shape[0]
    exact = jax.lax.Precision.HIGHEST
    grid = (jnp.arange(n) - n // 2).astype(jnp.float32)

    def exponential(p):  # e^{-2 pi i p n / N} for the points' coordinates p along one axis
        phase = p[..., None] * grid[None, None] * (2 * np.pi / n)
        return jax.lax.complex(jnp.cos(phase), -jnp.sin(phase))

    @jax.jit
    def dft(coil_images, locs):
        # full float32 products: a GPU's default (TF32) would make the reference less exact
        # than the NUFFT it checks (1e-4 instead of 1e-6)
        rows = jnp.einsum("cxy,sry->csrx", coil_images, exponential(locs[..., 1]), precision=exact)
        return jnp.einsum("csrx,srx->csr", rows, exponential(locs[..., 0]), precision=exact) / n

    return np.asarray(dft(maps * image.astype(np.complex64), locs))


def write_png(path: Path, panels: list[np.ndarray]) -> None:
    """Save magnitude images side by side as an 8-bit grayscale PNG (no dependencies),
    each panel scaled to its own maximum."""
    scaled = [np.abs(p) / max(float(np.abs(p).max()), 1e-30) for p in panels]
    image = (255 * np.clip(np.concatenate(scaled, axis=1), 0, 1)).astype(np.uint8)
    height, width = image.shape
    raw = b"".join(b"\x00" + row.tobytes() for row in image)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
    path.write_bytes(png + chunk(b"IEND", b""))


def parse_args(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the checked command-line arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxlinops.demo", description=(__doc__ or "").split("\n\n")[0]
    )
    add = parser.add_argument
    add("--size", type=int, default=128, help="image size N (N × N; default 128)")
    add("--coils", type=int, default=8, help="number of coils (default 8)")
    add("--spokes", type=int, default=37, help="radial spokes (default 37)")
    add("--readouts", type=int, default=256, help="points per spoke (default 256)")
    add("--iters", type=int, default=20, help="CG iterations (default 20)")
    add("--noise", type=float, default=0.01, help="noise std relative to the k-space RMS")
    add("--devices", type=int, help="devices to use (default: all, or 8 simulated CPU devices)")
    add("--processes", type=int, default=1, help="run as this many local CPU processes joined "
        "by jax.distributed, the multi-host path (the devices are divided among them)")  # fmt: skip
    add("--output", type=Path, default=Path("recon.png"), help="PNG path (default recon.png)")
    add("--seed", type=int, default=0, help="noise seed (default 0)")
    add("--process-id", type=int, help=argparse.SUPPRESS)  # set by the launcher
    add("--coordinator", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("size", "coils", "spokes", "readouts", "iters", "processes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1; got {getattr(args, name)}.")
    if args.size < 8 or args.size % 2:
        parser.error(f"--size must be an even number >= 8; got {args.size}.")
    if args.devices is not None and args.devices < 1:
        parser.error(f"--devices must be at least 1; got {args.devices}.")
    if (args.devices or 8) % args.processes:
        parser.error(
            f"--devices {args.devices or 8} cannot be divided among {args.processes} processes."
        )
    return parser, args


def launch(argv: list[str], processes: int) -> int:
    """Run the demo as `processes` local CPU processes joined by `jax.distributed` (what a
    cluster launcher does across hosts); process 0 reports."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-m", "jaxlinops.demo", *argv, "--coordinator", f"127.0.0.1:{port}"]
    children = [
        subprocess.Popen([*command, "--process-id", str(i)], env=env) for i in range(processes)
    ]
    while True:  # a failed process would leave the others waiting in a collective
        codes = [child.poll() for child in children]
        failed = [code for code in codes if code not in (None, 0)]
        if failed or all(code == 0 for code in codes):
            for child in children:
                child.kill()
            return failed[0] if failed else 0
        time.sleep(0.1)


def select_devices(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Device]:
    """The devices to run on. On a CPU-only machine, simulate `--devices` (default 8)
    devices, split among the processes; this must happen before JAX starts its backend."""
    # not chosen by the caller (jax registers its flags at run time: pyright cannot see them)
    if jax.config.jax_num_cpu_devices < 1:  # pyright: ignore[reportAttributeAccessIssue]
        try:
            jax.config.update("jax_num_cpu_devices", (args.devices or 8) // args.processes)
        except RuntimeError:  # JAX's backends are already up: use what they have
            pass
    if args.process_id is not None:
        jax.distributed.initialize(args.coordinator, args.processes, args.process_id)
    devices = jax.devices()
    if args.devices is not None and args.devices > len(devices):
        parser.error(
            f"--devices {args.devices}: only {len(devices)} {devices[0].platform} device(s) "
            f"are available."
        )
    return devices[: args.devices or len(devices)]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, args = parse_args(argv)
    if args.processes > 1 and args.process_id is None:
        return launch(argv, args.processes)
    devices = select_devices(parser, args)
    # only process 0 reports; CG's progress goes to the logger when tqdm is not installed
    say = print if jax.process_index() == 0 else (lambda *a, **k: None)
    logging.basicConfig(format="  %(message)s")
    logging.getLogger("jaxlinops.alg").setLevel(logging.INFO)
    truth, maps, locs, kspace = simulate(args, say)
    A, weight = forward_model(maps, locs, args.size, say)
    recon, adjoint = reconstruct(A, weight * kspace, devices, args, say)
    adjoint = adjoint * np.vdot(adjoint, truth) / np.vdot(adjoint, adjoint)
    error = float(np.linalg.norm(recon - truth) / np.linalg.norm(truth))
    adjoint_error = float(np.linalg.norm(adjoint - truth) / np.linalg.norm(truth))
    say(f"Relative error against the phantom: reconstruction {error:.3f}, "
        f"adjoint (best scaled) {adjoint_error:.3f}")  # fmt: skip
    if jax.process_index() == 0:
        write_png(args.output, [truth, adjoint, recon, 5 * (recon - truth)])
    say(f"Saved truth | adjoint | reconstruction | 5× error to {args.output.resolve()}")
    return 0


def simulate(
    args: argparse.Namespace, say: Say
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The phantom, coil maps, trajectory and noisy exact-DFT k-space `(C, S, R)`."""
    n, rng = args.size, np.random.default_rng(args.seed)
    truth = phantom(n).astype(np.complex64)
    maps = coil_maps(n, args.coils)
    locs = radial_trajectory(n, args.spokes, args.readouts)
    say(f"jaxlinops {jl.__version__}, jax {jax.__version__}")
    say(f"Problem: {n}×{n} image, {args.coils} coils, {args.spokes} spokes × {args.readouts} "
        f"readouts, NUFFT oversampling 2, width 6, Toeplitz normal")  # fmt: skip
    start = time.perf_counter()
    kspace = exact_kspace(truth, maps, locs)
    sigma = args.noise * np.sqrt(np.mean(np.abs(kspace) ** 2))
    noise = rng.standard_normal((2, *kspace.shape)).astype(np.float32)
    kspace = kspace + (sigma / np.sqrt(2) * (noise[0] + 1j * noise[1])).astype(np.complex64)
    say(f"Simulated k-space by an exact DFT in {time.perf_counter() - start:.1f} s")
    return truth, maps, locs, kspace


# --8<-- [start:recon]
def forward_model(
    maps: np.ndarray, locs: np.ndarray, n: int, say: Say
) -> tuple[jl.NamedLinop, np.ndarray]:
    """$A = \\sqrt{w}\\,\\mathrm{NUFFT}\\,S$ scaled to $\\|A\\| = 1$ by the power method,
    and its (scaled) diagonal weight $\\sqrt{w}$."""
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.NUFFT(locs, (n, n), "S R", batch_shape="C", oversamp=2.0, width=6.0, toeplitz=True)
    weight = np.sqrt(ramp_dcf(locs))[None]
    A = jl.Diagonal(weight, "C S R", broadcast_dims="C") @ F @ S
    _, lam = jl.alg.power_method(A.N, np.ones((n, n), np.complex64), max_iters=30)
    weight = (weight / np.sqrt(float(lam))).astype(np.float32)
    say(f"Normalised A by the power method: ||A||^2 was {float(lam):.4g}")
    return jl.Diagonal(weight, "C S R", broadcast_dims="C") @ F @ S, weight


def reconstruct(
    A: jl.NamedLinop,
    data: np.ndarray,
    devices: Sequence[Device],
    args: argparse.Namespace,
    say: Say,
) -> tuple[np.ndarray, np.ndarray]:
    """CG on $A^H A x = A^H (\\sqrt{w} y)$ with $A^H A$ split by coils over `devices`;
    returns the reconstruction and the adjoint $A^H \\sqrt{w} y$ (numpy)."""
    AN = jl.create_batched_linop(A.N, jl.BatchSpec({"C": 1}, device_matrix=devices))
    assert AN.mesh is not None  # a device matrix gives a mesh
    processes = f" in {jax.process_count()} processes" if jax.process_count() > 1 else ""
    say(f"Devices: {len(devices)} × {devices[0].platform}{processes}; mesh {dict(AN.mesh.shape)}")
    b = A.H(data)
    if jax.process_count() == 1:  # the progress loop reads values on the host
        say(f"Solving CG-SENSE, {args.iters} iterations (step by step, with progress):")
        start = time.perf_counter()
        jl.alg.conjugate_gradients(AN, b, max_num_iters=args.iters, progress=True)
        say(f"Step by step (compiling included): {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    solve = jax.jit(lambda AN, b: jl.alg.conjugate_gradients(AN, b, max_num_iters=args.iters))
    compiled = solve.lower(AN, b).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(compiled(AN, b))
    say(f"As one jitted program: compile {compile_time:.2f} s, solve "
        f"{time.perf_counter() - start:.3f} s ({_local(result.num_iters)} iterations)")  # fmt: skip
    return _local(result.x), np.asarray(b)


# --8<-- [end:recon]


def _local(x: jax.Array) -> np.ndarray:
    """A replicated array's value in this process (also when it spans processes)."""
    return np.asarray(x.addressable_data(0))


if __name__ == "__main__":
    raise SystemExit(main())
