r"""Tiles of an operator: `split(A, {dim: slice})`.

For a tile $t$ with input selection $P_t$ (the slices of tiled input dims) and output
selection $Q_t$ (tiled output dims), the tile operator is $A_t = Q_t A P_t^T$: it takes
the sliced input and returns the sliced output. A tiled dim in neither shape (an internal
dim, e.g. a contracted one) splits $A$ into partial sums: $A = \sum_t A_t$ over a
partition of that dim.

A *padded* dim of a tile (batched execution, `Tile.padded`) keeps its slice's full length
even past the end of the dim: $Q_t$ and $P_t$ get zero rows there. Operators zero-pad their
arrays, and an operator for which that does not zero the padded entries (indices, points,
broadcasts) is wrapped in a 0/1 mask on the side where it has the dim. All tiles of a grid
then have one structure, whether or not they reach the end.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._dims import fmt
from .._progress import iterate
from ._coupling import ArrayAxes
from ._linop import NamedLinop, all_dims


@dataclasses.dataclass(frozen=True, eq=False)
class Tile(Mapping):
    """`{dim: slice}`, and `padded = {dim: size}`: the dims whose slices keep their full
    length past the end of the dim, with its size (where the padding starts)."""

    slices: Mapping[str, slice]
    padded: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def __getitem__(self, dim: str) -> slice:
        return self.slices[dim]

    def __iter__(self) -> Iterator[str]:
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    def with_slices(self, slices: Mapping[str, slice]) -> Tile:
        """Other slices, the same padded dims."""
        return Tile(dict(slices), self.padded)


def as_tile(tile: Mapping[str, slice]) -> Tile:
    return tile if isinstance(tile, Tile) else Tile(dict(tile))


def tile_length(tile: Mapping[str, slice], dim: str, size: int) -> int:
    """The length of dim `dim` (of `size` entries) in `tile`: the number of entries its
    slice selects, the slice's full length for a padded dim, or `size` if not tiled."""
    if dim not in tile:
        return size
    s = tile[dim]
    if dim in as_tile(tile).padded:
        return s.stop - (s.start or 0)
    return len(range(*s.indices(size)))


def valid_length(s: slice, size: int) -> int:
    """How many entries of the slice `s` lie inside a dim of `size` entries."""
    return len(range(*s.indices(size)))


def take(array: jax.Array, axis: int, s: slice, padded: bool) -> jax.Array:
    """`array` sliced by `s` along `axis`; when `padded`, zero-filled to the slice's full
    length where it runs past the end."""
    start, stop, _ = s.indices(array.shape[axis])
    length = s.stop - (s.start or 0) if padded else stop - start
    return _take(array, start, axis=axis, valid=stop - start, length=length)


@functools.partial(jax.jit, static_argnames=("axis", "valid", "length"))
def _take(array: jax.Array, start: int, *, axis: int, valid: int, length: int) -> jax.Array:
    """`valid` entries from `start` along `axis`, zero-filled to `length`: one program per
    shape and lengths, whatever the start (the tiles of a grid share it)."""
    out = jax.lax.dynamic_slice_in_dim(array, start, valid, axis=axis)
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, length - valid)
    return jnp.pad(out, widths)


def split(A: NamedLinop, tile: Mapping[str, slice]) -> NamedLinop:
    """The tile of `A` for `tile = {dim: slice}`: `A_t = Q_t A P_t^T` (see the module doc).

    Slices have integer (or None) bounds and step 1; a stop beyond the dim's size is
    clipped (a ragged last tile). Every tiled dim must be a dim of `A`.
    """
    if not isinstance(A, NamedLinop):
        raise TypeError(f"`split` expects a NamedLinop; got {type(A).__name__}.")
    if not isinstance(tile, Mapping):
        raise TypeError(f"`split` expects a mapping {{dim: slice}}; got {type(tile).__name__}.")
    for d, s in tile.items():
        bounds = (s.start, s.stop) if isinstance(s, slice) else ()
        ok = isinstance(s, slice) and s.step in (None, 1)
        if not ok or not all(b is None or (isinstance(b, int) and b >= 0) for b in bounds):
            raise TypeError(
                f"`split`: the tile of dim {d!r} must be a slice with non-negative integer "
                f"bounds and step 1; got {s!r}."
            )
        n = A.size(d)
        start, stop, _ = s.indices(n if n is not None else 2**62)
        if stop <= start:
            raise ValueError(f"`split`: the tile {s!r} of dim {d!r} (size {n}) is empty.")
    missing = sorted(set(tile) - all_dims(A))
    if missing:
        raise ValueError(
            f"`split`: dims {missing} are not dims of {A.name} "
            f"({fmt(A.ishape)} -> {fmt(A.oshape)})."
        )
    return A.split(Tile(dict(tile)))


def check_tileable(op: NamedLinop, tile: Mapping[str, slice], named) -> None:
    """Raise a ValueError when `tile` slices a dim of `op` other than `named`: the dims
    `op` applies entry by entry (or indexes an array along). Others it mixes or resizes."""
    own = all_dims(op)
    for d in tile:
        if d in own and d not in named:
            raise ValueError(
                f"`{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) cannot be split along "
                f"dim {d!r}: it mixes or resizes that dim."
            )


Op = TypeVar("Op", bound=NamedLinop)


