"""`interop.torch_linop`: torch tensors in and out; gradients in PyTorch's convention,
checked with `torch.autograd.gradcheck` and against the same computation written in torch;
a torch optimizer learning a Diagonal's weights through a Chain; batched operators."""

import jax
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

torch = pytest.importorskip("torch")
interop = pytest.importorskip("interop")


def sense(dtype=np.complex128, seed=0):
    """Mask @ FFT @ coil maps, (Nx, Ny) = (4, 5) -> (C, Kx, Ky) with 3 coils."""
    maps = jl.Dense(rand(seed, (3, 4, 5), dtype), "C Nx Ny", "Nx Ny", "C Nx Ny")
    mask = np.random.default_rng(seed).random((4, 5)) < 0.7
    fft = jl.FFT(2, batch_shape="C", centered=True)
    return jl.Diagonal(mask.astype(np.float64), "C Kx Ky") @ fft @ maps


def npy(t) -> np.ndarray:
    """A torch tensor's values (wherever the operator put it) as numpy."""
    return t.detach().cpu().numpy()


def ctensor(seed, shape, requires_grad=False):
    return torch.tensor(np.asarray(rand(seed, shape)), requires_grad=requires_grad)


def test_forward_adjoint_normal_match_the_operator():
    A = sense()
    M = interop.torch_linop(A)
    x, y = ctensor(1, (4, 5)), ctensor(2, (3, 4, 5))
    for got, want in ((M(x), A(x.numpy())), (M.H(y), A.H(y.numpy())), (M.N(x), A.N(x.numpy()))):
        np.testing.assert_allclose(npy(got), np.asarray(want), rtol=1e-12)
    # the parameters are the operator's floating-point arrays: maps and mask weight
    assert sorted(tuple(p.shape) for p in M.parameters()) == [(3, 4, 5), (4, 5)]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["float64", "complex128"])
def test_gradcheck_input_and_arrays(dtype):
    A = jl.Diagonal(rand(3, (4,), dtype), "N") @ jl.Dense(rand(4, (4, 3), dtype), "N M", "M", "N")
    M = interop.torch_linop(A)
    x = torch.tensor(np.asarray(rand(5, (3,), dtype)), requires_grad=True)
    assert torch.autograd.gradcheck(M, (x,))
    assert torch.autograd.gradcheck(M.H, (torch.tensor(np.asarray(rand(6, (4,), dtype)),
                                                        requires_grad=True),))  # fmt: skip
    # operator arrays: the module's parameters as explicit inputs of its autograd function
    spec = M.spec
    inputs = tuple(p.detach().clone().requires_grad_(True) for p in M.parameters())
    assert torch.autograd.gradcheck(
        lambda *ps: interop._linop._Apply.apply(spec, True, x, *ps), inputs
    )
    # with frozen parameters the input gradient (A^H g) is itself differentiable
    for p in M.parameters():
        p.requires_grad_(False)
    assert torch.autograd.gradgradcheck(M, (x,))


def test_gradients_match_torch():
    """A non-holomorphic loss through M and through torch's own matrix of A."""
    A = sense()
    M = interop.torch_linop(A)
    eye = np.eye(20).reshape(20, 4, 5)
    dense = np.stack([np.asarray(A(e)).ravel() for e in eye], axis=1)  # column by column
    W = torch.tensor(dense)
    x1 = ctensor(7, (4, 5), requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)

    def loss(y):
        return (y.abs() ** 2).sum() + y.real.sum()

    loss(M(x1)).backward()
    loss(W @ x2.reshape(20)).backward()
    np.testing.assert_allclose(npy(x1.grad), npy(x2.grad), rtol=1e-12)
    # a real input of a complex operator gets the real part of A^H g
    xr = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    xr2 = xr.detach().clone().requires_grad_(True)
    loss(M(xr)).backward()
    loss(W @ xr2.reshape(20).to(torch.complex128)).backward()
    assert xr.grad.dtype == torch.float64
    np.testing.assert_allclose(npy(xr.grad), npy(xr2.grad), rtol=1e-12)


def test_optimizer_learns_a_diagonal_like_pure_torch():
    """Fit the weights w of y = FFT(w * x) to data; the same loop written in torch takes
    the same steps."""
    rng = np.random.default_rng(8)
    x = torch.tensor(rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8)))
    target = torch.fft.fft(torch.tensor(rng.standard_normal(8)) * x, norm="ortho")
    A = jl.FFT(1, batch_shape="B") @ jl.Diagonal(np.ones(8), "B Nx")
    M = interop.torch_linop(A)
    w = torch.ones(8, dtype=torch.float64, requires_grad=True)
    opt_a = torch.optim.Adam(M.parameters(), lr=0.05)
    opt_b = torch.optim.Adam([w], lr=0.05)
    losses = []
    for _ in range(100):
        for opt, y in ((opt_a, M(x)), (opt_b, torch.fft.fft(w * x, norm="ortho"))):
            opt.zero_grad()
            loss = ((y - target.to(y.device)).abs() ** 2).sum()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    (learned,) = M.parameters()
    np.testing.assert_allclose(npy(learned), npy(w), rtol=1e-10)
    np.testing.assert_allclose(losses[0::2], losses[1::2], rtol=1e-10)
    assert losses[-2] < 1e-2 * losses[0]


def test_batched_operator_and_errors():
    A = sense()
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:3])
    M = interop.torch_linop(jl.create_batched_linop(A, spec))
    x = ctensor(9, (4, 5), requires_grad=True)
    y = M(x)
    np.testing.assert_allclose(npy(y), np.asarray(A(npy(x))), rtol=1e-13)
    (y.abs() ** 2).sum().backward()
    want = 2 * np.asarray(A.N(npy(x)))  # d/dx* |Ax|^2 -> 2 A^H A x
    np.testing.assert_allclose(npy(x.grad), want, rtol=1e-12)
    with pytest.raises(TypeError, match=r"expects a NamedLinop; got ndarray"):
        interop.torch_linop(np.ones(3))
    with pytest.raises(TypeError, match=r"`Chain` expects a torch.Tensor; got ndarray"):
        interop.torch_linop(A)(np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"expected dim 'Nx' of size 4"):
        interop.torch_linop(A)(torch.ones(5, 5, dtype=torch.complex128))
    # a device JAX cannot reach, a dtype JAX lacks
    with pytest.raises(ValueError, match=r"JAX cannot import a torch.complex128 tensor on meta"):
        M(torch.empty(4, 5, dtype=torch.complex128, device="meta"))
    with pytest.warns(UserWarning, match="ComplexHalf support is experimental"):
        half = torch.ones(4, 5, dtype=torch.complex32)
    with pytest.raises(TypeError, match=r"torch.complex32 has no JAX counterpart"):
        M(half)
