"""`Interpolate`: kernel interpolation from a grid to off-grid points."""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_array, as_sizes
from .._core import (
    Coupling,
    NamedLinop,
    OffGrid,
    Tiling,
    dims_field,
    mask_padded,
    slice_arrays,
)
from .._default_dims import GRID_DIMS, ordinal_wildcards
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, axis_of, fmt, size_of
from ..functional._gridding import frame_map, point_order
from ..functional._interp import grid_points, ungrid
from ..functional._kernels import (
    KernelSettings,
    as_number,
    check_locs,
    check_locs_in_grid,
    kernel_settings,
)


class Interpolate(NamedLinop):
    r"""$y[b, l] = \sum_g w(g - p_l) \, x[b, g]$: interpolate a grid at off-grid points.

    Dims: `batch_shape + grid_shape -> batch_shape + locs_batch_shape`. The grid (sizes
    `grid_size`) is read around each point $p_l$ (a row of `locs`, in grid units
    $[0, N - 1]$, 'ij' order) with the weights of [`jaxlinops.functional.interpolate`][]:
    radius $r_d = w_d / 2$ per axis, $\prod_d K((g_d - p_d) / r_d)$ for `norm=1` or
    $K(\|(g - p) / r\|_2)$ for `norm=2`. The adjoint spreads point values onto the grid
    ("gridding"); the normal is the default $A^H A$.

    Defaults: `batch_shape` is `"..."`, `grid_shape` is `("Nx", "Ny", "Nz")[:D]`, and
    `locs_batch_shape` is the single-dim wildcards `"(1)"`, `"(2)"`, ... (one per leading
    axis of `locs`), which a [`jaxlinops.Chain`][] resolves from its neighbours
    (torchlinops uses a second `"..."`, which a shape cannot hold here).

    **Bad values:** concrete `locs` with NaN or Inf, or outside `[0, N - 1]` with
    `pad_mode="zero"`, raise a ValueError at construction (also for a constant array
    inside a traced function). Traced `locs` cannot be checked in Python: such a point gets
    NaN kernel weights, so its output is NaN and the adjoint spreads NaN onto its window
    of the grid (no extra cost, and it holds on every path: construction, `split`,
    `jax.tree_util` edits of `locs`). With circular padding any finite point is valid: it
    is reduced modulo the grid size at the precision of a value in `[0, N)`.

    The points are visited sorted by grid cell (`order`, computed once when the operator is
    built, recomputed for a split): the gridding then reads and writes neighbouring windows
    in turn (measured 3x faster for a 3-D spread). The order changes no result.

    **Per-frame trajectories.** A dim named in both `batch_shape` and `locs_batch_shape` is
    a *frame* dim: frame $t$ of the input is read at the points `locs[t]` only. Frame dims
    must be the leading axes of `locs`. For `locs` `[T, R, D]`, `batch_shape="C T"` and
    `locs_batch_shape="T R"`: `(C, T, *grid) -> (C, T, R)`, i.e.
    $y[c, t, r] = \sum_g w(g - p_{t,r})\, x[c, t, g]$ (a frame dim appears once, in its
    batch position; the output keeps the other point dims). Each frame visits its points
    in its own sorted order (`order` is `[T, R]`), and a split along `T` slices `locs`.
    """

    locs: jax.Array
    order: jax.Array
    grid_size: tuple[int, ...] = eqx.field(static=True)
    batch_shape: Dims = dims_field()
    locs_batch_shape: Dims = dims_field()
    grid_shape: Dims = dims_field()
    width: tuple[float, ...] = eqx.field(static=True)
    kernel: str = eqx.field(static=True)
    norm: int = eqx.field(static=True)
    pad_mode: str = eqx.field(static=True)
    kernel_params: tuple[tuple[str, float], ...] = eqx.field(static=True)

    def __init__(
        self,
        locs,
        grid_size: Sequence[int],
        batch_shape: DimsLike = None,
        locs_batch_shape: DimsLike = None,
        grid_shape: DimsLike = None,
        width: float | Sequence[float] = 4.0,
        kernel: str = "kaiser_bessel",
        norm: int = 1,
        pad_mode: str = "circular",
        kernel_params=None,
    ):
        """**Arguments:**

        - `locs`: the points, a real array `[L..., D]` in grid units `[0, N - 1]` (finite
          values, checked when concrete; see "Bad values" above).
        - `grid_size`: the `D` sizes of the grid (integers; integral floats are accepted).
        - `batch_shape`: leading dims shared by input and output (default `"..."`).
        - `locs_batch_shape`: dims of the points, one per leading axis of `locs` (default
          the wildcards `"(1)"`, `"(2)"`, ...).
        - `grid_shape`: the `D` grid dims (default `("Nx", "Ny", "Nz")[:D]`).
        - `width`: the kernel width in grid points, a number or one per grid axis (at most
          the grid size).
        - `kernel`: `"kaiser_bessel"` (unnormalised $I_0(\\beta \\sqrt{1 - x^2})$) or
          `"spline"` ($\\max(1 - |x|, 0)$).
        - `norm`: 1 (product of per-axis kernels) or 2 (kernel of the Euclidean distance).
        - `pad_mode`: `"circular"` (indices wrap around) or `"zero"` (grid points beyond the
          edges count as zeros; the points must lie in `[0, N - 1]`).
        - `kernel_params`: a mapping of kernel parameters; Kaiser–Bessel takes `beta`
          (default 1.0, far from the NUFFT-optimal values of about 7 to 14). As in
          torchlinops (which always carries a `beta`), the spline kernel accepts a `beta`
          and ignores it: the spline has no parameter. Other keys are an error.
        """
        self.locs = as_array(locs, "`Interpolate(locs=...)`")
        check_locs("Interpolate", self.locs)
        self.grid_size = as_sizes(grid_size, "`Interpolate(grid_size=...)`", 1)
        ndim, nbatch = self.locs.shape[-1], self.locs.ndim - 1
        self.batch_shape = as_dims(batch_shape, ELLIPSIS)
        self.locs_batch_shape = as_dims(locs_batch_shape, ordinal_wildcards(1, nbatch))
        self.grid_shape = as_dims(grid_shape, GRID_DIMS[:ndim] if ndim <= len(GRID_DIMS) else None)
        frames = leading_frames(self.batch_shape, self.locs_batch_shape)
        grid = _checked_grid(self.grid_size, ndim)
        params = _without_unused_beta(kernel, kernel_params)
        settings = kernel_settings("Interpolate", grid, width, kernel, norm, pad_mode, params)
        self.width, self.kernel, self.norm = settings.width, settings.kernel, settings.norm
        self.pad_mode, self.kernel_params = settings.pad_mode, settings.kernel_params
        check_locs_in_grid("Interpolate", self.locs, self.grid_size, pad_mode)
        self.order = point_order(self.locs, self.grid_size, frames)

    def __check_init__(self):
        where = f"`Interpolate({fmt(self.ishape)} -> {fmt(self.oshape)})`"
        if ELLIPSIS in self.grid_shape + self.locs_batch_shape:
            raise ValueError(f"{where}: '...' may appear only in `batch_shape`.")
        if len(self.grid_shape) != len(self.grid_size):
            raise ValueError(
                f"{where}: `grid_shape` must name {len(self.grid_size)} dims (one per grid "
                f"axis); got {fmt(self.grid_shape)}."
            )
        if len(self.locs_batch_shape) != self.locs.ndim - 1:
            raise ValueError(
                f"{where}: `locs_batch_shape` must name {self.locs.ndim - 1} dims (one per "
                f"leading axis of locs, shape {tuple(self.locs.shape)}); got "
                f"{fmt(self.locs_batch_shape)}."
            )
        frames = self.order.ndim - 1
        check_frames(where, "locs_batch_shape", self.batch_shape, self.locs_batch_shape, frames)
        named = [d for d in self.ishape + self.point_dims if d not in (ELLIPSIS, "()")]
        if len(set(named)) != len(named):
            raise ValueError(f"{where}: batch, grid and locs dims must all be distinct.")

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.grid_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.point_dims

    @property
    def frame_dims(self) -> Dims:
        """The per-frame dims: the leading dims of `locs_batch_shape` in `batch_shape`."""
        return self.locs_batch_shape[: self.order.ndim - 1]

    @property
    def point_dims(self) -> Dims:
        """The dims of the points within a frame: `locs_batch_shape` less the frame dims."""
        return self.locs_batch_shape[self.order.ndim - 1 :]

    def size(self, dim: str) -> int | None:
        layouts = (self.locs_batch_shape, self.locs.shape), (self.grid_shape, self.grid_size)
        return size_of(dim, *layouts)

    def coupling(self, dim: str) -> Coupling:
        """A halo of half the kernel width along the grid dims: a point reads the grid
        within `width / 2` of it."""
        if dim in self.grid_shape:
            return Coupling.halo(math.ceil(self.width[self.grid_shape.index(dim)] / 2))
        return super().coupling(dim)

    def grid_form(self) -> OffGrid | None:
        """The points and the window each reads: `ceil(p - r) + {0, ..., floor(w)}` per
        axis, so up to `floor(r)` entries before a point's cell and `floor(w) + 1 -
        floor(r)` after it. None with per-frame dims (each frame has its own points)."""
        if self.frame_dims:
            return None
        reach = tuple(
            max(math.floor(w / 2), math.floor(w) + 1 - math.floor(w / 2)) for w in self.width
        )

        def local(locs: jax.Array, grid_size: tuple[int, ...]) -> Interpolate:
            params = dict(self.kernel_params)
            return Interpolate(
                locs, grid_size, self.batch_shape, self.point_dims[:1], self.grid_shape,
                self.width, self.kernel, self.norm, self.pad_mode, params,
            )  # fmt: skip

        periodic = self.pad_mode == "circular"
        return OffGrid(self.locs, self.grid_shape, self.grid_size, reach, periodic, local)

    def tiling(self) -> Tiling:
        arrays = [(lambda o: o.locs, self.locs_batch_shape + (None,))]
        return Tiling(arrays, self.batch_shape, zeroed=False)

    @property
    def _settings(self) -> KernelSettings:
        """The kernel settings: `width`, `kernel`, `norm`, `pad_mode`, `kernel_params`."""
        return KernelSettings(self.width, self.kernel, self.norm, self.pad_mode, self.kernel_params)

    def split(self, tile) -> NamedLinop:
        """The sliced points, visited in their own sorted order (a ragged last tile is
        masked, as for any operator without `zeroed` arrays)."""
        t = self.tiling()
        out, _ = slice_arrays(self, tile, t.arrays, t.batch)
        if out.locs.shape != self.locs.shape:
            order = point_order(out.locs, self.grid_size, len(self.frame_dims))
            out = eqx.tree_at(lambda o: o.order, out, order)
        return mask_padded(out, self, tile)

    def apply(self, x: jax.Array) -> jax.Array:
        frames, ndim = self.frame_dims, len(self.grid_size)
        x = frames_last(x, self.ishape, frames, ndim)
        settings = self._settings

        def one(v: jax.Array, locs: jax.Array, order: jax.Array) -> jax.Array:
            return ungrid(v, locs, settings, order)

        y = frame_map(one, x, ndim, len(frames), self.locs, self.order)
        return frames_back(y, self.oshape, frames, len(self.point_dims))

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        frames, points = self.frame_dims, len(self.point_dims)
        y = frames_last(y, self.oshape, frames, points)
        grid, settings = self.grid_size, self._settings

        def one(v: jax.Array, locs: jax.Array, order: jax.Array) -> jax.Array:
            return grid_points(v, locs, grid, settings, order)

        x = frame_map(one, y, points, len(frames), self.locs, self.order)
        return frames_back(x, self.ishape, frames, len(grid))


