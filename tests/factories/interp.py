"""Factories for Interpolate: 1-D, 2-D with batch and per-axis widths, zero padding with the
spline kernel, and the adjoint in 3-D.

`OPTIONS` holds each factory's grid, point shape, batch size and kernel options, and
`data(name, getkey, dtype)` its points: the factories build from both, and
`tests/test_gridding_reference.py` checks each operator against a numpy kernel sum
written from the same table. The points sit at fractional offsets in [0.2, 0.8] from the
grid, away from the kernel's kinks and support edges, so finite differences w.r.t. `locs`
are smooth.
"""

import numpy as np
from helpers import operator_factory, real_dtype

import jaxlinops as jl

OPTIONS = {
    "interp_1d": dict(grid=(10,), points=(5,), batch=2, kernel_params={"beta": 2.0}),
    "interp_2d_batch": dict(grid=(6, 5), points=(2, 3), batch=2, width=(3.0, 2.5), norm=2),
    "interp_2d_zero_spline": dict(
        grid=(5, 6), points=(4,), batch=2, width=3, kernel="spline", pad_mode="zero"
    ),
    "interp_adjoint": dict(grid=(4, 3, 4), points=(5,), batch=2, width=2.0, adjoint=True),
}
KERNEL_OPTIONS = ("width", "kernel", "norm", "pad_mode", "kernel_params")


def data(name, getkey, dtype):
    """The points of factory `name`: `{"locs": [*points, D]}`."""
    grid, points = OPTIONS[name]["grid"], OPTIONS[name]["points"]
    rng = np.random.default_rng(getkey())
    whole = rng.integers(0, np.array(grid) - 1, size=(*points, len(grid)))
    locs = whole + rng.uniform(0.2, 0.8, size=whole.shape)
    return {"locs": locs.astype(real_dtype(dtype))}


def _build(name, getkey, dtype, *dims):
    options = OPTIONS[name]
    kwargs = {k: v for k, v in options.items() if k in KERNEL_OPTIONS}
    return jl.Interpolate(data(name, getkey, dtype)["locs"], options["grid"], *dims, **kwargs)


@operator_factory
def make_interp_1d(getkey, dtype):
    return _build("interp_1d", getkey, dtype, "C", "K", "N"), (2, 10)


@operator_factory
def make_interp_2d_batch(getkey, dtype):
    return _build("interp_2d_batch", getkey, dtype, "C", "R K"), (2, 6, 5)


@operator_factory
def make_interp_2d_zero_spline(getkey, dtype):
    return _build("interp_2d_zero_spline", getkey, dtype), (2, 5, 6)


@operator_factory
def make_interp_adjoint(getkey, dtype):
    return _build("interp_adjoint", getkey, dtype, "C", "K").H, (2, 5)
