"""`interop.torch_linop`: torch tensors in and out; gradients of every order in PyTorch's
convention, checked with `torch.autograd.gradcheck`/`gradgradcheck` and against the same
operators written with torch ops (the references); a torch optimizer learning a Diagonal's
weights; batched operators.

Values are compared in the max-norm relative to the reference's scale, at 1e3 eps of the
dtype: each output is a handful of rounded operations (an FFT of 20 points, sums of 3 to
6 terms) whose kernels differ between CPUs, never bit for bit."""

import jax
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

torch = pytest.importorskip("torch")
interop = pytest.importorskip("interop")
pytestmark = pytest.mark.usefixtures("on_cpu")  # CPU tensors and operators, on any machine


def assert_close(got, want, eps=np.finfo(np.float64).eps):
    """max |got - want| <= 1e3 eps max |want| (both torch tensors)."""
    got, want = got.detach().cpu(), want.detach().cpu()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    err, scale = (got - want).abs().max().item(), want.abs().max().item()
    assert err <= 1e3 * eps * scale, f"max error {err:.3g} at scale {scale:.3g}"


def tensor(seed, shape, dtype=np.complex128, requires_grad=False):
    return torch.tensor(np.asarray(rand(seed, shape, dtype)), requires_grad=requires_grad)


def by_shape(M) -> dict:
    """The module's parameters by shape."""
    return {tuple(p.shape): p for p in M.parameters()}


def functional(M):
    """`M` as a function of its input and of its parameters, all explicit (so `gradcheck`
    and `gradgradcheck` perturb the parameters too)."""
    names = [name for name, _ in M.named_parameters()]
    return lambda x, *ps: torch.func.functional_call(M, dict(zip(names, ps)), (x,))


# Cartesian SENSE: Mask @ centered FFT @ coil maps, (Nx, Ny) = (4, 5) -> (C, Kx, Ky)


def sense(seed=0):
    """The jaxlinops operator and its arrays as torch tensors (maps, mask)."""
    maps = np.asarray(rand(seed, (3, 4, 5)))
    mask = (np.random.default_rng(seed).random((4, 5)) < 0.7).astype(np.float64)
    fft = jl.FFT(2, batch_shape="C", centered=True)
    A = jl.Diagonal(mask, "C Kx Ky") @ fft @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    return A, torch.tensor(maps), torch.tensor(mask)


def centered(fft, z):
    """A centered orthonormal 2-D FFT (or inverse) over the last two axes."""
    return torch.fft.fftshift(fft(torch.fft.ifftshift(z, dim=(-2, -1)), norm="ortho"), (-2, -1))


def sense_torch(maps, mask, x):
    return mask * centered(torch.fft.fft2, maps * x)


def sense_torch_adjoint(maps, mask, y):
    return (maps.conj() * centered(torch.fft.ifft2, mask * y)).sum(0)


# Diagonal @ Dense: y = w * (W x), (M) = (3) -> (N) = (4)


def chain(dtype):
    """The jaxlinops operator and a reference that takes the module's parameters."""
    w, W = rand(3, (4,), dtype), rand(4, (4, 3), dtype)
    A = jl.Diagonal(w, "N") @ jl.Dense(W, "N M", "M", "N")
    return A, lambda params, x: params[(4,)] * (params[(4, 3)] @ x)


def test_forward_adjoint_normal_match_torch():
    A, maps, mask = sense()
    M = interop.torch_linop(A)
    x, y = tensor(1, (4, 5)), tensor(2, (3, 4, 5))
    assert_close(M(x), sense_torch(maps, mask, x))
    assert_close(M.H(y), sense_torch_adjoint(maps, mask, y))
    assert_close(M.N(x), sense_torch_adjoint(maps, mask, sense_torch(maps, mask, x)))
    # the parameters are the operator's floating-point arrays: maps and mask weight
    assert sorted(by_shape(M)) == [(3, 4, 5), (4, 5)]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["float64", "complex128"])
def test_gradcheck_and_gradgradcheck(dtype):
    """First and second derivatives in the input and the parameters, against finite
    differences; the second with the parameters trainable (a recorded backward) and with
    them frozen (the adjoint)."""
    A, _ = chain(dtype)
    M = interop.torch_linop(A)
    x = tensor(5, (3,), dtype, requires_grad=True)
    assert torch.autograd.gradcheck(M, (x,))
    assert torch.autograd.gradcheck(M.H, (tensor(6, (4,), dtype, requires_grad=True),))
    params = tuple(p.detach().clone().requires_grad_(True) for p in M.parameters())
    assert torch.autograd.gradcheck(functional(M), (x, *params))
    assert torch.autograd.gradgradcheck(functional(M), (x, *params))
    assert torch.autograd.gradgradcheck(functional(M.N), (x, *params))
    for p in M.parameters():
        p.requires_grad_(False)
    assert torch.autograd.gradgradcheck(M, (x,))


def unrolled(apply, x0, y, lr=0.1):
    """The loss after one gradient step on $|A x - y|^2$ from `x0`: its gradient in A's
    parameters needs the mixed second derivative (`create_graph=True`)."""
    (g,) = torch.autograd.grad(((apply(x0) - y).abs() ** 2).sum(), x0, create_graph=True)
    return ((apply(x0 - lr * g) - y).abs() ** 2).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["float64", "complex128"])
