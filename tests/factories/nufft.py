"""Factories for NUFFT: 2-D with two point dims, the adjoint with a batch dim, and 3-D.

The points are chosen so that their padded-grid positions sit at fractional offsets in
[0.2, 0.8] from the grid, away from the kernel's support edges, so finite differences
w.r.t. the plan's locs are smooth.
"""

import numpy as np
from helpers import operator_factory, real_dtype

import jaxlinops as jl


def _locs(getkey, grid, points, dtype, oversamp=1.25):
    rng = np.random.default_rng(getkey())
    grid = np.array(grid)
    padded = (grid * oversamp).astype(int)
    whole = rng.integers(0, padded - 1, size=(*points, len(grid)))
    prepped = whole + rng.uniform(0.2, 0.8, size=whole.shape)
    return ((prepped - padded // 2) * grid / padded).astype(real_dtype(dtype))


@operator_factory
def make_nufft_2d(getkey, dtype):
    locs = _locs(getkey, (6, 5), (2, 3), dtype)
    return jl.NUFFT(locs, (6, 5), "R K", batch_shape=()), (6, 5)


@operator_factory
def make_nufft_2d_batch_H(getkey, dtype):
    locs = _locs(getkey, (5, 4), (5,), dtype, oversamp=2.0)
    op = jl.NUFFT(locs, (5, 4), "K", batch_shape="C", oversamp=2.0, width=6.0)
    return op.H, (2, 5)


@operator_factory
def make_nufft_3d(getkey, dtype):
    locs = _locs(getkey, (4, 4, 3), (6,), dtype)
    return jl.NUFFT(locs, (4, 4, 3), "K", width=3.0), (4, 4, 3)


@operator_factory
def make_nufft_toeplitz_normal_dcf(getkey, dtype):
    locs = _locs(getkey, (5, 4), (6,), dtype, oversamp=2.0)
    op = jl.NUFFT(locs, (5, 4), "K", batch_shape="C", oversamp=2.0, toeplitz=True)
    dcf = np.random.default_rng(getkey()).uniform(0.5, 1.5, 6).astype(real_dtype(dtype))
    return op.normal(jl.Diagonal(dcf, "C K")), (2, 5, 4)
