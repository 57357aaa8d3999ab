"""The suite's own compile settings (`tests/conftest.py`): programs lowered are counted
through jax's monitoring event (a renamed event would silently stop the emptying of the
in-memory caches, and the suite would slow down again), and the teardown hook empties the
caches once the count reaches `LOWERINGS_PER_CLEAR`, and only then."""

import os

import conftest
import jax
import jax.numpy as jnp
import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get("JAXLINOPS_TEST_XLA_DEFAULTS") == "1",
    reason="the counter runs only with the persistent cache (not JAXLINOPS_TEST_XLA_DEFAULTS=1)",
)


def test_each_lowered_program_is_counted():
    x = jnp.ones(17)
    before = conftest._lowered_since_clear[0]
    jax.jit(lambda v: jnp.sin(v) * 3.0)(x).block_until_ready()  # one new program
    assert conftest._lowered_since_clear[0] == before + 1


def test_teardown_empties_the_caches_at_the_threshold_only():
    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return jnp.cos(x) + 2.0

    def call_and_tear_down(count: int) -> None:
        f(jnp.ones(5)).block_until_ready()
        conftest._lowered_since_clear[0] = count
        conftest.pytest_runtest_teardown(None, None)

    call_and_tear_down(conftest.LOWERINGS_PER_CLEAR - 1)
    call_and_tear_down(conftest.LOWERINGS_PER_CLEAR)
    assert len(traces) == 1, "emptied below the threshold"
    assert conftest._lowered_since_clear[0] == 0
    f(jnp.ones(5)).block_until_ready()
    assert len(traces) == 2, "not emptied at the threshold"