def test_unrolled_step_matches_torch_to_third_order(dtype):
    """Meta-gradients through an unrolled gradient step (second order) and the gradient of
    their squared norm (third order), with trainable parameters, against the operator
    written in torch."""
    A, reference = chain(dtype)
    M = interop.torch_linop(A)
    ref = {k: p.detach().clone().requires_grad_(True) for k, p in by_shape(M).items()}
    x0, y = tensor(7, (3,), dtype, requires_grad=True), tensor(8, (4,), dtype)
    runs = [(M, list(by_shape(M).values())), (lambda x: reference(ref, x), list(ref.values()))]
    metas = [torch.autograd.grad(unrolled(f, x0, y), ps, create_graph=True) for f, ps in runs]
    for got, want in zip(*metas):
        assert_close(got, want)
    for meta in metas:
        sum((g.abs() ** 2).sum() for g in meta).backward()
    for got, want in zip(*(ps for _, ps in runs)):
        assert_close(got.grad, want.grad)


def test_gradients_match_torch():
    """A non-holomorphic loss through M and through the torch reference: input and
    parameter gradients, for a complex and a real input (whose gradient is real), with
    the parameters trainable (`jax.vjp`) and frozen (the adjoint)."""
    A, maps, mask = sense()

    def loss(y):
        return (y.abs() ** 2).sum() + y.real.sum()

    for frozen in (False, True):
        M = interop.torch_linop(A)
        for p in M.parameters():
            p.requires_grad_(not frozen)
        for x in (tensor(7, (4, 5)), tensor(8, (4, 5), np.float64)):
            x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
            ref = {k: p.detach().clone().requires_grad_(not frozen)
                   for k, p in by_shape(M).items()}  # fmt: skip
            loss(M(x1)).backward()
            loss(sense_torch(ref[(3, 4, 5)], ref[(4, 5)], x2)).backward()
            assert_close(x1.grad, x2.grad)
            for k, p in by_shape(M).items():
                assert (p.grad is None) == frozen
                if not frozen:
                    assert_close(p.grad, ref[k].grad)
                    p.grad = None


def test_real_input_with_frozen_parameters_is_twice_differentiable():
    """The input gradient of a real input to a complex operator, with the parameters
    frozen, is the real part of $A^H g$; its own backward applies $A$."""
    A, _, _ = sense()
    M = interop.torch_linop(A)
    for p in M.parameters():
        p.requires_grad_(False)
    assert torch.autograd.gradgradcheck(M, (tensor(9, (4, 5), np.float64, requires_grad=True),))


@pytest.mark.parametrize(
    ("real", "cplx"),
    [(np.float32, np.complex64), (np.float64, np.complex128)],
    ids=["float32", "float64"],
)
def test_gradient_descent_learns_a_diagonal_like_pure_torch(real, cplx):
    """Fit the weights w of y = FFT(w * x) to data made with weights w*, by gradient
    descent through M and through the same operator in torch. The loss is
    $\\sum_n h_n (w_n - w^*_n)^2 + c$ with $h_n = \\sum_b |x_{bn}|^2$; with step
    $1 / (h_{max} + h_{min})$ both runs contract to w* by at least
    $q = (\\kappa - 1) / (\\kappa + 1)$ per step ($\\kappa = h_{max}/h_{min}$), so rounding
    does not accumulate: after 100 steps ($q^{100} < 10^{-22}$) both are at w* up to
    the rounding of the gradient, a few eps of the dtype relative to w*."""
    rng = np.random.default_rng(8)
    magnitude = rng.uniform(0.5, 1.0, (6, 8))  # kappa <= 4, q <= 0.6
    x = torch.tensor((magnitude * np.exp(2j * np.pi * rng.random((6, 8)))).astype(cplx))
    w_true = torch.tensor(rng.uniform(0.5, 1.5, 8).astype(real))
    target = torch.fft.fft(w_true * x, norm="ortho")
    h = (x.abs() ** 2).sum(0)
    lr = 1 / (h.max() + h.min()).item()
    M = interop.torch_linop(jl.FFT(1, batch_shape="B") @ jl.Diagonal(np.ones(8, real), "B Nx"))
    w = torch.ones(8, dtype=w_true.dtype, requires_grad=True)

    def reference(v):
        return torch.fft.fft(w * v, norm="ortho")

    for params, forward in ((M.parameters(), M), ([w], reference)):
        opt = torch.optim.SGD(params, lr=lr)
        for _ in range(100):
            opt.zero_grad()
            ((forward(x) - target).abs() ** 2).sum().backward()
            opt.step()
    (learned,) = M.parameters()
    eps = np.finfo(real).eps
    assert_close(w, w_true, eps)
    assert_close(learned, w_true, eps)


def test_batched_operator():
    """A batched operator (coils over 3 devices): forward, input gradient and a
    meta-gradient through one unrolled step, against the torch reference. Its parameters
    are the tiles' arrays, stacked: maps (3, 1, 4, 5) and mask (1, 4, 5)."""
    A, maps, mask = sense()
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices("cpu")[:3])
    M = interop.torch_linop(jl.create_batched_linop(A, spec))
    x = tensor(9, (4, 5), requires_grad=True)
    y = M(x)
    assert_close(y, sense_torch(maps, mask, x))
    (y.abs() ** 2).sum().backward()  # d/dx* |Ax|^2 = 2 A^H A x
    assert_close(x.grad, 2 * sense_torch_adjoint(maps, mask, sense_torch(maps, mask, x)))
    ref = {k: p.detach().clone().requires_grad_(True) for k, p in by_shape(M).items()}
    target = tensor(10, (3, 4, 5))
    M.zero_grad()
    unrolled(M, x, target).backward()
    maps_tiles, mask_tiles = ref[(3, 1, 4, 5)], ref[(1, 4, 5)]
    unrolled(lambda v: sense_torch(maps_tiles[:, 0], mask_tiles[0], v), x, target).backward()
    for k, p in by_shape(M).items():
        assert_close(p.grad, ref[k].grad)
