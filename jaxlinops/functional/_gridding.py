r"""The compute core of kernel interpolation: kernel weights on each point's window of grid
neighbours, a window gather (grid -> points) and a window scatter-add (points -> grid).

Each point reads or writes one `(B, L_1, ..., L_D)` window of a padded copy of the grid
(`L_d` from [`window_sizes`][]), so the gather and scatter move whole windows rather than
single entries, and no index wraps: `"circular"` pads each axis at the end with its first
`L_d - 1` entries (folded back after a scatter), `"zero"` pads `L_d` zeros on both sides
(cropped after a scatter). The gather runs over all points at once: XLA fuses it with the
weighted sum, so no window is ever written out; with per-axis weight factors the sum
contracts one axis at a time, the last first ($\sum_{l_1} w_{1,l_1} \sum_{l_2} \dots$),
which never forms the window's weights (measured 1.6x faster in 3-D, 160^3 grid, 262,144
points; 1.1x in 2-D). The scatter runs in chunks of points, which keeps its window updates
in cache.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ._kernels import KernelSettings

# Window entries (points x window size x batch) scattered at once: about 4 MiB of complex64
# (measured on 2 cores of an AMD EPYC, windows of 4^D: 3-D ones at 32,768 points, one or 8
# batch entries, scatter up to 1.5x faster in chunks of 8,192 points than of 16,384; at
# 262,144 points, and in 2-D, the time is flat from 2**17 to 2**20 entries).
_CHUNK = 2**19
_IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS


class Neighbourhoods(NamedTuple):
    """The windows of `P` points: `starts` `[P, D]` (int32) are the window origins in the padded
    grid; `weights` are `D` factors `[P, L_d]` whose outer product is the window's kernel
    weights (`norm=1`), or a single array `[P, L_1, ..., L_D]` (`norm=2`)."""

    starts: jax.Array
    weights: tuple[jax.Array, ...]


def window_sizes(width: tuple[float, ...]) -> tuple[int, ...]:
    """`floor(w) + 1` per axis: every grid point within `w / 2` of a point lies in the window
    `ceil(p - w / 2) + {0, ..., floor(w)}`."""
    return tuple(math.floor(w) + 1 for w in width)


def neighbourhoods(
    locs: jax.Array, grid: Sequence[int], settings: KernelSettings
) -> Neighbourhoods:
    """The windows and kernel weights of the points `locs` (`[P, D]`, real) on a grid of
    sizes `grid`.

    Window entries further than `w_d / 2` from the point on an axis get weight 0. With
    circular padding each coordinate is first reduced modulo `N_d` by a float remainder,
    which is exact up to the rounding of a value in `[0, N_d)`: a point far from the grid
    keeps all the precision its dtype holds (a float32 of magnitude 1e9 is a whole number,
    and is wrapped as that number). A point with a non-finite coordinate, or outside
    `[0, N_d - 1]` with zero padding, gets NaN weights, so its gathered value and every grid
    entry it spreads to are NaN. The per-axis terms are computed by one `lax.map` over the
    axes: its loop body keeps XLA from fusing (and so recomputing) the kernel evaluation
    into every window entry that uses it, and its `[L, P]` layout vectorises over points.
    """
    width, norm, pad_mode = settings.width, settings.norm, settings.pad_mode
    sizes = window_sizes(width)
    size = max(sizes)
    fn = settings.kernel_fn()

    def axis_terms(args):
        p, n, r, s = args
        if pad_mode == "circular":
            p = jnp.remainder(p, n.astype(p.dtype))
            bad = ~jnp.isfinite(p)
        else:
            bad = ~((p >= 0) & (p <= (n - 1).astype(p.dtype)))  # also true for NaN
        first = jnp.ceil(p - r)[None]
        distance = first + jnp.arange(size, dtype=p.dtype)[:, None] - p[None]  # [L, P]
        inside = jnp.abs(distance) <= r
        delta = distance / r
        if norm == 1:
            delta = jnp.where(inside, fn(delta), 0.0)
        first = jnp.where(bad, 0.0, first[0]).astype(jnp.int32)
        start = first % n if pad_mode == "circular" else jnp.clip(first, -s, n) + s
        return start, jnp.where(bad, jnp.nan, delta), inside

    radii = jnp.asarray([w / 2 for w in width], locs.dtype)
    terms = (locs.T, jnp.asarray(grid, jnp.int32), radii, jnp.asarray(sizes, jnp.int32))
    starts, values, inside = lax.map(axis_terms, terms)  # [D, P], [D, L, P], [D, L, P]
    values = tuple(v[:s].T for v, s in zip(values, sizes))  # D x [P, L_d]
    if norm == 1:
        return Neighbourhoods(starts.T, values)
    inside = tuple(m[:s].T for m, s in zip(inside, sizes))
    squared = _outer(tuple(v * v for v in values), jnp.add)
    value = jnp.where(_outer(inside, jnp.logical_and), fn(_safe_sqrt(squared)), 0.0)
    return Neighbourhoods(starts.T, (jnp.where(jnp.isnan(squared), jnp.nan, value),))


@functools.partial(jax.jit, static_argnames=("grid", "frames"))
def point_order(locs: jax.Array, grid: tuple[int, ...], frames: int = 0) -> jax.Array:
    """A visiting order for the points `locs` (`[F..., L..., D]`, grid units) that sorts them
    by grid cell (row-major, cells wrapped into the grid), each of the `frames` leading
    frame axes `F...` on its own: `[F..., prod(L...)]` int32, for the `order` argument of
    [`ungrid`][] and [`grid_points`][] (frame by frame, see [`frame_map`][]). Computing it
    costs a sort, so compute it once per set of points (it pays off for grids larger than
    the CPU cache); one compiled program (`grid` a tuple)."""
    locs = locs.reshape(locs.shape[:frames] + (-1, locs.shape[-1]))
    if jnp.issubdtype(locs.dtype, jnp.floating):
        locs = jnp.floor(locs)
    key = jnp.zeros(locs.shape[:-1], jnp.int32 if math.prod(grid) < 2**31 else jnp.int64)
    for d, n in enumerate(grid):
        key = key * n + locs[..., d].astype(key.dtype) % n
    return jnp.argsort(key, axis=-1).astype(jnp.int32)


def frame_map(fn: Callable, vals: jax.Array, trailing: int, frames: int, *arrays) -> jax.Array:
    """`fn(v, *a)` frame by frame (`jax.vmap` over the frames, flattened into one axis):
    `vals` is `[B..., F..., T...]` (`frames` axes `F...`, then `trailing` axes `T...`), each
    of `arrays` `[F..., ...]` (or None), and `fn` maps `[B..., T...]` to `[B..., U...]`;
    the result is `[B..., F..., U...]`. Without frames, `fn(vals, *arrays)`."""
    if not frames:
        return fn(vals, *arrays)
    lead = vals.ndim - trailing - frames
    sizes = vals.shape[lead : lead + frames]
    vals = jnp.moveaxis(vals, range(lead, lead + frames), range(frames))
    vals = vals.reshape((-1,) + vals.shape[frames:])
    arrays = tuple(None if a is None else a.reshape((-1,) + a.shape[frames:]) for a in arrays)
    out = jax.vmap(fn)(vals, *arrays)
    out = out.reshape(sizes + out.shape[1:])
    return jnp.moveaxis(out, range(frames), range(lead, lead + frames))


def gather_windows(vals: jax.Array, nbhd: Neighbourhoods, pad_mode: str) -> jax.Array:
    """Interpolate `vals` `[B, *grid]` at the points: `[B, P]`. `pad_mode` is the
    grid's (`"circular"`, `"zero"`), or `"inside"` when every window lies inside the grid
    (with `"circular"` origins): no padded copy is made."""
    sizes = _sizes(nbhd)
    ndim = len(sizes)
    padded = _pad(vals, sizes, pad_mode)
    numbers = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(1, ndim + 2)),
        collapsed_slice_dims=(),
        start_index_map=tuple(range(1, ndim + 1)),
    )
    slice_sizes = (vals.shape[0],) + sizes
    out = lax.gather(padded, nbhd.starts, numbers, slice_sizes, mode=_IN_BOUNDS)
    if len(nbhd.weights) == 1 and nbhd.weights[0].ndim > 2:  # the full weights
        weights = nbhd.weights[0].astype(vals.dtype)[:, None]
        return jnp.sum(out * weights, axis=tuple(range(2, ndim + 2))).T  # [B, P]
    for factor in reversed(nbhd.weights):  # one axis at a time, the last first
        shape = factor.shape[:1] + (1,) * (out.ndim - 2) + factor.shape[1:]
        out = jnp.sum(out * factor.astype(vals.dtype).reshape(shape), axis=-1)
    return out.T  # [B, P]


def scatter_windows(
    vals: jax.Array, nbhd: Neighbourhoods, grid: Sequence[int], pad_mode: str
) -> jax.Array:
    r"""Spread `vals` `[B, P]` onto a zero grid: `[B, *grid]` (`pad_mode` as for
    [`gather_windows`][]).

    The padded grid is held as rows along its last axis, `[B, R, N_D]`, and a point's window
    as its $L_1 \cdots L_{D-1}$ rows of $L_D$ entries, so that the scatter's innermost loop
    adds one contiguous row, which LLVM vectorises: 1.2-1.6x faster than a scatter of whole
    windows with one batch entry, 1.3x with 8 in 3-D, at par with 8 in 2-D (measured on 2
    cores)."""
    sizes = _sizes(nbhd)
    batch = vals.shape[0]
    extra = {"circular": lambda s: s - 1, "zero": lambda s: 2 * s, "inside": lambda s: 0}[pad_mode]
    shape = tuple(n + extra(s) for n, s in zip(grid, sizes))
    strides = [math.prod(shape[d + 1 : -1]) for d in range(len(shape) - 1)]  # of the rows
    lags = itertools.product(*(range(s) for s in sizes[:-1]))  # a window's rows
    offsets = [sum(l * s for l, s in zip(lag, strides)) for lag in lags]
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=(1, 2), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1, 2)
    )

    def step(out, args):
        values, starts, weights = args
        weights = _window_weights(weights).astype(vals.dtype)
        rows = weights.reshape((len(weights), len(offsets), 1, sizes[-1]))
        updates = values[:, None, :, None] * rows
        updates = updates.reshape((len(values) * len(offsets), batch, sizes[-1]))
        first = sum((starts[:, d] * s for d, s in enumerate(strides)), jnp.zeros_like(starts[:, 0]))
        # Python offsets, no array constant: one closed over, `vmap`ped in a `cond` in a
        # `shard_map`, would be marked varying twice (a JAX error)
        row = jnp.stack([first + offset for offset in offsets], axis=1)
        column = jnp.broadcast_to(starts[:, -1:], row.shape)
        index = jnp.stack([row, column], axis=-1).reshape((-1, 2))
        return lax.scatter_add(out, index, updates, numbers, mode=_IN_BOUNDS), None

    padded = jnp.zeros((batch, math.prod(shape[:-1]), shape[-1]), vals.dtype)
    size = _chunk_size(batch, sizes)
    points = nbhd.starts.shape[0]
    if points <= size:
        padded, _ = step(padded, (vals.T, *nbhd))
    else:  # the first chunk outside the loop gives the carry the type of every later one
        chunks = _chunks((vals.T, *nbhd), size)  # (e.g. varying across shard_map devices)
        padded, _ = step(padded, jax.tree.map(lambda a: a[0], chunks))
        padded, _ = lax.scan(step, padded, jax.tree.map(lambda a: a[1:], chunks))
    return _unpad(padded.reshape((batch,) + shape), grid, sizes, pad_mode)


def _sizes(nbhd: Neighbourhoods) -> tuple[int, ...]:
    weights = nbhd.weights
    if len(weights) == 1:  # one factor [P, L] or the full weights [P, L_1, ..., L_D]
        return weights[0].shape[1:]
    return tuple(w.shape[1] for w in weights)


def _window_weights(weights: tuple[jax.Array, ...]) -> jax.Array:
    """`[C, L_1, ..., L_D]`: the outer product of the per-axis factors, or the full
    weights."""
    if len(weights) == 1 and weights[0].ndim > 2:
        return weights[0]
    return _outer(weights, jnp.multiply)


def _outer(
    factors: tuple[jax.Array, ...], op: Callable[[jax.Array, jax.Array], jax.Array]
) -> jax.Array:
    """Combine `[C, L_d]` factors (at least one) into `[C, L_1, ..., L_D]` with the
    elementwise `op`."""
    ndim = len(factors)
    aligned = [
        f.reshape(f.shape[:1] + (1,) * d + f.shape[1:] + (1,) * (ndim - d - 1))
        for d, f in enumerate(factors)
    ]
    return functools.reduce(op, aligned)


def _chunk_size(batch: int, sizes: tuple[int, ...]) -> int:
    """Points per chunk of the scatter: `_CHUNK` window entries over the batch (an empty
    batch scatters nothing, in one chunk)."""
    return max(1, _CHUNK // max(1, batch * math.prod(sizes)))


def _chunks(arrays, size: int):
    """Each `[P, ...]` array split into `[chunks, s, ...]`: as few chunks as chunks of at
    most `size` points allow, of equal size `s`, the last zero-padded (padded points have
    weight 0 and window origin 0). Equal chunks pad less than a multiple of `size` does:
    2,140 points in chunks of at most 2,048 are two of 1,070, not two of 2,048 (half of
    them padding, measured 1.7x slower for a split NUFFT's bucket)."""
    points = arrays[0].shape[0]
    count = -(-points // size)
    size = -(-points // count)

    def split(a):
        a = jnp.pad(a, [(0, count * size - points)] + [(0, 0)] * (a.ndim - 1))
        return a.reshape((count, size) + a.shape[1:])

    return jax.tree_util.tree_map(split, arrays)


def _pad(vals: jax.Array, sizes: tuple[int, ...], pad_mode: str) -> jax.Array:
    """Pad the last `D` axes: `L - 1` wrapped entries at the end (circular) or `L` zeros on
    both sides (zero); none when every window lies inside the grid (inside). Written as
    in-place updates of a zero array: XLA's `pad` and `concatenate` assemble each row of
    a wrapped grid from two sources and ran 2-3x slower (measured at 160^3)."""
    if pad_mode == "inside":
        return vals
    lead, grid = vals.ndim - len(sizes), vals.shape[vals.ndim - len(sizes) :]
    if pad_mode == "zero":
        shape = vals.shape[:lead] + tuple(n + 2 * s for n, s in zip(grid, sizes))
        return lax.dynamic_update_slice(jnp.zeros(shape, vals.dtype), vals, (0,) * lead + sizes)
    out = jnp.zeros(vals.shape[:lead] + tuple(n + s - 1 for n, s in zip(grid, sizes)), vals.dtype)
    out = lax.dynamic_update_slice(out, vals, (0,) * out.ndim)
    for corner in _corners(sizes):  # the wrapped copies of the grid's first entries
        part = lax.slice(vals, (0,) * vals.ndim, _corner_shape(vals.shape, lead, sizes, corner))
        start = (0,) * lead + tuple(n if c else 0 for n, c in zip(grid, corner))
        out = lax.dynamic_update_slice(out, part, start)
    return out


def _unpad(padded: jax.Array, grid, sizes: tuple[int, ...], pad_mode: str) -> jax.Array:
    """The adjoint of [`_pad`][]: fold the wrapped entries back (circular) or crop (zero)."""
    if pad_mode == "inside":
        return padded
    lead = padded.ndim - len(grid)
    if pad_mode == "zero":
        return lax.slice(padded, (0,) * lead + sizes, padded.shape[:lead] + tuple(
            n + s for n, s in zip(grid, sizes)))  # fmt: skip
    out = lax.slice(padded, (0,) * padded.ndim, padded.shape[:lead] + tuple(grid))
    for corner in _corners(sizes):
        start = (0,) * lead + tuple(n if c else 0 for n, c in zip(grid, corner))
        shape = _corner_shape(out.shape, lead, sizes, corner)
        tail = lax.slice(padded, start, tuple(a + b for a, b in zip(start, shape)))
        head = lax.slice(out, (0,) * out.ndim, shape)
        out = lax.dynamic_update_slice(out, head + tail, (0,) * out.ndim)
    return out


def _corners(sizes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The non-empty sets of axes a wrapped window can cross (`L_d > 1`), as 0/1 flags."""
    return [c for c in itertools.product((0, 1), repeat=len(sizes))
            if any(c) and all(s > 1 or not f for s, f in zip(sizes, c))]  # fmt: skip


def _corner_shape(shape, lead: int, sizes: tuple[int, ...], corner) -> tuple[int, ...]:
    """The grid's shape with `L_d - 1` on the axes of `corner`."""
    tail = shape[lead:]
    return tuple(shape[:lead]) + tuple(s - 1 if c else n for n, s, c in zip(tail, sizes, corner))


def _safe_sqrt(x: jax.Array) -> jax.Array:
    """`sqrt(x)` with a finite gradient at 0."""
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)
