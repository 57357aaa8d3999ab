"""`Stack`: block operators along a new dim."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._arrays import as_size
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
from .._dims import Dims, axis_of, fmt
from ._block_operator import AbstractBlockOperator
from ._concat import _one_dim


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

    def _zero_block(self, op: NamedLinop, missed: Dims) -> NamedLinop:
        raise ValueError(
            f"`Stack` ({fmt(self.ishape)} -> {fmt(self.oshape)}) cannot be split along "
            f"{missed[0]!r} alone: its blocks are indexed along {fmt(self.idim + self.odim)}; "
            f"tile these dims with the same slice."
        )

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
