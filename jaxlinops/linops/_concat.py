"""`Concat`: block operators along an existing dim."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp

from .._core import (
    NamedLinop,
    adjoint_label,
    as_linops,
    check_label,
    check_schedule,
    consistent_size,
    dims_field,
    most_specific,
    unify,
)
from .._dims import ELLIPSIS, Dims, as_dims, axis_of, fmt
from ._block_operator import AbstractBlockOperator


def _one_dim(name: str, dim) -> Dims:
    if dim is None:
        return ()
    if not isinstance(dim, str):
        raise TypeError(f"`{name}` expects a dim name, got {type(dim).__name__} {dim!r}.")
    return as_dims((dim,))  # a `NamedDimension` becomes its name


class Concat(AbstractBlockOperator):
    r"""Block operator along an existing dim.

    - `idim` only (horizontal): $y = \sum_i A_i x_i$, $x = [x_1; \dots; x_n]$ split along
      `idim`;
    - `odim` only (vertical): $y = [A_1 x; \dots; A_n x]$ concatenated along `odim`;
    - both (block diagonal): $y = [A_1 x_1; \dots; A_n x_n]$.

    Every child maps the same `ishape -> oshape` and reports `size` for the concatenated
    dims.
    """

    linops: tuple[NamedLinop, ...]
    idim: Dims = dims_field()
    odim: Dims = dims_field()
    threaded: bool = eqx.field(static=True)
    num_workers: int | None = eqx.field(static=True)
    accumulate: bool = eqx.field(static=True)

    def __init__(
        self,
        *linops: NamedLinop,
        idim: str | None = None,
        odim: str | None = None,
        threaded: bool = True,
        num_workers: int | None = None,
        accumulate: bool = False,
        name: str | None = None,
        stream=None,
    ):
        """**Arguments:**

        - `linops`: the blocks, all with the same `ishape` and `oshape`.
        - `idim`: the input dim along which the input is split between blocks.
        - `odim`: the output dim along which block outputs are concatenated.
        - `name`: a display name, shown by `repr` and in errors.

        - `threaded`, `num_workers`, `accumulate`: torchlinops' scheduling options, kept
          as fields; the blocks run through `parallel_execute` (`accumulate`: joined in
          batches of `num_workers`, to bound memory outside `jit`; `threaded` changes
          nothing, see there).
        - `stream`: torchlinops' CUDA stream; accepted and ignored (JAX orders device
          work itself).
        """
        self.label = check_label("Concat", name)
        self.num_workers = check_schedule("Concat", threaded, num_workers, accumulate)
        self.threaded, self.accumulate = threaded, accumulate
        self.linops = unify("Concat", as_linops("Concat", linops))
        self.idim = _one_dim("Concat(idim=...)", idim)
        self.odim = _one_dim("Concat(odim=...)", odim)

    def __check_init__(self):
        if not self.idim and not self.odim:
            raise ValueError(
                "`Concat` needs `idim`, `odim` or both. At least one of them must be given; got "
                "neither."
            )
        for d in self.idim:
            _check_concat_dim(self.linops, d, self.ishape, "ishape")
        for d in self.odim:
            _check_concat_dim(self.linops, d, self.oshape, "oshape")

    @property
    def ishape(self) -> Dims:
        return most_specific(self.linops).ishape

    @property
    def oshape(self) -> Dims:
        return most_specific(self.linops).oshape

    def size(self, dim: str) -> int | None:
        if dim in self.idim or dim in self.odim:
            return sum(self._block_sizes(dim))
        return consistent_size("Concat", self.linops, dim)

    @staticmethod
    def _infer_dim_idx(dim: str, shape: Sequence[str]) -> int:
        """torchlinops' helper behind `idim_idx`: the axis of `dim` in an array laid out by
        `shape`, negative after a `"..."`; a ValueError when `"..."` is on both sides."""
        names = tuple(str(d) for d in shape)
        i = names.index(str(dim))
        if ELLIPSIS in names[:i] and ELLIPSIS in names[i + 1 :]:
            raise ValueError(
                f"`Concat`: Cannot infer the axis of dim {dim!r} in {fmt(names)}, which has "
                f"'...' on both sides of it."
            )
        return axis_of(as_dims(names), str(dim))

    @property
    def idim_idx(self) -> int | None:
        """The input axis of `idim` (negative after a `"..."`); None without `idim`."""
        return axis_of(self.ishape, self.idim[0]) if self.idim else None

    @property
    def odim_idx(self) -> int | None:
        """The output axis of `odim` (negative after a `"..."`); None without `odim`."""
        return axis_of(self.oshape, self.odim[0]) if self.odim else None

    @property
    def isizes(self) -> tuple[int, ...] | None:
        """Each block's size along `idim`; None without `idim`."""
        return tuple(self._block_sizes(self.idim[0])) if self.idim else None

    @property
    def osizes(self) -> tuple[int, ...] | None:
        """Each block's size along `odim`; None without `odim`."""
        return tuple(self._block_sizes(self.odim[0])) if self.odim else None

    @property
    def islices(self) -> tuple[int, ...] | None:
        """The end of each block along `idim` (cumulative `isizes`, torchlinops' split
        points: `x.tensor_split(islices, idim_idx)[:-1]` are the blocks' inputs)."""
        return None if self.isizes is None else tuple(itertools.accumulate(self.isizes))

    @property
    def oslices(self) -> tuple[int, ...] | None:
        """The end of each block along `odim` (cumulative `osizes`)."""
        return None if self.osizes is None else tuple(itertools.accumulate(self.osizes))

    def _block_sizes(self, dim: str) -> list[int]:
        """Each block's size along the concatenated dim `dim`."""
        sizes = []
        for op in self.linops:
            n = op.size(dim)
            assert n is not None, "every block fixes the concatenated dim (`__check_init__`)"
            sizes.append(n)
        return sizes

    def _extents(self, dim: str) -> list[tuple[int, int]]:
        bounds = [0, *itertools.accumulate(self._block_sizes(dim))]
        return list(zip(bounds[:-1], bounds[1:]))

    def _splitter(self, dim: str, shape: Dims, n: int):
        bounds = list(itertools.accumulate(self._block_sizes(dim)))
        return lambda v: jnp.split(v, bounds[:-1], axis=axis_of(shape, dim))

    def _joiner(self, dim: str, shape: Dims):
        return lambda outs: jnp.concatenate(outs, axis=axis_of(shape, dim))

    def _merger(self, dim: str, shape: Dims) -> None:
        return None  # joined batches are concatenated like blocks

    def adjoint(self) -> NamedLinop:
        return Concat(
            *(op.adjoint() for op in self.linops),
            idim=self.odim[0] if self.odim else None,
            odim=self.idim[0] if self.idim else None,
            threaded=self.threaded,
            num_workers=self.num_workers,
            accumulate=self.accumulate,
            name=adjoint_label(self.label),
        )


def _check_concat_dim(linops, dim: str, shape: Dims, side: str) -> None:
    if dim not in shape:
        raise ValueError(f"`Concat`: dim {dim!r} is not in the children's {side} {fmt(shape)}.")
    for i, op in enumerate(linops):
        if op.size(dim) is None:
            raise ValueError(
                f"`Concat`: operator {i} ({op.name}) has an undefined size for the "
                f"concatenated dim {dim!r}; every block must fix its size."
            )
