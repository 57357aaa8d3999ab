r"""Tiles of an operator: `split(A, {dim: slice})`.

For a tile $t$ with input selection $P_t$ (the slices of tiled input dims) and output
selection $Q_t$ (tiled output dims), the tile operator is $A_t = Q_t A P_t^T$: it takes
the sliced input and returns the sliced output. A tiled dim in neither shape (an internal
dim, e.g. a contracted one) splits $A$ into partial sums: $A = \sum_t A_t$ over a
partition of that dim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import equinox as eqx
import jax
import numpy as np

from ._dims import fmt
from ._linop import NamedLinop, all_dims

Tile = Mapping[str, slice]
ArrayAxes = tuple[Callable[[NamedLinop], jax.Array], Sequence[str | None]]


def split(A: NamedLinop, tile: Tile) -> NamedLinop:
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
    return A.split(dict(tile))


def split_arrays(
    op: NamedLinop, tile: Tile, arrays: Iterable[ArrayAxes] = (), batch: Iterable[str] = ()
) -> NamedLinop:
    """`op` with its arrays sliced along the tiled dims of their axes.

    `arrays` lists `(where, axes)`: `where(op)` is an array of `op` and `axes` names the dim
    of each of its axes (None for an unnamed axis). Size-1 axes broadcast and are kept.
    `batch` lists the dims `op` applies to entry by entry without indexing an array (they
    need no change). Any other dim of `op` in `tile` is one `op` mixes or resizes: an error.
    """
    arrays = tuple(arrays)
    named = {d for _, axes in arrays for d in axes if d is not None} | set(batch)
    own = all_dims(op)
    for d in tile:
        if d in own and d not in named:
            raise ValueError(
                f"`{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) cannot be split along "
                f"dim {d!r}: it mixes or resizes that dim."
            )
    for where, axes in arrays:
        array = where(op)
        index = tuple(
            tile[d] if d in tile and n != 1 else slice(None) for d, n in zip(axes, array.shape)
        )
        op = eqx.tree_at(where, op, array[index])
    return op


def tile_length(s: slice, size: int) -> int:
    """The number of entries the tile slice `s` selects from a dim of `size` entries."""
    return len(range(*s.indices(size)))


def split_children(op: NamedLinop, tile: Tile) -> NamedLinop:
    """A container with every child (`op.linops`) split by `tile`."""
    return eqx.tree_at(lambda o: o.linops, op, tuple(c.split(tile) for c in op.linops))


def split_linop(
    A: NamedLinop, batch_sizes: Mapping[str, int], sizes: Mapping[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tile grid of `A` for `batch_sizes = {dim: tile size}`, as torchlinops.

    Each batched dim of size $n$ and tile size $b$ gets $\\lceil n / b \\rceil$ tiles
    (the last one may be ragged), so the grid has shape `(ceil(n_d / b_d), ...)` in the
    order of `batch_sizes`. Returns three object arrays of that shape: the tile operators
    (`split(A, tile)`), and per tile the input and output slices, one per dim of
    `A.ishape` / `A.oshape` (`slice(None)` where not batched).

    `sizes` gives the sizes of batched dims that `A` does not fix (e.g. a pure batch dim,
    whose size only the input determines).
    """
    known = dict(sizes or {})
    ranges = []
    for d, b in batch_sizes.items():
        if not isinstance(b, int) or isinstance(b, bool) or b <= 0:
            raise ValueError(f"`split_linop`: the tile size of dim {d!r} must be a positive "
                             f"integer; got {b!r}.")  # fmt: skip
        n = A.size(d) if A.size(d) is not None else known.get(d)
        if n is None:
            raise ValueError(
                f"`split_linop`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) does not fix "
                f"the size of dim {d!r}; pass it as `sizes={{{d!r}: n}}`."
            )
        ranges.append([slice(i, min(i + b, n)) for i in range(0, n, b)])
    grid = tuple(len(r) for r in ranges)
    tiles, ins, outs = (np.empty(grid, object) for _ in range(3))
    for index in np.ndindex(grid):
        tile = {d: r[i] for d, r, i in zip(batch_sizes, ranges, index)}
        tiles[index] = split(A, tile)
        ins[index] = [tile.get(d, slice(None)) for d in A.ishape]
        outs[index] = [tile.get(d, slice(None)) for d in A.oshape]
    return tiles, ins, outs
