"""ToDevice on the simulated CPU devices: placement, adjoint, normal, jit and grad."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl

CPUS = jax.devices("cpu")


def test_forward_and_adjoint_placement():
    A = jl.ToDevice(CPUS[0], CPUS[1], "NxNy")
    x = jax.device_put(jnp.arange(12.0).reshape(3, 4), CPUS[0])
    y = A(x)
    assert y.devices() == {CPUS[1]}
    np.testing.assert_array_equal(y, x)
    back = A.H(y)
    assert back.devices() == {CPUS[0]}
    np.testing.assert_array_equal(back, x)


def test_adjoint_swaps_devices():
    A = jl.ToDevice(CPUS[2], CPUS[3])
    assert A.H == jl.ToDevice(CPUS[3], CPUS[2]) and eqx.tree_equal(A.H.H, A)
    assert A.ishape == A.oshape == ("...",)


def test_none_is_the_default_device():
    x = jax.device_put(jnp.ones(3), CPUS[3])
    A = jl.ToDevice(CPUS[3], None)
    assert A(x).devices() == {jax.devices()[0]}
    with jax.default_device(CPUS[5]):
        assert A(x).devices() == {CPUS[5]}
    with jax.default_device("cpu"):
        assert A(x).devices() == {CPUS[0]}


def test_normal_is_identity():
    A = jl.ToDevice(CPUS[0], CPUS[1], "CN")
    assert A.N == jl.Identity("CN")


def test_works_under_jit_and_grad():
    A = jl.ToDevice(CPUS[0], CPUS[1])
    x = jnp.arange(6.0)
    np.testing.assert_array_equal(jax.jit(lambda B, v: B.H(B(v)))(A, x), x)
    np.testing.assert_array_equal(jax.grad(lambda v: jnp.sum(A(v) ** 2))(x), 2 * x)


def test_round_trip_around_an_operator():
    W = jax.random.normal(jax.random.key(0), (5, 4))
    D = jl.Dense(jax.device_put(W, CPUS[1]), "MN", "N", "M")
    A = jl.ToDevice(CPUS[1], CPUS[0], "M") @ D @ jl.ToDevice(CPUS[0], CPUS[1], "N")
    x = jax.device_put(jnp.arange(4.0), CPUS[0])
    y = A(x)
    assert y.devices() == {CPUS[0]}
    np.testing.assert_allclose(y, W @ jnp.arange(4.0), rtol=1e-5)


@pytest.mark.parametrize("arg", ["idevice", "odevice"])
def test_devices_must_be_jax_devices(arg):
    kwargs = dict(idevice=CPUS[0], odevice=CPUS[1])
    kwargs[arg] = "cpu"
    with pytest.raises(
        TypeError, match=rf"`ToDevice\({arg}=...\)` expects a jax.Device .* got str"
    ):
        jl.ToDevice(**kwargs)


def test_to_moves_every_array_to_the_device():
    cpus = jax.devices("cpu")
    W = jax.device_put(np.arange(6.0).reshape(3, 2), cpus[1])
    A = jl.Dense(W, "M N", "N", "M")
    for device in ("cpu:0", cpus[0], jl.linops.DeviceSpec(cpus[0])):
        B = A.to(device)
        assert B.weight.devices() == {cpus[0]}
        np.testing.assert_array_equal(B.weight, np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match=r"`Dense.to\(device\)`: JAX has no 'tpu' device"):
        A.to("tpu")
