"""The operator algebra that `NamedLinop` uses (see `jaxlinops._core._linop.Algebra`):
composition, sums, scaling, the generic adjoint, the normal, splitting, and the base of
classes written to torchlinops' protocol."""

from __future__ import annotations

from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.core import Tracer

from ._add import Add
from ._adjoint import Adjoint
from ._chain import Chain
from ._custom import BaseStandIn, FunctionLinop
from ._linop import NamedLinop
from ._masks import split_arrays
from ._normal import fold_normal, with_oshape
from ._scalar import Scalar
from ._tiles import Tile, split as checked_split

function_base = FunctionLinop
base_stand_in = BaseStandIn
tile_type = Tile


def compose(outer: NamedLinop, inner: NamedLinop) -> NamedLinop:
    """`outer @ inner`: the flat chain `inner` then `outer`, with `fold_adjoint_pairs`."""
    return fold_adjoint_pairs(Chain(*inner.flatten(), *outer.flatten()))


def add(a: NamedLinop, b: NamedLinop) -> NamedLinop:
    """`a + b`: one flat `Add` of their addends."""
    return Add(*_addends(a), *_addends(b))


def _addends(op: NamedLinop) -> tuple[NamedLinop, ...]:
    return op.linops if isinstance(op, Add) else (op,)


def scale(op: NamedLinop, c, side: str) -> NamedLinop:
    """`op * c` (`side="input"`: $A (c x)$) or `c * op` (`"output"`: $c (A x)$)."""
    if side == "input":
        return compose(op, Scalar(c, op.ishape))
    return compose(Scalar(c, op.oshape), op)


def split(op: NamedLinop, tile: Mapping[str, slice]) -> NamedLinop:
    """`NamedLinop.split(op, tile)`.

    A user's `{dim: slice}` (torchlinops' call, keys dim names or `NamedDimension`s) is
    checked by `jaxlinops.split`, which calls `op.split` with a `Tile`. A `Tile` goes to
    the operator's own `split`, or is sliced as its `tiling()` declares (`split_arrays`).
    """
    if not isinstance(tile, Tile):
        by_name = {str(d): s for d, s in tile.items()} if isinstance(tile, Mapping) else tile
        return checked_split(op, by_name)
    own = type(op).split
    if own is not NamedLinop.split:  # `NamedLinop.split(A, tile)` for an `A` with its own
        return own(op, tile)
    t = op.tiling()
    return split_arrays(op, tile, t.arrays, t.batch, t.zeroed)


def adjoint(op: NamedLinop) -> NamedLinop:
    """The generic adjoint, `Adjoint(op)`."""
    return Adjoint(op)


normal = fold_normal


def fold_adjoint_pairs(chain: Chain) -> NamedLinop:
    r"""`chain` with its longest run of adjoint pairs around a middle folded into a
    normal: $\ldots B^H A^H\, M\, A B \ldots \to \ldots (AB).\mathrm{normal}(M) \ldots$
    (the output dims of the normal renamed back), so `A.H @ (c * A)` or `A.H @ D @ A`
    written by hand keeps the operator's structured (Toeplitz) normal.

    A pair is recognised when the later operator equals the earlier one's adjoint as a
    pytree (see `_AdjointPairs`).
    """
    ops = chain.linops
    is_pair = _AdjointPairs(ops)
    best = (0, 0, 0)  # (pairs, start of the middle, end of the middle)
    for a in range(1, len(ops)):
        for b in range(a, len(ops)):
            t = 0
            while a - 1 - t >= 0 and b + t < len(ops) and is_pair(a - 1 - t, b + t):
                t += 1
            best = max(best, (t, a, b))
    t, a, b = best
    if t == 0:
        return chain
    inner = None if a == b else Chain(*ops[a:b])
    folded = with_oshape(Chain(*ops[a - t : a]).normal(inner), ops[b + t - 1].oshape)
    return Chain(*ops[: a - t], *folded.flatten(), *ops[b + t :])


class _AdjointPairs:
    """`is_pair(i, j)`: whether `ops[j]` is `ops[i].H` as a pytree: the same structure and
    static fields, and leaves that are the same object or equal concrete arrays (tracers
    compare by identity only). The structures are compared first, from `eval_shape`, so an
    adjoint (which may conjugate a large array) is only built for a likely pair."""

    def __init__(self, ops: tuple[NamedLinop, ...]):
        self.ops = ops
        self.trees = [jax.tree.structure(op) for op in ops]
        self.adjoint_trees = [
            jax.tree.structure(eqx.filter_eval_shape(lambda o: o.adjoint(), op)) for op in ops
        ]

    def __call__(self, i: int, j: int) -> bool:
        if self.trees[j] != self.adjoint_trees[i]:
            return False
        leaves = zip(jax.tree.leaves(self.ops[j]), jax.tree.leaves(self.ops[i].adjoint()))
        return all(_same_leaf(x, y) for x, y in leaves)


def _same_leaf(x, y) -> bool:
    if x is y:
        return True
    if not (eqx.is_array(x) and eqx.is_array(y)):
        return x == y
    if isinstance(x, Tracer) or isinstance(y, Tracer):
        return False
    return x.shape == y.shape and x.dtype == y.dtype and bool(jnp.array_equal(x, y))
