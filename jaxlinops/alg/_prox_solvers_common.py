r"""What `admm` and `pdhg` share: argument checks, the problem's spaces (the shapes and
dtype of $x$, $y$ and $G x$, and the axes their norms sum over), the normal
$A^H A + \rho\, G^H G$, and the `lax.scan` that runs the iterations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._core import Identity, NamedLinop, with_oshape
from .._dims import ELLIPSIS, fmt
from .._progress import Tracker
from ._common import DimsOrAxes, as_vector, norm, resolve_axes, result_dtype
from ._prox_base import AbstractProx, batched_value


def check_linop(op: object, name: str, role: str) -> NamedLinop:
    if not isinstance(op, NamedLinop):
        raise TypeError(
            f"`{name}`: `{role}` must be a NamedLinop (the solver applies `{role}`, "
            f"`{role}.H` and `{role}.N`); got {type(op).__name__}."
        )
    return op


def check_prox(prox: object, name: str) -> AbstractProx:
    if not isinstance(prox, AbstractProx):
        raise TypeError(
            f"`{name}`: `prox` must be an instance of a `jl.alg.AbstractProx` subclass (the "
            f"proximal operator of g); got {type(prox).__name__}."
        )
    return prox


class Spaces(eqx.Module):
    """Where the iterates live (static). `x`, `y`, `z`: the axes that norms sum over in
    the spaces of $x$ (`A.ishape`), of $y$ (`A.oshape`) and of $G x$ (`G.oshape`); the
    other axes (the same named dims in each space, in the same order) index independent
    systems (`batch_dims`). `ndims`: the number of axes of each space."""

    x: tuple[int, ...] = eqx.field(static=True)
    y: tuple[int, ...] = eqx.field(static=True)
    z: tuple[int, ...] = eqx.field(static=True)
    ndims: tuple[int, int, int] = eqx.field(static=True)

    def batch(self, space: str) -> tuple[int, ...]:
        """The axes of `space` (`"x"`, `"y"` or `"z"`) that index the systems."""
        axes, ndim = getattr(self, space), self.ndims["xyz".index(space)]
        return tuple(a for a in range(ndim) if a not in axes)

    def expand(self, value: jax.Array, space: str) -> jax.Array:
        """A per-system `value` (shaped like the batch) laid out to broadcast in `space`."""
        return jnp.expand_dims(value, getattr(self, space))


class Problem(NamedTuple):
    """The checked data: `y` and `x0` (or None) in the solve's dtype, and the `Spaces`."""

    y: jax.Array
    x0: jax.Array | None
    spaces: Spaces


def setup(
    A: NamedLinop, G: NamedLinop, y: object, x0: object, batch_dims: DimsOrAxes, name: str
) -> Problem:
    """`y` and `x0` checked against the operators (the shape of $x$ is that of $A^H y$),
    cast to the dtype that `A`, `G` and the data compute in."""
    y = as_vector(y, name, "y")
    x = _shape_of(A.H, y, name, "y", f"the output of `A` ({fmt(A.oshape)})")
    dtypes = [y.dtype, x.dtype]
    if x0 is not None:
        x0 = as_vector(x0, name, "x0")
        if x0.shape != x.shape:
            raise ValueError(
                f"`{name}`: `x0` must have the shape of A's input, {x.shape} (that of "
                f"`A.H(y)`); got {x0.shape}."
            )
        dtypes.append(x0.dtype)
    Ax = _shape_of(A, x, name, "x", f"the input of `A` ({fmt(A.ishape)})")
    if Ax.shape != y.shape:
        raise ValueError(f"`{name}`: `A` maps x {x.shape} to {Ax.shape}, not to y {y.shape}.")
    Gx = _shape_of(G, x, name, "x", f"the input of `G` ({fmt(G.ishape)})")
    GHz = _shape_of(G.H, Gx, name, "G x", f"the output of `G` ({fmt(G.oshape)})")
    dtype = result_dtype(name, *dtypes, Ax.dtype, Gx.dtype, GHz.dtype)
    spaces = _spaces(A, G, (len(x.shape), y.ndim, len(Gx.shape)), batch_dims, name)
    return Problem(y.astype(dtype), None if x0 is None else jnp.asarray(x0).astype(dtype), spaces)


def _shape_of(op: NamedLinop, v: Any, name: str, role: str, space: str) -> Any:
    try:
        out = jax.eval_shape(op, v)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"`{name}`: {role} must have the shape of {space}; got {tuple(v.shape)}. ({error})"
        ) from error
    return out


