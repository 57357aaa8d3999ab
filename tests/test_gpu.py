"""On a GPU (skipped elsewhere; `scripts/gpu_check.sh` runs them there): the gridding
operators run and stay on the device, the Pallas kernels are compiled to Triton (not
interpreted), split operators run on a one-GPU mesh, and CUDA tensors cross the PyTorch
bridge without copies, with autograd.

References: an exact DFT in numpy (the NUFFT), the unsplit operator (split ones), torch's
own FFT and `torch.autograd.gradcheck` (the bridge). Tolerances: the NUFFT's tabulated
error at (oversamp 2, width 6) in complex128, and the rounding of a few float64
operations elsewhere."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

pytestmark = pytest.mark.skipif(jax.default_backend() != "gpu", reason="needs a GPU")
GPU = jax.devices()[0]
ACCURATE = dict(oversamp=2.0, width=6.0)  # relative error ~1e-5 against the exact DFT


def exact_dft(locs, grid):
    """`[L, prod N]`: $(\\prod N)^{-1/2} e^{-2\\pi i \\sum_d p_{l,d} (n_d - N_d//2)/N_d}$."""
    k = np.stack(np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij"), -1)
    phase = np.asarray(locs, np.float64) @ (k.reshape(-1, len(grid)) / np.asarray(grid)).T
    return np.exp(-2j * np.pi * phase) / np.sqrt(np.prod(grid))


def rel_err(got, want):
    got, want = np.ravel(np.asarray(got)), np.ravel(np.asarray(want))
    return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.mark.parametrize("backend", ["jax", "pallas"])
@pytest.mark.parametrize("grid", [(12, 10), (6, 8, 7)], ids=["2d", "3d"])
def test_nufft_on_the_gpu_matches_the_exact_dft(backend, grid):
    locs = np.random.default_rng(0).uniform(-0.5, 0.5, (150, len(grid))) * np.asarray(grid)
    A = jl.NUFFT(locs, grid, "K", backend=backend, **ACCURATE)
    x, y = rand(1, grid), rand(2, (150,))
    E = exact_dft(locs, grid)
    fwd, adj = jax.jit(lambda op, v: op(v))(A, x), jax.jit(lambda op, v: op.H(v))(A, y)
    assert fwd.devices() == {GPU} and adj.devices() == {GPU}
    assert rel_err(fwd, E @ np.ravel(x)) <= 1e-4
    assert rel_err(adj, E.conj().T @ np.asarray(y)) <= 1e-4


def test_pallas_is_compiled_to_triton_on_the_gpu():
    """The Pallas backend lowers to Triton kernels here (the interpreter has none)."""
    locs = np.random.default_rng(3).uniform(-4, 4, (64, 2))
    A = jl.NUFFT(locs, (8, 8), "K", backend="pallas")
    x, y = rand(4, (8, 8), jnp.complex64), rand(5, (64,), jnp.complex64)
    for fn, v in ((lambda op, v: op(v), x), (lambda op, v: op.H(v), y)):
        text = jax.jit(fn).lower(A, v).as_text()
        assert "__gpu$xla.gpu.triton" in text


def test_split_operators_run_on_a_one_gpu_mesh():
    """Coils split over a one-GPU mesh (`shard_map`, tiles in turn): the same values as
    the unsplit operator, also for the normal and a gradient through the adjoint."""
    maps = np.asarray(rand(6, (4, 8, 8)))
    locs = np.random.default_rng(7).uniform(-4, 4, (40, 2))
    nufft = jl.NUFFT(locs, (8, 8), "K", batch_shape="C", backend="pallas", toeplitz=True)
    A = nufft @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()))
    assert B.mesh.devices.size == 1
    x, y = rand(8, (8, 8)), rand(9, (4, 40))
    for got, want in ((B(x), A(x)), (B.H(y), A.H(y)), (B.N(x), A.N(x))):
        assert got.devices() == {GPU}
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * float(jnp.abs(want).max()))

    def loss(op, v):
        return jnp.sum(jnp.abs(op.H(v)) ** 2)

    want = jax.grad(loss, argnums=1)(A, y)
    got = jax.jit(jax.grad(loss, argnums=1))(B, y)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * float(jnp.abs(want).max()))


