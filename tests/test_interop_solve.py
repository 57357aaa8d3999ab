"""`interop.torch_solve` and `interop.torch_function`: a differentiable CG solve (and any
JAX function) on torch tensors, gradients in PyTorch's convention.

References: `torch.autograd.gradcheck` (finite differences of the same call), a dense
solve written in torch (`torch.linalg.solve`, differentiated by torch's own autograd),
and `jax.grad` of the same loss written in JAX (conjugated: PyTorch's gradient of a real
loss w.r.t. a complex tensor is $\\partial L/\\partial\\mathrm{Re} + i\\,\\partial
L/\\partial\\mathrm{Im}$, JAX's its conjugate).

Tolerances: every solve runs to a relative residual `gtol=1e-13` on a system whose
condition number is below ~30, so x is accurate to ~1e-12 relative (CG on these tiny
systems also terminates in at most n steps). gradcheck perturbs by `eps=1e-6`: the
solve's error contributes ~1e-12 / 1e-6 = 1e-6 to a finite difference of an O(1)
output, below gradcheck's `atol=1e-5`; truncation (eps^2) and rounding (1e-16 / eps =
1e-10) are smaller still. Gradients computed in two ways (torch vs a dense reference or
`jax.grad`) differ by the solves' errors, ~1e-12 relative: they are compared at 1e-10."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

torch = pytest.importorskip("torch")
interop = pytest.importorskip("interop")
pytestmark = pytest.mark.usefixtures("on_cpu")  # CPU tensors and operators, on any machine

TIGHT: dict[str, Any] = dict(max_num_iters=200, gtol=1e-13)
GRADCHECK = dict(eps=1e-6, atol=1e-5, rtol=1e-3)


def tensor(seed, shape, dtype: Any = np.complex128, requires_grad=True, scale=1.0):
    t = torch.tensor(np.asarray(rand(seed, shape, dtype)) * scale)
    return t.requires_grad_(requires_grad)


def assert_rel_close(got, want, rel):
    """max |got - want| <= rel max |want| (torch tensors)."""
    got, want = got.detach(), want.detach()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    err, scale = (got - want).abs().max().item(), want.abs().max().item()
    assert err <= rel * scale, f"max error {err:.3g} at scale {scale:.3g}"


# A dense normal: N = W^H W + lam I on (M), W: (K, M) = (5, 3); sigma(W) ~ 1, lam ~ 0.5


def dense_normal(W, lam):
    N = jl.Dense(W, "K M", "M", "K").N
    return N + lam * jl.Identity("M", N.oshape)


def dense_reference(W, lam, y):
    """The same solve in torch: N built densely, `torch.linalg.solve`."""
    N = W.conj().T @ W + lam * torch.eye(W.shape[1], dtype=W.dtype)
    return torch.linalg.solve(N, y)


def dense_problem(dtype):
    W = tensor(1, (5, 3), dtype, scale=0.5)
    y = tensor(2, (3,), dtype)
    lam = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    return W, lam, y


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
def test_gradcheck_dense(dtype):
    W, lam, y = dense_problem(dtype)

    def solve(y, W, lam):
        return interop.torch_solve(dense_normal, y, W, lam, **TIGHT)

    assert torch.autograd.gradcheck(solve, (y, W, lam), **GRADCHECK)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["real", "complex"])
def test_gradients_equal_a_torch_dense_solve(dtype):
    """Torch's own autograd through `torch.linalg.solve` is the reference: the values and
    the gradients of a real loss w.r.t. y, W (complex: the conjugation convention) and the
    real weight lam."""
    W, lam, y = dense_problem(dtype)
    target = tensor(3, (3,), dtype, requires_grad=False)

    def grads(solve):
        for t in (W, lam, y):
            t.grad = None
        x = solve()
        (x - target).abs().square().sum().backward()
        return x.detach(), W.grad, lam.grad, y.grad

    got = grads(lambda: interop.torch_solve(dense_normal, y, W, lam, **TIGHT))
    want = grads(lambda: dense_reference(W, lam, y))
    for g, w in zip(got, want):
        assert_rel_close(g, w, 1e-10)


# Non-Cartesian SENSE: x solves (A^H D A + lam I) x = A^H D b, A = NUFFT(locs) @ maps on a
# 6 x 6 grid with 10 points and 2 coils


GRID = (6, 6)


def nufft_sense(locs, maps, dcf):
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.NUFFT(locs, GRID, "R", batch_shape="C", oversamp=2.0, width=6)
    return F @ S, jl.Diagonal(dcf, ("...", "R"))


def nufft_normal(locs, maps, dcf, lam):
    A, D = nufft_sense(locs, maps, dcf)
    return A.normal(D) + lam * jl.Identity("Nx Ny", A.N.oshape)


@pytest.fixture(scope="module")
def nufft():
    """locs (R, 2) in [-2.5, 2.5), maps (C, Nx, Ny), dcf (R) in [1, 2], lam, y (Nx, Ny)."""
    locs = tensor(10, (10, 2), np.float64, scale=2.5)
    maps = tensor(11, (2, *GRID), np.complex128, scale=0.5)
    dcf = (1.0 + tensor(12, (10,), np.float64, requires_grad=False).abs()).requires_grad_()
    lam = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    y = tensor(13, GRID, np.complex128)
    return locs, maps, dcf, lam, y


def test_gradcheck_nufft_sense_with_trajectory(nufft):
    locs, maps, dcf, lam, y = nufft

    def solve(y, locs, maps, dcf, lam):
        return interop.torch_solve(nufft_normal, y, locs, maps, dcf, lam, **TIGHT)

    # fast mode: one random projection of the Jacobian (the full one costs ~250 solves)
    assert torch.autograd.gradcheck(solve, (y, locs, maps, dcf, lam), fast_mode=True, **GRADCHECK)


def test_torch_gradient_equals_jax_gradient(nufft):
    """The same loss in JAX, `jax.grad`: torch's gradients are its conjugates (real ones
    equal)."""
    locs, maps, dcf, lam, y = nufft
    target = tensor(14, GRID, np.complex128, requires_grad=False)
    tensors = (y, locs, maps, dcf, lam)
    for t in tensors:
        t.grad = None
    x = interop.torch_solve(nufft_normal, y, locs, maps, dcf, lam, **TIGHT)
    (x - target).abs().square().sum().backward()

    def loss(y, locs, maps, dcf, lam):
        x = jl.alg.conjugate_gradients(nufft_normal(locs, maps, dcf, lam), y, **TIGHT)
        return jnp.sum(jnp.abs(x - jnp.asarray(target.numpy())) ** 2)

    arrays = [jnp.asarray(t.detach().numpy()) for t in tensors]
    want = jax.grad(loss, argnums=tuple(range(5)))(*arrays)
    for t, w in zip(tensors, want):
        assert_rel_close(t.grad, torch.tensor(np.conj(np.asarray(w))), 1e-10)


def test_adam_learns_a_regularisation_weight():
    """Three Adam steps on log(lam) of a Cartesian CG-SENSE reconstruction from noisy
    undersampled data: the loss against the truth decreases. The rhs A^H b is built with
    `torch_linop`, so the solve sits between torch operations as in a network."""
    g = torch.Generator().manual_seed(0)
    truth = torch.randn(8, 8, dtype=torch.complex128, generator=g)
    maps = torch.randn(3, 8, 8, dtype=torch.complex128, generator=g)
    mask = (torch.rand(8, 8, generator=g) < 0.5).to(torch.float64)
    S = jl.Dense(np.asarray(maps), "C Nx Ny", "Nx Ny", "C Nx Ny")
    A = jl.Diagonal(np.asarray(mask), "C Kx Ky") @ jl.FFT(2, batch_shape="C", centered=True) @ S
    b = interop.torch_linop(A)(truth)
    b = b + 0.3 * torch.randn(b.shape, dtype=b.dtype, generator=g) * mask
    y = interop.torch_linop(A).H(b).detach()

    def normal(maps, mask, lam):
        S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
        F = jl.Diagonal(mask, "C Kx Ky") @ jl.FFT(2, batch_shape="C", centered=True) @ S
        return F.N + lam * jl.Identity("Nx Ny", F.N.oshape)

    log_lam = torch.nn.Parameter(torch.tensor(-3.0, dtype=torch.float64))
    optimizer = torch.optim.Adam([log_lam], lr=0.3)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        x = interop.torch_solve(normal, y, maps, mask, log_lam.exp(), max_num_iters=50)
        loss = (x - truth).abs().square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert log_lam.item() > -3.0 and losses[-1] < losses[0], losses


def test_outputs_and_gradients_share_buffers_with_jax(monkeypatch):
    """Tensors cross without copies: each input's JAX array is its buffer, and the solution
    and the gradients are the buffers of the JAX results (recorded as they cross; torch
    may then copy a gradient when it stores it as a leaf's `.grad`)."""
    import interop._function as module

    crossed = []

    def record(convert):
        def wrapped(value):
            out = convert(value)
            crossed.append((value, out))
            return out

        return wrapped

    monkeypatch.setattr(module, "to_jax", record(interop.to_jax))
    monkeypatch.setattr(module, "to_torch", record(interop.to_torch))
    W, lam, y = dense_problem(np.complex128)
    x = interop.torch_solve(dense_normal, y, W, lam, **TIGHT)
    x.abs().sum().backward()
    into_jax = [(t, a) for t, a in crossed if isinstance(t, torch.Tensor)]
    into_torch = [(a, t) for a, t in crossed if isinstance(a, jax.Array)]
    assert len(into_jax) == 4  # y, W, lam, then the gradient of x
    assert all(a.unsafe_buffer_pointer() == t.data_ptr() for t, a in into_jax)
    assert len(into_torch) == 4  # x, then the gradients of y, W and lam
    assert all(a.unsafe_buffer_pointer() == t.data_ptr() for a, t in into_torch)
    assert into_torch[0][1].data_ptr() == x.data_ptr()


def test_float32_matches_the_float64_reference():
    """complex64 maps and data, a float32 weight: the result and the gradients keep the
    dtypes and agree with the float64 dense reference to ~30 (condition) x 1e-6 (the
    tolerance, above float32's eps) x 30 (accumulated rounding)."""
    W, lam, y = dense_problem(np.complex128)
    low = [t.detach().to(dtype).requires_grad_() for t, dtype in
           zip((W, lam, y), (torch.complex64, torch.float32, torch.complex64))]  # fmt: skip
    x = interop.torch_solve(dense_normal, low[2], low[0], low[1], max_num_iters=50, gtol=1e-6)
    x.abs().square().sum().backward()
    x_ref = dense_reference(W, lam, y)
    x_ref.abs().square().sum().backward()
    assert x.dtype == torch.complex64
    assert_rel_close(x.to(torch.complex128), x_ref, 1e-3)
    for got, want in zip(low, (W, lam, y)):
        assert got.grad.dtype == got.dtype
        assert_rel_close(got.grad.to(want.dtype), want.grad, 1e-3)


def test_return_info_unrolled_and_no_grad():
    """`return_info=True` gives a `CGResult` of tensors (integer fields carry no gradient);
    `adjoint=UnrolledAdjoint()` passes through (three iterations of a 3 x 3 system: exact);
    under `torch.no_grad` the result has no graph."""
    W, lam, y = dense_problem(np.float64)
    result: Any = interop.torch_solve(dense_normal, y, W, lam, return_info=True, **TIGHT)
    assert isinstance(result, jl.alg.CGResult)
    info: Any = result  # a CGResult of tensors (pyright reads its fields as jax arrays)
    x, num_iters, converged = info.x, info.num_iters, info.converged
    assert bool(converged) and num_iters.dtype == torch.int32 and not num_iters.requires_grad
    x.sum().backward()
    implicit = W.grad.clone()
    W.grad = None
    unrolled = dict(max_num_iters=3, adjoint=jl.alg.UnrolledAdjoint())
    interop.torch_solve(dense_normal, y, W, lam, **unrolled).sum().backward()
    assert_rel_close(W.grad, implicit, 1e-10)
    with torch.no_grad():
        assert interop.torch_solve(dense_normal, y, W, lam, **TIGHT).grad_fn is None


def test_torch_function_gradients_of_every_order():
    """A JAX function with a static argument and a pytree output (a real loss, a complex
    array, a bool mask): gradcheck and gradgradcheck of its differentiable outputs, and the
    gradient of the real loss equals torch's own on the same formula."""

    def fn(w, z, power):
        return {"loss": jnp.sum(w * jnp.abs(z) ** power), "z": w.astype(z.dtype) * z, "mask": w > 0}

    f = interop.torch_function(fn)
    w = tensor(20, (4,), np.float64)
    z = tensor(21, (4,), np.complex128)
    out = f(w, z, 3)
    assert out["mask"].dtype == torch.bool and not out["mask"].requires_grad
    assert torch.autograd.gradcheck(lambda w, z: (f(w, z, 3)["loss"], f(w, z, 3)["z"]), (w, z))
    assert torch.autograd.gradgradcheck(lambda w, z: f(w, z, 3)["loss"], (w, z))
    out["loss"].backward()
    got = (w.grad, z.grad)
    w.grad = z.grad = None
    (w * z.abs() ** 3).sum().backward()
    for g, want in zip(got, (w.grad, z.grad)):
        assert_rel_close(g, want, 1e-13)
