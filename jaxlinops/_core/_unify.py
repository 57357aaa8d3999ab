"""Shape unification of parallel operators (the children of Add, Concat and Stack):
wildcards resolved against the most specific child, dimless operators
(`lam * Identity()`) given their partner's dims, and operators that keep their dims
(`D.N`, a `Diagonal`) given the renamed output dims of a normal beside them."""

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


def renames_in_place(op: NamedLinop) -> bool:
    """Whether `op`'s output dims are its input dims renamed position by position, each
    to itself or to a name its input does not use (a normal: `(Nx, Ny) -> (Nx1, Ny1)`),
    with at least one renamed."""
    i, o = op.ishape, op.oshape
    return (
        len(i) == len(o)
        and i != o
        and all(a == b or (b not in i and ELLIPSIS not in (a, b)) for a, b in zip(i, o))
    )


def adopt_renaming(op: NamedLinop, ref: NamedLinop) -> NamedLinop:
    """`op`, which maps `ref.ishape` to itself, followed by the renaming
    `ref.ishape -> ref.oshape` of a partner that renames in place (`renames_in_place`),
    so that `A.N + rho * D.N` works although `A.N` renames its output dims and `D.N` does
    not: both then map $x$ to the same output, position by position."""
    if op.ishape != op.oshape or op.ishape != ref.ishape or not renames_in_place(ref):
        return op
    return Chain(*op.flatten(), Identity(ref.ishape, ref.oshape))


def unify(name: str, linops: Sequence[NamedLinop]) -> tuple[NamedLinop, ...]:
    """Give parallel children (same input, same output) the same shapes.

    Wildcards of each child are resolved against the most specific child; shapes that
    still differ raise a ValueError (a `ShapeAssertionError`) naming both children.
    """
    renaming = next((op for op in linops if renames_in_place(op)), most_specific(linops))
    linops = [adopt_renaming(adopt_dims(op, renaming), renaming) for op in linops]
    ref = most_specific(linops)
    out = []
    for i, op in enumerate(linops):
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
