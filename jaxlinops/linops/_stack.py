"""`Stack`: block operators along a new dim."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_array, as_size, check_rank, dim_sizes
from .._core import (
    NamedLinop,
    Tile,
    adjoint_label,
    as_linops,
    as_tile,
    check_label,
    check_schedule,
    consistent_size,
    dims_field,
    most_specific,
    unify,
)
from .._dims import Dims, axis_of, fmt
from ..functional._index import slice2range
from ._block_operator import AbstractBlockOperator, _zero
from ._concat import Concat, _one_dim


def _insert(shape: Dims, dim: Dims, idx: int) -> Dims:
    if not dim:
        return shape
    n = len(shape) + 1
    pos = idx + n if idx < 0 else idx
    return shape[:pos] + dim + shape[pos:]


class Stack(AbstractBlockOperator):
    r"""Block operator along a new dim, one block per index of that dim.

    - `idim_and_idx` only: $y = \sum_i A_i x[i]$;
    - `odim_and_idx` only: $y[i] = A_i x$;
    - both: $y[i] = A_i x[i]$ (block diagonal).

    The new dim is inserted into the children's shapes at the given index.
    """

    linops: tuple[NamedLinop, ...]
    idim: Dims = dims_field()
    odim: Dims = dims_field()
    threaded: bool = eqx.field(static=True)
    num_workers: int | None = eqx.field(static=True)
    accumulate: bool = eqx.field(static=True)
    iidx: int = eqx.field(static=True)
    oidx: int = eqx.field(static=True)
    _grows_last_block: ClassVar[bool] = False

    def __init__(
        self,
        *linops: NamedLinop,
        idim_and_idx: tuple[str | None, int | None] | None = (None, None),
        odim_and_idx: tuple[str | None, int | None] | None = (None, None),
        threaded: bool = True,
        num_workers: int | None = None,
        accumulate: bool = False,
        name: str | None = None,
        stream=None,
    ):
        """**Arguments:**

        - `linops`: the blocks, all with the same `ishape` and `oshape`.
        - `idim_and_idx`: `(dim, index)`: a new input dim at position `index` of `ishape`
          (`(None, None)` or None: none).
        - `odim_and_idx`: `(dim, index)`: a new output dim at position `index` of `oshape`.
        - `name`: a display name, shown by `repr` and in errors.

        - `threaded`, `num_workers`, `accumulate`: torchlinops' scheduling options, kept
          as fields; the blocks run through `parallel_execute` (`accumulate`: joined in
          batches of `num_workers`, to bound memory outside `jit`; `threaded` changes
          nothing, see there).
        - `stream`: torchlinops' CUDA stream; accepted and ignored (JAX orders device
          work itself).
        """
        self.label = check_label("Stack", name)
        self.num_workers = check_schedule("Stack", threaded, num_workers, accumulate)
        self.threaded, self.accumulate = threaded, accumulate
        self.linops = unify("Stack", as_linops("Stack", linops))
        idim, self.iidx = _dim_and_idx("idim_and_idx", idim_and_idx)
        odim, self.oidx = _dim_and_idx("odim_and_idx", odim_and_idx)
        self.idim = _one_dim("Stack(idim_and_idx=...)", idim)
        self.odim = _one_dim("Stack(odim_and_idx=...)", odim)

    def __check_init__(self):
        if not self.idim and not self.odim:
            raise ValueError("`Stack` needs `idim_and_idx`, `odim_and_idx` or both; got neither.")
        child = most_specific(self.linops)
        for dim, idx, shape in (
            (self.idim, self.iidx, child.ishape),
            (self.odim, self.oidx, child.oshape),
        ):
            if dim and dim[0] in shape:
                raise ValueError(
                    f"`Stack`: the children's shape {fmt(shape)} already contains the new "
                    f"dim {dim[0]!r}; choose a new name."
                )
            if dim and not -len(shape) - 1 <= idx <= len(shape):
                raise ValueError(
                    f"`Stack`: index {idx} for the new dim {dim[0]!r} is out of range for "
                    f"{fmt(shape)}."
                )

    @property
    def ishape(self) -> Dims:
        return _insert(most_specific(self.linops).ishape, self.idim, self.iidx)

    @property
    def oshape(self) -> Dims:
        return _insert(most_specific(self.linops).oshape, self.odim, self.oidx)

    def size(self, dim: str) -> int | None:
        if dim in self.idim or dim in self.odim:
            return len(self.linops)
        return consistent_size("Stack", self.linops, dim)

    def _extents(self, dim: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i in range(len(self.linops))]

    def __call__(self, x) -> jax.Array:
        """$A x$, checking first that `x` has one entry per block along `idim` (in
        torchlinops' words, 'Stack Linop expecting ...')."""
        if self.idim:
            x = as_array(x, f"`{self.name}(x)`")
            check_rank(self.name, self.ishape, x)
            dim, n = self.idim[0], len(self.linops)
            got = dim_sizes(self.ishape, x.shape)[dim]
            if got != n:
                raise ValueError(
                    f"`{self.name}(x)`: Stack Linop expecting input of size {n} (one entry per "
                    f"block) along its stacked dim {dim!r} (axis "
                    f"{axis_of(self.ishape, dim)} of {fmt(self.ishape)}); got input of shape "
                    f"{tuple(x.shape)}, with {got} entries along {dim!r}."
                )
        return super().__call__(x)

    def split(self, tile) -> NamedLinop:
        r"""A tile of a block-diagonal Stack whose ranges along `idim` ($R$) and `odim`
        ($C$) differ, e.g. tiled along one of them only: the entries $(c, r)$ with
        $c = r \in R \cap C$ hold the blocks, all others are zero. It is the Stack of the
        blocks in $R \cap C$ between two zero blocks in a block-diagonal `Concat` (the
        entries of $R$ and $C$ before and after $R \cap C$), or `Zero` if $R \cap C$ is
        empty. Otherwise as `AbstractBlockOperator.split` (a tile of the blocks it
        covers)."""
        tile = as_tile(tile)
        if not (self.idim and self.odim):
            return super().split(tile)
        i, o, n = self.idim[0], self.odim[0], len(self.linops)
        (ri, si), (ro, so) = (self._bounds(tile, d) if d in tile else (0, n) for d in (i, o))
        if (ri, si) == (ro, so):
            return super().split(tile)
        start, stop = max(ri, ro), min(si, so, n)
        if start >= stop:
            return _zero(self, tile, {})
        both = slice(start, stop)
        padded = {d: k for d, k in tile.padded.items() if d not in (i, o)}
        inner = super().split(Tile({**tile.slices, i: both, o: both}, padded))
        sides = ({i: start - ri, o: start - ro}, {i: si - stop, o: so - stop})
        before, after = (_zero(inner, {}, sizes) for sizes in sides)
        blocks = [b for b in (before, inner, after) if b.size(i) or b.size(o)]
        return Concat(
            *blocks,
            idim=i,
            odim=o,
            threaded=self.threaded,
            num_workers=self.num_workers,
            accumulate=self.accumulate,
        )

    def split_data(self, ibatch, obatch, data_list):
        """torchlinops' split of per-block data: `data_list[k]` (one entry per block) for
        each block $k$ that the slices `ibatch` (one per dim of `ishape`) and `obatch` (of
        `oshape`) select along `idim` and `odim`, split by the block's own `split_data`
        (a nested Stack's) with the slices of the other dims; `0.0` when no block is
        selected (a block-diagonal Stack sliced off its diagonal)."""
        n = len(self.linops)
        if len(data_list) != n:
            raise ValueError(
                f"`{self.name}.split_data`: `data_list` needs one entry per block ({n}); "
                f"got {len(data_list)}."
            )
        kept, batches = set(range(n)), []
        for arg, dims, shape, batch in (
            ("ibatch", self.idim, self.ishape, ibatch),
            ("obatch", self.odim, self.oshape, obatch),
        ):
            if len(batch) != len(shape):
                raise ValueError(
                    f"`{self.name}.split_data`: `{arg}` needs one slice per dim of "
                    f"{fmt(shape)}; got {len(batch)}."
                )
            batch = list(batch)
            if dims:
                kept &= set(slice2range(batch.pop(shape.index(dims[0])), n))
            batches.append(batch)
        if not kept:
            return 0.0
        out = []
        for k in sorted(kept):
            split = getattr(self.linops[k], "split_data", None)
            if split is None:
                raise TypeError(
                    f"`{self.name}.split_data`: block {k} ({self.linops[k].name}) has no "
                    f"`split_data`; as in torchlinops, only a Stack has one."
                )
            out.append(split(*batches, data_list[k]))
        return out

    def _splitter(self, dim: str, shape: Dims, n: int):
        return lambda v: [jnp.take(v, i, axis=axis_of(shape, dim)) for i in range(n)]

    def _joiner(self, dim: str, shape: Dims):
        return lambda outs: jnp.stack(outs, axis=axis_of(shape, dim))

    def _merger(self, dim: str, shape: Dims):
        return lambda a, b: jnp.concatenate((a, b), axis=axis_of(shape, dim))

    def adjoint(self) -> NamedLinop:
        return Stack(
            *(op.adjoint() for op in self.linops),
            idim_and_idx=(self.odim[0], self.oidx) if self.odim else None,
            odim_and_idx=(self.idim[0], self.iidx) if self.idim else None,
            threaded=self.threaded,
            num_workers=self.num_workers,
            accumulate=self.accumulate,
            name=adjoint_label(self.label),
        )


def _dim_and_idx(arg: str, value) -> tuple[str | None, int]:
    """`(dim, index)` checked: a dim name and an integer position (None or `(None, None)`,
    torchlinops' default: no new dim)."""
    if value is None or (isinstance(value, (tuple, list)) and tuple(value) == (None, None)):
        return None, 0
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise TypeError(f"`Stack({arg}=...)` expects a pair (dim, index); got {value!r}.")
    return value[0], as_size(value[1], f"`Stack({arg}=...)` index", None)
