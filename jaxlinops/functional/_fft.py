r"""The centered DFT, with the origin at sample $c = \lfloor M/2 \rfloor$ of each axis.

`fftshift(fftn(ifftshift(x)))` moves every sample twice, and XLA writes each shift out as
two slices and a concatenation: copies of the whole array around every transform, which on
a CPU cost about as much as the transform of a few coils. The same transform is a plain
one between two phase ramps, which fuse with the elementwise work around it (padding,
apodization, a kernel): per axis of $M$ points,
$$y_k = \sum_j x_j\, e^{-2\pi i (k - c)(j - c)/M}
= e^{2\pi i c (k - c)/M} \sum_j \big(x_j\, e^{2\pi i c j/M}\big)\, e^{-2\pi i k j/M},$$
and the inverse is the conjugate ramps around `ifftn`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._arrays import right_align
from ._pad import center_pad


def centered_fftn(
    x: jax.Array,
    ndim: int,
    inverse: bool = False,
    norm: str = "ortho",
    spectrum_signs: bool = False,
    pad_to: tuple[int, ...] | None = None,
) -> jax.Array:
    r"""`fftshift(fn(ifftshift(x, axes), axes=axes, norm=norm), axes)` over the last `ndim`
    axes, `fn` being `jnp.fft.fftn` or (`inverse`) `jnp.fft.ifftn`; without the shifts.
    Real inputs give complex outputs of the same precision.

    `pad_to` (forward only): the transform of `x` zero-padded about its centre to these
    sizes (`center_pad`), with the ramps before the transform applied to `x` before the
    padding, to fewer entries.

    `spectrum_signs`: on an axis of even length $M$ the ramp on the spectrum's side (after
    the forward transform, before the inverse) is a sign per sample, $(-1)^{k - c}$ and
    $(-1)^k$, and the caller may apply it itself where it costs nothing (the NUFFT folds it
    into its kernel weights). With `spectrum_signs=True` that ramp is left out: the result
    is $S\,\mathcal{F}_c x$ (forward) or $\mathcal{F}_c^{-1} (S x)$ (inverse) with
    $S = \prod_{d\ \mathrm{even}} (-1)^{k_d}$. The constant $(-1)^c$ of the forward and the
    normalisation move to the ramps on the image's side, so the spectrum's side is the bare
    FFT: one pass over the array fewer."""
    extent = x.shape[x.ndim - ndim :]
    shape = extent if pad_to is None else tuple(pad_to)
    assert pad_to is None or not inverse, "pad_to applies to the forward transform"
    with jax.numpy_dtype_promotion("standard"):
        x = x.astype(jnp.result_type(x.dtype, jnp.complex64))
    # XLA's transforms: the forward unscaled, the inverse divided by the size; the rest of
    # the normalisation (the forward's `scale`, the inverse's 1 / (size scale)) goes to the
    # ramps on the image's side
    size = math.prod(shape)
    scales = {"backward": 1.0, "ortho": size**-0.5, "forward": 1.0 / size}
    if norm not in scales:
        raise ValueError(f"`centered_fftn(norm=...)` must be one of {list(scales)}; got {norm!r}.")
    scale = scales[norm]
    pre, post = (1.0, 1.0 / scale) if inverse else (scale, 1.0)
    x = _ramped(x, shape, inverse, False, spectrum_signs, scale=pre, extent=extent)
    x = center_pad(x, extent, shape)
    x = lax.fft(x, lax.FftType.IFFT if inverse else lax.FftType.FFT, shape)
    return _ramped(x, shape, inverse, True, spectrum_signs, scale=post)


def _ramped(
    x: jax.Array,
    shape: tuple[int, ...],
    conj: bool,
    post: bool,
    spectrum_signs: bool = False,
    scale: float = 1.0,
    extent: tuple[int, ...] | None = None,
) -> jax.Array:
    r"""`x` times $e^{\pm 2\pi i c (j - c)/M}$ (`post`) or $e^{\pm 2\pi i c j/M}$ along each
    of its last `len(shape)` axes: one small constant per axis, computed in double
    precision with the exponent reduced modulo $M$, then cast to `x`'s (complex) dtype.
    With `spectrum_signs`, even axes skip the spectrum side's ramp (see
    [`centered_fftn`][]); `scale` multiplies the first ramp applied. `extent`: `x` holds
    only the centred `extent` of each axis (the ramps' entries there)."""
    spectrum_side = post != conj
    for axis, m in enumerate(shape, start=-len(shape)):
        c = m // 2
        folded = spectrum_signs and m % 2 == 0
        if folded and spectrum_side:
            continue
        j = np.arange(m) - (c if post else 0)
        ramp = np.exp((-2j if conj else 2j) * np.pi * (c * j % m) / m)
        if folded and not conj:  # the forward's (-1)^c, moved from the spectrum's side
            ramp = ramp * (-1) ** c
        n = m if extent is None else extent[axis]
        ramp, scale = ramp[m // 2 - n // 2 :][:n] * scale, 1.0
        x = x * right_align(jnp.asarray(ramp.reshape((n,) + (1,) * (-axis - 1)), x.dtype), x.ndim)
    return x
