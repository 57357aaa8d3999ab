r"""The Toeplitz kernel of a grid-split NUFFT, computed split across the devices, and the
tiles of a leaf whose arrays are already split (`sharded_tiles`).

The kernel of the Toeplitz normal (see `jaxlinops.functional._toeplitz`) is
$K = c\, F_M\, A_M^H w$: the adjoint NUFFT $A_M^H$ of the point weights $w$ onto the
embedded grid $M$ (the points rescaled to it, the plan's oversampling and width), a
centered orthonormal FFT $F_M$, and $c = \prod M / \prod N$. For a 1024³ image $K$ is a
2048³ complex64 array (68.7 GB), more than one device holds. So `split_kernel` computes
it as the adjoint of $A_K = A_M F_M^H$ (k-space of $M$ to the points) split along a
k-space dim across the mesh (`grid_split`: gridding bucketed by slab, the FFTs
distributed): $K$ arrives as a global array split along that dim, never whole on one
device. The dim is the one along which the split normal's kernel stage holds its tiles
(`traded`, the rule of the distributed FFT), so each device's block of $K$ *is* its tile
(`sharded_tiles` re-labels the blocks, with no copy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
from jax.core import Tracer
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..._core import NamedLinop, Tile, own_split
from ..._dims import Dims, next_unused
from ...functional._toeplitz import embedded_locs, embedded_size
from ...linops._fft import FFT
from ...linops._nufft import NUFFT
from ...linops._toeplitz import ToeplitzSource
from .._log import logger
from .._tile_arrays import grid_spec, place, stack_tiles
from ._stages import traded


def split_kernel(
    op: ToeplitzSource,
    weights: jax.Array,
    oversamp: float,
    mesh: Mesh,
    dims: Sequence[str],
    split: Callable[..., NamedLinop],
) -> jax.Array | None:
    r"""The Toeplitz kernel $K$ `[B..., *M]` of the NUFFT `op` for the point weights
    `[B..., L...]` (as `toeplitz_kernel`, backend "jax"), split across the first
    `len(dims)` axes of `mesh`, one per image dim of `dims` (`op`'s dims split so) by
    `split` (`grid_split`, which builds the normals that call this): along the k-space
    axes the distributed FFT moves the split to (`traded`) where they divide into whole
    blocks (else along others that do, `_even_axes`), replicated over a further (batch)
    mesh axis. None (compute it whole) where `kernel_split` says so."""
    found = kernel_split(op, weights.ndim - len(op.point_dims), oversamp, mesh, dims)
    if found is None:
        return None
    A, kspace, own, scale = found
    S = split(A, kspace, own, normal=False)
    kernel = S.H(weights) * scale
    if own.devices.size == mesh.devices.size:
        return kernel
    spec = kernel.sharding.spec if isinstance(kernel.sharding, NamedSharding) else None
    return jax.device_put(kernel, NamedSharding(mesh, spec or PartitionSpec()))


def kernel_split(
    op: ToeplitzSource, nbatch: int, oversamp: float, mesh: Mesh, dims: Sequence[str]
) -> tuple[NamedLinop, tuple[str, ...], Mesh, float] | None:
    r"""$(A_K, k, m, c)$ with $K = c\, S^H w$ for weights $w$ with `nbatch` leading axes,
    $S$ the operator $A_K = A_M F_M^H$ split along its k-space dims $k$ (see
    `split_kernel`) across the mesh $m$: the first `len(dims)` axes of `mesh` (its first
    block of devices along the others). None where `op` lacks one of `dims`, has
    per-frame dims, or no axes split evenly."""
    plan, grid = op.plan, op.input_shape
    if plan.frames or any(d not in grid for d in dims):
        return None
    size, points = embedded_size(plan, oversamp), op.point_dims
    counts = [mesh.shape[n] for n in mesh.axis_names[: len(dims)]]
    split = [grid.index(d) for d in dims]
    axes = traded(range(len(grid)), split, set(split))
    if axes is None or any(size[a] % c for a, c in zip(axes, counts)):
        axes = _even_axes(size, counts)
    if axes is None:
        logger.warning(
            "`create_batched_linop`: no axis of the Toeplitz kernel's grid %s divides into "
            "%s blocks (with one axis held whole): the kernel is computed on one device.",
            size, counts,
        )  # fmt: skip
        return None
    taken = set(points)
    batch = _fresh("B", nbatch, taken)
    image, padded, kspace = (_fresh(stem, len(size), taken) for stem in "MPQ")
    nufft = NUFFT(
        embedded_locs(plan, size), size, points, image, padded, batch,
        oversamp=plan.oversamp, width=plan.width, backend="jax",
    )  # fmt: skip
    A = nufft @ FFT(len(size), batch, (image, kspace), centered=True).H
    slabs = mesh.axis_names[: len(dims)]
    own = Mesh(mesh.devices[(...,) + (0,) * (mesh.devices.ndim - len(dims))], slabs)
    scale = math.prod(size) / math.prod(plan.grid_size)
    return A, tuple(kspace[a] for a in axes), own, scale


def _even_axes(size: Sequence[int], counts: Sequence[int]) -> list[int] | None:
    """Distinct axes of `size` dividing into `counts[k]` blocks each, one axis left whole
    (a global array cannot hold ragged blocks: a ragged kernel would be replicated); the
    split normal's stage then re-tiles it (`sharded_tiles`). None if there are none."""
    axes: list[int] = []
    for c in counts:
        axes += [a for a, n in enumerate(size) if a not in axes and n % c == 0][:1]
    return axes if len(axes) == len(counts) < len(size) else None


def _fresh(stem: str, n: int, taken: set[str]) -> Dims:
    """`n` dim names from `stem` not in `taken` (which they join)."""
    names = []
    for _ in range(n):
        names.append(next_unused(stem, taken))
        taken.add(names[-1])
    return tuple(names)


def spread(leaf: NamedLinop) -> bool:
    """Whether `leaf` holds an array split over several devices (a kernel from
    `split_kernel`): its tiles are then built without gathering it (`sharded_tiles`).
    (Under `jit` the arrays are traced: that program places them.)"""
    return any(
        isinstance(a, jax.Array)
        and not isinstance(a, Tracer)
        and not a.sharding.is_fully_replicated
        for a in jax.tree.leaves(eqx.filter(leaf, eqx.is_array))
    )


def sharded_tiles(
    leaf: NamedLinop,
    tiles: list[Tile],
    cut: Sequence[str],
    grid: tuple[int, ...],
    mesh: Mesh,
    axes: tuple[str | None, ...],
) -> NamedLinop | None:
    """The `tiles` of `leaf` (one per index of `grid`, row-major; grid axis $k$ cuts the dim
    `cut[k]` and lies on mesh axis `axes[k]`) stacked and placed as `place` does, for a
    leaf whose arrays are split across the mesh; None where the tiles differ in structure.
    Where each array is split exactly as its tiles (`_aligned`), its blocks are the
    tiles; else they are cut and stacked in one compiled program that leaves each tile on
    its device (resharding, never gathering a whole array)."""
    aligned = _aligned(leaf, cut, grid, mesh, axes)
    if aligned is not None:
        return aligned
    arrays, static = eqx.partition(leaf, eqx.is_array)

    def build(arrays):
        op = eqx.combine(arrays, static)
        return stack_tiles([op.split(t) if t.slices else op for t in tiles], grid)

    shapes = eqx.filter_eval_shape(build, arrays)
    if shapes is None:
        return None
    abstract, out_static = eqx.partition(shapes, lambda a: isinstance(a, jax.ShapeDtypeStruct))
    shardings = jax.tree.map(lambda a: NamedSharding(mesh, grid_spec(a, axes)), abstract)
    made = jax.jit(lambda a: eqx.filter(build(a), eqx.is_array), out_shardings=shardings)(arrays)
    return eqx.combine(made, out_static)


def _aligned(leaf, cut, grid, mesh: Mesh, axes) -> NamedLinop | None:
    """The stacked tiles of a leaf sliced as its `tiling()` declares, each of whose arrays
    is split across `mesh` exactly as the grid cuts it (whole blocks, no padding) or not
    cut: each device's block, with leading size-1 grid axes, is its tile. Else None."""
    if own_split(leaf) or None in axes:
        return None
    declared = leaf.tiling().arrays
    if len(declared) != len(jax.tree.leaves(eqx.filter(leaf, eqx.is_array))):
        return None
    out = leaf
    for where, names in declared:
        a = where(leaf)
        stacked = _blocks_as_tiles(a, names, cut, grid, mesh, axes)
        if stacked is None:
            return None
        out = eqx.tree_at(where, out, stacked)
    return out


def _blocks_as_tiles(a, names, cut, grid, mesh: Mesh, axes) -> jax.Array | None:
    """`a` (axes named `names`) as its tiles stacked on leading grid axes, from its blocks;
    None unless it is split over `mesh` along exactly the cut dims, in whole blocks."""
    spec, lead = [], []
    for d, n in zip(names, a.shape):
        over = tuple(ax for c, ax in zip(cut, axes) if c == d) if n > 1 else ()
        if n % math.prod(g for c, g in zip(cut, grid) if c == d and n > 1):
            return None
        spec.append(over[0] if len(over) == 1 else (over or None))
    for c, g in zip(cut, grid):
        cuts = any(d == c and n > 1 for d, n in zip(names, a.shape))
        lead.append(g if cuts else 1)
    if all(g == 1 for g in lead):
        return place(a.reshape((1,) * len(grid) + a.shape), mesh, axes)
    want = NamedSharding(mesh, PartitionSpec(*spec))
    if not isinstance(a, jax.Array) or not a.sharding.is_equivalent_to(want, a.ndim):
        return None
    shape = tuple(lead) + want.shard_shape(a.shape)
    blocks = [s.data.reshape((1,) * len(grid) + s.data.shape) for s in a.addressable_shards]
    sharding = NamedSharding(mesh, grid_spec(jax.ShapeDtypeStruct(shape, a.dtype), axes))
    return jax.make_array_from_single_device_arrays(shape, sharding, blocks)
