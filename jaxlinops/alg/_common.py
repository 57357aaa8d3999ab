"""What the solvers share: operator and shape checks, axes from dim names, inner products
that work on sharded arrays, and optional progress reporting."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from .._arrays import as_array
from .._dims import ELLIPSIS
from .._linop import NamedLinop

Operator = Callable[[jax.Array], jax.Array]
DimsOrAxes = str | int | Sequence[str | int] | None

logger = logging.getLogger("jaxlinops.alg")


def check_operator(A, name: str, role: str = "A") -> None:
    if not callable(A):
        raise TypeError(
            f"`{name}`: `{role}` must be a NamedLinop or a callable; got {type(A).__name__}."
        )


def result_dtype(name: str, *dtypes) -> jnp.dtype:
    dtype = jnp.result_type(*dtypes)
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"`{name}` works in floating point; got dtype {dtype}.")
    return dtype


def square_output(A: Operator, x: jax.Array, name: str, role: str = "A") -> jnp.dtype:
    """The output dtype of `A(x)`, after checking that `A` maps `x`'s shape to itself (the
    square operators that CG and the power method need; dims may be renamed, as in `A.N`)."""
    out = jax.eval_shape(A, x)
    if not isinstance(out, jax.ShapeDtypeStruct) or out.shape != x.shape:
        got = getattr(out, "shape", type(out).__name__)
        raise ValueError(
            f"`{name}`: `{role}` must map its input shape to itself; it maps {x.shape} to "
            f"{got}. Pass a square operator (e.g. `A.N`, not `A`)."
        )
    return out.dtype


def as_vector(value, name: str, role: str) -> jax.Array:
    x = as_array(value, f"`{name}({role}=...)`")
    if x.ndim == 0:
        raise ValueError(f"`{name}`: `{role}` must have at least one axis; got a scalar.")
    return x


def resolve_axes(A, ndim: int, dims: DimsOrAxes, name: str) -> tuple[int, ...]:
    """The axes of an array laid out by `A.ishape` that `dims` names: dim names (when `A` is
    a NamedLinop; dims after a `"..."` count from the end) or axis numbers."""
    if dims is None:
        return ()
    dims = (dims,) if isinstance(dims, (str, int)) else tuple(dims)
    axes = []
    for d in dims:
        if isinstance(d, str):
            if not isinstance(A, NamedLinop):
                raise TypeError(
                    f"`{name}`: dim {d!r} is a name, but the operator is a plain callable; "
                    f"give axis numbers instead."
                )
            shape = tuple(A.ishape)
            if d not in shape or d == ELLIPSIS:
                raise ValueError(f"`{name}`: dim {d!r} is not in the operator's ishape {shape}.")
            i = shape.index(d)
            after = ELLIPSIS in shape and i > shape.index(ELLIPSIS)
            axes.append(ndim - (len(shape) - i) if after else i)
        elif not -ndim <= d < ndim:
            raise ValueError(f"`{name}`: axis {d} is out of range for {ndim} axes.")
        else:
            axes.append(d % ndim)
    return tuple(sorted(set(axes)))


def inner(a: jax.Array, b: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    r"""$\sum \bar a b$ over `axes`, kept as size-1 axes. An elementwise product and a sum
    (not `vdot`), so that it also works on arrays sharded over an Explicit mesh."""
    return jnp.sum(jnp.conj(a) * b, axis=axes, keepdims=True)


def norm(a: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    return jnp.sqrt(jnp.real(inner(a, a, axes)))


def safe_divide(num: jax.Array, den: jax.Array) -> jax.Array:
    """`num / den`, and 0 where `den` is 0 (no NaN from a zero vector)."""
    nonzero = den != 0
    return jnp.where(nonzero, num / jnp.where(nonzero, den, 1), 0)


def progress_bar(total: int, desc: str):
    """A tqdm bar when tqdm is installed, otherwise a logger that reports each update."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _LogProgress(desc)
    return tqdm(total=total, desc=desc)


class _LogProgress:
    def __init__(self, desc: str):
        self.desc, self.n = desc, 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, **values) -> None:
        logger.info("%s: iteration %d, %s", self.desc, self.n, values)

    def close(self) -> None:
        pass
