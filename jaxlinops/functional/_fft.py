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

import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import right_align


def centered_fftn(x: jax.Array, ndim: int, inverse: bool = False, norm: str = "ortho") -> jax.Array:
    """`fftshift(fn(ifftshift(x, axes), axes=axes, norm=norm), axes)` over the last `ndim`
    axes, `fn` being `jnp.fft.fftn` or (`inverse`) `jnp.fft.ifftn`; without the shifts.
    Real inputs give complex outputs of the same precision."""
    axes = tuple(range(-ndim, 0))
    shape = x.shape[x.ndim - ndim :]
    with jax.numpy_dtype_promotion("standard"):
        x = x.astype(jnp.result_type(x.dtype, jnp.complex64))
    x = _ramped(x, shape, inverse, post=False)
    x = (jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, axes=axes, norm=norm)
    return _ramped(x, shape, inverse, post=True)


def _ramped(x: jax.Array, shape: tuple[int, ...], conj: bool, post: bool) -> jax.Array:
    r"""`x` times $e^{\pm 2\pi i c (j - c)/M}$ (`post`) or $e^{\pm 2\pi i c j/M}$ along each
    of its last `len(shape)` axes: one small constant per axis, computed in double
    precision with the exponent reduced modulo $M$, then cast to `x`'s (complex) dtype."""
    for axis, m in enumerate(shape, start=-len(shape)):
        c = m // 2
        j = np.arange(m) - (c if post else 0)
        ramp = np.exp((-2j if conj else 2j) * np.pi * (c * j % m) / m)
        x = x * right_align(jnp.asarray(ramp.reshape((m,) + (1,) * (-axis - 1)), x.dtype), x.ndim)
    return x