# --------------------------------------------------------------------------- PyTorch on CUDA
def _cuda_torch():
    """torch and interop, or a skip where torch has no CUDA."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    return torch, pytest.importorskip("interop")


DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "bool",
          "int8", "int32", "int64", "uint8"]  # fmt: skip


@pytest.mark.parametrize("name", DTYPES)
def test_cuda_tensors_are_shared_both_ways(name):
    """torch -> JAX -> torch on the GPU, and a JAX array made there -> torch: one buffer
    each time (pointer equality)."""
    torch, interop = _cuda_torch()
    dtype = getattr(torch, name)
    t = (torch.arange(24, device="cuda") % 7).reshape(6, 4).to(dtype)
    x = interop.to_jax(t)
    assert x.devices() == {GPU} and x.unsafe_buffer_pointer() == t.data_ptr()
    back = interop.to_torch(x)
    assert back.is_cuda and back.data_ptr() == t.data_ptr() and back.dtype == dtype
    assert torch.equal(back, t)
    y = jnp.asarray(np.arange(24).reshape(6, 4) % 7).astype(x.dtype)
    out = interop.to_torch(y)
    assert out.is_cuda and out.data_ptr() == y.unsafe_buffer_pointer()
    assert torch.equal(out, t)


def test_cuda_autograd_through_an_operator():
    """`torch_linop` on CUDA tensors: gradcheck in the input and the parameters."""
    torch, interop = _cuda_torch()
    w, W = rand(3, (4,)), rand(4, (4, 3))
    M = interop.torch_linop(jl.Diagonal(w, "N") @ jl.Dense(W, "N M", "M", "N"))
    names = [name for name, _ in M.named_parameters()]
    params = [p.detach().to("cuda").requires_grad_(True) for p in M.parameters()]
    x = torch.tensor(np.asarray(rand(5, (3,))), device="cuda", requires_grad=True)

    def call(x, *ps):
        return torch.func.functional_call(M, dict(zip(names, ps)), (x,))

    assert call(x, *params).is_cuda
    assert torch.autograd.gradcheck(call, (x, *params))


@pytest.mark.parametrize("batched", [False, True], ids=["operator", "batched"])
def test_torch_linop_returns_to_the_input_device(batched):
    """An operator whose arrays are on the GPU (or batched over the one-GPU mesh), applied
    to a CPU and to a CUDA tensor: each output, and the input's gradient, is on its input's
    device, with the same values; the parameters' gradients come back to the parameters
    (on the GPU)."""
    torch, interop = _cuda_torch()
    maps, w = rand(3, (2, 4, 3)), rand(4, (2, 4, 3))
    A = jl.Diagonal(w, "C N M") @ jl.Dense(maps, "C N M", "N M", "C N M")
    if batched:
        A = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()))
    M = interop.torch_linop(A)
    assert all(p.is_cuda for p in M.parameters())
    outputs = []
    for device in ("cpu", "cuda"):
        x = torch.tensor(np.asarray(rand(5, (4, 3))), device=device, requires_grad=True)
        y = M(x)
        assert y.device.type == device
        y.abs().square().sum().backward()
        assert x.grad is not None and x.grad.device.type == device
        assert all(p.grad is not None and p.grad.is_cuda for p in M.parameters())
        outputs.append((y.detach().cpu(), x.grad.cpu()))
        M.zero_grad()
    for got, want in zip(*outputs):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_cuda_solve_gradients_equal_the_cpu_ones():
    """`torch_solve` on CUDA tensors: the solution stays there, and its gradients w.r.t.
    the data, the matrix and the weight equal those computed on the CPU."""
    torch, interop = _cuda_torch()
    from test_interop_solve import TIGHT, dense_normal, dense_problem

    grads = []
    for device in ("cuda", "cpu"):
        W, lam, y = (
            t.detach().to(device).requires_grad_(True) for t in dense_problem(np.complex128)
        )
        x = interop.torch_solve(dense_normal, y, W, lam, **TIGHT)
        assert x.device.type == device
        x.abs().square().sum().backward()
        grads.append([t.grad.cpu() for t in (W, lam, y)])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
