"""`FFTConvolution`: torchlinops' circular convolution, computed by FFTs over the grid."""

from __future__ import annotations

from collections.abc import Sequence

import jax

from .._arrays import as_array, as_sizes
from .._core import NamedLinop, Tiling, dims_field, normal_renaming
from .._dims import Dims, DimsLike, substitute
from ._conv import (
    CirculantNormal,
    check_fits,
    check_kernel,
    conv_dims,
    fourier_kernel,
    fourier_multiply,
    free_batch,
)


class FFTConvolution(NamedLinop):
    r"""The circular convolution $y = \mathcal{F}^{-1}\big(\hat h\, \mathcal{F} x\big)$ over
    the grid dims, $\hat h$ the DFT of the kernel wrapped onto the input's grid with its
    centre $k // 2$ at index 0: the map of `Convolution(kernel, ...,
    padding_mode="circular")`, $y[n] = \sum_j h[j]\, x[(n - j + c) \bmod N]$, for any grid
    at least as large as the kernel (the size is read from the input).

    Dims: `batch_shape + in_grid_shape -> batch_shape + out_grid_shape`. The adjoint
    multiplies by $\overline{\hat h}$, the normal by $|\hat h|^2$ (`CirculantNormal`). A
    real kernel and a real input give a real output.
    """

    kernel: jax.Array
    batch_shape: Dims = dims_field()
    in_grid_shape: Dims = dims_field()
    out_grid_shape: Dims = dims_field()

    def __init__(
        self,
        kernel,
        batch_shape: DimsLike = None,
        in_grid_shape: DimsLike = None,
        out_grid_shape: DimsLike = None,
    ):
        """**Arguments** (torchlinops' names and order): `kernel` (1 to 3 axes, one per
        grid dim; an even size is padded to odd with a trailing zero), `batch_shape`
        (default `"..."`), `in_grid_shape` (default `Nx[, Ny[, Nz]]`) and `out_grid_shape`
        (default: the input grid dims renamed, `Nx1[, Ny1[, Nz1]]`)."""
        self.kernel = as_array(kernel, "`FFTConvolution(kernel=...)`")
        dims = conv_dims(self.kernel, batch_shape, in_grid_shape, out_grid_shape)
        self.batch_shape, self.in_grid_shape, self.out_grid_shape = dims

    def __check_init__(self):
        check_kernel(
            self.name, self.kernel, self.batch_shape, self.in_grid_shape, self.out_grid_shape
        )

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.in_grid_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.out_grid_shape

    def tiling(self) -> Tiling:
        return Tiling(batch=free_batch(self.batch_shape, self.kernel, self.in_grid_shape))

    def fourier_kernel(self, grid_size: Sequence[int]) -> jax.Array:
        r"""$\hat h$ on a grid of `grid_size` (the trailing `kernel.ndim` axes of an
        input): the multiplier this operator applies in the Fourier domain. Computed on
        each call (operators are immutable; under `jit` XLA keeps it with the program)."""
        grid = as_sizes(grid_size, f"`{self.name}.fourier_kernel(grid_size=...)`")
        check_fits(self.name, self.kernel.shape, grid, whole=True)
        return fourier_kernel(self.kernel, grid)

    _get_fourier_kernel = fourier_kernel
    """torchlinops' name for [`fourier_kernel`][] (which caches it there)."""

    def apply(self, x: jax.Array) -> jax.Array:
        return fourier_multiply(self.name, x, self.kernel, "forward")

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return fourier_multiply(self.name, y, self.kernel, "adjoint")

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if inner is not None:
            return None
        out_grid = substitute(self.in_grid_shape, normal_renaming(self))
        return CirculantNormal(self.kernel, self.batch_shape, self.in_grid_shape, out_grid, False)
