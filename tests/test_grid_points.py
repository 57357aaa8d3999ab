"""Gridding on a split grid (`jaxlinops.sharding._grid._points`): a NUFFT, a SENSE operator
built on one and `Interpolate`, split along a grid dim across 2, 3 and 8 simulated devices,
give the forward, adjoint and normal of the unsplit operator (whose own tests compare it
with the exact DFT and dense references), pass the dot test, keep the grid split in the
compiled program (no all-gather), and refuse what they cannot do by name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, assert_refusal, grid_split as split, rand, rtol

import jaxlinops as jl
from jaxlinops.functional._finufft import finufft_available
from jaxlinops.testing import inner

C128 = jnp.complex128


def check_split(A, B, ishape, oshape, dtype=C128):
    """B's forward, adjoint and normal (one compiled program) equal A's (another), and
    pass the dot test <y, B x> = <B^H y, x>."""
    x, y = rand(1, ishape), rand(2, oshape)
    apply = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))
    got = apply(B, x, y)
    for g, want in zip(got, apply(A, x, y)):
        assert_close(g, want, dtype)
    Bx, BHy = got[0], got[1]
    scale = float(
        jnp.linalg.norm(y) * jnp.linalg.norm(Bx) + jnp.linalg.norm(BHy) * jnp.linalg.norm(x)
    )
    assert abs(complex(inner(y, Bx) - inner(BHy, x))) <= rtol(dtype) * scale
    return got


def nufft(grid, points, seed=0, **options):
    """A NUFFT of a C=2 batch at random points spread over the whole spectrum."""
    half = np.asarray(grid) / 2
    locs = np.random.default_rng(seed).uniform(-half, half, (*points, len(grid)))
    dims = "R K"[: 2 * len(points) - 1]
    return jl.NUFFT(locs, grid, dims, batch_shape="C", backend="jax", **options)


@pytest.mark.parametrize(
    "grid, points, devices, dim, mode",
    [
        ((12, 10), (6, 5), 2, "Nx", "interpolate"),
        ((12, 10), (6, 5), 3, "Ny", "interpolate"),  # ragged: 15 padded rows over 3
        ((32, 24), (9, 4), 8, "Nx", "interpolate"),  # ragged points: 9 spokes over 8
        ((12, 10), (6, 5), 3, "Nx", "sampling"),
        ((8, 7, 6), (20,), 3, "Nz", "interpolate"),  # 3-D, one point dim
    ],
    ids=["2d-2", "2d-ragged-3", "2d-8", "2d-sampling-3", "3d-ragged-3"],
)
def test_grid_split_nufft_equals_the_operator(grid, points, devices, dim, mode):
    A = nufft(grid, points, mode=mode)
    B = split(A, devices, dim)
    fwd, _, _ = check_split(A, B, (2, *grid), (2, *points))
    if points[0] % devices == 0:  # (a ragged output is resharded when its padding is cut)
        # the output stays split along the first point dim, one block per device
        assert fwd.sharding.spec[1] == B.names[0]


def test_grid_split_adjoint_nufft_along_its_output_image_dim():
    """`NUFFT.H` split along `Nx`, a dim of its output: the adjoint of the NUFFT split there
    (its input, the points, arrives split along `R`)."""
    A = nufft((12, 10), (6, 5), seed=7).H
    check_split(A, split(A, 3, "Nx"), (2, 6, 5), (2, 12, 10))


def test_grid_split_sense_with_density_weights_and_toeplitz_normal():
    """dcf @ NUFFT @ coil maps split along Ny over 3 devices; and the Toeplitz normal of
    the same SENSE operator, split along Nx."""
    grid, coils = (10, 12), 3
    maps = jl.Dense(rand(3, (coils, *grid)), ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    locs = np.random.default_rng(4).uniform(-5, 5, (7, 6, 2))
    F = jl.NUFFT(locs, grid, "R K", batch_shape="C", backend="jax", toeplitz=True)
    dcf = jl.Diagonal(jnp.asarray(np.random.default_rng(5).random((7, 6))), ("C", "R", "K"), "C")
    A = dcf @ F @ maps
    check_split(A, split(A, 3, "Ny"), grid, (coils, 7, 6))
    S = (F @ maps).N
    check_split(S, split(S, 3, "Nx"), grid, grid)


@pytest.mark.parametrize(
    "grid, devices, dim, pad_mode, kernel, width",
    [
        ((12, 10), 2, "Nx", "circular", "kaiser_bessel", 4.0),
        ((13, 10), 3, "Nx", "zero", "spline", (2.0, 3.0)),  # ragged, zero outside
        ((24, 16), 8, "Ny", "circular", "spline", 2.0),
        ((8, 7, 11), 3, "Nz", "circular", "kaiser_bessel", 3.0),
    ],
    ids=["2d-kb-2", "2d-zero-ragged-3", "2d-8", "3d-ragged-3"],
)
def test_grid_split_interpolate_equals_the_operator(grid, devices, dim, pad_mode, kernel, width):
    rng = np.random.default_rng(2)
    n = np.asarray(grid)
    # circular: points anywhere (taken modulo the grid); zero: inside [0, N - 1]
    locs = rng.uniform(-n / 2, 1.5 * n, (6, 5, len(grid)))
    if pad_mode == "zero":
        locs = rng.uniform(0, n - 1, (6, 5, len(grid)))
        locs[0, 0] = n - 1  # the last grid point: the last slab, the right edge
    A = jl.Interpolate(locs, grid, "C", "R K", width=width, kernel=kernel, pad_mode=pad_mode)
    check_split(A, split(A, devices, dim), (2, *grid), (2, 6, 5))


def test_compiled_grid_split_nufft_exchanges_and_never_gathers_the_grid():
    """A 3-D NUFFT (24x24x16 image, 30x30x20 padded grid) split along Nx over 8 devices:
    its forward and normal transpose slabs (`all-to-all`), exchange halos
    (`collective-permute`) and gather nothing; each device's temporaries are a fraction of
    the unsplit program's (ideally 1/8; measured 0.21-0.28 with the transposes' and the
    halo-extended slab's copies) and of the padded grid."""
    A = nufft((24, 24, 16), (40, 30), seed=3)
    B = split(A, 8, "Nx")
    x = rand(4, (2, 24, 24, 16))
    whole = 2 * 30 * 30 * 20 * 16  # the padded grid of both batch entries, complex128
    for apply in (lambda B, x: B(x), lambda B, x: B.N(x)):
        compiled = jax.jit(apply).lower(B, x).compile()
        text = compiled.as_text()
        assert "all-to-all" in text and "collective-permute" in text
        assert "all-gather" not in text
        temp = compiled.memory_analysis().temp_size_in_bytes
        unsplit = jax.jit(apply).lower(A, x).compile().memory_analysis().temp_size_in_bytes
        assert temp < 0.4 * unsplit and temp < 1.5 * whole < 0.6 * unsplit


