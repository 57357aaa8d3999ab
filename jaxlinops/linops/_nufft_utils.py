"""torchlinops' NUFFT helpers (`torchlinops.linops.nufft.utils` and `._base`): point
shifts and rescaling, grid scaling, a broadcasting clamp, and the `NUFFTBase` name."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._arrays import as_array, as_inexact, as_sizes
from .._core import NamedLinop
from .._dims import ELLIPSIS, Dims
from ..functional._toeplitz import check_embedding
from ._nufft import NUFFT
from ._toeplitz import toeplitz_kernel_op

__all__ = [
    "NUFFTBase",
    "clamp",
    "clear_nufft_parameter_caches",
    "fftshift_locs",
    "ifftshift_locs",
    "psf_sizing",
    "rescale_locs",
    "scale_int",
    "toeplitz_psf",
]

NUFFTBase = NUFFT
"""torchlinops' common base of its NUFFTs. jaxlinops' `SamplingNUFFT` and
`FastSamplingNUFFT` subclass `NUFFT`, so `isinstance(A, NUFFTBase)` holds for all three."""


def clear_nufft_parameter_caches() -> None:
    """Does nothing: torchlinops caches NUFFT kernel parameters per class; jaxlinops
    computes them once per operator (they are static fields), so there is no cache."""


def scale_int(t: Sequence[int], scale_factor: float) -> tuple[int, ...]:
    r"""$\lfloor s \cdot n \rfloor$ for each size $n$ of `t` (truncated toward zero, as
    `int`): `scale_int((64, 48), 1.25) == (80, 60)`."""
    return tuple(int(scale_factor * n) for n in as_sizes(t, "`scale_int(t=...)`"))


def fftshift_locs(locs: ArrayLike, size: Sequence[int]) -> jax.Array:
    r"""Grid points `locs` `[..., D]` shifted by half the grid, $(p + \lfloor n/2 \rfloor)
    \bmod n$ per axis ($n$ = `size`): centered coordinates to FFT-ordered ones."""
    return _shift("fftshift_locs", locs, size, 1)


def ifftshift_locs(locs: ArrayLike, size: Sequence[int]) -> jax.Array:
    r"""The inverse of [`fftshift_locs`][]: $(p - \lfloor n/2 \rfloor) \bmod n$ per axis."""
    return _shift("ifftshift_locs", locs, size, -1)


def _shift(name: str, locs: ArrayLike, size: Sequence[int], sign: int) -> jax.Array:
    locs = as_array(locs, f"`{name}(locs=...)`")
    n = as_sizes(size, f"`{name}(size=...)`", 1)
    if locs.ndim == 0 or locs.shape[-1] != len(n):
        raise ValueError(
            f"`{name}`: len(size) must equal locs.shape[-1]; got size {n} and locs of shape "
            f"{tuple(locs.shape)}."
        )
    n_arr = jnp.asarray(n, locs.dtype).reshape((1,) * (locs.ndim - 1) + (len(n),))
    return jnp.remainder(locs + sign * (n_arr // 2), n_arr)


def clamp(x: ArrayLike, min: ArrayLike | None = None, max: ArrayLike | None = None) -> jax.Array:  # noqa: A002 - torchlinops' names
    """`x` limited to `[min, max]` elementwise, the bounds broadcasting against `x` (None:
    no bound): `clamp(jnp.array([0, 2, 4]), jnp.array([1]))` is `[1, 2, 4]`."""
    out = as_array(x, "`clamp(x=...)`")
    for bound, limit, what in ((min, jnp.maximum, "min"), (max, jnp.minimum, "max")):
        if bound is None:
            continue
        if not isinstance(bound, (int, float)):  # Python numbers stay weakly typed
            bound = as_array(bound, f"`clamp({what}=...)`")
            dtype = jnp.promote_types(out.dtype, bound.dtype)
            out, bound = out.astype(dtype), bound.astype(dtype)
        out = limit(out, bound)
    return out


def rescale_locs(
    locs: ArrayLike,
    c0: Sequence[float],
    w0: Sequence[float],
    c1: Sequence[float],
    w1: Sequence[float],
    dim: int = -1,
) -> jax.Array:
    r"""Points `locs` (coordinates along axis `dim`) moved from a grid with center `c0`
    and width `w0` to one with center `c1` and width `w1`, per coordinate $d$:
    $p_d \mapsto (p_d - c_{0,d})\, w_{1,d} / w_{0,d} + c_{1,d}$."""
    locs = as_inexact(as_array(locs, "`rescale_locs(locs=...)`"))
    if not -locs.ndim <= dim < locs.ndim:
        raise ValueError(f"`rescale_locs(dim=...)`: {dim} is out of range for {locs.ndim} axes.")
    ndim = locs.shape[dim]
    params = {"c0": c0, "w0": w0, "c1": c1, "w1": w1}
    for what, values in params.items():
        if len(values) < ndim:
            raise ValueError(
                f"`rescale_locs({what}=...)`: one value per coordinate ({ndim}) expected; got "
                f"{tuple(values)}."
            )
    shape = [1] * locs.ndim
    shape[dim] = ndim
    a, b, c, d = (jnp.asarray(v[:ndim], locs.dtype).reshape(shape) for v in params.values())
    return (locs - a) * d / b + c


def toeplitz_psf(
    nufft: NUFFT, inner: NamedLinop | None = None, dtype=None, oversamp: float = 2.0
) -> NamedLinop:
    r"""The Toeplitz kernel of $A^H\, \mathrm{inner}\, A$ for the NUFFT $A$ `nufft`, as an
    operator over its k-space dims `nufft.input_kshape` on the grid embedded with
    `oversamp` ($\ge 2$): $A^H\, \mathrm{inner}\, A = \mathrm{Crop}\; F^H K F\;
    \mathrm{Pad}$ with centered orthonormal FFTs $F$ (what `NUFFT(..., toeplitz=True).N`
    builds).

    `inner` (default: none) is a `Diagonal` or `Dense` point weighting (e.g. density
    compensation, coils); the kernel is a `Diagonal` without it or for a `Diagonal`,
    else a `Dense` (torchlinops always returns a `Dense`). `dtype` casts the kernel
    (default: the data's complex dtype; torchlinops' default is complex64). Unlike
    torchlinops, `SamplingNUFFT` is supported (its kernel is exact).
    """
    if not isinstance(nufft, NUFFT):
        raise TypeError(f"`toeplitz_psf(nufft=...)` expects a NUFFT; got {type(nufft).__name__}.")
    check_embedding("toeplitz_psf", nufft.plan, oversamp)
    kernel = toeplitz_kernel_op(nufft, inner, oversamp, nufft.input_kshape, dtype)
    if kernel is None:
        raise ValueError(
            f"`toeplitz_psf(inner=...)`: expected None, a Diagonal or a Dense acting on the "
            f"points {nufft.output_shape}; got {inner!r}."
        )
    return kernel


def psf_sizing(nufft: NUFFT, inner: NamedLinop, toeplitz_oversamp: float = 2.0):
    """The shapes and sizes of the Toeplitz kernel of [`toeplitz_psf`][] as torchlinops
    lays it out: `(kernel_shape, ishape, oshape, kernel_size, input_size, batch_sizes)`.

    With `B_i`, `B_o` the dims of `inner.ishape`/`inner.oshape` before the point dims and
    `K` the k-space dims: `ishape = B_i + K`, `oshape = B_o + K`, `kernel_shape =
    B_i + B_o + K` (`("...",) + K` when `B_i` is `("...",)`), `batch_sizes` the sizes of
    `B_i` (1 where `inner` does not fix them), `kernel_size = batch_sizes * 2 +` the
    embedded grid, `input_size = batch_sizes +` the point sizes.
    """
    n_points = len(nufft.point_dims)
    batch_ishape: Dims = inner.ishape[: len(inner.ishape) - n_points]
    batch_oshape: Dims = inner.oshape[: len(inner.oshape) - n_points]
    kshape = nufft.input_kshape
    if batch_ishape == (ELLIPSIS,):
        kernel_shape = batch_ishape + kshape
    elif ELLIPSIS in batch_ishape and ELLIPSIS in batch_oshape:
        raise ValueError(
            f"`psf_sizing`: the kernel's dims are underspecified for inner {inner.ishape} -> "
            f"{inner.oshape}; name the batch dims of inner."
        )
    else:
        kernel_shape = batch_ishape + batch_oshape + kshape
    batch_sizes = tuple(inner.size(d) or 1 for d in batch_ishape)
    kernel_size = batch_sizes + batch_sizes + scale_int(nufft.plan.grid_size, toeplitz_oversamp)
    input_size = batch_sizes + tuple(nufft.size(d) for d in nufft.point_dims)
    ishape, oshape = batch_ishape + kshape, batch_oshape + kshape
    return kernel_shape, ishape, oshape, kernel_size, input_size, batch_sizes
