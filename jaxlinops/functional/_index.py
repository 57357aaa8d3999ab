"""Gathering values at integer grid points and its adjoint, scatter-adding them back."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import ArrayLike

from .._arrays import as_array, as_sizes, promote


def index(
    vals: jax.Array, idx: Sequence[jax.Array], deterministic_backward: bool = False
) -> jax.Array:
    r"""Gather the last `len(idx)` axes of `vals` at integer points.

    $y[b, m] = v[b, i_1[m], \dots, i_D[m]]$: `vals` has shape `[B..., *grid]` with
    `len(grid) == D == len(idx)`; the index arrays share one shape `[M...]`; the result has
    shape `[B..., M...]`. As in numpy, an index may lie in `[-N, N - 1]` (negative indices
    count from the end).

    **Bad values:** concrete indices outside `[-N, N - 1]` raise a ValueError; traced ones
    (under `jit`, `vmap`, `grad`) are checked at run time by `equinox.error_if` (a cheap
    min/max), which raises an error naming the axis.

    **Arguments:**

    - `vals`: the array to sample.
    - `idx`: a tuple of `D` integer arrays of identical shape, one per sampled axis.
      (torchlinops also takes slices here; jaxlinops does not: use
      `jnp.arange` indices.)
    - `deterministic_backward`: torchlinops' choice between a fast, nondeterministic and a
      slower, deterministic gradient. In JAX the gradient of this gather is a scatter-add,
      which is deterministic on CPU and TPU; on a GPU it is deterministic only when XLA is
      run with `XLA_FLAGS=--xla_gpu_deterministic_ops=true`. The flag cannot change that
      from here: `True` on a GPU without that XLA flag warns, otherwise it has no effect.
    """
    _check_deterministic(deterministic_backward)
    vals = as_array(vals, "`index(vals=...)`")
    idx = _as_indices("index", idx)
    if vals.ndim < len(idx):
        raise ValueError(
            f"`index`: {len(idx)} index arrays need an array with at least {len(idx)} axes; "
            f"got `vals` of shape {tuple(vals.shape)}."
        )
    grid = vals.shape[vals.ndim - len(idx) :]
    return gather(vals, checked_range("index", idx, grid, negative=True))


def index_adjoint(vals: jax.Array, idx: Sequence[jax.Array], grid_size: Sequence[int]) -> jax.Array:
    r"""The adjoint of [`index`][]: scatter-add values onto a zero grid.

    $g[b, n] = \sum_{m : i[m] = n} v[b, m]$: `vals` has shape `[B..., M...]` with `[M...]`
    the shape of the index arrays; the result has shape `[B..., *grid_size]`. Repeated
    points accumulate. Indices and bad values are treated as in [`index`][].

    **Arguments:**

    - `vals`: the values at the points.
    - `idx`: a tuple of `D` integer arrays of identical shape `[M...]`.
    - `grid_size`: the `D` sizes of the grid axes.
    """
    vals = as_array(vals, "`index_adjoint(vals=...)`")
    idx = _as_indices("index_adjoint", idx)
    grid = as_sizes(grid_size, "`index_adjoint(grid_size=...)`", 1)
    if len(grid) != len(idx):
        raise ValueError(
            f"`index_adjoint`: `grid_size` must give one size per index array ({len(idx)}); "
            f"got {tuple(grid_size)}."
        )
    points = idx[0].shape
    if vals.ndim < len(points) or vals.shape[vals.ndim - len(points) :] != points:
        raise ValueError(
            f"`index_adjoint`: the last axes of `vals` must have the index shape {points}; "
            f"got `vals` of shape {tuple(vals.shape)}."
        )
    return scatter(vals, checked_range("index_adjoint", idx, grid, negative=True), grid)


def mask2idx(mask: ArrayLike) -> tuple[jax.Array, ...]:
    """The indices of the True entries of a boolean `mask`, one integer array per axis
    (row-major order), as `numpy.nonzero`: `index(vals, mask2idx(mask))` is
    `vals[..., mask]`.

    The number of entries depends on the values, so `mask` must be concrete (not traced).
    """
    if isinstance(mask, Tracer):
        raise TypeError(
            "`mask2idx(mask=...)`: the mask must be concrete (a numpy or JAX array known at "
            "trace time), as it fixes how many indices there are; got a traced array."
        )
    array = np.asarray(mask)
    if array.dtype != np.bool_:
        raise TypeError(f"`mask2idx(mask=...)` must be a boolean array; got dtype {array.dtype}.")
    return tuple(jnp.asarray(i) for i in np.nonzero(array))


def slice2range(slice_obj: slice, n: int) -> range:
    """The indices a slice selects from `n` entries, as torchlinops computes them:
    `slice2range(slice(None, None, -1), 3) == range(2, -1, -1)`."""
    step = 1 if slice_obj.step is None else slice_obj.step
    start = slice_obj.start if slice_obj.start is not None else (0 if step > 0 else n - 1)
    stop = slice_obj.stop if slice_obj.stop is not None else (n if step > 0 else -1)
    return range(start, stop, step)


def canonicalize_idx(idx: ArrayLike, dim: int = -1) -> tuple[jax.Array, ...]:
    """An index array `[B1..., D, B2...]` as a `D`-tuple of `[B1..., B2...]` arrays (the
    form [`index`][] takes), split along axis `dim`."""
    idx = as_array(idx, "`canonicalize_idx(idx=...)`")
    return tuple(jnp.take(idx, i, axis=dim) for i in range(idx.shape[dim]))


def ensure_tensor_indexing(idx: Sequence, tshape: Sequence[int]) -> tuple[jax.Array, ...]:
    """`idx` (integer arrays or slices) for an array of shape `tshape` as integer arrays
    only: missing leading entries become `slice(None)`, and a slice of axis `d` becomes
    its indices shaped to broadcast along that axis (trailing singleton axes)."""
    if len(tshape) < len(idx):
        raise ValueError(
            f"`ensure_tensor_indexing`: {len(idx)} indices for a shape of {len(tshape)} axes."
        )
    idx = [slice(None)] * (len(tshape) - len(idx)) + list(idx)
    out = []
    for d, (size, i) in enumerate(zip(tshape, idx)):
        if isinstance(i, slice):
            indices = jnp.asarray(slice2range(i, size))
            out.append(indices.reshape((-1,) + (1,) * (len(tshape) - d - 1)))
        else:
            out.append(as_array(i, f"`ensure_tensor_indexing(idx[{d}]=...)`"))
    return tuple(out)


def _check_deterministic(deterministic_backward: object) -> None:
    """Validate `index(deterministic_backward=...)`; warn where it cannot be honoured."""
    if not isinstance(deterministic_backward, (bool, np.bool_)):
        raise TypeError(
            f"`index(deterministic_backward=...)` must be a bool; got "
            f"{type(deterministic_backward).__name__}."
        )
    flags = os.environ.get("XLA_FLAGS", "")
    if (
        deterministic_backward
        and jax.default_backend() == "gpu"
        and "--xla_gpu_deterministic_ops=true" not in flags
    ):
        warnings.warn(
            "`index(deterministic_backward=True)`: on a GPU the gradient (a scatter-add) is "
            "deterministic only with XLA_FLAGS=--xla_gpu_deterministic_ops=true, which is not "
            "set; the gradient may vary in its last bits from run to run.",
            UserWarning,
            stacklevel=3,
        )


def gather(vals: jax.Array, idx: tuple[jax.Array, ...]) -> jax.Array:
    """[`index`][] without input checks (indices taken modulo the grid sizes)."""
    grid = vals.shape[vals.ndim - len(idx) :]
    batch = vals.shape[: vals.ndim - len(idx)]
    flat = _ravel(idx, grid)
    out = vals.reshape(batch + (math.prod(grid),)).at[..., flat.ravel()]
    return out.get(mode="promise_in_bounds").reshape(batch + flat.shape)


def scatter(vals: jax.Array, idx: tuple[jax.Array, ...], grid: tuple[int, ...]) -> jax.Array:
    """[`index_adjoint`][] without input checks (indices taken modulo the grid sizes).
    Boolean values accumulate by logical or (the sum saturated at True, as torch's
    `index_put_(..., accumulate=True)` does), since `lax.add` takes no booleans."""
    points = idx[0].shape
    batch = vals.shape[: vals.ndim - len(points)]
    flat = _ravel(idx, grid).ravel()
    out = jnp.zeros(batch + (math.prod(grid),), vals.dtype).at[..., flat]
    vals = vals.reshape(batch + flat.shape)
    if vals.dtype == jnp.bool_:
        out = out.max(vals, mode="promise_in_bounds")
    else:
        out = out.add(vals, mode="promise_in_bounds")
    return out.reshape(batch + grid)


def checked_range(name: str, idx: tuple, grid: Sequence[int], negative: bool = False) -> tuple:
    """`idx` with each `idx[d]` checked to lie in `[0, N_d - 1]` (`[-N_d, N_d - 1]` with
    `negative`): a ValueError for concrete indices (also a constant inside a traced
    function), an `equinox.error_if` run-time check for traced ones."""
    out = []
    for d, (i, n) in enumerate(zip(idx, grid)):
        lo = -n if negative else 0
        where = f"`{name}`: indices of axis {d} must lie in [{lo}, {n - 1}] (grid {tuple(grid)})"
        if isinstance(i, Tracer):
            i = eqx.error_if(i, (i < lo) | (i > n - 1), f"{where}; got one out of range.")
        elif i.size:
            with jax.ensure_compile_time_eval():
                low, high = int(jnp.min(i)), int(jnp.max(i))
            if low < lo or high > n - 1:
                raise ValueError(f"{where}; got values in [{low}, {high}], out of range.")
        out.append(i)
    return tuple(out)


def _as_indices(name: str, idx) -> tuple[jax.Array, ...]:
    """Validate a tuple of integer index arrays of one shape, cast to one dtype."""
    if isinstance(idx, jax.Array) or not isinstance(idx, Sequence) or not idx:
        raise TypeError(
            f"`{name}`: `idx` must be a non-empty tuple of integer arrays (one per sampled "
            f"axis); got {type(idx).__name__}."
        )
    arrays = tuple(as_array(i, f"`{name}(idx=...)`") for i in idx)
    for d, i in enumerate(arrays):
        if not jnp.issubdtype(i.dtype, jnp.integer):
            raise TypeError(f"`{name}`: `idx[{d}]` must be an integer array; got {i.dtype}.")
    shapes = [tuple(i.shape) for i in arrays]
    if len(set(shapes)) > 1:
        raise ValueError(
            f"`{name}`: the index arrays must share one shape; got shapes {shapes} (torchlinops "
            f"broadcasts them: pass `tuple(jnp.broadcast_arrays(*idx))`)."
        )
    return promote(*arrays)


def _ravel(idx: tuple[jax.Array, ...], grid: tuple[int, ...]) -> jax.Array:
    """Flat (row-major) positions of the points, indices taken modulo the grid sizes."""
    flat = idx[0] % grid[0]
    for i, n in zip(idx[1:], grid[1:]):
        flat = flat * n + i % n
    return flat
