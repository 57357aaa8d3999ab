"""`jaxlinops-recon INPUT.h5 -o OUTPUT` (also `python -m jaxlinops.recon`): read raw data,
prewhiten, estimate coil maps and density weights, solve CG-SENSE (or, with `--reg`,
ℓ1-wavelet, total variation or locally low rank) across the devices found, and write the
image (NIfTI or `.npy`) and a PNG, with a summary of the steps."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax

from .. import io
from .._version import __version__
from . import _output as output, _pipeline as pipeline, _regularise as regularise
from ._steps import Timeline


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="jaxlinops-recon",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = p.add_argument
    add("input", type=Path, help="raw data: ISMRMRD HDF5, or fastMRI-style HDF5 (a `kspace` "
        "dataset)")  # fmt: skip
    add("-o", "--output", type=Path, required=True, help="the image: .nii, .nii.gz or .npy")
    add("--format", choices=("auto", "ismrmrd", "fastmri"), default="auto",
        help="the input's format (auto: fastMRI when the file has a `kspace` dataset)")  # fmt: skip
    add("--maps", choices=pipeline.MAPS, default="espirit", help="coil-map estimator")
    add("--dcf", default="auto", help="density compensation: auto, pipe-menon or radial")
    add("--calib-width", type=int, default=24, help="k-space centre used for the coil maps")
    add("--reg", choices=pipeline.REGULARISERS, default="none", help="a prior: "
        "l1-wavelet (FISTA), tv (total variation, ADMM) or llr (locally low rank, "
        "FISTA); none: CG-SENSE")  # fmt: skip
    add("--lamda", type=float, help="the prior's weight λ as a fraction of the largest "
        "magnitude of A^H y in its domain (default: "
        + ", ".join(f"{f:g} for {r}" for r, f in regularise.LAMDA.items()) + ")")  # fmt: skip
    add("--iters", type=int, help=f"iterations (default: {pipeline.CG_ITERS} for CG, "
        + ", ".join(f"{n} for {r}" for r, n in regularise.ITERS.items())
        + f"; ADMM's each with {regularise.ADMM_CG_ITERS} CG iterations)")  # fmt: skip
    add("--devices", type=int, help="devices to split across (default: all found)")
    add("--magnitude", action="store_true", help="write |x| (float32) instead of complex")
    add("--no-png", action="store_true", help="do not write OUTPUT's PNG")
    add("--no-progress", action="store_true", help="no progress bars")
    return p


def read(path: Path, kind: str) -> io.RawData:
    """The raw data in `path`, by `kind` or (auto) by its datasets."""
    if kind == "auto":
        import h5py

        with h5py.File(path, "r") as f:
            kind = "fastmri" if "kspace" in f else "ismrmrd"
    return io.read_fastmri(path) if kind == "fastmri" else io.read_ismrmrd(path)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    say = print
    devices = jax.devices()[: args.devices]
    try:
        output.image_format(args.output)
        settings = pipeline.Settings(
            maps=args.maps, dcf=args.dcf, calib_width=args.calib_width, reg=args.reg,
            lamda=args.lamda, iters=args.iters, devices=devices,
            progress=False if args.no_progress else None,
        )  # fmt: skip
    except ValueError as error:
        parser().error(str(error))
    say(f"jaxlinops {__version__}, jax {jax.__version__}; {len(devices)} × {devices[0].platform}")
    start = time.perf_counter()
    timeline = Timeline(say)
    with timeline.step(f"reading {args.input.name}"):
        raw = read(args.input, args.format)
    result = pipeline.reconstruct(raw, settings, say, timeline)
    with timeline.step(f"writing {args.output.name}"):
        output.write_image(args.output, result.image, raw.fov_mm, args.magnitude)
        if not args.no_png:
            png = args.output.with_name(args.output.name.split(".")[0] + ".png")
            title = (f"{args.input.name}\n{settings.method}, {args.maps} maps, "
                     f"{settings.iterations} iterations")  # fmt: skip
            if output.write_png(png, result.image, title, say):
                say(f"    wrote {png}")
    say(timeline.summary())
    say(f"Done in {time.perf_counter() - start:.1f} s (including compilation): {args.output}")
    return 0
