"""`SimpleLinop`: an operator made from plain functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_size, batch_shape_of, dim_sizes
from .._core import Labelled, NamedLinop, adjoint_label, check_label, dims_field, normal_renaming
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, substitute


class SimpleLinop(Labelled):
    r"""$y = f(x)$ for a user-supplied linear function $f$: `ishape -> oshape`.

    The adjoint is the given `adjoint` function, which is not checked; without one it is
    derived as $y \mapsto \overline{f^T(\bar y)}$ with $f^T$ from `jax.linear_transpose`,
    so $f$ must be linear in the JAX sense. The derived adjoint takes the input shape
    from $y$: dims shared by `ishape` and `oshape` and the `"..."` batch axes have $y$'s
    sizes, the other input dims their sizes from `sizes`. With an `adjoint` function and
    no `normal`, `A.H` is the SimpleLinop with the two functions swapped (as in
    torchlinops); otherwise `A.H` wraps the operator, so that `A.H.H` is `A` with its
    `normal` function. torchlinops' `fn(A, x)`, `adj_fn` and `normal_fn` call the given
    functions.

    The functions are static fields: pass module-level functions (not new lambdas on each
    call), or `jax.jit` re-traces for every new operator.
    """

    _forward_fn: Callable = eqx.field(static=True)
    _adjoint_fn: Callable | None = eqx.field(static=True)
    _normal_fn: Callable | None = eqx.field(static=True)
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")

    def __init__(
        self,
        forward: Callable,
        adjoint: Callable | None = None,
        normal: Callable | None = None,
        ishape: DimsLike = "...",
        oshape: DimsLike = None,
        name: str | None = None,
        sizes: Mapping[str, int] | None = None,
    ):
        """**Arguments:**

        - `forward`: $x \\mapsto A x$, for `x` laid out by `ishape`.
        - `adjoint`: $y \\mapsto A^H y$ (default: derived with `jax.linear_transpose`).
        - `normal`: $x \\mapsto A^H A x$ (default: the adjoint after the forward).
        - `ishape`: input dims (default `"..."`).
        - `oshape`: output dims (default: `ishape`).
        - `name`: a display name, shown by `repr` (and `A.H` as `name.H`) and in errors.
        - `sizes`: sizes of dims, e.g. `{"N": 6}`; input dims that are not output dims
          need one when `adjoint` is derived. `A.size(dim)` reports them.
        """
        self._forward_fn = forward
        self._adjoint_fn = adjoint
        self._normal_fn = normal
        self.label = check_label("SimpleLinop", name)
        self.ishape = as_dims(ishape, "...")
        self.oshape = self.ishape if oshape is None else as_dims(oshape)
        self.sizes = _sizes(sizes)

    def __check_init__(self):
        optional = (("adjoint", self._adjoint_fn), ("normal", self._normal_fn))
        given = (("forward", self._forward_fn), *((a, f) for a, f in optional if f is not None))
        for arg, f in given:
            if not callable(f):
                raise TypeError(
                    f"`SimpleLinop({arg}=...)` expects a function; got {type(f).__name__}."
                )
        if self._adjoint_fn is None:
            _check_derivable(self.ishape, self.oshape, dict(self.sizes))

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._forward_fn(x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        if self._adjoint_fn is not None:
            return self._adjoint_fn(y)
        primal = jax.ShapeDtypeStruct(self._input_shape(y.shape), y.dtype)
        (x,) = jax.linear_transpose(self._forward_fn, primal)(jnp.conj(y))
        return jnp.conj(x)

    def _input_shape(self, y_shape: tuple[int, ...]) -> tuple[int, ...]:
        known = {**dict(self.sizes), **dim_sizes(self.oshape, y_shape)}
        shape: list[int] = []
        for d in self.ishape:
            shape.extend(batch_shape_of(self.oshape, y_shape) if d == ELLIPSIS else (known[d],))
        return tuple(shape)

    def adjoint(self) -> NamedLinop:
        if self._adjoint_fn is None or self._normal_fn is not None:
            return super().adjoint()
        label, sizes = adjoint_label(self.label), dict(self.sizes)
        return SimpleLinop(
            self._adjoint_fn, self._forward_fn, None, self.oshape, self.ishape, label, sizes
        )

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if self._normal_fn is None or inner is not None:
            return None
        rn = normal_renaming(self)
        sizes = {**dict(self.sizes), **{rn.get(d, d): n for d, n in self.sizes}}
        oshape = substitute(self.ishape, rn)
        normal = self._normal_fn
        label = None if self.label is None else f"{self.label}.N"
        return SimpleLinop(normal, normal, None, self.ishape, oshape, label, sizes)


def _sizes(sizes: Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    if sizes is not None and not isinstance(sizes, Mapping):
        raise TypeError(
            f"`SimpleLinop(sizes=...)` expects a mapping such as {{'N': 6}}; got "
            f"{type(sizes).__name__}."
        )
    what = "`SimpleLinop(sizes=...)`"
    return tuple((as_dims((d,))[0], as_size(n, what)) for d, n in (sizes or {}).items())


def _check_derivable(ishape: Dims, oshape: Dims, sizes: dict[str, int]) -> None:
    if ELLIPSIS in ishape and ELLIPSIS not in oshape:
        raise ValueError(
            f"`SimpleLinop({fmt(ishape)} -> {fmt(oshape)})` cannot derive its adjoint: the "
            f"input has '...' batch axes but the output does not. Pass `adjoint=...`."
        )
    missing = [d for d in ishape if d != ELLIPSIS and d not in oshape and d not in sizes]
    if missing:
        raise ValueError(
            f"`SimpleLinop({fmt(ishape)} -> {fmt(oshape)})` cannot derive its adjoint: the "
            f"sizes of input dims {missing} are unknown (they are not output dims). Pass "
            f"`sizes={{dim: size}}` or `adjoint=...`."
        )
