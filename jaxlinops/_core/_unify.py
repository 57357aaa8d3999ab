"""Shape unification of parallel operators (the children of Add, Concat and Stack):
wildcards resolved against the most specific child, and dimless operators
(`lam * Identity()`) given their partner's dims."""

from __future__ import annotations

from collections.abc import Sequence

from .._dims import ELLIPSIS, ShapeAssertionError, fmt, has_wildcards, resolve, shapes_match
from ._chain import Chain
from ._identity import Identity
from ._linop import NamedLinop, all_dims, relabel


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
    still differ raise a ValueError (a `ShapeAssertionError`) naming both children.
    """
    ref = most_specific(linops)
    out = []
    for i, op in enumerate(linops):
        op = adopt_dims(op, ref)
        op = resolve_side(resolve_side(op, "ishape", ref.ishape), "oshape", ref.oshape)
        for side in ("ishape", "oshape"):
            got, want = getattr(op, side), getattr(ref, side)
            if not shapes_match(got, want):
                # a normal renames its output dims (Nx -> Nx1): the usual slip in A.N + c I
                hint = (
                    " A normal renames its unshared output dims: write the identity as "
                    "`jl.Identity(A.ishape, A.N.oshape)`."
                    if side == "oshape" and _renamed(got, want)
                    else ""
                )
                raise ShapeAssertionError(
                    f"`{name}` requires all operators to share {side}; operator {i} "
                    f"({op.name}) has {fmt(got)} but {ref.name} has {fmt(want)}.{hint}"
                )
        out.append(op)
    return tuple(out)


def _renamed(a, b) -> bool:
    """Whether dims `a` and `b` differ only by numbered renamings (`Nx` and `Nx1`)."""
    stems = [[d.rstrip("0123456789") for d in dims] for dims in (a, b)]
    return len(a) == len(b) and a != b and stems[0] == stems[1]
