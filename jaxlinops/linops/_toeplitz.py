"""The Toeplitz-embedded normal of a NUFFT: Pad -> FFT -> kernel -> FFT^H -> Crop."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Protocol

import jax
import jax.numpy as jnp

from .._core import Chain, Diagonal, NamedLinop, all_dims, normal_oshape
from .._dims import ELLIPSIS, Dims, next_unused
from ..functional._nufft import NUFFTPlan
from ..functional._toeplitz import embedded_size, toeplitz_kernel
from ._dense import Dense
from ._fft import FFT
from ._pad import Crop, Pad

KernelOp = Callable[[jax.Array, Dims], NamedLinop]
KernelBuilder = Callable[["ToeplitzSource", jax.Array, float], "jax.Array | None"]


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
    def frame_dims(self) -> Dims: ...

    @property
    def point_dims(self) -> Dims: ...

    @property
    def kernel_builder(self) -> KernelBuilder | None: ...


def with_kernel_builder(A: NamedLinop, fn: KernelBuilder) -> NamedLinop:
    """`A` with the kernels of the Toeplitz normals of its operators (those that declare a
    `kernel_builder`: a NUFFT) computed by `fn(op, weights, oversamp)` instead of
    `toeplitz_kernel` (interpolate mode, no per-frame dims): the same $K$ `[B..., *M]` for
    the operator `op` and the weights `[B..., L...]`, computed another way (split across
    devices: `jaxlinops.sharding._grid._kernel`); `fn` returns None to leave a kernel to
    `toeplitz_kernel`."""

    def builds(op) -> bool:
        return isinstance(op, NamedLinop) and hasattr(op, "kernel_builder")

    def with_fn(op):
        if not builds(op):
            return op
        new = copy.copy(op)  # (a static field: not a leaf `eqx.tree_at` can replace)
        object.__setattr__(new, "kernel_builder", fn)
        return new

    return jax.tree.map(with_fn, A, is_leaf=builds)


def toeplitz_normal(op: ToeplitzSource, inner: NamedLinop | None) -> NamedLinop | None:
    r"""$A^H\, \mathrm{inner}\, A$ for the NUFFT `op` as
    `Pad(M) -> FFT -> kernel -> FFT.H -> Crop` (centered, orthonormal FFTs on the embedded
    grid $M$; see `jaxlinops.functional._toeplitz`), or None when `inner` is not a point
    weighting this form covers.

    Covered: no `inner`; a `Diagonal` whose dims end with the NUFFT's point dims (density
    compensation, possibly per batch entry); a `Dense` that keeps the point dims as batch
    dims and mixes the other dims (e.g. coils). The kernel operator is a `Diagonal` or
    `Dense` of the same structure over the k-space dims. With per-frame dims (frame $t$
    sampled along `locs[t]`) there is one kernel per frame, $K_t$ from the points and
    weights of frame $t$: the kernel `Diagonal` then spans the frame dims (no `Dense`
    inner is covered).
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
    weights, lead, kernel_op = found
    kernel = _frame_kernels(op, weights, lead, oversamp)
    return kernel_op(kernel if dtype is None else kernel.astype(dtype), kspace)


def _frame_kernels(op: ToeplitzSource, weights: jax.Array, lead: Dims, oversamp: float):
    """The kernels `[B..., *M]` for the weights `[B..., L...]`, whose axes `B...`
    right-align with the named dims of `lead`. With per-frame dims (all in `lead`), the
    weights are first widened to reach every frame dim (a size-1 axis broadcasts to the
    frames), and there is one kernel per frame, in the weights' layout."""
    frames, locs = op.frame_dims, op.plan.locs
    if not frames:
        builder = op.kernel_builder
        if builder is not None and op.plan.mode == "interpolate":
            kernel = builder(op, weights, oversamp)
            if kernel is not None:
                return kernel
        return toeplitz_kernel(weights, op.plan, oversamp)
    named = tuple(d for d in lead if d != ELLIPSIS)
    npoints = locs.ndim - 1 - len(frames)
    nlead = max(weights.ndim - npoints, len(named) - min(named.index(d) for d in frames))
    w = weights.reshape((1,) * (nlead + npoints - weights.ndim) + weights.shape)
    axes = [nlead - len(named) + named.index(d) for d in frames]
    shape = list(w.shape)
    for d, a, n in zip(frames, axes, locs.shape):
        if shape[a] not in (1, n):
            raise ValueError(
                f"`NUFFT.normal(inner)`: the weights of inner have {shape[a]} entries along "
                f"the per-frame dim {d!r}, the NUFFT has {n} frames."
            )
        shape[a] = n
    packed = list(range(nlead - len(frames), nlead))
    w = jnp.moveaxis(jnp.broadcast_to(w, shape), axes, packed)
    return jnp.moveaxis(toeplitz_kernel(w, op.plan, oversamp), packed, axes)


def _point_weights(
    op: ToeplitzSource, inner: NamedLinop | None
) -> tuple[jax.Array, Dims, KernelOp] | None:
    """The weights of `inner` as `[B..., L...]` (`L` the point shape within a frame), the
    dims the axes `B...` right-align with, and how to build the kernel operator over
    k-space dims from the kernel `[B..., *M]`."""
    frames, points = op.frame_dims, op.point_dims
    shape = op.plan.locs.shape[len(frames) : -1]

    def lead(dims: Dims) -> Dims:
        return dims[: len(dims) - len(points)]

    def on_points(dims: Dims) -> bool:
        return dims[len(lead(dims)) :] == points

    if inner is None:
        dtype = op.plan.locs.dtype if op.plan.mode == "interpolate" else jnp.float32
        batch = op.batch_shape
        return jnp.ones(shape, dtype), batch, lambda k, kd: Diagonal(k, batch + kd)
    keep = tuple(d for d in getattr(inner, "broadcast_dims", ()) if d not in points + frames)
    if any(d not in lead(inner.ishape) for d in frames):
        return None
    if isinstance(inner, Diagonal) and on_points(inner.ioshape):
        w = inner.weight
        nlead = max(w.ndim - len(points), 0)
        w = w.reshape(w.shape[:nlead] + (1,) * (len(points) - w.ndim + nlead) + w.shape[nlead:])
        w = jnp.broadcast_to(w, w.shape[:nlead] + shape)
        return w, lead(inner.ioshape), lambda k, kd: Diagonal(k, lead(inner.ioshape) + kd, keep)
    mixes_batch = on_points(inner.ishape) and on_points(inner.oshape) and not frames
    if isinstance(inner, Dense) and mixes_batch:
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

        return w, (), dense
    return None


def _fresh(dims: Dims, avoid: set[str]) -> Dims:
    """`dims` with each name already in `avoid` replaced by its next unused one."""
    names = []
    for d in dims:
        names.append(next_unused(d, avoid) if d in avoid else d)
        avoid.add(names[-1])
    return tuple(names)
