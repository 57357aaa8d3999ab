"""`NUFFTInterp`: the NUFFT's last step alone, the padded spectrum read at the points."""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp

from .._core import Coupling, NamedLinop, OffGrid, dims_field
from .._dims import Dims
from ..functional._gridding import point_order
from ..functional._index import gather, scatter
from ..functional._nufft import NUFFTPlan, grid_plan, ungrid_plan


class NUFFTInterp(NamedLinop):
    r"""$y_l = \sum_g K(g - p_l)\, k[g] / s$: the padded spectrum $k$ `[B..., *Npad]`
    read at the points $p_l$ of `plan` (padded-grid units): `batch_shape + grid_shape ->
    batch_shape + point_dims`.

    The last step of a `NUFFT` (see `NUFFT.decompose`): in interpolate mode
    the plan's Kaiser–Bessel window of width $w$, divided by the NUFFT's `scale` $s$; in
    sampling mode the nearest grid point ($s = 1$). The adjoint spreads the point values
    onto the grid. The grid wraps around, and a point reads $\lceil w/2 \rceil$ entries on
    either side of its cell (none in sampling mode): what it declares for grid splitting
    (`grid_form`). The plan has no frames and a gridding backend (`"jax"` or `"pallas"`).
    """

    plan: NUFFTPlan
    scale: float = eqx.field(static=True)
    batch_shape: Dims = dims_field()
    grid_shape: Dims = dims_field()
    point_dims: Dims = dims_field()

    def __init__(
        self, plan: NUFFTPlan, scale: float, batch_shape: Dims, grid_shape: Dims, point_dims: Dims
    ):
        self.plan, self.scale = plan, scale
        self.batch_shape, self.grid_shape, self.point_dims = batch_shape, grid_shape, point_dims

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.grid_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.point_dims

    def size(self, dim: str) -> int | None:
        if dim in self.grid_shape:
            return self.plan.padded_size[self.grid_shape.index(dim)]
        if dim in self.point_dims:
            return self.plan.locs.shape[self.point_dims.index(dim)]
        return None

    def coupling(self, dim: str) -> Coupling:
        if dim in self.grid_shape:
            return Coupling.halo(self._reach, periodic=True)
        return Coupling.NONE

    @property
    def _reach(self) -> int:
        return 0 if self.plan.mode == "sampling" else math.ceil(self.plan.width / 2)

    def grid_form(self) -> OffGrid:
        plan = self.plan

        def local(locs: jax.Array, padded: tuple[int, ...]) -> NUFFTInterp:
            order = None if plan.order is None else point_order(locs, padded)
            local_plan = dataclasses.replace(plan, locs=locs, order=order, padded_size=padded)
            return dataclasses.replace(self, plan=local_plan, point_dims=self.point_dims[:1])

        reach = (self._reach,) * len(plan.padded_size)
        return OffGrid(plan.locs, self.grid_shape, plan.padded_size, reach, True, local)

    def apply(self, x: jax.Array) -> jax.Array:
        if self.plan.mode == "sampling":
            return gather(x, tuple(jnp.moveaxis(self.plan.locs, -1, 0)))
        return ungrid_plan(x, self.plan) / self.scale

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        if self.plan.mode == "sampling":
            idx = tuple(jnp.moveaxis(self.plan.locs, -1, 0))
            return scatter(y, idx, self.plan.padded_size)
        return grid_plan(y / self.scale, self.plan)
