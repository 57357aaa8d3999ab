"""`Chain`: composition of operators."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._dims import Dims, fmt, next_unused, resolve, shapes_match
from .._linop import NamedLinop, all_dims, relabel, with_oshape
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

    def _normal(self, inner: NamedLinop | None) -> NamedLinop:
        """Folded from the outside in: `A_1.normal(... A_n.normal(inner))`, so each
        operator can specialise (Dense Gram, Toeplitz NUFFT)."""
        reserved = all_dims(self) | (set() if inner is None else all_dims(inner))
        for op in reversed(self.linops):
            before = all_dims(op) | (set() if inner is None else all_dims(inner))
            inner = _fresh_names(op.normal(inner), before, reserved)
            reserved |= all_dims(inner)
        return inner

    def size(self, dim: str) -> int | None:
        return consistent_size("Chain", self.linops, dim)


def _fresh_names(normal: NamedLinop, before: set[str], reserved: set[str]) -> NamedLinop:
    """`normal` with the dims it invented (not in `before`) renamed where they collide with
    a dim used elsewhere in the chain (`reserved`): a child's normal picks its new names
    (`M -> M1`) knowing only its own dims, and `M1` may be another child's input dim."""
    invented = all_dims(normal) - before
    taken = reserved | all_dims(normal)
    mapping = {}
    for d in sorted(invented & reserved):
        mapping[d] = next_unused(d, taken)
        taken.add(mapping[d])
    return relabel(normal, mapping) if mapping else normal


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
    if isinstance(x, jax.core.Tracer) or isinstance(y, jax.core.Tracer):
        return False
    return x.shape == y.shape and x.dtype == y.dtype and bool(jnp.array_equal(x, y))


def _link(left: NamedLinop, right: NamedLinop, i: int) -> tuple[NamedLinop, NamedLinop]:
    """Resolve wildcards between consecutive operators, or raise on a mismatch."""
    if left.oshape != right.ishape:
        sub = resolve(right.ishape, left.oshape)
        if sub:
            right = relabel(right, sub)
        sub = resolve(left.oshape, right.ishape)
        if sub:
            left = relabel(left, sub)
    if not shapes_match(left.oshape, right.ishape):
        raise ValueError(
            f"`Chain`: operator {i} ({left.name}) outputs dims {fmt(left.oshape)} but "
            f"operator {i + 1} ({right.name}) expects {fmt(right.ishape)}. In `A @ B`, "
            f"`A.ishape` must match `B.oshape`."
        )
    return left, right
