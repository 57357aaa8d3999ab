"""`AbstractBlockOperator`: the shared base of `Concat` and `Stack`, operators made of a
grid of operators (not to be confused with the patches of `ArrayToBlocks`)."""

import abc
from collections.abc import Callable
from typing import ClassVar

import equinox as eqx
import jax

from .._core import (
    Composite,
    Coupling,
    NamedLinop,
    Scheduled,
    Tile,
    Zero,
    as_tile,
    block_apply,
    call_adjoint,
    children_coupling,
    tile_length,
)
from .._dims import Dims


class AbstractBlockOperator(Composite, Scheduled):
    """A block operator: the input is optionally split along `idim` between the children,
    and the outputs are joined along `odim` or summed. Subclasses define how. It may carry
    a display name (`name=`, its `label`)."""

    idim: eqx.AbstractVar[Dims]
    odim: eqx.AbstractVar[Dims]
    _grows_last_block: ClassVar[bool] = True  # False: padded entries become zero blocks

    @abc.abstractmethod
    def _splitter(self, dim: str, shape: Dims, n: int) -> Callable:
        """A function splitting an array laid out by `shape` into `n` block inputs."""

    @abc.abstractmethod
    def _joiner(self, dim: str, shape: Dims) -> Callable:
        """A function joining block outputs into an array laid out by `shape`."""

    @abc.abstractmethod
    def _merger(self, dim: str, shape: Dims) -> Callable | None:
        """A function merging two joined batches of block outputs (when accumulating);
        None: joining the two."""

    @abc.abstractmethod
    def _extents(self, dim: str) -> list[tuple[int, int]]:
        """The index range `[start, stop)` of each block along the block dim `dim`."""

    def coupling(self, dim: str) -> Coupling:
        """None along the block dims (a tile keeps the blocks it covers); elsewhere the
        strongest coupling among the blocks."""
        if dim in self.idim + self.odim:
            return Coupling.NONE
        return children_coupling(self.linops, dim)

    def split(self, tile) -> NamedLinop:
        r"""Child $i$ holds the block (output range $C_i$, input range $R_i$) along
        `odim`/`idim`; the tile keeps $C_i \cap T_{out}$ by $R_i \cap T_{in}$, each child
        cut to it (a child wholly inside is not split along that dim). A child the tile
        misses on one side only (block diagonal with distinct dims) becomes a zero block
        of size 0 on that side; one it misses entirely is dropped. A padded tile's entries
        past the end go to the last block (`_grows_last_block`) or to zero blocks."""
        tile = as_tile(tile)
        block_dims = tuple(dict.fromkeys(self.idim + self.odim))
        rest = tile.with_slices({d: s for d, s in tile.items() if d not in block_dims})
        bounds = {d: self._bounds(tile, d) for d in block_dims if d in tile}
        kept = []
        for i, op in enumerate(self.linops):
            local, covered = dict(rest), {}
            for d, (start, stop) in bounds.items():
                lo, hi = self._extents(d)[i]
                grow = self._grows_last_block and hi == self.size(d)
                start, stop = max(start, lo), stop if grow else min(stop, hi)
                covered[d] = start < stop
                if start < stop and (start, stop) != (lo, hi):
                    local[d] = slice(start - lo, stop - lo)
            local = tile.with_slices(local)
            if all(covered.values()):
                kept.append(op.split(local))
                continue
            missed = tuple(d for d in block_dims if not covered.get(d, True))
            if len(missed) < len(block_dims):
                kept.append(self._zero_block(op.split(local), missed))
        past = [stop - max(start, self._block_size(d)) for d, (start, stop) in bounds.items()]
        if not self._grows_last_block and past and past[0] > 0:
            kept += [_zero(self.linops[-1].split(rest), {}, {})] * past[0]
        if kept:
            return eqx.tree_at(lambda o: o.linops, self, tuple(kept))
        return _zero(self, tile, {})

    def _bounds(self, tile: Tile, dim: str) -> tuple[int, int]:
        """The tile's `[start, stop)` along the block dim `dim` (past the end if padded)."""
        s = tile[dim]
        if dim in tile.padded:
            return s.start or 0, s.stop
        return s.indices(self._block_size(dim))[:2]

    def _block_size(self, dim: str) -> int:
        """The size of the block dim `dim`, which the blocks fix."""
        n = self.size(dim)
        assert n is not None, "the blocks fix the size of a block dim"
        return n

    def _zero_block(self, op: NamedLinop, missed: Dims) -> NamedLinop:
        """A zero block with size 0 along the block dims `missed` (overridden where that
        is not expressible)."""
        return _zero(op, {}, dict.fromkeys(missed, 0))

    def _run(self, x, calls, idim: Dims, odim: Dims, ishape: Dims, oshape: Dims):
        split = self._splitter(idim[0], ishape, len(calls)) if idim else None
        join = self._joiner(odim[0], oshape) if odim else None
        merge = self._merger(odim[0], oshape) if odim else None
        return block_apply(self, x, calls, split, join, merge)

    def apply(self, x: jax.Array) -> jax.Array:
        calls = [op.__call__ for op in self.linops]
        return self._run(x, calls, self.idim, self.odim, self.ishape, self.oshape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        calls = [lambda v, op=op: call_adjoint(op, v) for op in self.linops]
        return self._run(y, calls, self.odim, self.idim, self.oshape, self.ishape)


def _zero(op: NamedLinop, tile, sizes: dict[str, int]) -> NamedLinop:
    """The zero operator with `op`'s dims and sizes, cut to `tile`, overridden by `sizes`."""
    for d in dict.fromkeys(op.ishape + op.oshape):
        n = op.size(d)
        if n is not None and d not in sizes:
            sizes[d] = tile_length(tile, d, n)
    return Zero(op.ishape, op.oshape, sizes)
