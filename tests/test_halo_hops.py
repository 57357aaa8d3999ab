"""Halos wider than a neighbour's block (several hops) on 2, 3 and 8 simulated devices.

`halo_extend` is compared with the extended blocks built by numpy from their formula,
$e_i[j] = x[(iB - w + j) \\bmod N]$ (zero outside $[0, N)$ without wraparound), and
`halo_reduce` with numpy's scatter-add of each extended block back where it came from
(and by the dot test), for halos of one to several blocks, ragged splits (the periodic
wrap past a ragged last block), empty devices and a halo of the whole dim. The collective
bytes of the compiled program are the halo's: $w$ entries per face and direction (no
whole blocks for a narrow halo). Then a `Convolution` and an `Interpolate` reading more
than a slab, split along their grid dim, equal the unsplit operators.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split, rand, rtol
from jax.sharding import NamedSharding, PartitionSpec as P

import jaxlinops as jl
from jaxlinops.sharding._halo import halo_extend, halo_reduce
from jaxlinops.sharding._hlo import collective_bytes

# (size, devices, width, periodic); B = ceil(size / devices), the last used block holds L
CASES = [
    (32, 8, 5, False),  # B = 4: two hops
    (32, 8, 10, True),  # a halo over 2.5 blocks: three hops, wrapping
    (25, 8, 4, True),  # B = 4, L = 1: device 0's halo passes the ragged block to device 5
    (25, 8, 9, True),  # B = 4, L = 1, three or four hops
    (25, 8, 25, True),  # the whole dim, around all 7 used devices (itself the last hop)
    (10, 8, 4, True),  # B = 2 on devices 0-4, devices 5-7 empty
    (9, 8, 3, True),  # B = 2, L = 1, devices 5-7 empty
    (9, 8, 6, False),
    (10, 3, 7, False),  # B = 4, L = 2
    (10, 3, 13, False),  # wider than the dim: zeros past the ends
    (11, 3, 6, True),  # B = 4, L = 3
    (7, 2, 7, True),  # B = 4, L = 3, the whole dim
    (3, 2, 3, True),  # B = 2, L = 1
    (1, 2, 1, True),  # one used device: its own halo
    (7, 2, 5, False),
    (7, 2, 16, True),  # wider than the dim: around it more than twice
    (25, 8, 30, True),
]


def sample(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def extended_index(size, devices, width, periodic):
    """`[devices, B + 2 width]`: the global index each entry of the extended blocks holds
    (-1: a zero), from the formula, device by device."""
    block = -(-size // devices)
    out = np.full((devices, block + 2 * width), -1)
    for i in range(devices):
        valid = min(max(size - i * block, 0), block)
        for j in range(valid + 2 * width if valid else 0):
            g = i * block - width + j
            if periodic:
                out[i, j] = g % size
            elif 0 <= g < size:
                out[i, j] = g
    return out


def mesh_of(devices):
    return jax.make_mesh((devices,), ("i",), devices=jax.devices()[:devices])


def extend_and_reduce(size, devices, width, periodic):
    """One compiled program: `halo_extend` of blocks `[devices * B, F]` and `halo_reduce`
    of extended blocks `[devices * (B + 2 width), F]`, split along axis 0."""

    def both(x, y):
        return (
            halo_extend(x, 0, width, "i", size, periodic),
            halo_reduce(y, 0, width, "i", size, periodic),
        )

    mesh, spec = mesh_of(devices), P("i")
    run = jax.jit(jax.shard_map(both, mesh=mesh, in_specs=(spec, spec), out_specs=(spec, spec)))
    return lambda *arrays: run(*(jax.device_put(a, NamedSharding(mesh, spec)) for a in arrays))


@pytest.mark.parametrize("size, devices, width, periodic", CASES)
def test_extend_and_reduce_equal_numpy(size, devices, width, periodic):
    block = -(-size // devices)
    index = extended_index(size, devices, width, periodic).ravel()
    x = sample((size, 2), 0)
    # the padding entries hold junk, which halo_extend must never read
    blocks = np.concatenate([x, 1e3 * sample((devices * block - size, 2), 1)])
    y = sample((index.size, 2), 2)
    ext, red = (np.asarray(a) for a in extend_and_reduce(size, devices, width, periodic)(blocks, y))
    want_ext = np.where(index[:, None] >= 0, x[np.maximum(index, 0)], 0)
    np.testing.assert_array_equal(ext, want_ext)  # entries moved, nothing computed
    want_red = np.zeros_like(blocks)
    np.add.at(want_red, index[index >= 0], y[index >= 0])  # each entry back where it came from
    # a sum of at most a few entries per position (the halo of the whole dim: 3)
    assert_close(red, want_red, jnp.complex128)
    lhs, rhs = np.vdot(y, ext), np.vdot(red, blocks)
    assert abs(lhs - rhs) <= 10 * rtol(jnp.complex128) * np.linalg.norm(y) * np.linalg.norm(x)


@pytest.mark.parametrize(
    "size, devices, width, periodic, permutes, entries",
    [
        (32, 8, 3, False, 2, 3),  # one hop: w entries per face and direction, as before
        (10, 3, 2, True, 2, 2),  # one hop past the ragged block (L = 2)
        (32, 8, 5, True, 4, 5),  # two hops (4 + 1 entries): still w in all
        (32, 8, 10, False, 6, 10),  # three hops (4 + 4 + 2)
        (25, 8, 4, True, 4, 7),  # 4 + 3: only device 0 (before) and 5 (after) take a 2nd
    ],
)
def test_collective_bytes_are_the_halos(size, devices, width, periodic, permutes, entries):
    """Per direction, the hops' `collective-permute`s move `entries` per face (the hops'
    lengths summed): for even blocks exactly the halo width, never a whole block for a
    narrower halo; nothing gathers."""
    face = 3
    block = -(-size // devices)
    mesh = mesh_of(devices)
    fn = jax.shard_map(
        lambda x: halo_extend(x, 0, width, "i", size, periodic),
        mesh=mesh,
        in_specs=P("i"),
        out_specs=P("i"),
    )
    arg = jax.ShapeDtypeStruct(
        (devices * block, face), jnp.float64, sharding=NamedSharding(mesh, P("i"))
    )
    text = jax.jit(fn).lower(arg).compile().as_text()
    counts = collective_bytes(text, devices)
    assert set(counts) == {"collective-permute"}
    assert counts["collective-permute"] == 2 * entries * face * 8
    assert text.count("collective-permute(") + text.count("collective-permute-start(") == permutes


# -- through the grid split: a Convolution and an Interpolate wider than a slab ------------


def check_split(A, devices, ishape, oshape):
    """`A` split along `Nx` over `devices`: its forward and adjoint (one compiled program)
    equal the unsplit operator's (whose own tests compare it with dense references), and
    pass the dot test."""
    B = grid_split(A, devices)
    x, y = rand(1, ishape), rand(2, oshape)
    apply = jax.jit(lambda B, x, y: (B(x), B.H(y)))
    Bx, BHy = apply(B, x, y)
    Ax, AHy = apply(A, x, y)
    assert_close(Bx, Ax, jnp.complex128)
    assert_close(BHy, AHy, jnp.complex128)
    x, y, Bx, BHy = (np.asarray(a) for a in (x, y, Bx, BHy))
    scale = np.linalg.norm(y) * np.linalg.norm(Bx) + np.linalg.norm(BHy) * np.linalg.norm(x)
    assert abs(np.vdot(y, Bx) - np.vdot(BHy, x)) <= rtol(jnp.complex128) * scale


def conv_chain(kernel_shape, grid, mode, seed=0):
    """Convolution @ Diagonal over `C` + grid (the weight fixes the grid's size)."""
    names = ("Nx", "Ny")[: len(grid)]
    kernel = rand(seed, kernel_shape)
    K = jl.Convolution(kernel, "C", names, ("Mx", "My")[: len(grid)], padding_mode=mode)
    return K @ jl.Diagonal(rand(seed + 1, grid), ("C", *names), "C")


@pytest.mark.parametrize(
    "kernel, grid, devices, mode",
    [
        ((11,), (32,), 8, "zeros"),  # radius 5 over slabs of 4
        ((9,), (25,), 8, "circular"),  # radius 4: the last slab holds 1
        ((11, 3), (11, 6), 3, "circular"),  # radius 5 over slabs of 4, the last holding 3
    ],
    ids=["1d-zeros-8", "1d-circular-ragged-8", "2d-circular-ragged-3"],
)
def test_grid_split_convolution_wider_than_a_slab(kernel, grid, devices, mode):
    check_split(conv_chain(kernel, grid, mode), devices, (2, *grid), (2, *grid))


@pytest.mark.parametrize(
    "grid, devices, pad_mode, width",
    [
        # reads 4 entries each side: the halo before slab 0 passes the ragged slab (3 of 4)
        ((11, 8), 3, "circular", (9.0, 3.0)),
        ((13, 8), 8, "zero", (7.0, 3.0)),  # reads 3 each side: slabs of 2, the last with 1
    ],
    ids=["circular-ragged-3", "zero-ragged-8"],
)
def test_grid_split_interpolate_wider_than_a_slab(grid, devices, pad_mode, width):
    """Points bucketed by slab read a halo of several slabs (the gridding stage)."""
    locs = np.random.default_rng(3).uniform(0, 1, (6, 2)) * (np.asarray(grid) - 1)
    locs[:2, 0] = 0.0, grid[0] - 1  # the first and last slabs' edges
    A = jl.Interpolate(locs, grid, "C", "R", width=width, pad_mode=pad_mode)
    check_split(A, devices, (2, *grid), (2, 6))
