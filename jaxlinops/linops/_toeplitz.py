"""The Toeplitz-embedded normal of a NUFFT: Pad -> FFT -> kernel -> FFT^H -> Crop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import jax
import jax.numpy as jnp

from .._core import Chain, Diagonal, NamedLinop, all_dims, normal_oshape
from .._dims import Dims, next_unused
from ..functional._nufft import NUFFTPlan
from ..functional._toeplitz import embedded_size, toeplitz_kernel
from ._dense import Dense
from ._fft import FFT
from ._pad import Crop, Pad

KernelOp = Callable[[jax.Array, Dims], NamedLinop]


class ToeplitzSource(Protocol):
    """What the Toeplitz normal reads from a `NUFFT` (which imports this module, so this
    module names it by its fields instead)."""

    @property
    def plan(self) -> NUFFTPlan: ...

    @property
    def toeplitz_oversamp(self) -> float: ...

    @property
    def batch_shape(self) -> Dims: ...

    @property
    def input_shape(self) -> Dims: ...

    @property
    def input_kshape(self) -> Dims: ...

    @property
    def output_shape(self) -> Dims: ...


def toeplitz_normal(op: ToeplitzSource, inner: NamedLinop | None) -> NamedLinop | None:
    r"""$A^H\, \mathrm{inner}\, A$ for the NUFFT `op` as
    `Pad(M) -> FFT -> kernel -> FFT.H -> Crop` (centered, orthonormal FFTs on the embedded
    grid $M$; see `jaxlinops.functional._toeplitz`), or None when `inner` is not a point
    weighting this form covers.

    Covered: no `inner`; a `Diagonal` whose dims end with the NUFFT's point dims (density
    compensation, possibly per batch entry); a `Dense` that keeps the point dims as batch
    dims and mixes the other dims (e.g. coils). The kernel operator is a `Diagonal` or
    `Dense` of the same structure over the k-space dims.
    """
    assert isinstance(op, NamedLinop), "the source is a NUFFT operator"
    out = normal_oshape(op, None if inner is None else inner.oshape)
    avoid = all_dims(op) | set(out) | (set() if inner is None else all_dims(inner))
    padded, kspace = _fresh(op.input_shape, avoid), _fresh(op.input_kshape, avoid)
    kernel = toeplitz_kernel_op(op, inner, op.toeplitz_oversamp, kspace)
    if kernel is None:
        return None
    grid, size = op.plan.grid_size, embedded_size(op.plan, op.toeplitz_oversamp)
    ndim, obatch = len(grid), out[: len(out) - len(grid)]
    return Chain(
        Pad(size, grid, op.input_shape, padded, op.batch_shape),
        FFT(ndim, op.batch_shape, (padded, kspace), centered=True),
        kernel,
        FFT(ndim, obatch, (padded, kspace), centered=True).H,
        Crop(grid, size, padded, out[len(obatch) :], obatch),
    )


def toeplitz_kernel_op(
    op: ToeplitzSource, inner: NamedLinop | None, oversamp: float, kspace: Dims, dtype=None
) -> NamedLinop | None:
    """The kernel of `toeplitz_normal` (embedding `oversamp`) as an operator over the
    k-space dims `kspace` (a `Diagonal` or `Dense`, see there), in `dtype` if given; None
    when `inner` is not a point weighting this form covers."""
    found = _point_weights(op, inner)
    if found is None:
        return None
    weights, kernel_op = found
    kernel = toeplitz_kernel(weights, op.plan, oversamp)
    return kernel_op(kernel if dtype is None else kernel.astype(dtype), kspace)


def _point_weights(
    op: ToeplitzSource, inner: NamedLinop | None
) -> tuple[jax.Array, KernelOp] | None:
    """The weights of `inner` as `[B..., L...]` (`L` the point shape) and how to build the
    kernel operator over k-space dims from the kernel `[B..., *M]`."""
    points, shape = op.output_shape, op.plan.locs.shape[:-1]

    def lead(dims: Dims) -> Dims:
        return dims[: len(dims) - len(points)]

    def on_points(dims: Dims) -> bool:
        return dims[len(lead(dims)) :] == points

    if inner is None:
        dtype = op.plan.locs.dtype if op.plan.mode == "interpolate" else jnp.float32
        return jnp.ones(shape, dtype), lambda k, kd: Diagonal(k, op.batch_shape + kd)
    keep = tuple(d for d in getattr(inner, "broadcast_dims", ()) if d not in points)
    if isinstance(inner, Diagonal) and on_points(inner.ioshape):
        w = inner.weight
        nlead = max(w.ndim - len(points), 0)
        w = w.reshape(w.shape[:nlead] + (1,) * (len(points) - w.ndim + nlead) + w.shape[nlead:])
        w = jnp.broadcast_to(w, w.shape[:nlead] + shape)
        return w, lambda k, kd: Diagonal(k, lead(inner.ioshape) + kd, keep)
    if isinstance(inner, Dense) and on_points(inner.ishape) and on_points(inner.oshape):
        wdims = inner.weightshape
        other = tuple(d for d in wdims if d not in points)
        present = tuple(d for d in points if d in wdims)
        w = jnp.transpose(inner.weight, [wdims.index(d) for d in other + present])
        sizes = w.shape[: len(other)] + tuple(
            inner.weight.shape[wdims.index(d)] if d in wdims else 1 for d in points
        )
        w = jnp.broadcast_to(w.reshape(sizes), sizes[: len(other)] + shape)

        def dense(k: jax.Array, kd: Dims) -> NamedLinop:
            return Dense(k, other + kd, lead(inner.ishape) + kd, lead(inner.oshape) + kd, keep)

        return w, dense
    return None


def _fresh(dims: Dims, avoid: set[str]) -> Dims:
    """`dims` with each name already in `avoid` replaced by its next unused one."""
    names = []
    for d in dims:
        names.append(next_unused(d, avoid) if d in avoid else d)
        avoid.add(names[-1])
    return tuple(names)