def _spaces(A: NamedLinop, G: NamedLinop, ndims: tuple[int, int, int], dims, name) -> Spaces:
    """The `Spaces`; a batch dim must be a named dim of `A.ishape`, `A.oshape` and
    `G.oshape`, in the same order in each (so that the systems line up)."""
    batch = resolve_axes(A, ndims[0], dims, name)
    if not batch:
        return Spaces(*(tuple(range(n)) for n in ndims), ndims=ndims)
    names = [tuple(op.ishape if i == 0 else op.oshape) for i, op in enumerate((A, A, G))]
    if len(names[0]) != ndims[0] or ELLIPSIS in names[0]:
        raise ValueError(
            f"`{name}`: `batch_dims` needs named dims in A.ishape {fmt(A.ishape)} (no '...')."
        )
    batch_names = [names[0][a] for a in batch]
    axes = [_reduced(shape, n, batch_names, name) for shape, n in zip(names, ndims)]
    return Spaces(*axes, ndims=ndims)


def _reduced(shape: tuple[str, ...], ndim: int, batch: list[str], name: str) -> tuple[int, ...]:
    found = [shape.index(d) for d in batch if d in shape]
    if (
        ELLIPSIS in shape
        or len(shape) != ndim
        or len(found) != len(batch)
        or found != sorted(found)
    ):
        raise ValueError(
            f"`{name}`: the batch dims {batch} must be named dims, in this order, of "
            f"A.ishape, A.oshape and G.oshape (no '...'); one space has {fmt(shape)}."
        )
    return tuple(i for i in range(ndim) if i not in found)


def identity_like(A: NamedLinop) -> NamedLinop:
    """The default `G`: the identity on `A`'s input."""
    return Identity(A.ishape)


def normal_sum(A: NamedLinop, G: NamedLinop, rho: float | jax.Array, name: str) -> NamedLinop:
    r"""$A^H A + \rho\, G^H G$ as the sum `A.N + rho * G.N` of the operators' own normals
    (a NUFFT with `toeplitz=True` keeps its Toeplitz normal, a `Dense` its Gram matrix):
    `G.N`'s output dims are renamed to those of `A.N`."""
    normal = A.N
    try:
        return normal + with_oshape(G.N, normal.oshape) * rho
    except ValueError as error:
        raise ValueError(
            f"`{name}`: `A` and `G` must take the same input dims; A.ishape is "
            f"{fmt(A.ishape)}, G.ishape {fmt(G.ishape)}. ({error})"
        ) from error


def apply(op: Callable[[jax.Array], jax.Array], v: jax.Array, dtype) -> jax.Array:
    """`op(v)` in the solve's `dtype`."""
    return op(v).astype(dtype)


def system_norms(v: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    r"""$\|v\|$ of each system (shape: the batch dims)."""
    return jnp.squeeze(norm(v, axes), axes)


def objective(residual: jax.Array, g: AbstractProx, Gx: jax.Array, spaces: Spaces):
    r"""$\tfrac12 \|A x - y\|^2 + g(G x)$ per system, from $A x - y$ and $G x$."""
    half = 0.5 * jnp.sum(jnp.real(jnp.conj(residual) * residual), axis=spaces.y)
    return half + jnp.asarray(batched_value(g, Gx, spaces.batch("z"))).astype(half.dtype)


def batched_conjugate_prox(g: AbstractProx, v: jax.Array, sigma: jax.Array, axes):
    r"""$\mathrm{prox}_{\sigma_b g^*}(v_b)$ for each system $b$ (`v`'s `axes` index them;
    `sigma` has the batch shape): `g.conjugate_prox` on each system's array, as
    `batched_prox` does for `g.prox`."""
    if not axes:
        return g.conjugate_prox(v, sigma)
    fn, front = g.conjugate_prox, tuple(range(len(axes)))
    for _ in axes:
        fn = jax.vmap(fn)
    return jnp.moveaxis(fn(jnp.moveaxis(v, axes, front), sigma), front, axes)


def real_scalar(value: float | jax.Array, dtype) -> jax.Array:
    """A step size as a 0-d array of the real dtype of `dtype`."""
    return jnp.asarray(value).astype(jnp.finfo(dtype).dtype)


Step = Callable[[Any], tuple[Any, dict[str, jax.Array]]]


def iterate(step: Step, state: Any, num_iters: int, tracker: Tracker | None):
    """`num_iters` iterations of `step(state) -> (state, record)` in one `lax.scan` (so
    that reverse mode differentiates through them): returns the last state and each
    record's entries stacked, `(num_iters, ...)`. A tracker's bar shows the largest value
    of each entry."""
    site = 0 if tracker is None else tracker.site()  # unused without a tracker

    def body(carry, _):
        k, s = carry
        s, record = step(s)
        if tracker is not None:
            tracker.step(site, k + 1, **record)
        return (k + 1, s), record

    (k, state), history = lax.scan(body, (jnp.zeros((), np.int32), state), length=num_iters)
    if tracker is not None:
        tracker.finish(site, k)
    return state, history
