"""Shared test utilities: the operator registry, random data, dense references."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

DTYPES = (jnp.float32, jnp.complex64, jnp.complex128)

# name -> factory(getkey, dtype) -> (op, input_shape)
OPERATOR_FACTORIES: dict[str, Callable] = {}


def operator_factory(fn: Callable) -> Callable:
    """Register `make_<name>(getkey, dtype) -> (op, input_shape)` for the contract tests.

    Keep input sizes small (at most ~100 entries): the contract tests build dense
    matrices column by column.
    """
    OPERATOR_FACTORIES[fn.__name__.removeprefix("make_")] = fn
    return fn


class KeyGen:
    """Callable producing a new PRNG key each time, from a fixed seed."""

    def __init__(self, seed: int):
        self.key = jax.random.key(seed)

    def __call__(self):
        self.key, sub = jax.random.split(self.key)
        return sub


def rand(key, shape, dtype=jnp.complex128):
    """Standard normal entries; complex dtypes get independent real and imaginary parts."""
    dtype = jnp.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        k1, k2 = jax.random.split(key)
        real = jnp.finfo(dtype).dtype
        return jax.lax.complex(
            jax.random.normal(k1, shape, real), jax.random.normal(k2, shape, real)
        )
    return jax.random.normal(key, shape, dtype)


def real_dtype(dtype):
    return jnp.finfo(jnp.dtype(dtype)).dtype


def rtol(dtype) -> float:
    """Tolerance for comparing results: single precision vs double precision."""
    return 1e-4 if jnp.finfo(jnp.dtype(dtype)).bits <= 32 else 1e-10


def assert_close(got, want, dtype, factor: float = 1.0):
    """Max-norm comparison relative to the reference's largest entry."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
    err = float(np.max(np.abs(got - want), initial=0.0))
    assert err <= factor * rtol(dtype) * scale, f"max error {err:.3e} vs scale {scale:.3e}"


def dense_matrix(op, input_shape, dtype) -> np.ndarray:
    """The matrix of `op`, built column by column from unit inputs (numpy, complex128)."""
    n = int(np.prod(input_shape))
    apply = jax.jit(lambda x: op(x))
    cols = []
    for j in range(n):
        e = np.zeros(n, dtype=np.dtype(dtype))
        e[j] = 1
        cols.append(np.asarray(apply(jnp.asarray(e.reshape(input_shape)))).ravel())
    return np.stack(cols, axis=1).astype(np.complex128)
