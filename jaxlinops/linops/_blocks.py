"""Shared execution of block operators (Concat, Stack)."""

from __future__ import annotations

import abc
from collections.abc import Callable

import equinox as eqx
import jax

from .._dims import Dims
from .._linop import NamedLinop
from ._containers import block_apply, call_adjoint


class AbstractBlocks(NamedLinop):
    """A block operator: the input is optionally split along `idim` between the children,
    and the outputs are joined along `odim` or summed. Subclasses define how."""

    linops: eqx.AbstractVar[tuple[NamedLinop, ...]]
    idim: eqx.AbstractVar[Dims]
    odim: eqx.AbstractVar[Dims]

    @abc.abstractmethod
    def _splitter(self, dim: str, shape: Dims, n: int) -> Callable:
        """A function splitting an array laid out by `shape` into `n` block inputs."""

    @abc.abstractmethod
    def _joiner(self, dim: str, shape: Dims) -> Callable:
        """A function joining block outputs into an array laid out by `shape`."""

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        return self.linops

    def _run(self, x, calls, idim: Dims, odim: Dims, ishape: Dims, oshape: Dims):
        split = self._splitter(idim[0], ishape, len(calls)) if idim else None
        join = self._joiner(odim[0], oshape) if odim else None
        return block_apply(x, calls, split, join)

    def apply(self, x: jax.Array) -> jax.Array:
        calls = [op.__call__ for op in self.linops]
        return self._run(x, calls, self.idim, self.odim, self.ishape, self.oshape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        calls = [lambda v, op=op: call_adjoint(op, v) for op in self.linops]
        return self._run(y, calls, self.odim, self.idim, self.oshape, self.ishape)
