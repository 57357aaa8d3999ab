"""The main job: CG-SENSE reconstruction of synthetic radial multi-coil MRI, across devices.

`python -m jaxlinops.demo` (see `--help`) runs the whole pipeline, with no data to download:

1. a Shepp–Logan phantom, smooth complex coil maps (unit root-sum-of-squares), a
   golden-angle radial trajectory and a ramp density compensation (DCF) $w$;
2. k-space by an exact DFT of every coil image, plus complex Gaussian noise correlated
   between neighbouring coils, and a noise scan of the same noise;
3. $A = \\sqrt{w} \\cdot \\mathrm{NUFFT} \\cdot S$ (oversampling 2, width 6, Toeplitz normal),
   scaled to $\\|A\\| = 1$ with the power method;
4. $A^H A$ split by coils across the devices (`jl.create_batched_linop`; on a CPU-only
   machine it simulates `--devices` devices, 8 by default) and CG on
   $A^H A x = A^H \\sqrt{w} y$;
5. with `--reg l1-wavelet`, `tv` or `llr` (default `none`), the regularised reconstruction
   $\\min_x \\tfrac12 \\|A x - \\sqrt{w} y\\|^2 + g(x)$ of the same data with $A$ split by
   coils across the same devices: ℓ1-wavelet by FISTA, total variation by ADMM (its
   $x$-update by CG on the same Toeplitz normal plus $D^H D$), locally low rank (8 × 8
   blocks of the image as matrices: there is no frame dim) by FISTA, with $\\lambda$ a
   fraction (`--lamda`) of the largest magnitude of $A^H \\sqrt{w} y$ in the regulariser's
   domain, as `jaxlinops-recon --reg` solves it (`jaxlinops.recon._regularise` says why
   each solver and how $\\lambda$ was chosen);
6. the scanner-file path (skip it with `--no-scan`): the scan written as an ISMRMRD file,
   `scan.h5` next to the figure, and reconstructed from it as `jaxlinops-recon` does, with
   the noise prewhitened and the coil maps (ESPIRiT) and density weights (Pipe–Menon)
   estimated from the data (`jl.io`, `jl.mri`, `jl.recon`);
7. a report (problem, devices and mesh, compile and solve times, relative errors of the
   reconstructions and of the best-scaled adjoint against the phantom) and a figure,
   `recon.png` in the directory `--out` names (or the `.png` file it names), drawn with
   matplotlib (the `demo` extra, which `scripts/demo.sh` installs): labelled panels of the
   truth, the adjoint and the reconstructions on one grey scale, their errors on one error
   scale 5 times finer, colour bars, the errors and PSNR in the titles, the timings in the
   figure's title and CG's residual history (with a regulariser, also the objective history
   of its solver).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl
from jaxlinops import _demo_cs as cs
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


ERROR_GAIN = 5  # the error maps' colour scale is this many times finer than the images'


class Panel(NamedTuple):
    """One image of the figure: its title (lines), its magnitudes and the colour scale it
    shares with the other panels of its `kind` ("image" or "error")."""

    title: str
    magnitude: np.ndarray
    kind: str


class Figure(NamedTuple):
    """What the demo draws: a title, the panels, the top of each colour scale (`ranges`,
    from 0, by kind), CG's relative residual per iteration and, with a regulariser, its
    solver's name and relative objective $F(x_k) / F(x_0)$ per iteration."""

    title: str
    panels: tuple[Panel, ...]
    ranges: dict[str, float]
    residuals: np.ndarray
    objective: tuple[str, np.ndarray] | None = None


