"""Factories for NUFFT: 2-D with two point dims, the adjoint with a batch dim, 3-D, the
sampling mode, and a Toeplitz normal with density compensation.

`OPTIONS` holds each factory's grid, point shape, batch size and NUFFT options, and
`data(name, getkey, dtype)` its points (and weights): the factories build from both, and
`tests/test_gridding_reference.py` checks each operator against a numpy NUFFT and the
exact DFT written from the same table. The points are chosen so that their padded-grid
positions sit at fractional offsets in [0.2, 0.8] from the grid, away from the kernel's
support edges, so finite differences w.r.t. the plan's locs are smooth (in sampling mode
within 0.3 of a grid point, away from the rounding boundary).
"""

import numpy as np
from helpers import operator_factory, real_dtype

import jaxlinops as jl

OPTIONS = {
    "nufft_2d": dict(grid=(6, 5), points=(2, 3), batch=None),
    "nufft_2d_batch_H": dict(
        grid=(5, 4), points=(5,), batch=2, oversamp=2.0, width=6.0, adjoint=True
    ),
    "nufft_3d": dict(grid=(4, 4, 3), points=(6,), batch=None, width=3.0),
    "nufft_sampling": dict(grid=(6, 5), points=(7,), batch=2, oversamp=1.5, mode="sampling"),
    "nufft_toeplitz_normal_dcf": dict(
        grid=(5, 4), points=(6,), batch=2, oversamp=2.0, toeplitz=True, dcf=True
    ),
}
NUFFT_OPTIONS = ("oversamp", "width", "mode", "toeplitz")


def data(name, getkey, dtype):
    """The points of factory `name` (`{"locs": [*points, D]}`), with `"dcf"` `[*points]`
    for the density-compensated normal."""
    options = OPTIONS[name]
    grid, points = np.array(options["grid"]), options["points"]
    rng = np.random.default_rng(getkey())
    padded = (grid * options.get("oversamp", 1.25)).astype(int)
    whole = rng.integers(0, padded - 1, size=(*points, len(grid)))
    low, high = (-0.3, 0.3) if options.get("mode") == "sampling" else (0.2, 0.8)
    prepped = whole + rng.uniform(low, high, size=whole.shape)
    out = {"locs": ((prepped - padded // 2) * grid / padded).astype(real_dtype(dtype))}
    if options.get("dcf"):
        dcf = np.random.default_rng(getkey()).uniform(0.5, 1.5, points)
        out["dcf"] = dcf.astype(real_dtype(dtype))
    return out


def _build(name, getkey, dtype, output_shape, **dims):
    options = OPTIONS[name]
    kwargs = {k: v for k, v in options.items() if k in NUFFT_OPTIONS}
    found = data(name, getkey, dtype)
    op = jl.NUFFT(found["locs"], options["grid"], output_shape, **dims, **kwargs)
    return op, found


@operator_factory
def make_nufft_2d(getkey, dtype):
    return _build("nufft_2d", getkey, dtype, "R K", batch_shape=())[0], (6, 5)


@operator_factory
def make_nufft_2d_batch_H(getkey, dtype):
    return _build("nufft_2d_batch_H", getkey, dtype, "K", batch_shape="C")[0].H, (2, 5)


@operator_factory
def make_nufft_3d(getkey, dtype):
    return _build("nufft_3d", getkey, dtype, "K")[0], (4, 4, 3)


@operator_factory
def make_nufft_sampling(getkey, dtype):
    return _build("nufft_sampling", getkey, dtype, "K", batch_shape="C")[0], (2, 6, 5)


@operator_factory
def make_nufft_toeplitz_normal_dcf(getkey, dtype):
    op, found = _build("nufft_toeplitz_normal_dcf", getkey, dtype, "K", batch_shape="C")
    return op.normal(jl.Diagonal(found["dcf"], "C K")), (2, 5, 4)
