"""Factories for Interpolate: 1-D, 2-D with batch and per-axis widths, zero padding with the
spline kernel, and the adjoint in 3-D.

The points sit at fractional offsets in [0.2, 0.8] from the grid, away from the kernel's
kinks and support edges, so finite differences w.r.t. `locs` are smooth.
"""

import numpy as np
from helpers import operator_factory, real_dtype

import jaxlinops as jl


def _locs(getkey, grid, points, dtype):
    rng = np.random.default_rng(getkey())
    whole = rng.integers(0, np.array(grid) - 1, size=(*points, len(grid)))
    locs = whole + rng.uniform(0.2, 0.8, size=whole.shape)
    return locs.astype(real_dtype(dtype))


@operator_factory
def make_interp_1d(getkey, dtype):
    locs = _locs(getkey, (10,), (5,), dtype)
    op = jl.Interpolate(locs, (10,), "C", "K", "N", kernel_params={"beta": 2.0})
    return op, (2, 10)


@operator_factory
def make_interp_2d_batch(getkey, dtype):
    locs = _locs(getkey, (6, 5), (2, 3), dtype)
    op = jl.Interpolate(locs, (6, 5), "C", "R K", width=(3.0, 2.5), norm=2)
    return op, (2, 6, 5)


@operator_factory
def make_interp_2d_zero_spline(getkey, dtype):
    locs = _locs(getkey, (5, 6), (4,), dtype)
    op = jl.Interpolate(locs, (5, 6), width=3, kernel="spline", pad_mode="zero")
    return op, (2, 5, 6)


@operator_factory
def make_interp_adjoint(getkey, dtype):
    locs = _locs(getkey, (4, 3, 4), (5,), dtype)
    op = jl.Interpolate(locs, (4, 3, 4), "C", "K", width=2.0)
    return op.H, (2, 5)
