"""Test configuration: 8 simulated CPU devices, 64-bit types, strict promotion.

This runs at import time, before any JAX computation, as JAX requires.
`JAXLINOPS_TEST_CPU_DEVICES=1` simulates one device instead: what the tests meet on a
one-GPU machine (`scripts/gpu_check.sh`), where `jax.devices()` is that GPU alone.
"""

import os

import jax

jax.config.update("jax_num_cpu_devices", int(os.environ.get("JAXLINOPS_TEST_CPU_DEVICES", "8")))
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import helpers  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "devices(n): needs n devices; skipped with fewer (a one-GPU machine)"
    )


def pytest_collection_modifyitems(config, items):
    """Tests marked `devices(n)` skip where JAX has fewer than `n` devices."""
    have = len(jax.devices())
    for item in items:
        mark = item.get_closest_marker("devices")
        if mark is not None and have < mark.args[0]:
            item.add_marker(pytest.mark.skip(reason=f"needs {mark.args[0]} devices, {have} here"))


@pytest.fixture
def getkey():
    """A fresh PRNG key each call, from a fixed seed per test."""
    return helpers.KeyGen(0)


@pytest.fixture
def on_cpu():
    """JAX arrays made without a device go to the CPU, also on a GPU machine: operators
    built from numpy arrays live where the torch tests' CPU tensors are."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield
