"""The NUFFT through jax-finufft (C++ finufft in an XLA custom call): an optional CPU backend.

[`finufft_forward`][] and [`finufft_adjoint`][] compute exactly the transforms of
[`nufft`][] and [`nufft_adjoint`][] (same scaling, sign, centered modes and `locs`
convention) to finufft's relative tolerance `eps`. jax-finufft is imported only when a
transform runs, so jaxlinops imports without it ([`finufft_available`][] says whether it
is installed: `pip install 'jaxlinops[finufft]'`).

Conventions: jaxlinops' point $p$ (cycles per field of view) on an axis of size $N$ is
finufft's angle $\\theta = 2\\pi p / N$; finufft's modes $-\\lfloor N/2 \\rfloor, \\dots,
\\lceil N/2 \\rceil - 1$ (`modeord=0`) are $n - \\lfloor N/2 \\rfloor$ for the grid index
$n$, for even and odd $N$. The forward is finufft type 2 with `iflag=-1`, the adjoint type 1
with `iflag=+1`, both times $(\\prod N)^{-1/2}$.

Derivatives: the transforms have their own JVP rules (`jax.custom_jvp`) with respect to the
data and the angles; jax-finufft's rule for the points promotes dtypes in a way that fails
with x64 enabled or under strict promotion, so it is not used. JAX transposes the rules for
reverse mode through jax-finufft's transpose of each transform.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero
from jax.typing import ArrayLike

from .._arrays import as_array, as_sizes, check_dtype, vary_alike
from ._kernels import as_number, check_locs
from ._pad import _check_trailing

INSTALL = "pip install 'jaxlinops[finufft]'"


@functools.cache
def finufft_available() -> bool:
    """Whether jax-finufft can be imported (checked once)."""
    try:
        import jax_finufft  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _jax_finufft():
    """The jax_finufft module, imported on first use. jax-finufft 1.3.1's `vmap` rule reads
    `jax._src.interpreters.batching.not_mapped`, an alias of None that JAX 0.10 removed
    (jax-finufft issue #227, fixed after 1.3.1): the alias is restored when missing."""
    import jax_finufft
    from jax._src.interpreters import batching

    if not hasattr(batching, "not_mapped"):
        setattr(batching, "not_mapped", None)
    return jax_finufft


def finufft_forward(
    x: ArrayLike, locs: ArrayLike, grid_size: Sequence[int], eps: float
) -> jax.Array:
    r"""The NUFFT $y_l = (\prod N)^{-1/2} \sum_n x[n]\, e^{-2\pi i \sum_d p_{l,d}
    (n_d - N_d // 2) / N_d}$ of `x` `[B..., *grid_size]` at `locs` `[L..., D]`:
    `[B..., L...]`, by finufft (type 2) to relative tolerance `eps`.

    `x` may be real (promoted to the complex type of its precision). `locs` (`D` = 1, 2
    or 3) may take any finite value: they are reduced modulo $N$ exactly in their own
    dtype, scaled to finufft's angles in the wider of their and the data's precision, and
    cast to the data's. `eps` is finufft's requested relative tolerance (positive; in
    single precision finufft goes no lower than about 1e-6). Differentiable in `x` and
    `locs` (forward and reverse mode); works under `jit` and `vmap` (over the data, the
    points or both).

    **Bad values:** concrete non-finite `locs` raise a ValueError. A traced non-finite
    point gives NaN at that point (finufft itself returns a wrong finite value or crashes
    on some such points, so the point is replaced by 0 before the call).
    """
    name = "finufft_forward"
    x, locs, grid, eps = _checked(name, x, locs, grid_size, eps)
    _check_trailing(name, x, grid)
    return finufft_forward_unchecked(x, locs, grid, eps)


def finufft_adjoint(
    y: ArrayLike, locs: ArrayLike, grid_size: Sequence[int], eps: float
) -> jax.Array:
    r"""The adjoint of [`finufft_forward`][]: $x[n] = (\prod N)^{-1/2} \sum_l y_l\,
    e^{+2\pi i \sum_d p_{l,d} (n_d - N_d // 2) / N_d}$, `[B..., L...] -> [B..., *grid_size]`,
    by finufft (type 1) to relative tolerance `eps`.

    **Bad values:** as [`finufft_forward`][]; a traced non-finite point makes the whole
    output NaN (it would spread NaN over the grid).
    """
    name = "finufft_adjoint"
    y, locs, grid, eps = _checked(name, y, locs, grid_size, eps)
    _check_trailing(name, y, tuple(locs.shape[:-1]))
    return finufft_adjoint_unchecked(y, locs, grid, eps)


def _checked(
    name: str, data: ArrayLike, locs: ArrayLike, grid_size: Sequence[int], eps: float
) -> tuple[jax.Array, jax.Array, tuple[int, ...], float]:
    """The arguments converted and checked, naming `name` in the errors; an ImportError
    when jax-finufft is missing."""
    if not finufft_available():
        raise ImportError(f"`{name}` needs jax-finufft; install it with `{INSTALL}`.")
    data = as_array(data, f"`{name}` data")
    check_dtype(f"`{name}` data", data)
    locs = as_array(locs, f"`{name}(locs=...)`")
    check_locs(name, locs)
    grid = as_sizes(grid_size, f"`{name}(grid_size=...)`", 1)
    if not 1 <= len(grid) <= 3 or locs.shape[-1] != len(grid):
        raise ValueError(
            f"`{name}`: finufft needs 1 to 3 dimensions and locs of shape [L..., D] with "
            f"D = len(grid_size); got grid_size {grid} and locs of shape {tuple(locs.shape)}."
        )
    eps = as_number(name, "eps", eps, 0.0)
    if eps == 0:
        raise ValueError(f"`{name}`: eps must be positive (a relative tolerance); got 0.")
    return data, locs, grid, eps


@functools.partial(jax.jit, static_argnums=(2, 3))
def finufft_forward_unchecked(
    x: jax.Array, locs: jax.Array, grid: tuple[int, ...], eps: float
) -> jax.Array:
    x = _as_complex(x)
    theta, bad = _angles(locs, grid, x.dtype)
    batch = x.shape[: x.ndim - len(grid)]
    y = _type2(eps, x.reshape((math.prod(batch), *grid)), *theta)
    y = jnp.where(bad[None, :], jnp.nan, y)
    return y.reshape(batch + locs.shape[:-1])


@functools.partial(jax.jit, static_argnums=(2, 3))
def finufft_adjoint_unchecked(
    y: jax.Array, locs: jax.Array, grid: tuple[int, ...], eps: float
) -> jax.Array:
    y = _as_complex(y)
    theta, bad = _angles(locs, grid, y.dtype)
    batch = y.shape[: y.ndim - (locs.ndim - 1)]
    # a NaN value at a bad point (moved to angle 0) makes the whole output NaN: cheaper than
    # a reduction and a pass over the grid
    y = jnp.where(bad[None, :], jnp.nan, y.reshape((math.prod(batch), bad.size)))
    return _type1(grid, eps, y, *theta).reshape(batch + grid)


def _as_complex(x: jax.Array) -> jax.Array:
    """`x` in the complex type of its precision (complex64 for integers and half floats)."""
    with jax.numpy_dtype_promotion("standard"):
        return x.astype(jnp.result_type(x.dtype, jnp.complex64))


def _angles(locs: jax.Array, grid: tuple[int, ...], dtype) -> tuple[list[jax.Array], jax.Array]:
    """finufft's angles $\\theta_d = 2\\pi\\, \\mathrm{rem}(p_d, N_d) / N_d$, `D` arrays `[M]` in
    the real type of `dtype`, and which of the `M` points are not finite `[M]` (their
    angles set to 0). `lax.rem` is exact (in the points' dtype) and leaves $|p| < N$
    unchanged; the product is taken in the wider of the points' and the data's precision.
    Per axis rather than on `[M, D]`: XLA makes one pass over the points, no transpose."""
    real = jnp.finfo(dtype).dtype
    flat = locs.reshape((-1, len(grid)))
    if not jnp.issubdtype(flat.dtype, jnp.floating):
        flat = flat.astype(real)
    wide = max(flat.dtype, real, key=lambda t: jnp.finfo(t).bits)
    reduced = [lax.rem(flat[:, d], jnp.asarray(n, flat.dtype)) for d, n in enumerate(grid)]
    theta = [(r.astype(wide) * (2 * np.pi / n)).astype(real) for r, n in zip(reduced, grid)]
    bad = ~functools.reduce(jnp.logical_and, [jnp.isfinite(t) for t in theta])
    return [jnp.where(bad, 0, t) for t in theta], bad


def _frequency(grid: tuple[int, ...], d: int, ndim: int, factor: complex, dtype) -> jax.Array:
    """`factor` times the mode numbers $n_d - N_d // 2$ of axis `d`, shaped to multiply an
    array `[B, *grid]` of rank `ndim`."""
    shape = [1] * ndim
    shape[ndim - len(grid) + d] = grid[d]
    k = np.arange(grid[d]) - grid[d] // 2
    return jnp.asarray((factor * k).reshape(shape), dtype)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _type2(eps: float, x: jax.Array, *theta: jax.Array) -> jax.Array:
    """$y_{b,m} = (\\prod N)^{-1/2} \\sum_k x_{b,k} e^{-i k \\cdot \\theta_m}$:
    `x` `[B, *N]`, `D` angles `[M]` -> `[B, M]`."""
    y = _jax_finufft().nufft2(x, *theta, iflag=-1, eps=eps)
    # jax-finufft's result does not carry the `shard_map` type of its inputs
    y, *_ = vary_alike(y, x, *theta)
    return y / math.sqrt(math.prod(x.shape[1:]))


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _type1(grid: tuple[int, ...], eps: float, y: jax.Array, *theta: jax.Array) -> jax.Array:
    """$x_{b,k} = (\\prod N)^{-1/2} \\sum_m y_{b,m} e^{+i k \\cdot \\theta_m}$:
    `y` `[B, M]`, `D` angles `[M]` -> `[B, *grid]`."""
    x, *_ = vary_alike(_jax_finufft().nufft1(grid, y, *theta, iflag=1, eps=eps), y, *theta)
    return x / math.sqrt(math.prod(grid))


def _moving(dtheta, dtype) -> list[tuple[int, jax.Array]]:
    """The axes whose angles have a tangent, with the tangent cast to `dtype` `[1, M]`."""
    return [(d, t.astype(dtype)[None, :]) for d, t in enumerate(dtheta) if not _zero(t)]


def _zero(tangent) -> bool:
    return isinstance(tangent, SymbolicZero)


def _type2_jvp(eps, primals, tangents):
    """$dy = T_2(dx) + \\sum_d d\\theta_d \\odot T_2(-i k_d x)$, the transforms of the second
    term in one batched call."""
    (x, *theta), (dx, *dtheta) = primals, tangents
    y = _type2(eps, x, *theta)
    parts = [] if _zero(dx) else [_type2(eps, dx, *theta)]
    moving = _moving(dtheta, y.dtype)
    if moving:
        grid = x.shape[1:]
        spectra = [x * _frequency(grid, d, x.ndim, -1j, x.dtype) for d, _ in moving]
        z = _type2(eps, jnp.concatenate(spectra), *theta).reshape((len(moving), *y.shape))
        parts += [t * zd for (_, t), zd in zip(moving, z)]
    return y, sum(parts[1:], parts[0])


def _type1_jvp(grid, eps, primals, tangents):
    """$dx = T_1(dy) + \\sum_d i k_d \\odot T_1(d\\theta_d \\odot y)$: every transform is
    linear in the tangents, so all run in one batched call."""
    (y, *theta), (dy, *dtheta) = primals, tangents
    x = _type1(grid, eps, y, *theta)
    moving = _moving(dtheta, y.dtype)
    sources = ([] if _zero(dy) else [dy]) + [t * y for _, t in moving]
    out = _type1(grid, eps, jnp.concatenate(sources), *theta).reshape((len(sources), *x.shape))
    first = len(sources) - len(moving)
    parts = list(out[:first]) + [
        o * _frequency(grid, d, x.ndim, 1j, x.dtype) for (d, _), o in zip(moving, out[first:])
    ]
    return x, sum(parts[1:], parts[0])


_type2.defjvp(_type2_jvp, symbolic_zeros=True)
_type1.defjvp(_type1_jvp, symbolic_zeros=True)
