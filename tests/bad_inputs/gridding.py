"""Bad inputs of NUFFT, Interpolate, Sampling and their functional kernels (nufft_plan,
nufft, nufft_adjoint, interpolate, interpolate_adjoint, index, index_adjoint).

Eagerly (concrete values) each raises a clear error from jaxlinops. Under `jit`, with
traced values: non-finite points and points outside the grid with `pad_mode="zero"` give
NaN in NUFFT (interpolate mode) and Interpolate; out-of-range indices (Sampling, index)
and non-finite points of a sampling-mode NUFFT raise through `equinox.error_if`.
"""

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

from . import NaNOrError, Raises

F = jl.functional
LOCS = np.array([[0.5, -1.0], [2.0, 3.5], [-3.0, 1.25]])  # cycles per FOV on (8, 8)
GRID_LOCS = np.array([[0.5, 1.0], [2.0, 3.5], [6.0, 1.25]])  # grid units on (8, 8)
NAN_LOCS = np.array([[0.5, -1.0], [np.nan, 3.5], [-3.0, 1.25]])
INF_LOCS = np.array([[0.5, -1.0], [np.inf, 3.5], [-3.0, 1.25]])
OUTSIDE = np.array([[0.5, 1.0], [8.5, 3.5], [6.0, 1.25]])  # 8.5 > N - 1 = 7
IMAGE = jnp.ones((8, 8), jnp.complex128)
POINTS = jnp.ones((3,), jnp.complex128)
IDX = (np.array([0, 3, 1], np.int32), np.array([4, 0, 2], np.int32))
PLAN = F.nufft_plan(LOCS, (8, 8))


def nufft(**kwargs):
    return lambda: jl.NUFFT(**({"locs": LOCS, "grid_size": (8, 8), "output_shape": "K"} | kwargs))


def interp(**kwargs):
    return lambda: jl.Interpolate(**({"locs": GRID_LOCS, "grid_size": (8, 8)} | kwargs))


def traced(fn, *args):
    """`fn` jitted, every argument traced."""
    return lambda: jax.jit(fn)(*args)


def sampling(i, v):
    return jl.Sampling((i,), (6,), "K", "N")(v)