def test_grid_split_gridding_refusals_name_the_operator_and_dim():
    # points traced when the operator is built (inside jit) cannot be bucketed
    locs = np.random.default_rng(0).uniform(-4, 4, (10, 2))

    def build(locs):
        A = jl.NUFFT(locs, (8, 8), "R", backend="jax")
        return split(A, 2, "Nx")(jnp.ones((8, 8), C128))

    with pytest.raises(ValueError) as error:
        jax.jit(build)(locs)
    assert_refusal(error.value, jl.NUFFT(locs, (8, 8), "R", backend="jax"), "Nx")
    assert "traced" in str(error.value)
    # per-frame trajectories: each frame has its own points (split along the frame dim)
    F = jl.NUFFT(np.zeros((3, 5, 2)), (8, 8), "T R", batch_shape="T", backend="jax")
    with pytest.raises(ValueError, match="per-frame") as error:
        split(F, 2, "Nx")
    assert_refusal(error.value, F, "Nx")


@pytest.mark.skipif(not finufft_available(), reason="jax-finufft is not installed")
def test_grid_split_of_a_finufft_nufft_is_refused():
    """jax-finufft transforms the whole grid in one call: no steps to run on slabs."""
    A = jl.NUFFT(np.zeros((4, 2)), (8, 8), "R", backend="finufft")
    with pytest.raises(ValueError, match="backend='jax'") as error:
        split(A, 2, "Nx")
    assert_refusal(error.value, A, "Nx")
