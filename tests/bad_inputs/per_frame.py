"""Bad inputs of per-frame trajectories (a dim in both `batch_shape` and the point dims of
`NUFFT` / `Interpolate`): a frame dim that is not a leading axis of `locs`, no point dim
left within a frame, frame counts that disagree between the data and `locs` (at apply
time, for the operator, its adjoint and the functional kernels), a renaming into a frame
dim, and density weights whose frame axis disagrees with the trajectory."""

import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

from . import Raises

F = jl.functional
LOCS = np.random.default_rng(0).uniform(-3, 3, (3, 4, 2))  # [T, R, 2] on (6, 6)
GRID_LOCS = LOCS + 3


def nufft(locs=LOCS, output_shape="T R", batch_shape="C T", **kwargs):
    return jl.NUFFT(locs, (6, 6), output_shape, batch_shape=batch_shape, backend="jax", **kwargs)


def interp(locs_batch_shape="T R", batch_shape="C T"):
    return jl.Interpolate(GRID_LOCS, (6, 6), batch_shape, locs_batch_shape)


NOT_LEADING = r"per-frame dims \(here \('T',\),.*must be the leading axes of locs"
CASES = [
    Raises(
        "per_frame_nufft_frame_dim_not_leading",
        lambda: nufft(np.swapaxes(LOCS, 0, 1), "R T"),
        ValueError,
        r"`NUFFT.*" + NOT_LEADING,
    ),
    Raises(
        "per_frame_interpolate_frame_dim_not_leading",
        lambda: jl.Interpolate(np.swapaxes(GRID_LOCS, 0, 1), (6, 6), "C T", "R T"),
        ValueError,
        r"`Interpolate.*" + NOT_LEADING,
    ),
    Raises(
        "per_frame_nufft_no_point_dim_left",
        lambda: nufft(LOCS[:, 0], "T"),
        ValueError,
        r"`NUFFT.*must all be distinct.*followed by at least one point dim",
    ),
    Raises(
        "per_frame_nufft_frames_disagree_with_x",
        lambda: nufft()(jnp.ones((2, 4, 6, 6), jnp.complex128)),
        ValueError,
        r"`NUFFT` expected dim T with size 3",
    ),
    Raises(
        "per_frame_nufft_adjoint_frames_disagree_with_y",
        lambda: nufft().H(jnp.ones((2, 2, 4), jnp.complex128)),
        ValueError,
        r"`NUFFT.*` expected dim T with size 3",
    ),
    Raises(
        "per_frame_interpolate_frames_disagree_with_x",
        lambda: interp()(jnp.ones((2, 1, 6, 6))),
        ValueError,
        r"`Interpolate` expected dim T with size 3",
    ),
    Raises(
        "per_frame_functional_nufft_frames_disagree",
        lambda: F.nufft(jnp.ones((2, 6, 6), jnp.complex128), nufft().plan),
        ValueError,
        r"`nufft`.*\(3, 6, 6\)",
    ),
    Raises(
        "per_frame_rename_into_frame_dim",
        lambda: jl.rename(nufft(batch_shape="..."), {"...": ("T",)}),
        ValueError,
        r"`NUFFT.*per-frame dims \('T',\).*differ from the 0 frame axes",
    ),
    Raises(
        "per_frame_toeplitz_weights_disagree_with_frames",
        lambda: nufft(toeplitz=True).normal(jl.Diagonal(jnp.ones((2, 4)), "T R")),
        ValueError,
        r"NUFFT.*'T'",
    ),
]
