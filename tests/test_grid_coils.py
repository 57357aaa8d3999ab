"""SENSE operators split by the image grid and the coils at once, on a 2-D mesh of the
simulated devices (`create_batched_linop(A, BatchSpec({"C": c, "Nx": t}, device_matrix=
devices2d))`: `jaxlinops.sharding._grid` with a batch axis):

- Cartesian SENSE in 2-D and 3-D (distributed FFTs, the coil maps split into (slab, coil
  block) tiles, their adjoint's partial sums added across the coil axis);
- NUFFT SENSE in 2-D (points bucketed by slab) and the Toeplitz normal of a NUFFT SENSE
  (its kernel split by slab only, the maps by slab and coil block);

on meshes of 2 x 4 and 4 x 2 devices, in the order of the spec's dims (coils first or
grid first), with even and ragged slabs and coil blocks. Forward, adjoint and normal come
from one compiled program per case and equal numpy (Cartesian: the maps, mask and
numpy's DFT) or the unsplit operator (NUFFT: tested against the exact DFT elsewhere),
and pass the dot test on those outputs. A 3-D CG-SENSE with the Toeplitz normal solves
as numpy's dense solve. Nested specs (the grid across devices, the coils in a loop on
each device) give the same results with smaller per-device temporaries. Specs the split
cannot do are refused by name.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, assert_refusal, rand, rtol
from test_grid_split import sense

import jaxlinops as jl
from jaxlinops.testing import inner

C128 = jnp.complex128


def mesh(shape):
    return np.array(jax.devices()[: math.prod(shape)]).reshape(shape)


def split(A, tiles, shape):
    B = jl.create_batched_linop(A, jl.BatchSpec(tiles, device_matrix=mesh(shape)))
    assert isinstance(B, jl.sharding.GridSplitLinop)
    return B


def check(A, B, x, y, want=None):
    """B's forward, adjoint and normal (one compiled program) equal `want` (default: A's,
    from another) and pass the dot test <y, B x> = <B^H y, x>. Returns the outputs and
    the compiled program's text."""

    def apply(B, x, y):
        return B(x), B.H(y), B.N(x)

    compiled = jax.jit(apply).lower(B, x, y).compile()
    got = compiled(B, x, y)
    for g, w in zip(got, want if want is not None else jax.jit(apply)(A, x, y)):
        assert_close(g, w, C128)
    Bx, BHy = got[0], got[1]
    scale = float(
        jnp.linalg.norm(y) * jnp.linalg.norm(Bx) + jnp.linalg.norm(BHy) * jnp.linalg.norm(x)
    )
    assert abs(complex(inner(y, Bx) - inner(BHy, x))) <= rtol(C128) * scale
    text = compiled.as_text()
    assert text is not None
    return got, text


