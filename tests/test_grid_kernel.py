"""The Toeplitz kernel of a grid-split NUFFT is computed split across the devices
(`jaxlinops.sharding._grid._kernel`), never whole on one: the split normal of a NUFFT and
of a NUFFT SENSE operator (with density weights) equals the unsplit `A.N` (whose own tests
compare it with dense references) and passes the dot test, with `toeplitz_kernel` (the
unsplit computation) made to raise while it is built; the kernel stage's arrays are split
one block per device, without a copy where the blocks are the tiles; the kernel equals
`toeplitz_kernel`'s; the program computing it has no all-gather and a fraction of the
unsplit program's temporaries."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split, rand, rtol
from jax.sharding import Mesh

import jaxlinops as jl
from jaxlinops.functional._toeplitz import toeplitz_kernel
from jaxlinops.sharding._grid import _kernel as _grid_kernel, grid_split as split_along
from jaxlinops.sharding._grid._stages import _Local, _Transform
from jaxlinops.testing import inner

C128 = jnp.complex128


def nufft(grid, points, seed=0):
    """A Toeplitz NUFFT of a C=2 batch at random points over the whole spectrum."""
    half = np.asarray(grid) / 2
    locs = np.random.default_rng(seed).uniform(-half, half, (*points, len(grid)))
    dims = "R K"[: 2 * len(points) - 1]
    return jl.NUFFT(locs, grid, dims, batch_shape="C", backend="jax", toeplitz=True)


def sense_dcf(grid, points, seed=0):
    """dcf @ NUFFT @ coil maps (3 coils), Toeplitz."""
    F = nufft(grid, points, seed)
    image = ("Nx", "Ny", "Nz")[: len(grid)]
    maps = jl.Dense(rand(seed + 3, (3, *grid)), ("C", *image), image, ("C", *image))
    dcf = jl.Diagonal(jnp.asarray(np.random.default_rng(seed).random(points)), F.oshape, "C")
    return dcf @ F @ maps


CASES = {
    "2d-2": (lambda: nufft((12, 10), (6, 5)), 2, "Nx", True),
    "2d-ragged-3": (lambda: nufft((12, 10), (6, 5)), 3, "Ny", True),  # Kx: 24 over 3 is even
    # Ky, 20 over 3: the kernel split along Kx (24), re-tiled along Ky by one program
    "2d-ragged-kernel-3": (lambda: nufft((12, 10), (6, 5)), 3, "Nx", False),
    "3d-8": (lambda: nufft((8, 8, 6), (20,)), 8, "Nx", True),
    "sense-dcf-2d-2": (lambda: sense_dcf((10, 12), (7, 6)), 2, "Ny", True),
    "sense-dcf-3d-4": (lambda: sense_dcf((8, 6, 4), (30,)), 4, "Nz", True),
}


def kernel_stage(B) -> _Local:
    """The stage of the split normal between its two distributed FFTs: the kernel."""
    stages = B.normal_split.stages
    first = next(i for i, s in enumerate(stages) if isinstance(s, _Transform))
    assert isinstance(stages[first + 1], _Local)
    return stages[first + 1]


@pytest.mark.parametrize("case", list(CASES))
def test_split_toeplitz_normal_equals_the_operator_with_the_kernel_never_whole(case, monkeypatch):
    make, devices, dim, even = CASES[case]
    A = make()
    N = A.N  # the reference, with its kernel computed whole
    aligned = []

    def record(*args):
        aligned.append(_aligned(*args))
        return aligned[-1]

    def refuse(*args, **kwargs):
        raise AssertionError("the Toeplitz kernel was computed whole")

    _aligned = _grid_kernel._aligned
    monkeypatch.setattr(_grid_kernel, "_aligned", record)
    monkeypatch.setattr(jl.linops._toeplitz, "toeplitz_kernel", refuse)
    B = grid_split(A, devices, dim)
    monkeypatch.undo()

    x, y = rand(1, _ishape(A)), rand(2, _ishape(A))
    apply = jax.jit(lambda N, x, y: (N(x), N.H(y)))
    got, got_h = apply(B.N, x, y)
    want, _ = apply(N, x, y)
    assert_close(got, want, C128)
    scale = float(jnp.linalg.norm(y) * jnp.linalg.norm(got) + jnp.linalg.norm(got_h) * 
                  jnp.linalg.norm(x))  # fmt: skip
    assert abs(complex(inner(y, got) - inner(got_h, x))) <= rtol(C128) * scale

    # the kernel's tiles: one block per device, each 1/D of the stacked array
    for a in jax.tree.leaves(eqx.filter(kernel_stage(B).tiles, eqx.is_array)):
        shards = a.addressable_shards
        assert len({s.device for s in shards}) == devices
        assert all(s.data.size * devices == a.size for s in shards)
    # where the split of the kernel is the stage's, its blocks are the tiles (no copy)
    assert any(t is not None for t in aligned) == even


def _ishape(A):
    sizes = {"C": 2, **{d: A.size(d) for d in A.ishape if A.size(d) is not None}}
    return tuple(sizes[d] for d in A.ishape)


@pytest.mark.parametrize("grid, points, dims", [((12, 10), (6, 5), ("Nx",)),
                                                ((8, 7, 6), (20,), ("Nz",))])  # fmt: skip
def test_split_kernel_equals_the_unsplit_kernel(grid, points, dims):
    """`split_kernel` (weights with a leading batch axis) is `toeplitz_kernel`, split in
    thirds (along Kx, 24, as Ky, 20, where the split normal tiles it, does not divide; and
    along Kz, 12, in 3-D)."""
    A = nufft(grid, points, seed=3)
    w = jnp.asarray(np.random.default_rng(4).random((2, *points)))
    mesh = Mesh(np.array(jax.devices()[:3]), ("x",))
    K = _grid_kernel.split_kernel(A, w, 2.0, mesh, dims, split_along)
    assert len({s.device for s in K.addressable_shards}) == 3
    assert all(s.data.size * 3 == K.size for s in K.addressable_shards)
    assert_close(K, toeplitz_kernel(w, A.plan, 2.0), C128)


def test_kernel_program_has_no_gather_and_a_fraction_of_the_temporaries():
    """The compiled program computing a 3-D kernel split over 8 devices: no all-gather,
    its output 1/8 of the kernel per device, its temporaries at most a quarter of the
    unsplit program's (ideal 1/8; measured 0.18: the gridding buckets' halos)."""
    grid = (16, 16, 8)
    A = nufft(grid, (64,), seed=5)
    w = jnp.ones((64,))
    whole = jax.jit(lambda w: toeplitz_kernel(w, A.plan, 2.0)).lower(w).compile()
    mesh = Mesh(np.array(jax.devices()[:8]), ("Nx",))
    found = _grid_kernel.kernel_split(A, 0, 2.0, mesh, ("Nx",))
    assert found is not None
    A_K, kspace, own, _ = found
    S = split_along(A_K, kspace, own, normal=False)
    split = jax.jit(lambda S, w: S.H(w)).lower(S, w).compile()
    assert "all-gather" not in split.as_text()
    size = math.prod(2 * n for n in grid) * 16  # the complex128 kernel
    got, unsplit = split.memory_analysis(), whole.memory_analysis()
    assert got.output_size_in_bytes == size // 8
    assert got.temp_size_in_bytes <= 0.25 * unsplit.temp_size_in_bytes
