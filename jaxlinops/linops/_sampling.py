"""`Sampling`: read an array at integer grid points."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import as_array, as_size, as_sizes
from .._core import Diagonal, NamedLinop, Tiling, dims_field, normal_oshape, with_oshape
from .._default_dims import ordinal_wildcards
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, has_wildcards, size_of
from ..functional._index import checked_range, gather, scatter


class Sampling(NamedLinop):
    r"""$y[b, m] = x[b, i_1[m], \dots, i_D[m]]$: sample the last $D$ input axes at points.

    Dims: `batch_shape + input_shape -> batch_shape + output_shape`. The grid
    (`input_shape`, sizes `input_size`) is read at the integer points `idx`, a tuple of
    $D$ index arrays of shape `[M...]` laid out by `output_shape`. The adjoint
    scatter-adds into a zero grid (repeated points accumulate); the normal multiplies each
    grid point by the number of times it is sampled.

    Without `input_shape` / `output_shape` the dims are single-dim wildcards (`"(1)"`,
    `"(2)"`, ...) that a [`jaxlinops.Chain`][] resolves from its neighbours.

    **Bad values:** an index outside `[0, size - 1]` raises a ValueError at construction
    when the indices are concrete (also a constant array inside a traced function). Traced
    indices (built inside `jit`, `vmap` or `grad`) are checked by `equinox.error_if` at
    construction (a min/max per axis), which raises at run time: integer indices cannot
    carry NaN, and an unchecked one would wrap around to a plausible wrong entry.
    """

    idx: tuple[jax.Array, ...]
    input_size: tuple[int, ...] = eqx.field(static=True)
    output_shape: Dims = dims_field()
    input_shape: Dims = dims_field()
    batch_shape: Dims = dims_field()

    def __init__(
        self,
        idx: Sequence,
        input_size: Sequence[int],
        output_shape: DimsLike = None,
        input_shape: DimsLike = None,
        batch_shape: DimsLike = None,
    ):
        """**Arguments:**

        - `idx`: a tuple of `D` integer arrays of one shape `[M...]`, one per sampled axis,
          with values in `[0, size - 1]` (see "Bad values" above).
        - `input_size`: the `D` sizes of the sampled grid (integers; integral floats are
          accepted).
        - `output_shape`: dims of the points, one per axis of the index arrays.
        - `input_shape`: dims of the grid, one per index array.
        - `batch_shape`: leading dims shared by input and output (default `"..."`).
        """
        if isinstance(idx, jax.Array) or not isinstance(idx, Sequence):
            raise TypeError(
                f"`Sampling(idx=...)` expects a tuple of integer arrays (one per sampled "
                f"axis); got {type(idx).__name__}. For an array of shape [M..., D] use "
                f"`Sampling.from_stacked_idx`."
            )
        idx = tuple(as_array(i, "`Sampling(idx=...)`") for i in idx)
        self.input_size = as_sizes(input_size, "`Sampling(input_size=...)`", 1)
        _check_indices(idx, self.input_size)
        self.idx = checked_range("Sampling", idx, self.input_size)
        ndim = self.idx[0].ndim
        self.input_shape = as_dims(input_shape, ordinal_wildcards(1, len(self.input_size)))
        self.output_shape = as_dims(output_shape, ordinal_wildcards(len(self.input_size) + 1, ndim))
        self.batch_shape = as_dims(batch_shape, ELLIPSIS)

    @classmethod
    def from_mask(
        cls,
        mask,
        input_size: Sequence[int] | None = None,
        output_shape: DimsLike = None,
        input_shape: DimsLike = None,
        batch_shape: DimsLike = None,
    ) -> Sampling:
        """Sample the `True` entries of a boolean `mask`, in row-major order, as one output
        dim. The arguments after `mask` are those of `Sampling` in torchlinops' order:
        `input_size` is the grid size (default `mask.shape`; a larger grid samples the
        mask's entries from its leading corner)."""
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(
                f"`Sampling.from_mask` expects a boolean mask; got dtype {mask.dtype}. Use "
                f"e.g. `mask != 0`."
            )
        input_size = mask.shape if input_size is None else _input_size(input_size, mask)
        dtype = np.int32 if max(input_size, default=0) <= np.iinfo(np.int32).max else np.int64
        idx = tuple(i.astype(dtype) for i in np.nonzero(mask))
        return cls(idx, input_size, output_shape, input_shape, batch_shape)

    @classmethod
    def from_stacked_idx(
        cls,
        idx,
        input_size: Sequence[int],
        output_shape: DimsLike = None,
        input_shape: DimsLike = None,
        batch_shape: DimsLike = None,
        dim: int = -1,
    ) -> Sampling:
        """Build from one integer array of shape `[M..., D]` (`dim` is the axis of length
        `D`)."""
        idx = as_array(idx, "`Sampling.from_stacked_idx(idx=...)`")
        dim = as_size(dim, "`Sampling.from_stacked_idx(dim=...)`", None)
        if not -idx.ndim <= dim < idx.ndim:
            raise ValueError(
                f"`Sampling.from_stacked_idx`: dim={dim} is not an axis of `idx` of shape "
                f"{tuple(idx.shape)}."
            )
        idx = jnp.moveaxis(idx, dim, 0)
        return cls(tuple(idx), input_size, output_shape, input_shape, batch_shape)

    def __check_init__(self):
        _check_shapes(self)

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.input_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.output_shape

    @property
    def locs(self) -> jax.Array:
        """The points as one array of shape `[M..., D]`."""
        return jnp.stack(self.idx, axis=-1)

    def size(self, dim: str) -> int | None:
        layouts = (self.output_shape, self.idx[0].shape), (self.input_shape, self.input_size)
        return size_of(dim, *layouts)

    def tiling(self) -> Tiling:
        arrays = [(lambda o, k=k: o.idx[k], self.output_shape) for k in range(len(self.idx))]
        return Tiling(arrays, self.batch_shape, zeroed=False)

    def apply(self, x: jax.Array) -> jax.Array:
        return gather(x, self.idx)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return scatter(y, self.idx, self.input_size)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """Without `inner`: the sample counts on the grid, then a renaming of the grid
        dims (`Nx -> Nx1`)."""
        if inner is not None or has_wildcards(self.input_shape):
            return None
        ones = jnp.ones(self.idx[0].shape, jnp.int32)
        counts = Diagonal(scatter(ones, self.idx, self.input_size), self.ishape)
        return with_oshape(counts, normal_oshape(self))


def _input_size(input_size, mask: np.ndarray) -> tuple[int, ...]:
    """`Sampling.from_mask`'s `input_size`, checked against the mask's shape."""
    if isinstance(input_size, str):
        raise TypeError(
            f"`Sampling.from_mask(mask, input_size, output_shape, ...)`: the second argument "
            f"is the grid size `input_size` (as in torchlinops); got the string "
            f"{input_size!r}. Pass dims by keyword: `output_shape=...`."
        )
    sizes = as_sizes(input_size, "`Sampling.from_mask(input_size=...)`", 1)
    if len(sizes) != mask.ndim or any(s < m for s, m in zip(sizes, mask.shape)):
        raise ValueError(
            f"`Sampling.from_mask`: `input_size` must have one size per mask axis, each at "
            f"least the mask's; got input_size {sizes} for a mask of shape {mask.shape}."
        )
    return sizes


def _check_indices(idx: tuple[jax.Array, ...], input_size: tuple[int, ...]) -> None:
    if not idx or len(idx) != len(input_size):
        raise ValueError(
            f"`Sampling` needs one index array per grid axis: got {len(idx)} index arrays "
            f"for `input_size={input_size}`."
        )
    for d, i in enumerate(idx):
        if not jnp.issubdtype(i.dtype, jnp.integer):
            raise TypeError(f"`Sampling(idx=...)`: `idx[{d}]` must be integer; got {i.dtype}.")
    shapes = [tuple(i.shape) for i in idx]
    if len(set(shapes)) > 1:
        raise ValueError(
            f"`Sampling(idx=...)`: the index arrays must share one shape; got {shapes}."
        )


def _check_shapes(op: Sampling) -> None:
    where = f"`Sampling({fmt(op.ishape)} -> {fmt(op.oshape)})`"
    if ELLIPSIS in op.input_shape + op.output_shape:
        raise ValueError(f"{where}: '...' may appear only in `batch_shape`.")
    if len(op.input_shape) != len(op.input_size):
        raise ValueError(
            f"{where}: `input_shape` must name {len(op.input_size)} dims (one per index "
            f"array); got {fmt(op.input_shape)}."
        )
    named = [d for d in op.ishape + op.output_shape if d not in (ELLIPSIS, "()")]
    if len(set(named)) != len(named):
        raise ValueError(f"{where}: batch, input and output dims must all be distinct.")
    if len(op.output_shape) != op.idx[0].ndim:
        raise ValueError(
            f"{where}: `output_shape` must name {op.idx[0].ndim} dims (one per axis of the "
            f"index arrays, shape {tuple(op.idx[0].shape)}); got {fmt(op.output_shape)}."
        )
