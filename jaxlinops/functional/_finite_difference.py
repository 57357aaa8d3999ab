r"""Forward differences along one axis, their adjoint and their normal (a 3-point
stencil), with periodic, zero or Neumann boundaries: the kernels of
`jaxlinops.FiniteDifference`."""

import jax
import jax.numpy as jnp


def difference(x: jax.Array, axis: int, boundary: str) -> jax.Array:
    r"""$(Dx)[n] = x[n + 1] - x[n]$ along `axis`; the last entry is $x[0] - x[N-1]$
    (`"periodic"`), $-x[N-1]$ (`"zero"`) or $0$ (`"neumann"`)."""
    d = jnp.roll(x, -1, axis) - x
    if boundary == "periodic":
        return d
    return jnp.where(_at(x, axis, -1), 0 if boundary == "neumann" else -x, d)


def difference_adjoint(y: jax.Array, axis: int, boundary: str) -> jax.Array:
    r"""$(D^H y)[n] = y[n - 1] - y[n]$ along `axis`, with $y[-1] = y[N-1]$ (`"periodic"`)
    or $0$; with `"neumann"`, $y[N-1]$ is taken as 0 (it multiplies nothing)."""
    if boundary == "neumann":
        y = jnp.where(_at(y, axis, -1), 0, y)
    before = jnp.roll(y, 1, axis)
    return (before if boundary == "periodic" else jnp.where(_at(y, axis, 0), 0, before)) - y


def second_difference(x: jax.Array, axis: int, boundary: str) -> jax.Array:
    r"""$(D^H D x)[n] = 2x[n] - x[n-1] - x[n+1]$ along `axis`, a tridiagonal stencil:
    periodic, or with $x$ zero outside and the diagonal 1 instead of 2 at $n = 0$
    (`"zero"`, `"neumann"`) and at $n = N-1$ (`"neumann"`)."""
    before, after = jnp.roll(x, 1, axis), jnp.roll(x, -1, axis)
    if boundary == "periodic":
        return 2 * x - before - after
    before = jnp.where(_at(x, axis, 0), x, before)
    after = jnp.where(_at(x, axis, -1), x if boundary == "neumann" else 0, after)
    return 2 * x - before - after


def _at(x: jax.Array, axis: int, n: int) -> jax.Array:
    """True at entry `n` (negative: from the end) along `axis`, as an array like `x`."""
    index = jax.lax.broadcasted_iota(jnp.int32, x.shape, axis % x.ndim)
    return index == n % x.shape[axis]