def leading_frames(batch: Dims, points: Dims) -> int:
    """How many leading dims of `points` are also in `batch` (all but the last at most):
    the frame axes of `locs`."""
    shared = (i for i, d in enumerate(points) if d not in batch or d == ELLIPSIS)
    return min(next(shared, len(points)), max(len(points) - 1, 0))


def check_frames(where: str, role: str, batch: Dims, points: Dims, frames: int) -> None:
    """Raise unless the per-frame dims (those of `points`, the dims of the leading axes of
    `locs`, that are also in `batch`) are the first `frames` of `points`, with at least
    one point dim after them."""
    paired = tuple(d for d in points if d in batch and d != ELLIPSIS)
    if set(points[: len(paired)]) != set(paired) or len(paired) == len(points):
        raise ValueError(
            f"{where}: batch, grid and locs dims must all be distinct, except per-frame dims "
            f"(here {paired}, in both `batch_shape` and `{role}`), which must be the leading "
            f"axes of locs, followed by at least one point dim; got `{role}={fmt(points)}`. "
            f"Order the locs as [frames..., points..., D]."
        )
    if len(paired) != frames:
        raise ValueError(
            f"{where}: the per-frame dims {paired} (in both `batch_shape` and `{role}`) differ "
            f"from the {frames} frame axes the operator was built with: build a new operator "
            f"instead of renaming or resolving dims into per-frame dims."
        )


