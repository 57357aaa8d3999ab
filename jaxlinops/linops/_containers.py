"""Shape bookkeeping shared by the container operators (Chain, Add, Concat, Stack)."""

from __future__ import annotations

from collections.abc import Sequence

import jax

from .._arrays import promote
from .._dims import ELLIPSIS, fmt, has_wildcards, resolve, shapes_match
from .._linop import NamedLinop, all_dims, check_input, relabel


def as_linops(name: str, linops: Sequence) -> tuple[NamedLinop, ...]:
    """Validate a container's children: at least one, all NamedLinops."""
    if not linops:
        raise ValueError(f"`{name}` needs at least one operator; got none.")
    for i, op in enumerate(linops):
        if not isinstance(op, NamedLinop):
            raise TypeError(f"`{name}` takes NamedLinops; argument {i} is a {type(op).__name__}.")
    return tuple(linops)


def resolve_side(op: NamedLinop, side: str, target) -> NamedLinop:
    """Substitute `op`'s wildcards on `side` ("ishape"/"oshape") with dims of `target`."""
    sub = resolve(getattr(op, side), target)
    return relabel(op, sub) if sub else op


def most_specific(linops: Sequence[NamedLinop]) -> NamedLinop:
    """The first child whose shapes have no wildcards, else the first that names a dim,
    else the first child."""
    for op in linops:
        if not has_wildcards(op.ishape + op.oshape):
            return op
    for op in linops:
        if not is_dimless(op):
            return op
    return linops[0]


def is_dimless(op: NamedLinop) -> bool:
    """Whether every dim `op` names, inside too, is `"..."` (`Identity()`, `lam * Identity()`,
    `Scalar(c)`): such an operator acts alike on any array."""
    return all_dims(op) == {ELLIPSIS}


def adopt_dims(op: NamedLinop, ref: NamedLinop) -> NamedLinop:
    """A dimless `op` (see `is_dimless`) made to map `ref.ishape -> ref.oshape`: it runs on
    `ref.oshape` after a renaming `ShapeSpec(ref.ishape, ref.oshape)`, so that
    `A.N + lam * Identity()` works although `A.N` renames its output dims."""
    from ._chain import Chain
    from ._identity import Identity

    if not is_dimless(op) or is_dimless(ref) or ref.ishape == ref.oshape:
        return op
    same_rank = len(ref.ishape) == len(ref.oshape) and (ELLIPSIS in ref.ishape) == (
        ELLIPSIS in ref.oshape
    )
    if not same_rank:
        return op  # `unify` reports the mismatch
    on_output = relabel(op, {ELLIPSIS: ref.oshape})
    rename_dims = Identity(ref.ishape, ref.oshape)
    return rename_dims if isinstance(op, Identity) else Chain(rename_dims, *on_output.flatten())


def unify(name: str, linops: Sequence[NamedLinop]) -> tuple[NamedLinop, ...]:
    """Give parallel children (same input, same output) the same shapes.

    Wildcards of each child are resolved against the most specific child; shapes that
    still differ raise a ValueError naming both children.
    """
    ref = most_specific(linops)
    out = []
    for i, op in enumerate(linops):
        op = adopt_dims(op, ref)
        op = resolve_side(resolve_side(op, "ishape", ref.ishape), "oshape", ref.oshape)
        for side in ("ishape", "oshape"):
            if not shapes_match(getattr(op, side), getattr(ref, side)):
                raise ValueError(
                    f"`{name}` requires all operators to share {side}; operator {i} "
                    f"({op.name}) has {fmt(getattr(op, side))} but {ref.name} has "
                    f"{fmt(getattr(ref, side))}."
                )
        out.append(op)
    return tuple(out)


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
