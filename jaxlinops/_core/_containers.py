"""Shape bookkeeping shared by the container operators (Chain, Add, Concat, Stack)."""

import dataclasses
from collections.abc import Sequence
from typing import Self, overload

import equinox as eqx
import jax
from equinox import AbstractVar

from .._arrays import promote
from .._dims import Dims, unique
from ._coupling import Coupling, strongest
from ._linop import Labelled, NamedLinop, all_dims, check_input
from ._schedule import check_schedule, parallel_execute
from ._tiles import split_children


class Composite(Labelled):
    """An operator made of the sub-operators `linops` (its `children`), indexed like a
    list of them: `len(A)`, `A[i]` (a child) and `A[i:j]` (the same kind of operator made
    of those children). It may carry a display name (`name=`, its `label`)."""

    linops: AbstractVar[tuple[NamedLinop, ...]]

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        return self.linops

    def __len__(self) -> int:
        return len(self.linops)

    @overload
    def __getitem__(self, index: int) -> NamedLinop: ...

    @overload
    def __getitem__(self, index: slice) -> Self: ...

    def __getitem__(self, index: int | slice) -> NamedLinop:
        if not isinstance(index, slice):
            return self.linops[index]
        kept = self.linops[index]
        if not kept:
            raise IndexError(
                f"`{self.name}[{index.start}:{index.stop}:{index.step}]` selects none of its "
                f"{len(self.linops)} operators; a container needs at least one."
            )
        return eqx.tree_at(lambda o: o.linops, self, kept)


class Scheduled(NamedLinop):
    """An operator that runs its children through `parallel_execute`, with torchlinops'
    options `threaded`, `num_workers` and `accumulate` (see there)."""

    threaded: AbstractVar[bool]
    num_workers: AbstractVar[int | None]
    accumulate: AbstractVar[bool]

    def __setattr__(self, name: str, value: object) -> None:
        """The scheduling options may be assigned on a built operator, as in torchlinops
        (`add.threaded = False`), checked as the constructor checks them: they change how
        the children run (how a sum is grouped), never the operator. Every other field is
        frozen (see `NamedLinop.__setattr__`)."""
        try:
            super().__setattr__(name, value)
        except dataclasses.FrozenInstanceError:
            if name not in _SCHEDULE_OPTIONS:
                raise
            options = {key: getattr(self, key) for key in _SCHEDULE_OPTIONS} | {name: value}
            checked = check_schedule(self.name, **options)
            object.__setattr__(self, name, checked if name == "num_workers" else value)


_SCHEDULE_OPTIONS = ("threaded", "num_workers", "accumulate")


class Container(Composite):
    """A composite whose dims couple as strongly as in the child that couples them most,
    and whose tile is every child's tile."""

    @property
    def dims(self) -> Dims:
        """The dims of every child, in order, without repeats (torchlinops' container
        `dims`: a chain's internal dims too)."""
        return unique(self.ishape + self.oshape + sum((op.dims for op in self.linops), ()))

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


def block_apply(op: Scheduled, x: jax.Array, calls, split=None, join=None, merge=None):
    """Run one block per call, scheduled by `op`'s options (see `parallel_execute`):
    `split(x)` gives each block its input (else all get `x`), `join(outputs)` assembles
    the result (else the outputs are summed), and `merge(result, joined)` adds a joined
    batch to the running result when accumulating (else `join` of the two)."""
    parts = split(x) if split is not None else [x] * len(calls)
    reduce_fn = (lambda outs: join(promote(*outs))) if join is not None else add_all
    merge_fn = None if merge is None else lambda a, b: merge(*promote(a, b))
    return parallel_execute(
        calls, parts, None, reduce_fn, op.threaded, op.num_workers, op.accumulate, merge_fn
    )


def children_coupling(linops: Sequence[NamedLinop], dim: str) -> Coupling:
    """A container's coupling of `dim`: the strongest among the children that have it."""
    return strongest(op.coupling(dim) for op in linops if dim in all_dims(op))