def frames_last(a: jax.Array, shape: Dims, frames: Dims, trailing: int) -> jax.Array:
    """`a`, laid out by `shape`, with the axes of `frames` moved (in that order) to just
    before its last `trailing` axes: the layout of [`frame_map`][]."""
    if not frames:
        return a
    return jnp.moveaxis(a, _frame_axes(a, shape, frames), _packed(a, frames, trailing))


def frames_back(a: jax.Array, shape: Dims, frames: Dims, trailing: int) -> jax.Array:
    """The inverse of [`frames_last`][]: the frame axes before the last `trailing` axes of
    `a` moved to their places in `shape`."""
    if not frames:
        return a
    return jnp.moveaxis(a, _packed(a, frames, trailing), _frame_axes(a, shape, frames))


def _frame_axes(a: jax.Array, shape: Dims, frames: Dims) -> list[int]:
    return [axis_of(shape, d) % a.ndim for d in frames]


def _packed(a: jax.Array, frames: Dims, trailing: int) -> list[int]:
    return [a.ndim - trailing - len(frames) + i for i in range(len(frames))]


def _checked_grid(grid_size: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    if len(grid_size) != ndim:
        raise ValueError(
            f"`Interpolate`: grid_size must give {ndim} sizes (one per locs coordinate); got "
            f"{grid_size}."
        )
    return grid_size


def _without_unused_beta(kernel: str, kernel_params):
    """`kernel_params` less a `beta` (checked to be a number) for the spline kernel, which
    has no parameter: torchlinops passes `beta` to every kernel and the spline ignores it."""
    if kernel != "spline" or kernel_params is None:
        return kernel_params
    params = dict(kernel_params)
    if "beta" in params:
        as_number("Interpolate", "kernel_params['beta']", params.pop("beta"), 0.0)
    return params