def quality(image: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    r"""The relative error $\|x - t\| / \|t\|$ and the PSNR $20 \log_{10}(\max|t| /
    \mathrm{RMS}(x - t))$ in dB of `image` $x$ against `truth` $t$."""
    error = np.abs(image - truth)
    rms = float(np.sqrt(np.mean(error**2)))
    relative = float(np.linalg.norm(error) / np.linalg.norm(truth))
    return relative, 20 * float(np.log10(np.abs(truth).max() / max(rms, 1e-30)))


def display_ranges(images: Sequence[np.ndarray]) -> dict[str, float]:
    """The colour scales, from 0: one for all `images` (up to their largest magnitude, so
    none is clipped) and one for all error maps, `ERROR_GAIN` times finer."""
    top = max(float(np.abs(image).max()) for image in images)
    return {"image": top, "error": top / ERROR_GAIN}


def figure(
    truth: np.ndarray,
    images: dict[str, np.ndarray],
    residuals: np.ndarray,
    title: str,
    objective: tuple[str, np.ndarray] | None = None,
) -> Figure:
    """The panels: the truth, then each of `images` (by name: the adjoint, CG-SENSE, ...)
    with its error and PSNR, and the error map of each; `objective`: a regularised solve's
    (name, $F(x_k)$), drawn relative to $F(x_0)$."""
    panels = [Panel("truth (phantom)", np.abs(truth), "image")]
    for name, image in images.items():
        relative, psnr = quality(image, truth)
        panels.append(Panel(f"{name}\nrel. error {relative:.3f}\nPSNR {psnr:.1f} dB",
                            np.abs(image), "image"))  # fmt: skip
    for name, image in images.items():
        panels.append(Panel(f"|{name.split(',')[0]} - truth|", np.abs(image - truth), "error"))
    norms = np.asarray(residuals, np.float64)
    if objective is not None:
        values = np.asarray(objective[1], np.float64)
        objective = (objective[0], values / values[0])
    ranges = display_ranges([truth, *images.values()])
    return Figure(title, tuple(panels), ranges, norms / norms[0], objective)


def save_figure(fig: Figure, path: Path, say: Say) -> bool:
    """Draw `fig` to the PNG `path` with matplotlib: images in the first row, errors below
    theirs, the residual history bottom left. False (with one line said) when matplotlib
    is not installed (`pip install 'jaxlinops[demo]'`; `scripts/demo.sh` installs it)."""
    try:
        from matplotlib.figure import Figure as MplFigure  # no pyplot: no global state
    except ImportError:
        say("No figure: matplotlib is not installed (pip install 'jaxlinops[demo]').")
        return False
    columns = sum(p.kind == "image" for p in fig.panels)
    canvas = MplFigure(figsize=(3.5 * columns, 7.2), layout="constrained")
    axes = canvas.subplots(2, columns)
    canvas.suptitle(fig.title)
    rows = {"image": list(axes[0]), "error": list(axes[1, 1:])}
    colours = {"image": ("gray", "|x|", "neither"),
               "error": ("magma", f"|error| (scale {ERROR_GAIN}× finer)", "max")}  # fmt: skip
    for kind, row in rows.items():
        cmap, label, extend = colours[kind]
        panels = [p for p in fig.panels if p.kind == kind]
        for ax, panel in zip(row, panels, strict=True):
            shown = ax.imshow(panel.magnitude, cmap=cmap, vmin=0, vmax=fig.ranges[kind],
                              interpolation="nearest")  # fmt: skip
            ax.set_title(panel.title, fontsize=10)
            ax.set_axis_off()
        canvas.colorbar(shown, ax=row, label=label, extend=extend, shrink=0.9)
    plot = axes[1, 0]
    plot.semilogy(fig.residuals, ".-", label="CG: $\\|b - A^H A x_k\\| / \\|b\\|$")
    plot.set_xlabel("CG iteration $k$")
    plot.set_title("relative residual\n$\\|b - A^H A x_k\\| / \\|b\\|$", fontsize=10)
    if fig.objective is not None:
        name, values = fig.objective
        plot.semilogy(values, "-", label=f"{name}: $F(x_k) / F(x_0)$")
        plot.set_xlabel("iteration $k$")
        plot.set_title("CG's residual, the regularised\nsolver's objective", fontsize=10)
        plot.legend(fontsize=8)
    plot.grid(True, which="both", alpha=0.3)
    canvas.savefig(path, dpi=100)
    return True


def output_path(out: Path) -> Path:
    """Where the figure goes: `out` itself when it names a `.png` file, else `recon.png`
    in the directory `out` (created when missing)."""
    if out.suffix.lower() == ".png":
        out.parent.mkdir(parents=True, exist_ok=True)
        return out
    out.mkdir(parents=True, exist_ok=True)
    return out / "recon.png"


def parse_args(argv: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the checked command-line arguments."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxlinops.demo",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--size", type=int, default=128, help="image size N (N × N)")
    add("--coils", type=int, default=8, help="number of coils")
    add("--spokes", type=int, default=37, help="radial spokes")
    add("--readouts", type=int, default=256, help="points per spoke")
    add("--iters", type=int, default=20, help="CG iterations")
    add("--noise", type=float, default=0.01, help="noise std relative to the k-space RMS")
    add("--devices", type=int, help="devices to use (None: all, or 8 simulated CPU devices "
        "on a CPU-only machine)")  # fmt: skip
    add("--processes", type=int, default=1, help="run as this many local CPU processes joined "
        "by jax.distributed, the multi-host path (the devices are divided among them)")  # fmt: skip
    add("--out", "--output", type=Path, default=Path("."), help="where the figure goes: a "
        "directory (created if needed) for recon.png, or a .png file")  # fmt: skip
    add("--seed", type=int, default=0, help="noise seed")
    add("--no-scan", dest="scan", action="store_false", help="skip the scanner-file path "
        "(write scan.h5 next to the figure and reconstruct it with estimated coil maps and "
        "density weights, as jaxlinops-recon does)")  # fmt: skip
    add("--reg", choices=["none", *cs.LAMDA], default="none", help="also solve the regularised "
        "problem with this prior: l1-wavelet (FISTA), tv (ADMM) or llr (FISTA)")  # fmt: skip
    add("--reg-iters", type=int, help="iterations of the regularised solve (None: "
        + ", ".join(f"{n} for {r}" for r, n in cs.ITERS.items())
        + f"; ADMM's each with {cs.ADMM_CG_ITERS} CG iterations)")  # fmt: skip
    add("--lamda", type=float, help="the regularisation weight λ as a fraction of the largest "
        "magnitude of A^H y in the regulariser's domain (None: "
        + ", ".join(f"{f:g} for {r}" for r, f in cs.LAMDA.items()) + ")")  # fmt: skip
    add("--process-id", type=int, help=argparse.SUPPRESS)  # set by the launcher
    add("--coordinator", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("size", "coils", "spokes", "readouts", "iters", "processes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1; got {getattr(args, name)}.")
    if args.size < 8 or args.size % 2:
        parser.error(f"--size must be an even number >= 8; got {args.size}.")
    check_regulariser(parser, args)
    if args.devices is not None and args.devices < 1:
        parser.error(f"--devices must be at least 1; got {args.devices}.")
    if (args.devices or 8) % args.processes:
        parser.error(
            f"--devices {args.devices or 8} cannot be divided among {args.processes} processes."
        )
    return parser, args


def check_regulariser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`--reg-iters` and `--lamda` need `--reg`, and are positive."""
    options = [f"--{name.replace('_', '-')}" for name in ("reg_iters", "lamda")
               if getattr(args, name) is not None]  # fmt: skip
    if args.reg == "none" and options:
        verb = "need" if len(options) > 1 else "needs"
        parser.error(f"{' and '.join(options)} {verb} --reg (l1-wavelet, tv or llr).")
    if args.reg_iters is not None and args.reg_iters < 1:
        parser.error(f"--reg-iters must be at least 1; got {args.reg_iters}.")
    if args.lamda is not None and not args.lamda > 0:
        parser.error(f"--lamda must be > 0; got {args.lamda}.")


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
    say = print if jax.process_index() == 0 else (lambda *a, **k: None)  # process 0 reports
    truth, maps, locs, scan = simulate(args, say)
    A, weight = forward_model(maps, locs, args.size, say)
    rec = reconstruct(A, weight * scan.kspace, devices, args, say)
    adjoint = rec.adjoint * np.vdot(rec.adjoint, truth) / np.vdot(rec.adjoint, rec.adjoint)
    error, adjoint_error = quality(rec.image, truth)[0], quality(adjoint, truth)[0]
    say(f"Relative error against the phantom: reconstruction {error:.3f}, "
        f"adjoint (best scaled) {adjoint_error:.3f}")  # fmt: skip
    reg = regularised(A, weight * scan.kspace, rec, truth, devices, args, say)
    if jax.process_index() != 0:
        return 0
    path = output_path(args.out)
    images = {"adjoint, best scaled": adjoint, "CG-SENSE": rec.image}
    if reg is not None:
        images[reg.label] = reg.image
    if args.scan and jax.process_count() == 1:
        estimated = from_scanner_file(scan, path.with_name("scan.h5"), truth, devices, args, say)
        images["from scan.h5, estimated maps"] = estimated
    elif args.scan:
        say("The scanner-file path runs in one process: skipped with --processes > 1.")
    title = (
        f"CG-SENSE, {args.size}×{args.size} from {args.coils} coils × {args.spokes} spokes "
        f"× {args.readouts} readouts\n{args.iters} iterations on {len(devices)} "
        f"{devices[0].platform} devices: compile {rec.compile_time:.2f} s, "
        f"solve {rec.solve_time:.3f} s"
    )
    if reg is not None:
        title += (f"\n{reg.label}, {reg.iterations} (λ = {reg.lamda:.3g}): compile "
                  f"{reg.compile_time:.2f} s, solve {reg.solve_time:.3f} s")  # fmt: skip
    objective = None if reg is None else (reg.solver, reg.objective)
    if save_figure(figure(truth, images, rec.residuals, title, objective), path, say):
        say(f"Saved the figure (truth, adjoint, reconstructions, errors) to {path.resolve()}")
    return 0


def regularised(
    A: jl.NamedLinop,
    data: np.ndarray,
    rec: Reconstruction,
    truth: np.ndarray,
    devices: Sequence[Device],
    args: argparse.Namespace,
    say: Say,
) -> cs.Regularised | None:
    """With `--reg`, the regularised reconstruction of `data` (`jaxlinops._demo_cs`), its
    error and PSNR said next to CG-SENSE's; None without."""
    if args.reg == "none":
        return None
    reg = cs.regularise(A, data, rec.adjoint, devices, args, say)
    (error, psnr), (cg_error, cg_psnr) = quality(reg.image, truth), quality(rec.image, truth)
    say(f"Regularised against the phantom: {reg.label} {error:.3f} ({psnr:.1f} dB PSNR), "
        f"CG-SENSE {cg_error:.3f} ({cg_psnr:.1f} dB)")  # fmt: skip
    return reg


class Scan(NamedTuple):
    """The simulated acquisition: k-space `(C, S, R)` with correlated coil noise, and a
    noise scan `(C, N)` of the same noise."""

    kspace: np.ndarray
    noise: np.ndarray


def coil_noise(rng: np.random.Generator, coils: int, samples: int, sigma: float) -> np.ndarray:
    r"""`(coils, samples)` complex Gaussian noise of standard deviation `sigma` per coil,
    correlated between neighbouring coils: $\sigma M n$ with $n$ white and $M$ the Cholesky
    factor of $(R + 0.1 I) / 1.1$, $R$ one on the diagonal and 0.3 between neighbours."""
    offsets = np.abs(np.subtract.outer(np.arange(coils), np.arange(coils)))
    correlation = np.where(offsets == 0, 1.0, np.where(offsets == 1, 0.3, 0.0))
    M = np.linalg.cholesky(correlation + 0.1 * np.eye(coils)) / np.sqrt(1.1)
    white = rng.standard_normal((2, coils, samples)) / np.sqrt(2)
    return (sigma * M @ (white[0] + 1j * white[1])).astype(np.complex64)


def from_scanner_file(
    scan: Scan, path: Path, truth: np.ndarray, devices: Sequence[Device], args, say: Say
) -> np.ndarray:
    """Write the scan as an ISMRMRD file (radial, with its noise scan) and reconstruct it
    as `jaxlinops-recon` does: prewhitened, with ESPIRiT maps and Pipe–Menon weights
    estimated from the data; the image scaled and phased to the phantom as best it can be
    (estimated maps fix the image only up to a smooth phase and intensity)."""
    from . import io, recon

    locs = radial_trajectory(args.size, args.spokes, args.readouts)
    io.write_ismrmrd(path, scan.kspace, locs=locs, noise=scan.noise, matrix=(args.size,) * 2)
    say(f"Wrote the scan as an ISMRMRD file, {path}; reconstructing it as jaxlinops-recon does:")
    settings = recon.Settings(dcf="pipe-menon", iters=args.iters, devices=devices)
    image = recon.reconstruct(io.read_ismrmrd(path), settings, say=say).image[0]
    aligned = np.abs(image).astype(np.complex64)  # the phantom is real and non-negative
    aligned *= np.vdot(aligned, truth).real / np.vdot(aligned, aligned).real
    say(f"Relative error of the magnitude (best scaled), estimated maps and weights: "
        f"{quality(aligned, truth)[0]:.3f}")  # fmt: skip
    return aligned


def simulate(args: argparse.Namespace, say: Say) -> tuple[np.ndarray, np.ndarray, np.ndarray, Scan]:
    """The phantom, coil maps, trajectory and the scan: exact-DFT k-space `(C, S, R)` with
    correlated coil noise, and a noise scan."""
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
    noise = coil_noise(rng, args.coils, kspace[0].size + NOISE_SAMPLES, float(sigma))
    kspace = kspace + noise[:, NOISE_SAMPLES:].reshape(kspace.shape)
    say(f"Simulated k-space by an exact DFT in {time.perf_counter() - start:.1f} s")
    return truth, maps, locs, Scan(kspace, noise[:, :NOISE_SAMPLES])


NOISE_SAMPLES = 1024  # per coil, in the noise scan


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
    # (eigenvector, eigenvalue): the largest eigenvalue of A^H A is ||A||^2
    lam = jl.alg.power_method(A.N, v_init=np.ones((n, n), np.complex64), max_iters=30)[1]
    weight = (weight / np.sqrt(float(lam))).astype(np.float32)
    say(f"Normalised A by the power method: ||A||^2 was {float(lam):.4g}")
    return jl.Diagonal(weight, "C S R", broadcast_dims="C") @ F @ S, weight


class Reconstruction(NamedTuple):
    """What `reconstruct` returns (numpy arrays on process 0)."""

    image: np.ndarray  # CG-SENSE's solution
    adjoint: np.ndarray  # A^H sqrt(w) y
    residuals: np.ndarray  # CG's residual norm per iteration (NaN after it stopped)
    compile_time: float  # seconds, the jitted solve
    solve_time: float


def reconstruct(
    A: jl.NamedLinop,
    data: np.ndarray,
    devices: Sequence[Device],
    args: argparse.Namespace,
    say: Say,
) -> Reconstruction:
    """CG on $A^H A x = A^H (\\sqrt{w} y)$ with $A^H A$ split by coils over `devices`."""
    AN = jl.create_batched_linop(A.N, jl.BatchSpec({"C": 1}, device_matrix=devices))
    assert AN.mesh is not None  # a device matrix gives a mesh
    processes = f" in {jax.process_count()} processes" if jax.process_count() > 1 else ""
    say(f"Devices: {len(devices)} × {devices[0].platform}{processes}; mesh {dict(AN.mesh.shape)}")
    b = A.H(data)
    cg = jl.alg.conjugate_gradients
    if jax.process_count() == 1:  # one progress bar (a tqdm bar when tqdm is installed)
        say(f"Solving CG-SENSE, {args.iters} iterations, with a progress bar:")
        start = time.perf_counter()
        cg(AN, b, max_num_iters=args.iters, progress=True)
        say(f"With a progress bar (compiling included): {time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    solve = jax.jit(
        lambda AN, b: cg(AN, b, max_num_iters=args.iters, progress=False, return_info=True)
    )
    compiled = solve.lower(AN, b).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(compiled(AN, b))
    solve_time = time.perf_counter() - start
    say(f"As one jitted program: compile {compile_time:.2f} s, solve "
        f"{solve_time:.3f} s ({_local(result.num_iters)} iterations)")  # fmt: skip
    residuals = _local(result.residual_norms)
    return Reconstruction(_local(result.x), np.asarray(b), residuals, compile_time, solve_time)


# --8<-- [end:recon]


def _local(x: jax.Array) -> np.ndarray:
    """A replicated array's value in this process (also when it spans processes)."""
    return np.asarray(x.addressable_data(0))


if __name__ == "__main__":
    raise SystemExit(main())
