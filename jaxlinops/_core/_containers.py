"""Shape bookkeeping shared by the container operators (Chain, Add, Concat, Stack)."""

from collections.abc import Sequence

import jax
from equinox import AbstractVar

from .._arrays import promote
from ._coupling import Coupling, strongest
from ._linop import Labelled, NamedLinop, all_dims, check_input
from ._tiles import split_children


class Container(Labelled):
    """An operator made of the sub-operators `linops` (its `children`): a dim couples as
    strongly as in the child that couples it most, and a tile is every child's tile. It
    may carry a display name (`name=`, its `label`)."""

    linops: AbstractVar[tuple[NamedLinop, ...]]

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        return self.linops

    def coupling(self, dim: str) -> Coupling:
        """The strongest coupling of `dim` among the children that have it."""
        return children_coupling(self.linops, dim)

    def split(self, tile) -> NamedLinop:
        return split_children(self, tile)


def as_linops(name: str, linops: Sequence) -> tuple[NamedLinop, ...]:
    """Validate a container's children: at least one, all NamedLinops."""
    if not linops:
        raise ValueError(f"`{name}` needs at least one operator; got none.")
    for i, op in enumerate(linops):
        if not isinstance(op, NamedLinop):
            raise TypeError(f"`{name}` takes NamedLinops; argument {i} is a {type(op).__name__}.")
    return tuple(linops)


def consistent_size(name: str, linops: Sequence[NamedLinop], dim: str) -> int | None:
    """The size the children agree on for `dim`; a ValueError if two disagree."""
    found = None
    for op in linops:
        s = op.size(dim)
        if s is None:
            continue
        if found is not None and s != found:
            raise ValueError(
                f"`{name}`: conflicting sizes {found} and {s} for dim {dim!r} "
                f"(the second from {op.name})."
            )
        found = s
    return found


def call_adjoint(op: NamedLinop, y: jax.Array) -> jax.Array:
    """$A^H y$ with the same input checks as `A.H(y)`, without building `A.H`."""
    check_input(op, op.oshape, y)
    return op.apply_adjoint(y)


def add_all(arrays: Sequence[jax.Array]) -> jax.Array:
    """Sum arrays of possibly different dtypes (explicit promotion)."""
    arrays = promote(*arrays)
    total = arrays[0]
    for a in arrays[1:]:
        total = total + a
    return total


def block_apply(x: jax.Array, calls, split=None, join=None) -> jax.Array:
    """Run one block per call: `split(x)` gives each block its input (else all get `x`),
    `join(outputs)` assembles the result (else the outputs are summed)."""
    parts = split(x) if split is not None else [x] * len(calls)
    outs = [call(p) for call, p in zip(calls, parts)]
    return join(promote(*outs)) if join is not None else add_all(outs)


def children_coupling(linops: Sequence[NamedLinop], dim: str) -> Coupling:
    """A container's coupling of `dim`: the strongest among the children that have it."""
    return strongest(op.coupling(dim) for op in linops if dim in all_dims(op))