@pytest.mark.parametrize(
    "shape, coils, tiles, devices",
    [
        ((8, 6), 4, {"C": 2, "Nx": 2}, (2, 4)),  # even: 2 coil blocks x 4 slabs
        ((10, 6), 3, {"C": 2, "Nx": 3}, (2, 4)),  # ragged: coils 2 + 1, slabs 3,3,3,1
        ((8, 4, 5), 3, {"Nx": 2, "C": 2}, (4, 2)),  # 3-D, grid first, ragged coils
        ((6, 4, 5), 3, {"Nx": 4, "C": 1}, (2, 4)),  # 3-D, the matrix truncated to 2 x 3
    ],
    ids=["2d-even-2x4", "2d-ragged-2x4", "3d-ragged-4x2", "3d-even-2x3"],
)
def test_cartesian_sense_split_by_grid_and_coils_equals_numpy(shape, coils, tiles, devices):
    A, forward, adjoint = sense(shape, coils)
    B = split(A, tiles, devices)
    counts = {d: -(-n // tiles[d]) for d, n in (("C", coils), ("Nx", shape[0]))}
    assert dict(B.mesh.shape) == {"Nx": counts["Nx"], "C": counts["C"]}
    x, y = rand(1, shape), rand(2, (coils, *shape))
    Ax = forward(np.asarray(x))
    (fwd, _, _), text = check(A, B, x, y, (Ax, adjoint(np.asarray(y)), adjoint(Ax)))
    assert "all-to-all" in text  # the distributed FFTs, along the grid axis
    assert "all-reduce" in text  # the maps' adjoint: the coil blocks' partial sums
    if coils % counts["C"] == 0 and shape[1] % counts["Nx"] == 0:
        # nothing gathered; the forward output stays split by coil block and along Ky
        assert "all-gather" not in text
        assert fwd.sharding.spec[:3] == ("C", None, "Nx")
        assert len(fwd.sharding.device_set) == B.mesh.devices.size


def nufft_sense(grid, coils, points, toeplitz, seed=0):
    rng = np.random.default_rng(seed)
    dims = ("Nx", "Ny", "Nz")[: len(grid)]
    maps = jl.Dense(rand(seed + 3, (coils, *grid)), ("C", *dims), dims, ("C", *dims))
    half = np.asarray(grid) / 2
    locs = rng.uniform(-half, half, (*points, len(grid)))
    F = jl.NUFFT(locs, grid, "R K"[: 2 * len(points) - 1], batch_shape="C", backend="jax",
                 toeplitz=toeplitz)  # fmt: skip
    return F @ maps


def test_nufft_sense_split_by_grid_and_coils_equals_the_operator():
    """Coil maps, then the NUFFT (Pad, distributed FFT, points bucketed by slab): ragged
    coils (3 over 2) and slabs (10 over 4)."""
    A = nufft_sense((10, 12), 3, (7, 6), toeplitz=False)
    B = split(A, {"C": 2, "Nx": 3}, (2, 4))
    check(A, B, rand(1, (10, 12)), rand(2, (3, 7, 6)))


def stage_types(op):
    """The types of the stages of the grid splits in `op` (a Chain's, or itself)."""
    splits = [o for o in op.flatten() if isinstance(o, jl.sharding.GridSplitLinop)]
    assert splits, op
    return {type(s).__name__ for B in splits for s in B.stages}


def test_toeplitz_normal_of_nufft_sense_split_by_grid_and_coils():
    """The Toeplitz normal of a NUFFT SENSE operator: as an operator of its own, split
    (its kernel by slab, the maps by slab and coil block), and as the normal of the split
    SENSE operator, which keeps the Toeplitz structure (no gridding stage)."""
    A = nufft_sense((10, 12), 3, (7, 6), toeplitz=True, seed=1)
    S = A.N
    B = split(S, {"Nx": 3, "C": 2}, (4, 2))
    check(S, B, rand(1, (10, 12)), rand(2, (10, 12)))
    B = split(A, {"C": 2, "Nx": 4}, (2, 4))
    check(A, B, rand(1, (10, 12)), rand(2, (3, 7, 6)))
    assert "Points" in stage_types(B)  # the forward grids (so the next line can fail)
    assert "Points" not in stage_types(B.N) and "_Transform" in stage_types(B.N)


def test_cg_sense_3d_toeplitz_on_a_2d_mesh_solves_as_numpy():
    """3-D CG-SENSE, (A^H A + 0.1 I) x = A^H y with the Toeplitz normal, the grid over 4
    devices and the coils over 2: the solution of numpy's dense solve."""
    grid = (8, 12, 4)
    A = nufft_sense(grid, 3, (40,), toeplitz=True, seed=2)
    B = split(A, {"C": 2, "Nx": 2}, (2, 4))
    b = A.H(rand(5, (3, 40)))
    # the regularised normal as a dense matrix, from the unsplit operator's columns
    n = math.prod(grid)
    columns = jnp.eye(n, dtype=C128).reshape(n, *grid)
    N = np.asarray(jax.jit(jax.vmap(A.N))(columns)).reshape(n, n).T + 0.1 * np.eye(n)
    want = np.linalg.solve(N, np.ravel(b)).reshape(grid)

    def solve(op, b):
        N = op.N + 0.1 * jl.Identity(op.N.ishape, op.N.oshape)
        return jl.alg.conjugate_gradients(N, b, max_num_iters=200, gtol=1e-12)

    got = jax.jit(solve)(B, b)
    # CG stops at a residual of 1e-12 |b|; the condition number of N (A^H A is at most
    # ~40 points x 3 coils in norm, 0.1 I below: cond < 1e4) bounds the error left
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7 * float(np.max(np.abs(want))))


def test_grid_and_coil_split_refusals_name_the_operator_and_dims():
    A, _, _ = sense((8, 6), 4)
    # two grid dims at once (pencils)
    with pytest.raises(ValueError, match="pencils") as error:
        split(A, {"Nx": 2, "Ny": 3}, (4, 2))
    assert_refusal(error.value, A, "Ny")
    # two dims on a 1-D device list: which devices hold which coil block is unsaid
    with pytest.raises(ValueError, match="2 axes") as error:
        split(A, {"C": 2, "Nx": 2}, (8,))
    assert_refusal(error.value, A, "Nx")
    # more coil blocks than devices along the coil axis
    with pytest.raises(ValueError, match="4 blocks for 2 devices") as error:
        split(A, {"C": 1, "Nx": 2}, (2, 4))
    assert_refusal(error.value, A, "C")
    # a third dim, a grid dim of the output (the input's is split)
    with pytest.raises(ValueError, match="in its output only") as error:
        jl.create_batched_linop(
            A, jl.BatchSpec({"C": 2, "Nx": 4, "Kx": 4}, device_matrix=mesh((2, 2, 2)))
        )
    assert_refusal(error.value, A, "Nx")


# -- nested specs: the grid across devices, the coils in a loop on each device -------------


def nested(A, grid_tile, devices, coil_tile):
    specs = [
        jl.BatchSpec({"Nx": grid_tile}, device_matrix=jax.devices()[:devices]),
        jl.BatchSpec({"C": coil_tile}),
    ]
    B = jl.create_batched_linop(A, specs)
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.loop is not None
    return B


def test_nested_coil_loop_within_a_grid_split_equals_numpy_and_bounds_memory():
    """Cartesian SENSE, Nx = 10 in 4 slabs, 3 coils in a loop of blocks of 2 (the last
    padded): numpy's forward, adjoint and normal. With 8 coils one at a time, the
    compiled normal's per-device temporaries shrink (measured 0.19 of the unlooped
    split's: one coil image slab at a time instead of eight)."""
    A, forward, adjoint = sense((10, 6), 3)
    x, y = rand(1, (10, 6)), rand(2, (3, 10, 6))
    Ax = forward(np.asarray(x))
    check(A, nested(A, 3, 4, 2), x, y, (Ax, adjoint(np.asarray(y)), adjoint(Ax)))
    A, _, _ = sense((32, 24), 8)
    x = rand(3, (32, 24))

    def temp(B):
        memory = jax.jit(lambda B, x: B.N(x)).lower(B, x).compile().memory_analysis()
        assert memory is not None
        return memory.temp_size_in_bytes

    whole = temp(split(A, {"Nx": 8}, (4,)))
    assert temp(nested(A, 8, 4, 1)) < 0.5 * whole


def test_nested_coil_loop_keeps_the_toeplitz_normal_of_a_nufft_sense():
    A = nufft_sense((10, 12), 3, (7, 6), toeplitz=True, seed=1)
    B = nested(A, 3, 4, 2)
    check(A, B, rand(1, (10, 12)), rand(2, (3, 7, 6)))
    assert "Points" not in stage_types(B.N) and "_Transform" in stage_types(B.N)


def test_nested_grid_split_refusals_name_the_operator_and_dims():
    A, _, _ = sense((8, 6), 4)
    devices = jax.devices()[:4]
    cases = [
        # a loop over a coupled dim (the other grid dim)
        ([jl.BatchSpec({"Nx": 2}, device_matrix=devices), jl.BatchSpec({"Ny": 2})], "Ny"),
        # a loop over two dims
        ([jl.BatchSpec({"Nx": 2}, device_matrix=devices), jl.BatchSpec({"C": 2, "Kx": 2})],
         "Nx"),
        # a loop after a grid and coil split on a 2-D mesh
        ([jl.BatchSpec({"C": 2, "Nx": 4}, device_matrix=mesh((2, 2))), jl.BatchSpec({"C": 1})],
         "Nx"),
    ]  # fmt: skip
    for specs, dim in cases:
        with pytest.raises(ValueError) as error:
            jl.create_batched_linop(A, specs)
        assert_refusal(error.value, A, dim)
