"""Test configuration: 8 simulated CPU devices, 64-bit types, strict promotion.

This runs at import time, before any JAX computation, as JAX requires.
"""

import jax

jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import helpers  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def getkey():
    """A fresh PRNG key each call, from a fixed seed per test."""
    return helpers.KeyGen(0)


@pytest.fixture
def jax_nufft_backend(monkeypatch):
    """NUFFTs built without a backend use the pure-JAX pipeline (tests that check that
    pipeline itself; `auto` picks finufft where it is installed)."""
    import jaxlinops

    monkeypatch.setattr(jaxlinops.config, "nufft_backend", "jax")
