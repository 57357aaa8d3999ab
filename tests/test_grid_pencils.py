"""Pencils: two grid dims split at once, each over its own axis of a 2-D device mesh
(`create_batched_linop(A, BatchSpec({"Nx": tx, "Ny": ty}, device_matrix=2-D))`).

Each case computes the forward, adjoint and normal in one compiled program, compares them
with numpy (Cartesian SENSE, convolution) or with the unsplit operator (NUFFT, whose
gridding and Toeplitz normal are tested against exact DFTs elsewhere), and runs the dot
test on the same outputs; even and ragged blocks, 2x2, 2x4 and 3x2 meshes. The compiled
programs transpose (`all-to-all`) and exchange halos (`collective-permute`) but gather
nothing. Splits a pencil cannot do (an FFT of two split dims and no whole one) are refused
by name.
"""

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_refusal, rand
from test_grid_coils import check
from test_grid_points import nufft
from test_grid_split import conv_chain, conv_reference, sense

import jaxlinops as jl

C128 = jnp.complex128


def pencil(A, tiles, shape):
    """`A` split along the dims of `tiles` over a device matrix of `shape` (one axis per
    dim, in order)."""
    devices = np.array(jax.devices()[: math.prod(shape)]).reshape(shape)
    B = jl.create_batched_linop(A, jl.BatchSpec(tiles, device_matrix=devices))
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.grids == 2
    return B


def against_numpy(A, B, x, y, forward, adjoint, exchange, grid, mesh):
    """`check` of B against the numpy `forward` and `adjoint`; its compiled program has the
    collective `exchange`, and no all-gather where the grid divides evenly (ragged
    boundaries reshard)."""
    Ax = forward(np.asarray(x))
    _, text = check(A, B, x, y, (Ax, adjoint(np.asarray(y)), adjoint(Ax)))
    assert exchange in text
    if all(n % m == 0 for n in grid for m in mesh):
        assert "all-gather" not in text


@pytest.mark.parametrize(
    "shape, tiles, mesh",
    [
        ((8, 4, 6), {"Nx": 4, "Ny": 2}, (2, 2)),  # even blocks
        ((5, 7, 4), {"Nx": 3, "Ny": 2}, (2, 4)),  # ragged along both: 3+2 and 2+2+2+1
        ((6, 5, 4), {"Ny": 3, "Nz": 2}, (2, 2)),  # the last two dims; ragged Ny
        ((7, 6, 5), {"Nz": 3, "Nx": 3}, (2, 3)),  # spec order != dim order; ragged
    ],
    ids=["even-2x2", "ragged-2x4", "yz-2x2", "zx-2x3"],
)
def test_pencil_sense_equals_numpy(shape, tiles, mesh):
    """A 3-D Cartesian SENSE operator: the FFT trades each split dim with the third, whole
    one, so the output is split along two k-space dims."""
    A, forward, adjoint = sense(shape)
    x, y = rand(1, shape), rand(2, (3, *shape))
    B = pencil(A, tiles, mesh)
    against_numpy(A, B, x, y, forward, adjoint, "all-to-all", shape, mesh)


@pytest.mark.parametrize(
    "kernel, grid, tiles, mesh, mode",
    [
        ((3, 3), (8, 6), {"Nx": 4, "Ny": 2}, (2, 3), "circular"),
        ((5, 3), (9, 7), {"Nx": 3, "Ny": 4}, (3, 2), "zeros"),  # ragged both ways, halo 2
    ],
    ids=["circular-2x3", "zeros-ragged-3x2"],
)
def test_pencil_convolution_equals_the_dense_matrix(kernel, grid, tiles, mesh, mode):
    """A 2-D convolution with both dims split: halos along each (the corners come along
    with the second exchange), no FFT."""
    A = conv_chain(kernel, grid, mode)
    forward, adjoint = conv_reference(A, grid, mode == "circular")
    x, y = rand(1, (3, *grid)), rand(2, (3, *grid))
    B = pencil(A, tiles, mesh)
    against_numpy(A, B, x, y, forward, adjoint, "collective-permute", grid, mesh)


