"""`Chain`: composition of operators."""

from __future__ import annotations

import jax

from .._dims import Dims, fmt, resolve, shapes_match
from .._linop import NamedLinop, fold_normal, rename
from .._split import split_children
from ._containers import as_linops, call_adjoint, consistent_size


class Chain(NamedLinop):
    r"""The composition $A_n \cdots A_2 A_1$ of `Chain(A_1, ..., A_n)`.

    Operators are listed in **execution order**: `Chain(A, B)` is `B @ A`. Each
    operator's `oshape` must match the next one's `ishape`; a `"..."` or `"()"` wildcard
    on one side is resolved from concrete dims on the other.
    """

    linops: tuple[NamedLinop, ...]

    def __init__(self, *linops: NamedLinop):
        linops = list(as_linops("Chain", linops))
        for i in range(len(linops) - 1):
            linops[i], linops[i + 1] = _link(linops[i], linops[i + 1], i)
        self.linops = tuple(linops)

    @property
    def ishape(self) -> Dims:
        return self.linops[0].ishape

    @property
    def oshape(self) -> Dims:
        return self.linops[-1].oshape

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        return self.linops

    def flatten(self) -> tuple[NamedLinop, ...]:
        return self.linops

    def split(self, tile) -> NamedLinop:
        return split_children(self, tile)

    def apply(self, x: jax.Array) -> jax.Array:
        for op in self.linops:
            x = op(x)
        return x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        for op in reversed(self.linops):
            y = call_adjoint(op, y)
        return y

    def adjoint(self) -> NamedLinop:
        return Chain(*(op.adjoint() for op in reversed(self.linops)))

    def normal(self, inner: NamedLinop | None = None) -> NamedLinop:
        """Folded from the outside in: `A_1.normal(... A_n.normal(inner))`, so each
        operator can specialise (Dense Gram, Toeplitz NUFFT)."""
        for op in reversed(self.linops):
            inner = fold_normal(op, inner)
        return inner

    def size(self, dim: str) -> int | None:
        return consistent_size("Chain", self.linops, dim)


def _link(left: NamedLinop, right: NamedLinop, i: int) -> tuple[NamedLinop, NamedLinop]:
    """Resolve wildcards between consecutive operators, or raise on a mismatch."""
    if left.oshape != right.ishape:
        sub = resolve(right.ishape, left.oshape)
        if sub:
            right = rename(right, sub)
        sub = resolve(left.oshape, right.ishape)
        if sub:
            left = rename(left, sub)
    if not shapes_match(left.oshape, right.ishape):
        raise ValueError(
            f"`Chain`: operator {i} ({left.name}) outputs dims {fmt(left.oshape)} but "
            f"operator {i + 1} ({right.name}) expects {fmt(right.ishape)}. In `A @ B`, "
            f"`A.ishape` must match `B.oshape`."
        )
    return left, right
