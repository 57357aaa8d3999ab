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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._dims import ELLIPSIS, fmt
from ._linop import NamedLinop, all_dims

ArrayAxes = tuple[Callable[[NamedLinop], jax.Array], Sequence[str | None]]


@dataclasses.dataclass(frozen=True, eq=False)
class Tile(Mapping):
    """`{dim: slice}`, and the dims whose slices keep their full length past the end."""

    slices: Mapping[str, slice]
    padded: frozenset[str] = frozenset()

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
    out = jax.lax.slice_in_dim(array, *s.indices(array.shape[axis])[:2], axis=axis)
    if not padded:
        return out
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, s.stop - (s.start or 0) - out.shape[axis])
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


def split_arrays(
    op: NamedLinop,
    tile: Mapping[str, slice],
    arrays: Iterable[ArrayAxes] = (),
    batch: Iterable[str] = (),
    zeroed: bool = True,
) -> NamedLinop:
    """The tile of `op` for an operator that works entry by entry along the tiled dims: its
    arrays sliced along those dims. Use it to implement `NamedLinop.split`.

    - `arrays`: `(where, axes)` pairs: `where(op)` returns one of `op`'s arrays and `axes`
      names the dim of each of its axes (None for an unnamed one). Size-1 axes broadcast
      and are kept.
    - `batch`: dims that `op` applies entry by entry without an array along them; a tile
      along them is the same operator.
    - `zeroed`: whether zero entries of the arrays give zero outputs (weights: yes; indices
      and points: no). When not, padded entries of ragged tiles are masked.

    A tiled dim of `op` that is in neither is one `op` mixes or resizes: a ValueError.
    """
    out, indexed = slice_arrays(op, tile, arrays, batch)
    return mask_padded(out, op, tile, indexed if zeroed else ())


def slice_arrays(
    op: NamedLinop, tile: Mapping[str, slice], arrays: Iterable[ArrayAxes], batch: Iterable[str]
) -> tuple[NamedLinop, set[str]]:
    """`op` with its arrays sliced along the tiled dims of their axes, and the dims sliced.

    `arrays` lists `(where, axes)`: `where(op)` is an array of `op` and `axes` names the dim
    of each of its axes (None for an unnamed axis). Size-1 axes broadcast and are kept.
    `batch` lists the dims `op` applies to entry by entry without indexing an array (they
    need no change). Any other dim of `op` in `tile` is one `op` mixes or resizes: an error.
    """
    tile, arrays = as_tile(tile), tuple(arrays)
    named = {d for _, axes in arrays for d in axes if d is not None} | set(batch)
    own = all_dims(op)
    for d in tile:
        if d in own and d not in named:
            raise ValueError(
                f"`{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) cannot be split along "
                f"dim {d!r}: it mixes or resizes that dim."
            )
    out, indexed = op, set()
    for where, axes in arrays:
        array = where(op)
        for axis, (d, n) in enumerate(zip(axes, array.shape)):
            if d in tile and n != 1:
                array = take(array, axis, tile[d], d in tile.padded)
                indexed.add(d)
        out = eqx.tree_at(where, out, array)
    return out, indexed


def mask_padded(
    out: NamedLinop, op: NamedLinop, tile: Mapping[str, slice], zeroed: Iterable[str] = ()
) -> NamedLinop:
    """The tile `out` of `op`, masked to zero along the padded dims of `tile` that `op`
    has on one side only (it creates or consumes them), except those in `zeroed`.

    The mask $M$ is a 0/1 `Diagonal` (1 on the entries inside the dim): `M @ out` for an
    output dim, `out @ M` for an input dim, so the tile is $Q_t A P_t^T$ exactly.
    """
    from .linops._diagonal import Diagonal

    tile, zeroed = as_tile(tile), set(zeroed)
    one_sided = set(op.ishape) ^ set(op.oshape)
    dims = [d for d in tile.padded if d in tile and d in one_sided and d not in zeroed]
    for side in ("ishape", "oshape"):
        shape = getattr(op, side)
        here = sorted((shape.index(d), d) for d in dims if d in shape)
        if not here:
            continue
        first = here[0][0]
        if ELLIPSIS in shape[first:]:
            raise ValueError(
                f"`{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) cannot be padded along "
                f"{here[0][1]!r}: a '...' follows it."
            )
        weight = np.ones((1,) * (len(shape) - first), bool)
        for i, d in here:
            n = tile_length(tile, d, 0)
            keep = np.arange(n) < valid_length(tile[d], op.size(d))
            weight = weight & keep.reshape((-1,) + (1,) * (len(shape) - 1 - i))
        mask = Diagonal(jnp.asarray(weight), getattr(out, side))
        out = mask @ out if side == "oshape" else out @ mask
    return out


def split_children(op: NamedLinop, tile: Mapping[str, slice]) -> NamedLinop:
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