CASES = [
    # ------------------------------------------------------------------ NUFFT
    Raises("gridding-nufft-eps-zero", nufft(eps=0.0), ValueError, r"`NUFFT`: eps must be in"),
    Raises("gridding-nufft-eps-one", nufft(eps=1.0), ValueError, r"`NUFFT`: eps must be in"),
    Raises("gridding-nufft-eps-nan", nufft(eps=float("nan")), ValueError, r"`NUFFT`: eps must"),
    Raises("gridding-nufft-eps-string", nufft(eps="1e-3"), TypeError, r"`NUFFT`: eps must be"),
    Raises(
        "gridding-nufft-eps-and-width",
        nufft(eps=1e-3, width=6.0),
        ValueError,
        r"`NUFFT`: give either eps or \(oversamp, width\)",
    ),
    Raises(
        "gridding-nufft-eps-below-single-precision",
        nufft(locs=LOCS.astype(np.float32), eps=1e-7, backend="jax"),
        ValueError,
        r"`NUFFT`: eps=1e-07 is below what complex64 delivers",
    ),
    Raises(
        "gridding-nufft-eps-sampling",
        nufft(eps=1e-3, mode="sampling"),
        ValueError,
        r"`NUFFT`: eps applies only to mode='interpolate'",
    ),
    Raises("gridding-nufft-backend", nufft(backend="gpu"), ValueError, r"`NUFFT`: unknown backend"),
    Raises(
        "gridding-nufft-backend-sampling",
        nufft(mode="sampling", backend="pallas"),
        ValueError,
        r"`NUFFT`: mode='sampling' runs in JAX; got backend='pallas'",
    ),
    Raises(
        "gridding-nufft-plan-backend",
        lambda: F.nufft_plan(LOCS, (8, 8), backend=3),
        ValueError,
        r"`nufft_plan`: unknown backend 3",
    ),
    Raises("gridding-nufft-nan-locs", nufft(locs=NAN_LOCS), ValueError, r"`NUFFT`: locs .*NaN"),
    Raises(
        "gridding-nufft-complex-locs", nufft(locs=LOCS + 0j), TypeError, r"`NUFFT`: locs .*real"
    ),
    Raises(
        "gridding-nufft-locs-dims", nufft(grid_size=(8, 8, 8)), ValueError, r"`NUFFT`: .*D = len"
    ),
    Raises(
        "gridding-nufft-grid-size-not-integral",
        nufft(grid_size=(8.7, 8)),
        ValueError,
        r"`NUFFT\(grid_size=...\)` expects integer sizes; got 8.7",
    ),
    Raises(
        "gridding-nufft-grid-size-zero",
        nufft(grid_size=(0, 8)),
        ValueError,
        r"`NUFFT\(grid_size=...\)` expects sizes of at least 1",
    ),
    Raises(
        "gridding-nufft-oversamp-string",
        nufft(oversamp="two"),
        TypeError,
        r"`NUFFT`: oversamp must be a real number; got 'two'",
    ),
    Raises(
        "gridding-nufft-oversamp-below-one",
        nufft(oversamp=0.9),
        ValueError,
        r"`NUFFT`: oversamp must be a finite number >= 1.0; got 0.9",
    ),
    Raises(
        "gridding-nufft-small-grid",
        nufft(grid_size=(2, 8)),
        ValueError,
        r"`NUFFT`: width=4 .* padded grid .* = \(2, 10\) .*grid_size=\(2, 8\)",
    ),
    Raises(
        "gridding-nufft-width-without-beta",
        nufft(width=1.0),
        ValueError,
        r"`NUFFT`: width 1.0 and oversamp 1.25 give no real Kaiser–Bessel beta",
    ),
    Raises("gridding-nufft-mode", nufft(mode="nearest"), ValueError, r"`NUFFT`: unknown mode"),
    Raises(
        "gridding-nufft-apodize-shape",
        nufft(apodize_weights=np.ones((8, 7))),
        ValueError,
        r"`NUFFT`: apodize_weights must be a real array of shape grid_size",
    ),
    Raises(
        "gridding-nufft-toeplitz-oversamp-small",
        nufft(toeplitz=True, toeplitz_oversamp=1.5),
        ValueError,
        r"`NUFFT`: toeplitz_oversamp=1.5 embeds",
    ),
    Raises(
        "gridding-nufft-toeplitz-oversamp-string",
        nufft(toeplitz_oversamp="2"),
        TypeError,
        r"`NUFFT`: toeplitz_oversamp must be a real number",
    ),
    Raises(
        "gridding-nufft_plan-grid-size-not-integral",
        lambda: F.nufft_plan(LOCS, (8, 7.5)),
        ValueError,
        r"`nufft_plan\(grid_size=...\)` expects integer sizes; got 7.5",
    ),
    Raises(
        "gridding-nufft-input-shape",
        lambda: F.nufft(jnp.ones((8, 7)), PLAN),
        ValueError,
        r"`nufft`: expected the last 2 axes",
    ),
    Raises(
        "gridding-nufft_adjoint-input-shape",
        lambda: F.nufft_adjoint(jnp.ones((4,)), PLAN),
        ValueError,
        r"`nufft_adjoint`: expected the last 1 axes",
    ),
    NaNOrError(
        "gridding-nufft-nan-locs-jit",
        traced(lambda p, x: jl.NUFFT(p, (8, 8), "K")(x), NAN_LOCS, IMAGE),
        r"NUFFT",
    ),
    NaNOrError(
        "gridding-nufft-adjoint-inf-locs-jit",
        traced(lambda p, y: jl.NUFFT(p, (8, 8), "K").H(y), INF_LOCS, POINTS),
        r"NUFFT",
    ),
    NaNOrError(
        "gridding-nufft-toeplitz-nan-locs-jit",
        traced(lambda p, x: jl.NUFFT(p, (8, 8), "K", toeplitz=True).N(x), NAN_LOCS, IMAGE),
        r"NUFFT",
    ),
    NaNOrError(
        "gridding-nufft-sampling-mode-nan-locs-jit",
        traced(lambda p, x: jl.NUFFT(p, (8, 8), "K", mode="sampling")(x), NAN_LOCS, IMAGE),
        r"`NUFFT`: locs contain NaN or Inf",
    ),
    NaNOrError(
        "gridding-nufft-functional-nan-locs-jit",
        traced(lambda p, x: F.nufft(x, F.nufft_plan(p, (8, 8))), NAN_LOCS, IMAGE),
        r"nufft_plan",
    ),
    # ------------------------------------------------------------------ Interpolate
    Raises(
        "gridding-interp-grid-size-not-integral",
        interp(grid_size=(8, 8.5)),
        ValueError,
        r"`Interpolate\(grid_size=...\)` expects integer sizes; got 8.5",
    ),
    Raises(
        "gridding-interp-nan-locs",
        interp(locs=NAN_LOCS),
        ValueError,
        r"`Interpolate`: locs contain NaN",
    ),
    Raises(
        "gridding-interp-zero-padding-outside",
        interp(locs=OUTSIDE, pad_mode="zero"),
        ValueError,
        r"`Interpolate`: with pad_mode='zero' the points must lie in \[0, N - 1\]",
    ),
    Raises(
        "gridding-interp-beta-not-finite",
        interp(kernel_params={"beta": np.nan}),
        ValueError,
        r"`Interpolate`: kernel_params\['beta'\] must be a finite number",
    ),
    Raises(
        "gridding-interp-width-string",
        interp(width="4"),
        TypeError,
        r"`Interpolate`: width must be a real number; got '4'",
    ),
    Raises(
        "gridding-interp-width-exceeds-grid",
        interp(width=9.0),
        ValueError,
        r"`Interpolate`: the kernel width .* must not exceed the grid size",
    ),
    Raises(
        "gridding-interp-norm-string",
        interp(norm="2"),
        ValueError,
        r"`Interpolate`: norm must be 1 or 2; got '2'",
    ),
    NaNOrError(
        "gridding-interp-nan-locs-jit",
        traced(lambda p, x: jl.Interpolate(p, (8, 8), norm=2)(x), NAN_LOCS, IMAGE),
        r"Interpolate",
    ),
    NaNOrError(
        "gridding-interp-adjoint-inf-locs-jit",
        traced(lambda p, y: jl.Interpolate(p, (8, 8)).H(y), INF_LOCS, POINTS),
        r"Interpolate",
    ),
    NaNOrError(
        "gridding-interp-zero-padding-outside-jit",
        traced(lambda p, x: jl.Interpolate(p, (8, 8), pad_mode="zero")(x), OUTSIDE, IMAGE),
        r"Interpolate",
    ),
    # ------------------------------------------------------------------ interpolate kernels
    Raises(
        "gridding-interpolate-nan-locs",
        lambda: F.interpolate(IMAGE, NAN_LOCS),
        ValueError,
        r"`interpolate`: locs contain NaN",
    ),
    Raises(
        "gridding-interpolate-kernel",
        lambda: F.interpolate(IMAGE, GRID_LOCS, kernel="gauss"),
        ValueError,
        r"`interpolate`: unknown kernel 'gauss'",
    ),
    Raises(
        "gridding-interpolate-zero-padding-outside",
        lambda: F.interpolate(IMAGE, OUTSIDE, pad_mode="zero"),
        ValueError,
        r"`interpolate`: with pad_mode='zero'",
    ),
    Raises(
        "gridding-interpolate_adjoint-grid-size-not-integral",
        lambda: F.interpolate_adjoint(POINTS, GRID_LOCS, (8, 7.2)),
        ValueError,
        r"`interpolate_adjoint\(grid_size=...\)` expects integer sizes; got 7.2",
    ),
    Raises(
        "gridding-interpolate_adjoint-vals-shape",
        lambda: F.interpolate_adjoint(jnp.ones(4), GRID_LOCS, (8, 8)),
        ValueError,
        r"`interpolate_adjoint`: the last axes of `vals` must be the locs batch shape",
    ),
    NaNOrError(
        "gridding-interpolate-zero-padding-outside-jit",
        traced(lambda p, x: F.interpolate(x, p, pad_mode="zero"), OUTSIDE, IMAGE),
        r"interpolate",
    ),
    NaNOrError(
        "gridding-interpolate_adjoint-nan-locs-jit",
        traced(lambda p, y: F.interpolate_adjoint(y, p, (8, 8), kernel="spline"), NAN_LOCS, POINTS),
        r"interpolate_adjoint",
    ),
    # ------------------------------------------------------------------ Sampling
    Raises(
        "gridding-sampling-index-too-large",
        lambda: jl.Sampling(IDX, (3, 5)),
        ValueError,
        r"`Sampling`: indices of axis 0 must lie in \[0, 2\] .* got values in \[0, 3\]",
    ),
    Raises(
        "gridding-sampling-negative-index",
        lambda: jl.Sampling((np.array([0, -1]),), (4,)),
        ValueError,
        r"`Sampling`: indices of axis 0 must lie in \[0, 3\] .* got values in \[-1, 0\]",
    ),
    Raises(
        "gridding-sampling-input-size-not-integral",
        lambda: jl.Sampling(IDX, (4.5, 5)),
        ValueError,
        r"`Sampling\(input_size=...\)` expects integer sizes; got 4.5",
    ),
    Raises(
        "gridding-sampling-float-idx",
        lambda: jl.Sampling((IDX[0].astype(np.float32),), (4,)),
        TypeError,
        r"`Sampling\(idx=...\)`: `idx\[0\]` must be integer",
    ),
    Raises(
        "gridding-sampling-from_mask-not-bool",
        lambda: jl.Sampling.from_mask(np.ones((3, 3))),
        TypeError,
        r"`Sampling.from_mask` expects a boolean mask",
    ),
    Raises(
        "gridding-sampling-from_stacked_idx-dim",
        lambda: jl.Sampling.from_stacked_idx(np.stack(IDX, -1), (4, 5), dim=2),
        ValueError,
        r"`Sampling.from_stacked_idx`: dim=2 is not an axis of `idx` of shape \(3, 2\)",
    ),
    Raises(
        "gridding-sampling-from_stacked_idx-out-of-range",
        lambda: jl.Sampling.from_stacked_idx(np.stack(IDX, -1), (4, 4)),
        ValueError,
        r"`Sampling`: indices of axis 1 must lie in \[0, 3\]",
    ),
    NaNOrError(
        "gridding-sampling-index-out-of-range-jit",
        traced(sampling, jnp.array([2, 6]), jnp.arange(6.0)),
        r"`Sampling`: indices of axis 0 must lie in \[0, 5\]",
    ),
    NaNOrError(
        "gridding-sampling-negative-index-jit",
        traced(sampling, jnp.array([-1, 0]), jnp.arange(6.0)),
        r"`Sampling`: indices of axis 0 must lie in \[0, 5\]",
    ),
    NaNOrError(
        "gridding-sampling-from_stacked_idx-out-of-range-jit",
        traced(
            lambda i: jl.Sampling.from_stacked_idx(i, (4, 5)).H(jnp.ones(3)),
            np.stack([IDX[0], np.array([4, 0, 5], np.int32)], -1),
        ),
        r"`Sampling`: indices of axis 1 must lie in \[0, 4\]",
    ),
    # ------------------------------------------------------------------ index kernels
    Raises(
        "gridding-index-out-of-range",
        lambda: F.index(jnp.ones((4, 5)), (IDX[0], IDX[1] + 1)),
        ValueError,
        r"`index`: indices of axis 1 must lie in \[-5, 4\] .* got values in \[1, 5\]",
    ),
    Raises(
        "gridding-index-not-a-tuple",
        lambda: F.index(jnp.ones((4, 5)), jnp.asarray(IDX[0])),
        TypeError,
        r"`index`: `idx` must be a non-empty tuple",
    ),
    Raises(
        "gridding-index-float-idx",
        lambda: F.index(jnp.ones((4, 5)), (IDX[0], IDX[1] + 0.0)),
        TypeError,
        r"`index`: `idx\[1\]` must be an integer array",
    ),
    Raises(
        "gridding-index_adjoint-grid-size-not-integral",
        lambda: F.index_adjoint(jnp.ones(3), IDX, (4, 5.5)),
        ValueError,
        r"`index_adjoint\(grid_size=...\)` expects integer sizes; got 5.5",
    ),
    Raises(
        "gridding-index_adjoint-out-of-range",
        lambda: F.index_adjoint(jnp.ones(3), (IDX[0] - 5, IDX[1]), (4, 5)),
        ValueError,
        r"`index_adjoint`: indices of axis 0 must lie in \[-4, 3\]",
    ),
    NaNOrError(
        "gridding-index-out-of-range-jit",
        traced(lambda i: F.index(jnp.arange(4.0), (i,)), jnp.array([1, 4])),
        r"`index`: indices of axis 0 must lie in \[-4, 3\]",
    ),
    NaNOrError(
        "gridding-index_adjoint-out-of-range-jit",
        traced(lambda i: F.index_adjoint(jnp.ones(2), (i,), (4,)), jnp.array([1, -5])),
        r"`index_adjoint`: indices of axis 0 must lie in \[-4, 3\]",
    ),
]
