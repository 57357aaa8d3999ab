r"""The orthogonal multilevel discrete wavelet transform with a periodic boundary, in JAX.

**Filters.** An orthogonal wavelet is given by its decomposition low-pass filter $h$ of
even length $L$ (PyWavelets' `dec_lo`); the high-pass filter is
$g_j = (-1)^{j+1} h_{L-1-j}$. The Daubechies filter `db`$p$ ($L = 2p$) is the spectral
factor of the halfband filter $|H(\omega)|^2 = 2\cos^{2p}(\omega/2)
\sum_{k<p} \binom{p-1+k}{k} \sin^{2k}(\omega/2)$ with every zero inside the unit circle;
the symlet `sym`$p$ is the least asymmetric factor, its zeros chosen as in Daubechies'
tables (`_SYMLET_ZEROS`). Both are computed in double precision on first use and
cached. They are orthonormal to $10^{-13}$ and agree with PyWavelets' tables to
$10^{-13}$ (db) and $2 \cdot 10^{-12}$ (sym, tabulated to about 12 digits there; its sym2
and db2, one filter, differ by $3 \cdot 10^{-13}$): `tests/test_wavelet.py`.

**One level** along an axis of even length $n$, with $s = L/2$ (PyWavelets'
`mode="periodization"`):
$$a_k = \sum_j h_j\, x_{(2k + s - j) \bmod n}, \qquad
d_k = \sum_j g_j\, x_{(2k + s - j) \bmod n}, \qquad k < n/2,$$
stored as $[a, d]$ along the axis. It is computed in polyphase form: with
$t_j = \lfloor (s - j)/2 \rfloor$, $x_{2k + s - j}$ is entry $k + t_j$ of the even
($s - j$ even) or odd samples of $x$, so each level is $L$ shifted windows of the two
half-length phases, weighted and summed (one fused loop for XLA). The filters are real
Python numbers, so real and complex inputs keep their dtype. The level is orthogonal:
its inverse is its transpose.

**Several levels** transform the leading block (the approximation along every
transformed axis) again, in place, as `pywt.coeffs_to_array(pywt.wavedecn(x, wavelet,
mode="periodization", level=level, axes=axes), axes=axes)` lays out the coefficients.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import as_inexact

# Orders up to 10: beyond, the roots of the halfband polynomial lose digits and the
# filters are orthogonal to about 1e-12 only (1e-11 at order 20).
MAX_DB: int = 10
SYMLETS: range = range(2, 11)
# The least asymmetric factors of Daubechies' tables (PyWavelets' sym filters), as which
# zeros each takes (see `_symlet`): a criterion of phase linearity computed here picks
# other factors for some orders (sym7), where two are nearly as good.
_SYMLET_ZEROS = {
    2: "0", 3: "0", 4: "01", 5: "10", 6: "101", 7: "100", 8: "0101", 9: "0110", 10: "10101"
}  # fmt: skip


def wavelet_names() -> str:
    """The accepted wavelet names, in words."""
    return f"'haar', 'db1' to 'db{MAX_DB}' or 'sym{SYMLETS[0]}' to 'sym{SYMLETS[-1]}'"


def _order(wavelet: object) -> tuple[str, int] | None:
    """`("db", p)` or `("sym", p)` for a valid name, else None."""
    if not isinstance(wavelet, str):
        return None
    if wavelet == "haar":
        return "db", 1
    for family, orders in (("db", range(1, MAX_DB + 1)), ("sym", SYMLETS)):
        rest = wavelet.removeprefix(family)
        if rest != wavelet and rest.isdigit() and rest == str(int(rest)) and int(rest) in orders:
            return family, int(rest)
    return None


def check_wavelet(name: str, wavelet: object) -> str:
    """`wavelet` if it names a supported wavelet, else a ValueError naming `name`."""
    if _order(wavelet) is None:
        raise ValueError(
            f"`{name}(wavelet=...)` must be {wavelet_names()} (orthogonal wavelets); got "
            f"{wavelet!r}."
        )
    return str(wavelet)


@functools.cache
def filter_bank(wavelet: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """`(dec_lo, dec_hi)`: the decomposition filters $h$ and $g$ as Python floats."""
    order = _order(wavelet)
    if order is None:
        raise ValueError(f"Unknown wavelet {wavelet!r}: expected {wavelet_names()}.")
    family, p = order
    h = _daubechies(p) if family == "db" else _symlet(p)
    n = len(h)
    g = [(-1) ** (j + 1) * h[n - 1 - j] for j in range(n)]
    return tuple(map(float, h)), tuple(map(float, g))


def _halfband_roots(p: int) -> np.ndarray:
    r"""The roots $y_k$ of $\sum_{k<p} \binom{p-1+k}{k} y^k$ ($y = \sin^2(\omega/2)$)."""
    return np.roots([math.comb(p - 1 + k, k) for k in reversed(range(p))])


def _inside(y: np.ndarray) -> np.ndarray:
    r"""For each root $y$, the root $z$ of $z + 1/z = 2 - 4y$ inside the unit circle."""
    c, r = 1 - 2 * y, 2 * np.sqrt(y * (y - 1) + 0j)
    return np.where(np.abs(c + r) < 1, c + r, c - r)


def _from_zeros(z: np.ndarray, p: int) -> np.ndarray:
    r"""$h$ with $p$ zeros at $z = -1$ and the zeros `z`, normalised to $\sum h = \sqrt 2$
    (in PyWavelets' `dec_lo` order)."""
    h = np.real(np.polymul(np.poly1d([1.0, 1.0]) ** p, np.poly(z)))
    return (h / np.sum(h) * np.sqrt(2.0))[::-1]


def _daubechies(p: int) -> np.ndarray:
    """`db`$p$: the minimum-phase factor (every zero inside the unit circle; that is the
    reconstruction filter `rec_lo`, and `dec_lo` its reverse)."""
    return _from_zeros(_inside(_halfband_roots(p)), p)


def _symlet(p: int) -> np.ndarray:
    """`sym`$p$: the factor that takes, for each real root or conjugate pair of roots
    $y_k$ (sorted by real part), the zeros inside or (a `1` in `_SYMLET_ZEROS`) outside
    the unit circle."""
    y = sorted((r for r in _halfband_roots(p) if r.imag > -1e-9), key=lambda r: r.real)
    groups = [np.array([r] if abs(r.imag) < 1e-9 else [r, np.conj(r)]) for r in y]
    zeros = [1 / _inside(g) if c == "1" else _inside(g) for g, c in zip(groups, _SYMLET_ZEROS[p])]
    return _from_zeros(np.concatenate(zeros), p)


def default_level(sizes: Sequence[int], wavelet: str) -> int:
    """PyWavelets' default level, `dwt_max_level(min(sizes), L)` $=
    \\lfloor\\log_2(n / (L - 1))\\rfloor$, lowered until every size is divisible by
    $2^{\\mathrm{level}}$, and at least 1."""
    length = len(filter_bank(wavelet)[0])
    n = min(sizes)
    top = int(np.floor(np.log2(n / (length - 1)))) if n >= length - 1 else 0
    twos = min((s & -s).bit_length() - 1 if s > 0 else 0 for s in sizes)
    return max(1, min(top, twos))


def check_sizes(
    name: str, shape: Sequence[int], axes: Sequence[int], level: int, default: bool = False
) -> None:
    """Raise a ValueError naming `name` unless each transformed size is a positive
    multiple of $2^{\\mathrm{level}}$ (the coefficients of every level then fill the
    array). `default`: `level` is the default one (`level=None` was passed)."""
    sizes = [shape[a] for a in axes]
    step = 2**level
    if any(n % step or n == 0 for n in sizes):
        arg = f"level=None)` (the default, here {level})" if default else f"level={level})`"
        raise ValueError(
            f"`{name}({arg} needs every transformed size to be a positive multiple of "
            f"2**level = {step} (periodization); got sizes {tuple(sizes)} in an input of "
            f"shape {tuple(shape)}. Pass a smaller `level` or pad the input."
        )


def wavelet_transform(
    x: jax.Array, axes: Sequence[int], level: int, wavelet: str = "db4"
) -> jax.Array:
    """The coefficients of `level` levels of the DWT over `axes` of `x`, in an array of
    `x`'s shape (PyWavelets' `coeffs_to_array` layout); `wavelet_transform_adjoint` is
    its adjoint and inverse."""
    x = as_inexact(jnp.asarray(x))
    axes = tuple(a % x.ndim for a in axes)
    check_sizes("wavelet_transform", x.shape, axes, level)
    return _compiled(_analysis)(x, axes, level, *filter_bank(wavelet))


def wavelet_transform_adjoint(
    y: jax.Array, axes: Sequence[int], level: int, wavelet: str = "db4"
) -> jax.Array:
    """The adjoint of `wavelet_transform`, which is its inverse (`pywt.waverecn`)."""
    y = as_inexact(jnp.asarray(y))
    axes = tuple(a % y.ndim for a in axes)
    check_sizes("wavelet_transform_adjoint", y.shape, axes, level)
    return _compiled(_synthesis)(y, axes, level, *filter_bank(wavelet))


@functools.cache
def _compiled(transform: Callable) -> Callable:
    """`transform(x, axes, level, h, g)` as one compiled program per layout: applied
    outside `jax.jit`, the transform's hundreds of slices and sums would each be compiled
    and run on their own (inside, the call is inlined)."""
    return jax.jit(transform, static_argnums=(1, 2, 3, 4))


def _block(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[slice, ...]:
    """The approximation block: the first half of every transformed axis."""
    return tuple(slice(0, n // 2) if a in axes else slice(None) for a, n in enumerate(shape))


def _analysis(x: jax.Array, axes: tuple[int, ...], level: int, h, g) -> jax.Array:
    if level == 0:
        return x
    for axis in axes:
        x = _analysis_1d(x, axis, h, g)
    if level > 1:
        block = _block(x.shape, axes)
        x = x.at[block].set(_analysis(x[block], axes, level - 1, h, g))
    return x


def _synthesis(y: jax.Array, axes: tuple[int, ...], level: int, h, g) -> jax.Array:
    if level == 0:
        return y
    if level > 1:
        block = _block(y.shape, axes)
        y = y.at[block].set(_synthesis(y[block], axes, level - 1, h, g))
    for axis in axes:
        y = _synthesis_1d(y, axis, h, g)
    return y


def _shifts(length: int) -> list[tuple[int, int]]:
    r"""For each tap $j$: the phase $(s - j) \bmod 2$ and shift $t_j$ of its samples."""
    s = length // 2
    return [((s - j) % 2, (s - j) // 2) for j in range(length)]


def _windows(v: jax.Array, axis: int, starts: Sequence[int]) -> dict[int, jax.Array]:
    """For each start $t$: $w_i = v_{(i + t) \\bmod m}$ along `axis` ($m$ = its length),
    sliced from one periodic extension of `v`."""
    m = v.shape[axis]
    first, last = min(starts), max(starts)
    offset = first % m
    copies = -(-(offset + last - first + m) // m)
    extended = jnp.concatenate([v] * copies, axis) if copies > 1 else v
    return {
        t: jax.lax.slice_in_dim(extended, offset + t - first, offset + t - first + m, axis=axis)
        for t in starts
    }


def _analysis_1d(x: jax.Array, axis: int, h, g) -> jax.Array:
    """One level along `axis`: $[a, d]$ from the even and odd samples of `x`."""
    n = x.shape[axis]
    taps = _shifts(len(h))
    phases = [jax.lax.slice_in_dim(x, p, n, 2, axis) for p in (0, 1)]
    windows = [_windows(v, axis, [t for q, t in taps if q == p]) for p, v in enumerate(phases)]
    terms = [windows[p][t] for p, t in taps]
    return jnp.concatenate([_weighted(h, terms), _weighted(g, terms)], axis)


def _weighted(weights: Sequence[float], terms: Sequence[jax.Array]) -> jax.Array:
    """$\\sum_j w_j\\, t_j$ (Python-float weights keep the terms' dtype)."""
    out = weights[0] * terms[0]
    for w, t in zip(weights[1:], terms[1:]):
        out = out + w * t
    return out


def _synthesis_1d(y: jax.Array, axis: int, h, g) -> jax.Array:
    """The transpose of `_analysis_1d`: sample $2i + p$ of the output is
    $\\sum_{j \\in p} h_j a_{i - t_j} + g_j d_{i - t_j}$ (indices modulo $n/2$)."""
    m = y.shape[axis] // 2
    a = jax.lax.slice_in_dim(y, 0, m, axis=axis)
    d = jax.lax.slice_in_dim(y, m, 2 * m, axis=axis)
    taps = _shifts(len(h))
    starts = sorted({-t for _, t in taps})
    wa, wd = _windows(a, axis, starts), _windows(d, axis, starts)
    phases = []
    for p in (0, 1):
        js = [j for j, (q, _) in enumerate(taps) if q == p]
        terms = [wa[-taps[j][1]] for j in js] + [wd[-taps[j][1]] for j in js]
        phases.append(_weighted([h[j] for j in js] + [g[j] for j in js], terms))
    out = jnp.stack(phases, axis + 1)
    return out.reshape(y.shape)
