"""`Convolution`: a single-channel N-d convolution with a zero or periodic boundary."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import as_array, as_inexact, promote, promote_inexact, right_align
from .._core import Coupling, NamedLinop, Tiling, dims_field, normal_renaming
from .._default_dims import GRID_DIMS
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, next_unused, substitute

_PADDING_MODES = ("zeros", "circular")
_NORMAL_MODES = (None, "conv", "fft")


class Convolution(NamedLinop):
    r"""The true convolution $y[n] = \sum_j h[j]\, x[n - j + c]$ with a 1-3D kernel $h$.

    Dims: `batch_shape + in_grid_shape -> batch_shape + out_grid_shape`. The kernel has
    one axis per grid dim and its centre at $c = k // 2$ on each axis (an even size is
    padded to odd with a trailing zero); the output has the size of the input ("same").
    A kernel with more axes than grid dims convolves the trailing batch axes too (as
    torchlinops convolves the last `kernel.ndim` axes); the batch dims it covers are
    not tiled. The other batch entries are convolved alike (no channel mixing). With
    `padding_mode="zeros"`, $x$ is zero outside the grid; with `"circular"`, it is
    periodic. The adjoint is the correlation with $\bar h$ under the same boundary.
    The sums run in the common dtype of kernel and input: an integer kernel and integer
    input together raise a TypeError (they would overflow silently).

    `normal_mode` (circular padding only, checked when the normal is built) selects the
    normal $A^H A$: `"conv"` gives a circular `Convolution` with the autocorrelation
    kernel (size $2k - 1$), `"fft"` an operator that multiplies by $|\hat h|^2$ in the
    Fourier domain; `None` the default.
    """

    kernel: jax.Array
    batch_shape: Dims = dims_field()
    in_grid_shape: Dims = dims_field()
    out_grid_shape: Dims = dims_field()
    padding_mode: str = eqx.field(static=True)
    normal_mode: str | None = eqx.field(static=True)
    wrap_kernel: bool = eqx.field(static=True)

    def __init__(
        self,
        kernel,
        batch_shape: DimsLike = None,
        in_grid_shape: DimsLike = None,
        out_grid_shape: DimsLike = None,
        padding_mode: str = "zeros",
        normal_mode: str | None = None,
        wrap_kernel: bool = False,
    ):
        """**Arguments:**

        - `kernel`: the kernel $h$, 1 to 3 axes: one per grid dim, after any that
          convolve trailing batch axes.
        - `batch_shape`: leading dims convolved alike (default `"..."`).
        - `in_grid_shape`: the grid dims of the input (default `Nx[, Ny[, Nz]]`).
        - `out_grid_shape`: the grid dims of the output (default: the input grid dims
          renamed, `Nx1[, Ny1[, Nz1]]`).
        - `padding_mode`: `"zeros"` or `"circular"` (periodic boundary).
        - `normal_mode`: `None`, `"conv"` or `"fft"` (the last two need circular padding).
        - `wrap_kernel`: in circular mode, accept a kernel whose radius $k // 2$ exceeds
          the grid and wrap it around periodically. Without it such a kernel raises a
          ValueError (as torchlinops' circular padding does). The autocorrelation kernel
          of `normal_mode="conv"` uses this.
        """
        self.kernel = as_array(kernel, "`Convolution(kernel=...)`")
        dims = conv_dims(self.kernel, batch_shape, in_grid_shape, out_grid_shape)
        self.batch_shape, self.in_grid_shape, self.out_grid_shape = dims
        self.padding_mode = padding_mode
        self.normal_mode = normal_mode
        self.wrap_kernel = bool(wrap_kernel)

    def __check_init__(self):
        check_kernel(
            self.name, self.kernel, self.batch_shape, self.in_grid_shape, self.out_grid_shape
        )
        if self.padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"`Convolution(padding_mode=...)` must be one of {_PADDING_MODES}; got "
                f"{self.padding_mode!r}."
            )
        if self.normal_mode not in _NORMAL_MODES:
            raise ValueError(
                f"`Convolution(normal_mode=...)` must be one of {_NORMAL_MODES}; got "
                f"{self.normal_mode!r}."
            )

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.in_grid_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.out_grid_shape

    def tiling(self) -> Tiling:
        return Tiling(batch=free_batch(self.batch_shape, self.kernel, self.in_grid_shape))

    def coupling(self, dim: str) -> Coupling:
        """A halo of the kernel's radius along the grid dims, periodic with circular
        padding (the grid splits by halo exchange: see `jaxlinops._core._coupling`)."""
        extra = self.kernel.ndim - len(self.in_grid_shape)
        for grid in (self.in_grid_shape, self.out_grid_shape):
            if dim in grid:
                radius = self.kernel.shape[extra + grid.index(dim)] // 2
                return Coupling.halo(radius, periodic=self.padding_mode == "circular")
        return super().coupling(dim)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._correlate(x, jnp.flip(odd_kernel(self.kernel)))

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._correlate(y, jnp.conj(odd_kernel(self.kernel)))

    def _correlate(self, x: jax.Array, w: jax.Array) -> jax.Array:
        check_axes(self.name, self.kernel, x)
        circular = self.padding_mode == "circular"
        if circular and not self.wrap_kernel:
            check_fits(self.name, self.kernel.shape, x.shape, whole=False)
        return correlate(x, w, circular)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if self.normal_mode is None or inner is not None:
            return None
        if self.padding_mode != "circular":
            mode = {"fft": "FFT", "conv": "Conv"}[self.normal_mode]
            raise ValueError(
                f"`Convolution(normal_mode={self.normal_mode!r})`.N: {mode} normal mode only "
                f"supports circular padding; got padding_mode={self.padding_mode!r}. Use "
                f"`padding_mode='circular'` or `normal_mode=None`."
            )
        out_grid = substitute(self.in_grid_shape, normal_renaming(self))
        if self.normal_mode == "fft":
            return CirculantNormal(
                self.kernel, self.batch_shape, self.in_grid_shape, out_grid, self.wrap_kernel
            )
        return Convolution(
            autocorrelation(self.kernel),
            self.batch_shape,
            self.in_grid_shape,
            out_grid,
            padding_mode="circular",
            normal_mode="conv",
            wrap_kernel=True,
        )


class CirculantNormal(NamedLinop):
    r"""$y = \mathcal{F}^{-1}\big(|\hat h|^2 \, \mathcal{F} x\big)$: the exact normal of a
    circular `Convolution` with kernel $h$, through FFTs over the grid dims.

    Dims: `batch_shape + in_grid_shape -> batch_shape + out_grid_shape`. Built by
    `Convolution(..., normal_mode="fft").N`; self-adjoint up to the dim names.
    """

    kernel: jax.Array
    batch_shape: Dims = dims_field()
    in_grid_shape: Dims = dims_field()
    out_grid_shape: Dims = dims_field()
    wrap_kernel: bool = eqx.field(static=True)

    def __init__(
        self,
        kernel: jax.Array,
        batch_shape: Dims,
        in_grid_shape: Dims,
        out_grid_shape: Dims,
        wrap_kernel: bool,
    ):
        self.kernel = kernel
        self.batch_shape = batch_shape
        self.in_grid_shape = in_grid_shape
        self.out_grid_shape = out_grid_shape
        self.wrap_kernel = wrap_kernel

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.in_grid_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.out_grid_shape

    @property
    def name(self) -> str:
        return "Convolution.N"

    def tiling(self) -> Tiling:
        return Tiling(batch=free_batch(self.batch_shape, self.kernel, self.in_grid_shape))

    def apply(self, x: jax.Array) -> jax.Array:
        return fourier_multiply(self.name, x, self.kernel, "normal", self.wrap_kernel)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.apply(y)

    def adjoint(self) -> NamedLinop:
        return CirculantNormal(
            self.kernel, self.batch_shape, self.out_grid_shape, self.in_grid_shape, self.wrap_kernel
        )


def fourier_multiply(
    name: str, x: jax.Array, kernel: jax.Array, transfer: str, wrap_kernel: bool = False
) -> jax.Array:
    r"""$\mathcal{F}^{-1}\big(t(\hat h)\, \mathcal{F} x\big)$ over the trailing
    `kernel.ndim` axes of `x`, $\hat h$ the DFT of the odd-padded kernel wrapped onto that
    grid with its centre at index 0, and $t$ the identity (`"forward"`, the circular
    convolution), the conjugate (`"adjoint"`) or $|\cdot|^2$ (`"normal"`). Real `x` and
    `kernel` give a real result. A kernel larger than the grid is refused unless
    `wrap_kernel`."""
    check_axes(name, kernel, x)
    if not wrap_kernel:
        check_fits(name, kernel.shape, x.shape, whole=True)
    x, h = promote_inexact(name, x, odd_kernel(kernel))
    ndim = h.ndim
    axes = tuple(range(x.ndim - ndim, x.ndim))
    hf = fourier_kernel(h, x.shape[x.ndim - ndim :])
    if transfer == "adjoint":
        hf = jnp.conj(hf)
    elif transfer == "normal":
        hf = jnp.real(hf * jnp.conj(hf))
    xf = jnp.fft.fftn(x, axes=axes)
    hf, xf = promote(right_align(hf, x.ndim), xf)
    out = jnp.fft.ifftn(hf * xf, axes=axes)
    return out if jnp.iscomplexobj(x) else jnp.real(out)


def fourier_kernel(kernel: jax.Array, grid: tuple[int, ...]) -> jax.Array:
    r"""$\hat h$: the DFT on `grid` of the odd-padded `kernel` wrapped onto it with its
    centre $k // 2$ at index 0 (the transfer function of the circular convolution)."""
    return jnp.fft.fftn(wrapped(odd_kernel(kernel), grid))


def conv_dims(
    kernel: jax.Array, batch_shape: DimsLike, in_grid_shape: DimsLike, out_grid_shape: DimsLike
) -> tuple[Dims, Dims, Dims]:
    """A convolution's `(batch_shape, in_grid_shape, out_grid_shape)` with their defaults:
    `"..."`, `Nx[, Ny[, Nz]]` (one per kernel axis) and the input grid dims renamed."""
    in_grid = as_dims(in_grid_shape, GRID_DIMS[: kernel.ndim])
    default_out = tuple(next_unused(d, in_grid) for d in in_grid)
    return as_dims(batch_shape, "..."), in_grid, as_dims(out_grid_shape, default_out)


def check_kernel(name: str, kernel: jax.Array, batch: Dims, in_grid: Dims, out_grid: Dims) -> None:
    """Refuse a kernel without 1 to 3 axes, grid dims that are not one per trailing kernel
    axis, or named batch dims too few for the kernel's leading axes."""
    if not 1 <= kernel.ndim <= 3:
        raise ValueError(
            f"`{name}(kernel=...)` must have 1 to 3 axes (one per grid dim); got a "
            f"kernel of shape {tuple(kernel.shape)}."
        )
    if len(in_grid) != len(out_grid) or not 1 <= len(in_grid) <= kernel.ndim:
        raise ValueError(
            f"`{name}`: in_grid_shape and out_grid_shape need one dim per trailing kernel "
            f"axis (at most {kernel.ndim}), as many each; got {fmt(in_grid)} and "
            f"{fmt(out_grid)}."
        )
    extra = kernel.ndim - len(in_grid)
    if ELLIPSIS not in batch and len(batch) < extra:
        raise ValueError(
            f"`{name}`: a kernel of shape {tuple(kernel.shape)} on the grid {fmt(in_grid)} "
            f"convolves {extra} batch axes too; got batch_shape {fmt(batch)}."
        )


def free_batch(batch: Dims, kernel: jax.Array, in_grid: Dims) -> Dims:
    """The batch dims no kernel axis convolves: all of `batch` for a kernel with one axis
    per grid dim. The trailing batch dims covered by the kernel's extra leading axes are
    not free, nor, when `"..."` is among them (its length is known only at application),
    the named dims before it."""
    extra = kernel.ndim - len(in_grid)
    if extra == 0:
        return batch
    covered = batch[max(len(batch) - extra, 0) :]
    if ELLIPSIS in covered:
        return batch[: batch.index(ELLIPSIS) + 1]  # only "...", which is never tiled
    return batch[: len(batch) - extra]


def check_axes(name: str, kernel: jax.Array, x: jax.Array) -> None:
    """Raise unless `x` has an axis for each kernel axis."""
    if x.ndim < kernel.ndim:
        raise ValueError(
            f"`{name}`: a kernel of shape {tuple(kernel.shape)} convolves the last "
            f"{kernel.ndim} axes of its input; got an array of shape {tuple(x.shape)}."
        )


def check_fits(
    name: str, kernel_shape: tuple[int, ...], x_shape: tuple[int, ...], whole: bool
) -> None:
    """Raise if a circular kernel does not fit the grid (the trailing axes of `x`): with
    `whole`, a kernel larger than the grid (an FFT's transfer function is refused there,
    as torchlinops' FFTConvolution does); else a kernel radius larger than the grid (the
    periodic boundary would wrap more than once, which torch's circular padding refuses)."""
    grid = tuple(x_shape[len(x_shape) - len(kernel_shape) :])
    reach = kernel_shape if whole else tuple(k // 2 for k in kernel_shape)
    if any(k > n for k, n in zip(reach, grid)):
        rule = "shape" if whole else "radius k // 2 on each axis"
        raise ValueError(
            f"`{name}`: with circular padding the grid_sizes must be at least the kernel's "
            f"{rule}; got a kernel of shape {tuple(kernel_shape)} and an array of shape "
            f"{tuple(x_shape)} (grid_sizes {grid}). `Convolution(..., wrap_kernel=True)` "
            f"wraps such a kernel around the grid periodically."
        )


def odd_kernel(kernel: jax.Array) -> jax.Array:
    """Pad each even-sized kernel axis with one trailing zero (the centre stays at k // 2)."""
    return jnp.pad(kernel, [(0, 1 - k % 2) for k in kernel.shape])


def correlate(x: jax.Array, w: jax.Array, circular: bool) -> jax.Array:
    r"""$y[n] = \sum_m w[m]\, x[n + m - c]$ over the trailing `w.ndim` axes of `x`, for an
    odd-sized `w` with centre $c$; $x$ is zero (or periodic) outside its grid. Integer
    `x` and `w` together raise a TypeError (the sums would overflow silently)."""
    x, w = promote_inexact("Convolution", x, w)
    ndim = w.ndim
    batch, grid = x.shape[: x.ndim - ndim], x.shape[x.ndim - ndim :]
    lhs = x.reshape((math.prod(batch), 1) + grid)
    pads = [(k // 2, k // 2) for k in w.shape]
    if circular:
        lhs = jnp.pad(lhs, [(0, 0), (0, 0), *pads], mode="wrap")
        pads = [(0, 0)] * ndim
    out = jax.lax.conv_general_dilated(
        lhs, w.reshape((1, 1) + w.shape), (1,) * ndim, pads, precision=jax.lax.Precision.HIGHEST
    )
    return out.reshape(batch + grid)


def autocorrelation(kernel: jax.Array) -> jax.Array:
    r"""The kernel $r = \tilde h * h$ of $A^H A$, with $\tilde h[j] = \bar h[-j]$: size
    $2k - 1$ per axis for the odd-padded size $k$, centre at $k - 1$."""
    h = odd_kernel(as_inexact(kernel))
    return correlate(jnp.pad(h, [(k // 2, k // 2) for k in h.shape]), jnp.conj(h), False)


def wrapped(h: jax.Array, grid: tuple[int, ...]) -> jax.Array:
    """An odd-sized kernel placed on `grid` with its centre at index 0, wrapped periodically
    (entries whose offsets agree modulo the grid size add up)."""
    idx = [(np.arange(k) - k // 2) % n for k, n in zip(h.shape, grid)]
    return jnp.zeros(grid, h.dtype).at[np.ix_(*idx)].add(h)