@pytest.mark.parametrize(
    "grid, points, tiles, mesh, toeplitz",
    [
        ((8, 8, 6), (24, 3), {"Nx": 4, "Ny": 4}, (2, 2), False),
        ((8, 8, 6), (10, 3), {"Nx": 4, "Ny": 4}, (2, 2), "dcf"),  # ragged spokes
        ((10, 8, 6), (20, 2), {"Nx": 4, "Nz": 3}, (3, 2), True),  # ragged padded grid
        ((16, 16, 8), (16, 4), {"Nx": 8, "Ny": 4}, (2, 4), True),
    ],
    ids=["xy-2x2", "xy-2x2-dcf", "xz-ragged-3x2-toeplitz", "xy-2x4-toeplitz"],
)
def test_pencil_nufft_equals_the_operator(grid, points, tiles, mesh, toeplitz):
    """A 3-D NUFFT: the points bucketed by the block of both split grid dims, its output
    split along the spokes over all devices; with `toeplitz`, its normal is the split
    Toeplitz embedding (both of its FFTs and the kernel split as pencils); with "dcf",
    weights on the points follow the NUFFT (split along the spokes over both mesh axes
    together)."""
    A = nufft(grid, points, seed=2, toeplitz=toeplitz is True)
    if toeplitz == "dcf":
        A = jl.Diagonal(jnp.abs(rand(3, points)), ("C", "R", "K"), "C") @ A
    B = pencil(A, tiles, mesh)
    assert (B.normal_split is not None) == (toeplitz is True)
    x, y = rand(1, (2, *grid)), rand(2, (2, *points))
    want = jax.jit(lambda A, x, y: (A(x), A.H(y), A.N(x)))(A, x, y)
    _, text = check(A, B, x, y, want)
    assert "all-to-all" in text and "collective-permute" in text
    even = all(n % m == 0 for n in grid for m in mesh) and points[0] % math.prod(mesh) == 0
    if even:  # (ragged boundaries reshard)
        assert "all-gather" not in text


def test_pencil_with_coils_on_a_3d_mesh():
    """Two grid dims and the coils, each over one axis of a 2x2x2 mesh: the coil sum adds
    the blocks' partial sums across the coil axis."""
    shape = (6, 4, 5)
    A, forward, adjoint = sense(shape, coils=4)
    devices = np.array(jax.devices()).reshape(2, 2, 2)
    B = jl.create_batched_linop(A, jl.BatchSpec({"Nx": 3, "C": 2, "Ny": 2}, device_matrix=devices))
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.batch is not None
    x, y = rand(1, shape), rand(2, (4, *shape))
    against_numpy(A, B, x, y, forward, adjoint, "all-reduce", shape, (2, 2, 2))


def test_pencil_refusals_name_the_operator_and_dims():
    # a 2-D FFT of two split dims has no whole transformed dim to trade with
    A, _, _ = sense((8, 6))
    with pytest.raises(ValueError, match="held whole") as error:
        pencil(A, {"Nx": 4, "Ny": 3}, (2, 2))
    assert_refusal(error.value, A, "Ny")
    # a grid dim of the output split with one of the input
    A, _, _ = sense((6, 4, 5))
    with pytest.raises(ValueError, match="output only") as error:
        pencil(A, {"Nx": 3, "Ky": 2}, (2, 2))
    assert_refusal(error.value, A, "Nx")


def test_pencil_normal_returns_to_the_input_layout():
    """The inverse FFT of a pencil normal trades the split dims back in the reverse order of
    the forward FFT, so $A^H A$ leaves its output split as its input: a CG vector added to
    it (`N(v) + v`) needs no resharding, only the four transposes of the two 3-D FFTs."""
    A, _, _ = sense((8, 4, 6), coils=2)
    B = pencil(A, {"Nx": 4, "Ny": 2}, (2, 2))
    spec = jax.sharding.PartitionSpec("Nx", "Ny")
    v = jax.device_put(rand(1, (8, 4, 6)), jax.sharding.NamedSharding(B.mesh, spec))
    step = jax.jit(lambda B, v: B.N(v) + v)
    assert step(B, v).sharding.spec[:2] == ("Nx", "Ny")
    text = step.lower(B, v).compile().as_text()
    assert len(re.findall(r"= \S.* all-to-all\(", text)) == 4
