"""Shared test utilities: the operator registry, random data, dense references."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops
from jaxlinops import NamedLinop

PACKAGE = Path(jaxlinops.__file__).resolve().parent

DTYPES = (jnp.float32, jnp.float64, jnp.complex64, jnp.complex128)

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
    """Callable producing a new integer seed each time, from a fixed start.

    Test data comes from numpy generators (no JAX compilation per shape)."""

    def __init__(self, seed: int):
        self.seq = np.random.SeedSequence(seed)

    def __call__(self) -> int:
        (child,) = self.seq.spawn(1)
        return int(child.generate_state(1)[0])


def rand(seed: int, shape, dtype=jnp.complex128) -> jax.Array:
    """Standard normal entries; complex dtypes get independent real and imaginary parts."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(tuple(shape))
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(tuple(shape))
    return jax.device_put(values.astype(dtype))  # jnp.asarray would compile a copy per shape


def real_dtype(dtype):
    return jnp.finfo(jnp.dtype(dtype)).dtype


def rtol(dtype) -> float:
    """Tolerance for comparing results, relative to the reference's largest entry: 1e-4
    (840 eps) in single and 1e-10 (4.5e5 eps) in double precision. Far from machine
    precision: over the contract's ~2,400 comparisons the largest error used 1% of it in
    float32 and 2e-5 of it in float64/complex128 (a NUFFT's gradient against its dense
    matrix, the worst-conditioned comparison)."""
    return 1e-4 if jnp.finfo(jnp.dtype(dtype)).bits <= 32 else 1e-10


def assert_close(got, want, dtype, factor: float = 1.0):
    """Max-norm comparison relative to the reference's largest entry."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
    err = float(np.max(np.abs(got - want), initial=0.0))
    assert err <= factor * rtol(dtype) * scale, f"max error {err:.3e} vs scale {scale:.3e}"


def operators_in(op) -> list:
    """`op` and every operator inside it (children of containers, chains, adjoints...)."""
    found = [op]
    for child in jax.tree.leaves(op, is_leaf=lambda o: o is not op and isinstance(o, NamedLinop)):
        if isinstance(child, NamedLinop):
            found += operators_in(child)
    return found


def assert_refusal(error: BaseException, op, dim: str, what: str = "split") -> None:
    """`error` is a clear refusal to split `op` along `dim`: a ValueError raised from
    jaxlinops' own code (not from inside JAX), whose message names the dim (quoted) and
    the operator (its name or that of an operator inside it)."""
    message = f"[{what} along {dim}] {type(error).__name__}: {error}"
    assert isinstance(error, ValueError), f"not a ValueError: {message}"
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    origin = Path(tb.tb_frame.f_code.co_filename if tb is not None else "?").resolve()
    assert origin.is_relative_to(PACKAGE), f"raised from {origin}: {message}"
    assert f"'{dim}'" in str(error), f"the refusal does not name the dim: {message}"
    names = {n for o in operators_in(op) for n in (o.name, type(o).__name__)}
    assert any(n in str(error) for n in names), f"the refusal names no operator: {message}"


def grid_split(A, devices: int, dim: str = "Nx"):
    """`A` split along its grid dim `dim` into one slab per device over the first `devices`
    devices (`create_batched_linop`, which must build a `GridSplitLinop`)."""
    n = A.size(dim)
    spec = jaxlinops.BatchSpec({dim: -(-n // devices)}, device_matrix=jax.devices()[:devices])
    B = jaxlinops.create_batched_linop(A, spec)
    assert isinstance(B, jaxlinops.sharding.GridSplitLinop), type(B)
    return B
