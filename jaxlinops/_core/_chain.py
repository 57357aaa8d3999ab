"""`Chain`: composition of operators."""

from __future__ import annotations

import jax

from .._dims import Dims, fmt, is_wildcard, next_unused, resolve, shapes_match
from ._containers import Container, as_linops, call_adjoint, consistent_size
from ._linop import NamedLinop, adjoint_label, all_dims, check_label, relabel


class Chain(Container):
    r"""The composition $A_n \cdots A_2 A_1$ of `Chain(A_1, ..., A_n)`.

    Operators are listed in **execution order**: `Chain(A, B)` is `B @ A`. Each
    operator's `oshape` must match the next one's `ishape`; a `"..."` or `"()"` wildcard
    on one side is resolved from concrete dims on the other.
    """

    linops: tuple[NamedLinop, ...]

    def __init__(self, *linops: NamedLinop, name: str | None = None):
        """**Arguments:**

        - `linops`: the operators, in execution order.
        - `name`: a display name, shown by `repr` (and `A.H` as `name.H`) and in errors.
        """
        self.label = check_label("Chain", name)
        ops = list(as_linops("Chain", linops))
        for i in range(len(ops) - 1):
            ops[i], ops[i + 1] = _link(ops[i], ops[i + 1], i)
        self.linops = tuple(ops)

    @property
    def ishape(self) -> Dims:
        return self.linops[0].ishape

    @property
    def oshape(self) -> Dims:
        return self.linops[-1].oshape

    def flatten(self) -> list[NamedLinop]:
        return list(self.linops)

    def apply(self, x: jax.Array) -> jax.Array:
        for op in self.linops:
            x = op(x)
        return x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        for op in reversed(self.linops):
            y = call_adjoint(op, y)
        return y

    def adjoint(self) -> NamedLinop:
        adjoints = (op.adjoint() for op in reversed(self.linops))
        return Chain(*adjoints, name=adjoint_label(self.label))

    def _normal(self, inner: NamedLinop | None) -> NamedLinop:
        """Folded from the outside in: `A_1.normal(... A_n.normal(inner))`, so each
        operator can specialise (Dense Gram, Toeplitz NUFFT)."""
        reserved = all_dims(self) | (set() if inner is None else all_dims(inner))
        for op in reversed(self.linops):
            before = all_dims(op) | (set() if inner is None else all_dims(inner))
            inner = _fresh_names(op.normal(inner), before, reserved)
            reserved |= all_dims(inner)
        assert inner is not None, "a Chain has at least one operator"
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
            f"`Chain`: Mismatched shapes: operator {i} ({left.name}) outputs dims "
            f"{fmt(left.oshape)} but operator {i + 1} ({right.name}) expects "
            f"{fmt(right.ishape)}. In `A @ B`, "
            f"`A.ishape` must match `B.oshape`."
        )
    for d in dict.fromkeys(left.oshape):
        if is_wildcard(d):
            continue
        out, into = left.size(d), right.size(d)
        if out is not None and into is not None and out != into:
            raise ValueError(
                f"`Chain`: dim {d!r} has size {out} in the output of operator {i} "
                f"({left.name}) but size {into} in the input of operator {i + 1} "
                f"({right.name}). In `A @ B`, the sizes of `B.oshape` must be those `A` expects."
            )
    return left, right
