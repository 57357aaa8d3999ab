"""`FFT`: the n-dimensional discrete Fourier transform over the trailing dims."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._core import ADJOINT_NORM, Fourier, Identity, NamedLinop, Tiling, dims_field
from .._default_dims import GRID_DIMS, KSPACE_DIMS
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt
from ..functional._fft import centered_fftn

# The adjoint of fftn(norm=a) is ifftn(norm=ADJOINT_NORM[a]); F^H F = n ** _NORMAL_POWER[a]
# for a grid of n points.
_NORMAL_POWER = {"ortho": 0, "backward": 1, "forward": -1}


class FFT(NamedLinop):
    r"""$y = F x$, the DFT over the last `ndim` axes (`numpy.fft.fftn` with `norm`).

    Dims: `batch_shape + primal -> batch_shape + dual`, by default
    `(..., Nx, Ny) -> (..., Kx, Ky)` for `ndim=2`. With `centered=True` the origin is
    the center sample `N // 2`: $y = \mathrm{fftshift}(F\, \mathrm{ifftshift}(x))$.

    The adjoint is the true conjugate transpose for every `norm`: `ifftn` with
    `"backward"` and `"forward"` swapped. The normal $F^H F$ is the identity for
    `"ortho"` and $n\,I$ (`"backward"`) or $I/n$ (`"forward"`) for a grid of $n$ points;
    as in torchlinops it keeps the input dims (`(..., Nx, Ny) -> (..., Nx, Ny)`).
    Real inputs give complex outputs.
    """

    batch_shape: Dims = dims_field()
    primal_shape: Dims = dims_field()
    dual_shape: Dims = dims_field()
    norm: str = eqx.field(static=True)
    centered: bool = eqx.field(static=True)

    def __init__(
        self,
        ndim: int,
        batch_shape: DimsLike = None,
        grid_shapes: tuple[DimsLike, DimsLike] | None = None,
        centered: bool = False,
        *,
        norm: str | None = "ortho",
    ):
        """**Arguments:**

        - `ndim`: the number of trailing axes transformed (at least 1).
        - `batch_shape`: leading dims, shared by input and output (default `"..."`).
        - `grid_shapes`: `(primal, dual)`, the `ndim` input and output grid dims
          (default `("Nx", "Ny", "Nz")[:ndim]` and `("Kx", "Ky", "Kz")[:ndim]`; needed
          for `ndim > 3`).
        - `centered`: put the origin at the center sample of each axis.
        - `norm` (keyword only; torchlinops has no such argument and is always
          `"ortho"`): `"ortho"` (unitary), `"backward"` (or None) or `"forward"`, as in
          `numpy.fft`.
        """
        self.batch_shape = as_dims(batch_shape, ELLIPSIS)
        self.primal_shape, self.dual_shape = _grid_shapes(ndim, grid_shapes)
        self.norm = "backward" if norm is None else norm
        if not isinstance(centered, (bool, np.bool_)):
            raise TypeError(f"`FFT(centered=...)` expects a bool; got {centered!r}.")
        self.centered = bool(centered)

    def __check_init__(self):
        if self.norm not in ADJOINT_NORM:
            raise ValueError(
                f"`FFT(norm=...)` must be one of {sorted(ADJOINT_NORM)}; got {self.norm!r}."
            )
        where = f"`FFT({fmt(self.ishape)} -> {fmt(self.oshape)})`"
        for role, shape in (("primal", self.primal_shape), ("dual", self.dual_shape)):
            if ELLIPSIS in shape or len(set(shape)) != len(shape):
                raise ValueError(f"{where}: the {role} grid dims must be distinct, without '...'.")
        if set(self.batch_shape) & set(self.primal_shape + self.dual_shape):
            raise ValueError(f"{where}: batch dims and grid dims must differ.")

    @property
    def ndim(self) -> int:
        return len(self.primal_shape)

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.primal_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.dual_shape

    def _transform(self, x: jax.Array, inverse: bool, norm: str) -> jax.Array:
        if self.centered:
            return centered_fftn(x, self.ndim, inverse, norm)
        fn = jnp.fft.ifftn if inverse else jnp.fft.fftn
        return fn(x, axes=tuple(range(-self.ndim, 0)), norm=norm)

    def tiling(self) -> Tiling:
        return Tiling(batch=self.batch_shape)

    def grid_form(self) -> Fourier:
        return Fourier(self.primal_shape, self.dual_shape, self.centered, self.norm)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._transform(x, False, self.norm)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._transform(y, True, ADJOINT_NORM[self.norm])

    def normal(self, inner: NamedLinop | None = None) -> NamedLinop:
        """Without `inner`, torchlinops' `FFT.N`: $n^p I$ on the input dims, which it keeps
        (`Identity(ishape)` for `"ortho"`; the folding rules would rename them,
        `Nx -> Nx1`). With `inner`, the folding rules of `NamedLinop.normal`."""
        if inner is not None:
            return super().normal(inner)
        power = _NORMAL_POWER[self.norm]
        if power == 0:
            return Identity(self.ishape)
        return GridScale(self.ishape, self.ishape, self.ndim, power)


class GridScale(NamedLinop):
    r"""$y = n^p x$, where $n$ is the number of points in the last `ndim` axes of $x$.

    The normal of a non-unitary [`FFT`][]: `ishape -> oshape` (renamed position-wise).
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    ndim: int = eqx.field(static=True)
    power: int = eqx.field(static=True)

    def tiling(self) -> Tiling:
        return Tiling(batch=self.ishape[: len(self.ishape) - self.ndim])

    def apply(self, x: jax.Array) -> jax.Array:
        return x * float(math.prod(x.shape[x.ndim - self.ndim :])) ** self.power

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.apply(y)

    def adjoint(self) -> NamedLinop:
        return GridScale(self.oshape, self.ishape, self.ndim, self.power)


def _grid_shapes(ndim: int, grid_shapes) -> tuple[Dims, Dims]:
    if isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 1:
        raise ValueError(f"`FFT(ndim=...)` must be a positive integer; got {ndim!r}.")
    if grid_shapes is None:
        if ndim > len(GRID_DIMS):
            raise ValueError(
                f"`FFT(ndim={ndim})`: default grid dims exist for ndim <= {len(GRID_DIMS)}; "
                f"pass `grid_shapes=(primal, dual)` with {ndim} dims each."
            )
        return GRID_DIMS[:ndim], KSPACE_DIMS[:ndim]
    if isinstance(grid_shapes, str) or len(grid_shapes) != 2:
        raise ValueError(
            f"`FFT(grid_shapes=...)` must be a pair (primal, dual) of shapes; got {grid_shapes!r}."
        )
    primal, dual = as_dims(grid_shapes[0]), as_dims(grid_shapes[1])
    if len(primal) != ndim or len(dual) != ndim:
        raise ValueError(
            f"`FFT(ndim={ndim}, grid_shapes=...)` needs {ndim} primal and {ndim} dual dims; "
            f"got {fmt(primal)} and {fmt(dual)}."
        )
    return primal, dual
