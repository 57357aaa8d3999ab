"""Kernel interpolation ("ungrid") and its adjoint ("grid"), at torchlinops' module path
`torchlinops.functional._interp`, with its submodules `kernels` (the kernels under
torchlinops' names) and `tests._valid_pts` (random points clear of the grid's edges)."""

from .interp import (
    grid_points as grid_points,
    interpolate as interpolate,
    interpolate_adjoint as interpolate_adjoint,
    ungrid as ungrid,
)

__all__ = ["interpolate", "interpolate_adjoint", "ungrid", "grid_points"]
