"""The normal operator $A^H \\, \\mathrm{inner} \\, A$: its dims and its folding rules.

`NamedLinop.normal` calls `fold_normal` (through the algebra of `jaxlinops._core`), which
applies the rules every operator shares and then the operator's own `_normal` hook.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import config
from .._arrays import promote
from .._dims import (
    ELLIPSIS,
    Dims,
    as_dims,
    fmt,
    is_suffix,
    is_wildcard,
    next_unused,
    resolve,
    substitute,
)
from ._chain import Chain
from ._diagonal import Diagonal
from ._identity import Identity
from ._linop import NamedLinop, all_dims, relabel
from ._scalar import Scalar


def normal_renaming(op: NamedLinop, inner_oshape: Dims | None = None) -> dict[str, str]:
    """The renaming from `op.H`'s dims to the dims of the normal's adjoint half.

    `op.oshape` maps position-wise onto `inner_oshape` (the inner operator's output);
    an input dim shared with `oshape` follows its output name, an unshared one gets the
    next unused name (`N -> N1`).
    """
    target = op.oshape if inner_oshape is None else as_dims(inner_oshape)
    if len(target) != len(op.oshape):
        raise ValueError(
            f"`{op.name}.normal(inner)` needs `inner.oshape` to align with "
            f"{fmt(op.oshape)}; got {fmt(target)}."
        )
    mapping: dict[str, str] = dict(zip(op.oshape, target))
    avoid = all_dims(op) | set(target)
    for d in op.ishape:
        if d not in mapping:
            mapping[d] = next_unused(d, avoid)
            avoid.add(mapping[d])
    return mapping


def normal_oshape(op: NamedLinop, inner_oshape: Dims | None = None) -> Dims:
    """The output dims of `op`'s normal: `ishape` renamed by `normal_renaming`."""
    return substitute(op.ishape, normal_renaming(op, inner_oshape))


def with_oshape(op: NamedLinop, oshape: Dims) -> NamedLinop:
    """`op` followed by an identity renaming its output dims to `oshape` (if needed)."""
    if op.oshape == oshape:
        return op
    if isinstance(op, Identity):  # its sizes follow the renaming
        known = dict(op.sizes)
        sizes = {d: known[d] for d in op.ishape if d in known}
        sizes |= {new: known[old] for old, new in zip(op.oshape, oshape) if old in known}
        return Identity(op.ishape, oshape, sizes)
    return Chain(*op.flatten(), Identity(op.oshape, oshape))


def identity_normal(op: NamedLinop) -> NamedLinop:
    """$A^H A = I$, with the normal's dims: for operators with orthonormal columns. The
    sizes `op` fixes on its input stay checked, on both sides of the renaming."""
    oshape = normal_oshape(op)
    sizes = {}
    for d, renamed in zip(op.ishape, oshape):
        n = None if is_wildcard(d) else op.size(d)
        if n is not None:
            sizes[d] = sizes[renamed] = n
    return Identity(op.ishape, oshape, sizes)


def default_normal(op: NamedLinop, inner: NamedLinop | None = None) -> NamedLinop:
    """`Chain(op, inner, renamed op.H)`: $A^H \\, \\mathrm{inner} \\, A$."""
    post = relabel(op.adjoint(), normal_renaming(op, None if inner is None else inner.oshape))
    parts = (op,) if inner is None else (op, *inner.flatten())
    return Chain(*parts, *post.flatten())


def fold_normal(op: NamedLinop, inner: NamedLinop | None) -> NamedLinop:
    r"""$A^H \, \mathrm{inner} \, A$ by the folding rules, in this order:

    1. `inner` is aligned to `op.oshape`: its wildcards are resolved, and a `Diagonal` or
       `Scalar` on trailing dims of `op.oshape` (density compensation on `"K"` for an
       operator with output `(C, K)`) is widened to all of `op.oshape`.
    2. Scalars commute with linear operators: $A^H (c\,B) A = c\, A^H B A$. Every
       `Scalar` in `inner` (or in the chain it is) is taken out and applied last, so a
       scaled operator keeps its structured normal: `(c * A).N` is $|c|^2 A^H A$.
    3. An `inner` that only renames dims (an `Identity`) is absorbed: $A^H I A = A^H A$,
       and the output dims are renamed to what it implies. With
       `config.reduce_identity_in_normal = False` (torchlinops' flag) it is kept: the
       normal is the chain $A, I, A^H$ (the same operator, without the structured normal).
    4. The operator's `_normal(inner)` hook (Toeplitz NUFFT, Gram Dense, ...), else the
       default chain $A, \mathrm{inner}, A^H$ with the adjoint's unshared dims renamed.
    """
    scale, inner = pull_scalars(align_inner(op, inner))
    identity = isinstance(inner, Identity)
    if inner is None or (identity and getattr(config, "reduce_identity_in_normal", True)):
        oshape = normal_oshape(op, None if inner is None else inner.oshape)
        folded = op._normal(None)
        folded = with_oshape(default_normal(op) if folded is None else folded, oshape)
    else:
        folded = None if identity else op._normal(inner)
        folded = default_normal(op, inner) if folded is None else folded
    return folded if scale is None else scaled_output(folded, scale)


def align_inner(op: NamedLinop, inner: NamedLinop | None) -> NamedLinop | None:
    """`inner` with its input dims equal to `op.oshape` (rule 1 of `fold_normal`)."""
    if inner is None:
        return None
    sub = resolve(inner.ishape, op.oshape)
    if sub:
        inner = relabel(inner, sub)
    if len(inner.ishape) == len(op.oshape) and (ELLIPSIS in inner.ishape) == (
        ELLIPSIS in op.oshape
    ):
        return inner  # the same dims, or renamed position-wise
    if isinstance(inner, (Diagonal, Scalar)) and is_suffix(inner.ishape, op.oshape):
        return Diagonal(inner.weight, op.oshape, getattr(inner, "broadcast_dims", ()))
    raise ValueError(
        f"`{op.name}.normal(inner)` needs `inner` to take the operator's output dims "
        f"{fmt(op.oshape)} (or, for a Diagonal or Scalar, trailing dims of them); got "
        f"`inner.ishape={fmt(inner.ishape)}`."
    )


def pull_scalars(inner: NamedLinop | None) -> tuple[jax.Array | None, NamedLinop | None]:
    """Split `inner` into the product of its `Scalar` factors and the rest (None when
    nothing is left): rule 2 of `fold_normal`."""
    if inner is None:
        return None, None
    parts = inner.flatten()
    scalars = [op.weight for op in parts if isinstance(op, Scalar)]
    if not scalars:
        return None, inner
    rest = [op for op in parts if not isinstance(op, Scalar)]
    scale = scalars[0]
    for w in scalars[1:]:
        scale = jnp.multiply(*promote(scale, w))
    if not rest:
        return scale, None
    return scale, rest[0] if len(rest) == 1 else Chain(*rest)


def scaled_output(op: NamedLinop, c) -> NamedLinop:
    r"""`op` followed by multiplication with the scalar `c`: $c\,A$."""
    return Chain(*op.flatten(), Scalar(c, op.oshape))
