"""`interop.torchlinops`: jaxlinops facing torch, checked against torchlinops itself on the
same torch tensors (values, adjoints, composition, autograd, module paths)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
tl = pytest.importorskip("torchlinops")

import interop.torchlinops as jt  # noqa: E402


def dense_pair(weight):
    args = (("M", "N"), ("N",), ("M",))
    return jt.Dense(weight, *args), tl.Dense(weight, *args)


def test_operators_take_and_return_tensors_as_torchlinops():
    torch.manual_seed(0)
    weight = torch.randn(3, 4, dtype=torch.complex128)
    mine, theirs = dense_pair(weight)
    x, y = torch.randn(4, dtype=torch.complex128), torch.randn(3, dtype=torch.complex128)
    assert isinstance(mine, torch.nn.Module) and isinstance(mine, jt.Dense)
    assert not isinstance(mine, jt.Diagonal)
    for got, want in [
        (mine(x), theirs(x)),
        (mine.H(y), theirs.H(y)),
        (mine.N(x), theirs.N(x)),
        ((mine.H @ mine)(x), (theirs.H @ theirs)(x)),
        ((2 * mine - mine)(x), theirs(x)),
        (mine @ x, theirs(x)),
    ]:
        assert isinstance(got, torch.Tensor)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    assert isinstance(mine.weight, torch.Tensor) and mine.ishape == ("N",)


def test_split_and_containers_face_torch():
    weight = torch.randn(6, 4, dtype=torch.float64)
    mine, theirs = dense_pair(weight)
    tile = {"M": slice(1, 4)}
    x = torch.randn(4, dtype=torch.float64)
    torch.testing.assert_close(mine.split(mine, tile)(x), theirs.split(theirs, tile)(x))
    chain = jt.Chain(mine, mine.H)
    assert len(chain) == 2 and isinstance(chain[0], jt.Dense)


def test_torch_autograd_gives_the_adjoint():
    weight = torch.randn(3, 4, dtype=torch.complex128)
    mine, _ = dense_pair(weight)
    x = torch.randn(4, dtype=torch.complex128, requires_grad=True)
    g = torch.randn(3, dtype=torch.complex128)
    mine(x).backward(g)
    torch.testing.assert_close(x.grad, weight.conj().T @ g, rtol=1e-10, atol=1e-12)


def test_module_paths_mirror_jaxlinops():
    import interop.torchlinops.config as config
    import jaxlinops
    from interop.torchlinops.linops.nufft.toeplitz import toeplitz_psf
    from interop.torchlinops.testing import BaseNamedLinopTests
    from interop.torchlinops.utils import cfftn

    assert callable(toeplitz_psf) and issubclass(BaseNamedLinopTests, object)
    x = torch.randn(4, 4, dtype=torch.complex128)
    from torchlinops.utils import cfftn as reference

    want = reference(x, dim=(-2, -1), norm="ortho")
    torch.testing.assert_close(cfftn(x, dim=(-2, -1), norm="ortho"), want)
    with config.using(shape_inference=False):
        assert jaxlinops.config.shape_inference is False
    with pytest.raises(ImportError):
        import interop.torchlinops.no_such_module  # noqa: F401


def test_an_object_faces_torch_as_one_wrapper_while_it_lives():
    """torchlinops' identities: `I.H is I`, a split that keeps the whole operator returns
    it, a shared child stays shared, a fluent plan returns itself; a dropped wrapper is
    forgotten (no table grows without bound)."""
    import gc
    import sys

    identity = jt.Identity(("N", "M"))
    assert identity.H is identity and identity.N is identity
    assert identity.split(identity, {"N": slice(0, 2)}) is identity
    mine, _ = dense_pair(torch.randn(3, 4, dtype=torch.float64))
    assert jt.Chain(mine, jt.Identity(("M",)))[0] is mine
    cpu = torch.device("cpu")
    from interop.torchlinops.linops.split import TilingStrategy

    strategy = TilingStrategy({"N": [0, 2, 4]}, [cpu])
    assert strategy.place_all(cpu) is strategy
    faces = sys.modules["interop.torchlinops._facade"]._FACES
    before = len(faces)
    made = jt.Identity(("K",))
    assert len(faces) == before + 1
    del made
    gc.collect()
    assert len(faces) == before


def test_a_simple_linop_of_torch_functions_runs_them_on_tensors():
    """torch callables inside the compiled program (`jax.pure_callback`): values, adjoint,
    normal and torch autograd against torch itself."""
    A = jt.SimpleLinop(
        lambda x: torch.fft.fft(x, norm="ortho"),
        lambda y: torch.fft.ifft(y, norm="ortho"),
        None,
        ("N",),
        ("K",),
    )
    x = torch.randn(8, dtype=torch.complex128, requires_grad=True)
    g = torch.randn(8, dtype=torch.complex128)
    want = torch.fft.fft(x.detach(), norm="ortho")
    torch.testing.assert_close(A(x.detach()), want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(A.H(want), x.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(A.N(x.detach()), x.detach(), rtol=1e-12, atol=1e-12)
    A(x).backward(g)
    torch.testing.assert_close(x.grad, torch.fft.ifft(g, norm="ortho"), rtol=1e-12, atol=1e-12)


def test_arrays_are_frozen_and_python_numbers_keep_32_bits_as_in_torchlinops():
    weight = torch.randn(3, 4)
    mine, theirs = dense_pair(weight)
    x = torch.randn(4)
    for got, want in [((2.0 * mine)(x), (2.0 * theirs)(x)), ((mine * 3.0)(x), (theirs * 3.0)(x))]:
        assert got.dtype == want.dtype == torch.float32
        torch.testing.assert_close(got, want)
    assert jt.Scalar(3.0)(x).dtype == tl.Scalar(3.0)(x).dtype == torch.float32
    assert jt.Scalar(1j)(x.to(torch.complex64)).dtype == torch.complex64
    mine(x)
    assert [p.requires_grad for p in mine.module.parameters()] == [False]
    mine.module.requires_grad_()
    g = torch.randn(3)
    mine(x).backward(g)
    (weight_grad,) = [p.grad for p in mine.module.parameters()]
    torch.testing.assert_close(weight_grad, torch.outer(g, x))


def test_the_input_gradient_of_a_sum_broadcasts_as_torch_autograd():
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    g = torch.randn(5, 2, dtype=torch.float64)
    jt.SumReduce(("A", "B", "C"), ("A", "B"))(x).backward(g)
    y = x.detach().clone().requires_grad_(True)
    y.sum(-1).backward(g)
    torch.testing.assert_close(x.grad, y.grad)