def slice_arrays(
    op: Op, tile: Mapping[str, slice], arrays: Iterable[ArrayAxes], batch: Iterable[str]
) -> tuple[Op, set[str]]:
    """`op` with its arrays sliced along the tiled dims of their axes, and the dims sliced.

    `arrays` lists `(where, axes)`: `where(op)` is an array of `op` and `axes` names the dim
    of each of its axes (None for an unnamed axis). Size-1 axes broadcast and are kept.
    `batch` lists the dims `op` applies to entry by entry without indexing an array (they
    need no change). Any other dim of `op` in `tile` is one `op` mixes or resizes: an error.
    """
    tile, arrays = as_tile(tile), tuple(arrays)
    check_tileable(op, tile, {d for _, axes in arrays for d in axes if d is not None} | set(batch))
    out, indexed = op, set()
    for where, axes in arrays:
        array = where(op)
        for axis, (d, n) in enumerate(zip(axes, array.shape)):
            # a size-1 axis broadcasts, unless the operator fixes the dim at size 1
            if d is not None and d in tile and (n != 1 or op.size(d) == 1):
                array = take(array, axis, tile[d], d in tile.padded)
                indexed.add(d)
        out = eqx.tree_at(where, out, array)
    return out, indexed


def split_children(op: NamedLinop, tile: Mapping[str, slice]) -> NamedLinop:
    """A container (its `children` are its `linops` field) with every child split by
    `tile`."""
    return eqx.tree_at(lambda o: o.linops, op, tuple(c.split(tile) for c in op.children))


def tile_grid(
    sizes: Mapping[str, int],
    tile_sizes: Mapping[str, int],
    counts: Mapping[str, int] | None = None,
) -> tuple[tuple[int, ...], list[tuple[tuple[int, ...], Tile]]]:
    r"""The tile grid over the batched dims `sizes = {dim: n}` with `tile_sizes = {dim: b}`:
    its shape and its `(index, tile)` pairs in row-major order. Tile $i$ of a dim covers
    $[i b, (i + 1) b)$. This is the one planner behind `split_linop` and
    `create_batched_linop`:

    - without `counts` (`split_linop`, as torchlinops): $\lceil n / b \rceil$ tiles, the
      last one cut at the end of the dim (ragged);
    - with `counts = {dim: tiles}` (batched execution, at least $\lceil n / b \rceil$):
      every tile has the full length $b$; a dim whose tiles run past its end is marked
      padded in each `Tile`, so all tiles share one structure and stack into one array.
    """
    dims = tuple(sizes)
    shape = tuple(counts[d] if counts is not None else -(-sizes[d] // tile_sizes[d]) for d in dims)
    padded = {
        d: sizes[d]
        for d, c in zip(dims, shape)
        if counts is not None and c * tile_sizes[d] != sizes[d]
    }
    grid = []
    for index in np.ndindex(*shape):
        slices = {}
        for d, i in zip(dims, index):
            start, stop = i * tile_sizes[d], (i + 1) * tile_sizes[d]
            slices[d] = slice(start, stop if counts is not None else min(stop, sizes[d]))
        grid.append((index, Tile(slices, padded)))
    return shape, grid


def split_linop(
    linop: NamedLinop,
    batch_sizes: Mapping[str, int],
    sizes: Mapping[str, int] | None = None,
    *,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tile grid of `linop` for `batch_sizes = {dim: tile size}`, as torchlinops.

    Each batched dim of size $n$ and tile size $b$ gets $\\lceil n / b \\rceil$ tiles
    (the last one may be ragged), so the grid has shape `(ceil(n_d / b_d), ...)` in the
    order of `batch_sizes`. Returns three object arrays of that shape: the tile operators
    (`split(linop, tile)`), and per tile the input and output slices, one per dim of
    `linop.ishape` / `linop.oshape` (`slice(None)` where not batched).

    `sizes` (jaxlinops only) gives the sizes of batched dims that `linop` does not fix
    (e.g. a pure batch dim, whose size only the input determines). `progress` (jaxlinops
    only): a bar over the tiles (see `jaxlinops._progress.enabled`).
    """
    given = dict(sizes or {})
    known: dict[str, int] = {}
    for d, b in batch_sizes.items():
        if not isinstance(b, int) or isinstance(b, bool) or b <= 0:
            raise ValueError(f"`split_linop`: the tile size of dim {d!r} must be a positive "
                             f"integer; got {b!r}.")  # fmt: skip
        n = linop.size(d)
        if n is None:
            n = given.get(d)
        if n is None:
            raise ValueError(
                f"`split_linop`: {linop.name} ({fmt(linop.ishape)} -> {fmt(linop.oshape)}) does "
                f"not fix the size of dim {d!r}; pass it as `sizes={{{d!r}: n}}`."
            )
        known[d] = n
    shape, grid = tile_grid(known, batch_sizes)
    tiles, ins, outs = (np.empty(shape, object) for _ in range(3))
    for index, tile in iterate(grid, f"split_linop: tiles of {linop.name}", progress):
        tiles[index] = split(linop, tile)
        ins[index] = [tile.get(d, slice(None)) for d in linop.ishape]
        outs[index] = [tile.get(d, slice(None)) for d in linop.oshape]
    return tiles, ins, outs
