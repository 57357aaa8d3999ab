"""`interop.to_jax` / `interop.to_torch`: zero-copy (same buffer pointer) for every dtype
both libraries share, the layout pitfalls (copies where the buffer cannot be shared),
aliasing, 64-bit handling. The errors are in the bad-input catalogue,
tests/bad_inputs/interop.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl

torch = pytest.importorskip("torch")
interop = pytest.importorskip("interop")

DTYPES = [
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
    torch.complex128, torch.bool, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint8,
]  # fmt: skip


def ptr(x: jax.Array) -> int:
    return x.unsafe_buffer_pointer()


def sample(dtype, shape=(6, 4)) -> "torch.Tensor":
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex or dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(0, 100, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_is_zero_copy(dtype):
    t = sample(dtype)
    x = interop.to_jax(t)
    assert ptr(x) == t.data_ptr()
    assert x.shape == tuple(t.shape)
    if dtype == torch.bfloat16:  # numpy has no bfloat16: compare in float32
        x, t_np = x.astype(jnp.float32), t.float().numpy()
    else:
        t_np = t.numpy()
    np.testing.assert_array_equal(np.asarray(x), t_np)
    back = interop.to_torch(interop.to_jax(t))
    assert back.data_ptr() == t.data_ptr() and back.dtype == dtype
    assert torch.equal(back, t)


def test_layouts_share_or_copy_as_documented():
    base = torch.randn(8, 8, dtype=torch.float64)  # rows of 64 bytes: slices stay aligned
    # transposed and row-sliced tensors share the buffer
    assert ptr(interop.to_jax(base.T)) == base.data_ptr()
    np.testing.assert_array_equal(interop.to_jax(base.T), base.T.numpy())
    rows = base[2:5]
    assert ptr(interop.to_jax(rows)) == rows.data_ptr()
    # column slices, steps, `.real` and expanded tensors are copied, with the right values
    for t in (base[:, 1:4], base[:, ::2], torch.randn(4, 3, dtype=torch.complex128).real,
              torch.randn(1, 5).expand(3, 5)):  # fmt: skip
        x = interop.to_jax(t)
        assert ptr(x) != t.data_ptr()
        np.testing.assert_array_equal(x, t.numpy())


def test_grad_conjugate_and_negative_bits():
    w = torch.randn(3, 2, dtype=torch.complex128, requires_grad=True)
    np.testing.assert_array_equal(interop.to_jax(w), w.detach().numpy())
    z = torch.randn(5, dtype=torch.complex128)
    np.testing.assert_array_equal(interop.to_jax(z.conj()), np.conj(z.numpy()))
    np.testing.assert_array_equal(interop.to_jax(-z.conj().imag), -np.conj(z.numpy()).imag)


def test_aliasing_is_two_way():
    """Documented hazard: an in-place torch write shows up in the JAX array."""
    t = torch.zeros(4, dtype=torch.float64)
    x = interop.to_jax(t)
    t += 1
    np.testing.assert_array_equal(x, np.ones(4))
    back = interop.to_torch(jnp.arange(4.0))
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.devices(8)
def test_sharded_arrays_are_gathered():
    cpus = jax.devices("cpu")[:4]
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,), devices=cpus)
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x"))
    x = jax.device_put(jnp.arange(8.0), sharding)
    t = interop.to_torch(x)
    assert t.tolist() == list(range(8))


def test_64_bit_needs_x64():
    t = torch.ones(3, dtype=torch.complex128)
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(TypeError, match=r"a torch.complex128 tensor needs 64-bit JAX types"):
            interop.to_jax(t)
        assert interop.to_jax(t.to(torch.complex64)).dtype == jnp.complex64
    finally:
        jax.config.update("jax_enable_x64", True)


# every dtype that both libraries have and DLPack carries (others are refused with a
# TypeError: see tests/bad_inputs/interop.py)
SHARED = (
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64 "
    "complex64 complex128 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "float8_e8m0fnu"
).split()


@pytest.mark.parametrize("name", SHARED)
def test_every_shared_dtype_round_trips_bit_for_bit(name):
    """The same bytes, buffer and dtype name on both sides (64 bytes of a bit pattern
    viewed as the dtype; 0/1 for bool)."""
    raw = torch.arange(64, dtype=torch.uint8)
    if name == "bool":
        raw %= 2
    t = raw.view(getattr(torch, name))
    x = interop.to_jax(t)
    assert str(x.dtype) == name and ptr(x) == t.data_ptr()
    back = interop.to_torch(x)
    assert back.dtype == t.dtype and back.data_ptr() == t.data_ptr()
    assert torch.equal(back.view(torch.uint8), raw)


@pytest.mark.skipif(
    not torch.cuda.is_available() or jax.default_backend() != "gpu", reason="needs CUDA"
)
def test_cuda_round_trip_and_operator():
    """On a GPU machine: CUDA tensors are shared both ways, and an operator runs on them."""
    t = torch.randn(64, 32, dtype=torch.complex64, device="cuda")
    x = interop.to_jax(t)
    assert x.devices() == {jax.devices("gpu")[0]} and ptr(x) == t.data_ptr()
    back = interop.to_torch(x * 2)
    assert back.is_cuda
    torch.testing.assert_close(back, 2 * t)
    A = interop.torch_linop(jl.FFT(1, batch_shape="B"))
    u = torch.randn(64, 32, dtype=torch.complex64, device="cuda", requires_grad=True)
    y = A(u)
    torch.testing.assert_close(y, torch.fft.fft(u, norm="ortho"))
    (y.abs() ** 2).sum().backward()
    torch.testing.assert_close(u.grad, 2 * u.detach(), rtol=1e-4, atol=1e-4)
