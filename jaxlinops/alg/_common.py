"""What the solvers share: operator and shape checks, axes from dim names, inner products
that work on sharded arrays, flags, and the progress bars' trackers."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import DTypeLike

from .._arrays import as_array, as_size
from .._core import NamedLinop
from .._dims import ELLIPSIS, fmt
from .._progress import Tracker, enabled

Operator = Callable[[jax.Array], jax.Array]
DimsOrAxes = str | int | Sequence[str | int] | None


def check_operator(A: object, name: str, role: str = "A") -> None:
    if not callable(A):
        raise TypeError(
            f"`{name}`: `{role}` must be a NamedLinop or a callable; got {type(A).__name__}."
        )


def result_dtype(name: str, *dtypes: DTypeLike) -> np.dtype:
    """The dtype a solver works in: JAX's standard promotion of `dtypes`, also where the
    caller asks for strict promotion (real data and a complex operator mix on purpose:
    the solver casts its vectors to the result explicitly)."""
    with jax.numpy_dtype_promotion("standard"):
        dtype = jnp.result_type(*dtypes)
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"`{name}` works in floating point; got dtype {dtype}.")
    return dtype


def square_output(A: Operator, x: jax.Array, name: str, role: str = "A") -> np.dtype:
    """The output dtype of `A(x)`, after checking that `A` maps `x`'s shape to itself (the
    square operators that CG and the power method need; dims may be renamed, as in `A.N`).
    A NamedLinop whose own dims say it is not square is refused before `x` is looked at."""
    if isinstance(A, NamedLinop) and not _square(A):
        sizes = [A.size(d) for d in A.ishape], [A.size(d) for d in A.oshape]
        raise ValueError(
            f"`{name}`: `{role}` must be square (map its input space to itself); "
            f"`{A.name}` maps {fmt(A.ishape)} to {fmt(A.oshape)} (sizes {sizes[0]} to "
            f"{sizes[1]}). Pass a square operator (e.g. `A.N`, not `A`)."
        )
    out = jax.eval_shape(A, x)
    if not isinstance(out, jax.ShapeDtypeStruct) or out.shape != x.shape:
        got = getattr(out, "shape", type(out).__name__)
        raise ValueError(
            f"`{name}`: `{role}` must map its input shape to itself; it maps {x.shape} to "
            f"{got}. Pass a square operator (e.g. `A.N`, not `A`)."
        )
    return out.dtype


def _square(A: NamedLinop) -> bool:
    """Whether `A`'s dims allow a square operator: as many input as output dims (a `"..."`
    on both sides or neither), with equal sizes where both are known."""
    ishape, oshape = A.ishape, A.oshape
    if len(ishape) != len(oshape) or (ELLIPSIS in ishape) != (ELLIPSIS in oshape):
        return False
    sizes = ((A.size(i), A.size(o)) for i, o in zip(ishape, oshape) if ELLIPSIS not in (i, o))
    return all(a is None or b is None or a == b for a, b in sizes)


def as_vector(value: object, name: str, role: str) -> jax.Array:
    if not isinstance(value, jax.Array) and np.asarray(value).dtype.kind not in "biufc":
        raise TypeError(
            f"`{name}`: `{role}` must be a numeric array; got {type(value).__name__} {value!r:.60}."
        )
    x = as_array(value, f"`{name}({role}=...)`")
    if x.ndim == 0:
        raise ValueError(f"`{name}`: `{role}` must have at least one axis; got a scalar.")
    return x


def as_count(value: object, name: str, arg: str) -> int:
    """A count (of iterations, of singular values): a Python or numpy integer >= 1 (static:
    it fixes array shapes and loop bounds)."""
    return as_size(value, f"`{name}({arg}=...)`", 1)


def as_real(value: object, what: str) -> float:
    """A concrete, finite real number as a Python float: TypeError for a traced value, a
    bool, a complex number, a string or an array with axes; ValueError for NaN or Inf."""
    if isinstance(value, Tracer):
        raise TypeError(f"{what} needs a concrete real number; got a traced value.")
    if (
        not isinstance(value, (int, float, np.integer, np.floating, np.ndarray, jax.Array))
        or isinstance(value, (bool, np.bool_))
        or np.ndim(value) != 0
        or np.asarray(value).dtype.kind not in "iuf"
    ):
        raise TypeError(f"{what} expects a real number; got {value!r} ({type(value).__name__}).")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{what} expects a finite real number; got {value!r}.")
    return number


def as_tolerance(value: object, name: str, arg: str) -> float | jax.Array:
    """A tolerance: a finite real number >= 0 (a Python float, so it is static under jit), or
    a traced scalar, passed through unchecked (its value is not known at trace time)."""
    return _bounded(value, name, arg, "a tolerance >= 0", lambda v: v >= 0)


def as_positive(value: object, name: str, arg: str) -> float | jax.Array:
    """A penalty or step size: a finite real number > 0, or a traced scalar (passed through
    unchecked: its value is not known at trace time)."""
    return _bounded(value, name, arg, "a real number > 0", lambda v: v > 0)


def _bounded(
    value: object, name: str, arg: str, expected: str, valid: Callable[[float], bool]
) -> float | jax.Array:
    """`value` as a Python float checked by `valid`, or a traced scalar passed through."""
    what = f"`{name}({arg}=...)`"
    if isinstance(value, Tracer):
        if value.ndim != 0:
            raise ValueError(f"{what} expects a scalar; got an array of shape {value.shape}.")
        return value
    number = as_real(value, what)
    if not valid(number):
        raise ValueError(f"{what} expects {expected}; got {value!r}.")
    return number


def resolve_axes(A: object, ndim: int, dims: DimsOrAxes, name: str) -> tuple[int, ...]:
    """The axes of an array laid out by `A.ishape` that `dims` names: dim names (when `A` is
    a NamedLinop; dims after a `"..."` count from the end) or axis numbers."""
    if dims is None:
        return ()
    dims = tuple(dims) if isinstance(dims, Sequence) and not isinstance(dims, str) else (dims,)
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
        elif not isinstance(d, (int, np.integer)) or isinstance(d, (bool, np.bool_)):
            raise TypeError(f"`{name}`: dims are names or axis numbers; got {d!r}.")
        elif not -ndim <= d < ndim:
            raise ValueError(f"`{name}`: axis {d} is out of range for {ndim} axes.")
        else:
            axes.append(int(d) % ndim)
    return tuple(sorted(set(axes)))


def inner(a: jax.Array, b: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    r"""$\sum \bar a b$ over `axes`, kept as size-1 axes. An elementwise product and a sum
    (not `vdot`), so that it also works on arrays sharded over an Explicit mesh."""
    return jnp.sum(jnp.conj(a) * b, axis=axes, keepdims=True)


def norm(a: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    return jnp.sqrt(jnp.real(inner(a, a, axes)))


def max_abs(a: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    r"""$\max |a|$ over `axes`, kept as size-1 axes (NaN when `a` holds NaN)."""
    return jnp.max(jnp.abs(a), axis=axes, keepdims=True)


def scaled_norm(a: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    r"""$\|a\|$ over `axes` as $m \|a / m\|$, $m = \max |a|$: the squares neither overflow
    (float32 entries of 1e20) nor underflow. 0 for a zero vector, NaN when `a` holds NaN
    or Inf."""
    m = max_abs(a, axes)
    return m * norm(safe_divide(a, m.astype(a.dtype)), axes)


def safe_divide(num: jax.Array, den: jax.Array) -> jax.Array:
    """`num / den`, and 0 where `den` is 0 (no NaN from a zero vector)."""
    nonzero = den != 0
    return jnp.where(nonzero, num / jnp.where(nonzero, den, 1), 0)


def as_flag(value: object, name: str, arg: str) -> bool:
    """A Python or numpy bool (static: it picks what is compiled)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}({arg}=...)` expects True or False; got {value!r:.60}.")
    return bool(value)


def tracker_for(
    progress: object, total: int, desc: str, tqdm_kwargs: object, name: str
) -> Tracker | None:
    """The tracker of a solver's progress bar, or None when no bar shows (see
    `jaxlinops._progress.enabled`: `progress`, else the config, else a terminal or
    notebook with tqdm installed)."""
    flag = None if progress is None else as_flag(progress, name, "progress")
    if tqdm_kwargs is not None and not isinstance(tqdm_kwargs, dict):
        raise TypeError(
            f"`{name}(tqdm_kwargs=...)` expects a dict of tqdm keyword arguments or None; "
            f"got {type(tqdm_kwargs).__name__}."
        )
    return Tracker.create(total, desc, tqdm_kwargs) if enabled(flag) else None
