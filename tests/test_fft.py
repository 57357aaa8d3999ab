"""FFT against numpy.fft and explicit DFT matrices: values, adjoints, normals, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl
from jaxlinops.linops._fft import GridScale

NORMS = ("ortho", "backward", "forward")
norms = pytest.mark.parametrize("norm", NORMS)


def crand(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def numpy_fft(x, ndim, norm, centered):
    axes = tuple(range(-ndim, 0))
    if centered:
        x = np.fft.ifftshift(x, axes)
    y = np.fft.fftn(x, axes=axes, norm=norm)
    return np.fft.fftshift(y, axes) if centered else y


def dft_matrix(n, norm, centered):
    """The 1-D DFT as a matrix, written out from its definition."""
    j = np.arange(n)
    grid = j - n // 2 if centered else j
    M = np.exp(-2j * np.pi * np.outer(grid, grid) / n)
    return M * {"ortho": n**-0.5, "backward": 1.0, "forward": 1.0 / n}[norm]


@norms
@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 6), (5, 8, 7)])
def test_forward_and_adjoint_match_numpy(norm, centered, shape):
    """Odd and even axes: the centered transform puts the origin at `n // 2` of both."""
    rng = np.random.default_rng(0)
    x, y = crand(rng, shape), crand(rng, shape)
    A = jl.FFT(2, norm=norm, centered=centered)
    assert_close(A(jnp.asarray(x)), numpy_fft(x, 2, norm, centered), jnp.complex128)
    inverse = np.fft.ifftshift(y, (-2, -1)) if centered else y
    n = np.prod(shape[-2:])
    inverse = np.fft.ifftn(inverse, axes=(-2, -1), norm="forward")  # the conjugate sum
    inverse = np.fft.fftshift(inverse, (-2, -1)) if centered else inverse
    scale = {"ortho": n**-0.5, "backward": 1.0, "forward": 1.0 / n}[norm]
    assert_close(A.H(jnp.asarray(y)), inverse * scale, jnp.complex128)


@norms
@pytest.mark.parametrize("centered", [False, True])
def test_matches_dft_matrix_and_its_conjugate_transpose(norm, centered):
    rng = np.random.default_rng(1)
    x, y = crand(rng, 5), crand(rng, 5)
    M = dft_matrix(5, norm, centered)
    A = jl.FFT(1, norm=norm, centered=centered)
    assert_close(A(jnp.asarray(x)), M @ x, jnp.complex128)
    assert_close(A.H(jnp.asarray(y)), M.conj().T @ y, jnp.complex128)


@norms
@pytest.mark.parametrize("centered", [False, True])
def test_dot_test(norm, centered):
    rng = np.random.default_rng(2)
    x, y = crand(rng, (3, 4, 6)), crand(rng, (3, 4, 6))
    A = jl.FFT(3, norm=norm, centered=centered)
    lhs = np.vdot(y, np.asarray(A(jnp.asarray(x))))
    rhs = np.vdot(np.asarray(A.H(jnp.asarray(y))), x)
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)


@norms
def test_normal_is_the_grid_scaling(norm):
    x = crand(np.random.default_rng(3), (2, 3, 4))
    A = jl.FFT(2, norm=norm)
    scale = {"ortho": 1.0, "backward": 12.0, "forward": 1 / 12}[norm]
    assert_close(A.N(jnp.asarray(x)), scale * x, jnp.complex128)
    # torchlinops' FFT.N is `Identity(ishape)`: it keeps the input dims
    assert A.N.ishape == A.N.oshape == ("...", "Nx", "Ny")
    assert isinstance(A.N, jl.Identity if norm == "ortho" else GridScale)


@norms
def test_normal_with_inner(norm):
    rng = np.random.default_rng(4)
    x, w = crand(rng, 6), crand(rng, 6)
    A = jl.FFT(1, batch_shape=(), norm=norm)
    D = jl.Diagonal(jnp.asarray(w), "Kx")
    M = dft_matrix(6, norm, centered=False)
    got = (D @ A).N(jnp.asarray(x))
    assert_close(got, M.conj().T @ (np.abs(w) ** 2 * (M @ x)), jnp.complex128)


def test_real_input_gives_complex_output_and_true_adjoint():
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((2, 5)), crand(rng, (2, 5))
    A = jl.FFT(1, norm="backward")
    Ax = A(jnp.asarray(x))
    assert Ax.dtype == jnp.complex128
    assert_close(Ax, np.fft.fft(x, norm="backward"), jnp.complex128)
    lhs = np.vdot(y, np.asarray(Ax))
    rhs = np.vdot(np.asarray(A.H(jnp.asarray(y))), x)
    assert abs(lhs - rhs) <= 1e-10 * abs(lhs)
    # jax.linear_transpose of a real-to-complex map is the real part of the adjoint
    (t,) = jax.linear_transpose(A, jax.ShapeDtypeStruct(x.shape, x.dtype))(jnp.conj(y))
    assert_close(t, np.real(np.asarray(A.H(jnp.asarray(y)))), jnp.float64)


def test_float32_input():
    x = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    A = jl.FFT(2, centered=True)
    Ax = A(jnp.asarray(x))
    assert Ax.dtype == jnp.complex64
    assert_close(Ax, numpy_fft(x.astype(np.float64), 2, "ortho", True), jnp.float32)
    assert_close(A.N(jnp.asarray(x)), x, jnp.float32)


def test_shapes_and_batch_dims():
    assert jl.FFT(2).ishape == ("...", "Nx", "Ny")
    assert jl.FFT(2).oshape == ("...", "Kx", "Ky")
    A = jl.FFT(3, batch_shape="C")
    assert (A.ishape, A.oshape) == (("C", "Nx", "Ny", "Nz"), ("C", "Kx", "Ky", "Kz"))
    B = jl.FFT(1, batch_shape="AB", grid_shapes=("T", "F"))
    assert (B.ishape, B.oshape) == (("A", "B", "T"), ("A", "B", "F"))
    x = crand(np.random.default_rng(7), (2, 3, 4))
    assert_close(B(jnp.asarray(x)), np.fft.fft(x, norm="ortho"), jnp.complex128)


def test_more_than_three_axes_with_grid_shapes():
    x = crand(np.random.default_rng(8), (2, 2, 3, 2, 2))
    A = jl.FFT(4, grid_shapes=("A B C D", "E F G H"), norm="forward")
    assert A.ishape == ("...", "A", "B", "C", "D")
    assert_close(A(jnp.asarray(x)), numpy_fft(x, 4, "forward", False), jnp.complex128)


def test_norm_none_means_backward():
    assert jl.FFT(1, norm=None).norm == "backward"


def test_adjoint_of_adjoint():
    A = jl.FFT(2, norm="forward", centered=True)
    assert A.H.H is A
    assert A.H.ishape == A.oshape


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"ndim": 2, "norm": "unitary"}, r"`FFT\(norm=...\)` must be one of .*'unitary'"),
        ({"ndim": 0}, r"`FFT\(ndim=...\)` must be a positive integer; got 0"),
        ({"ndim": 1.0}, r"`FFT\(ndim=...\)` must be a positive integer; got 1.0"),
        ({"ndim": 4}, r"`FFT\(ndim=4\)`: default grid dims exist for ndim <= 3"),
        ({"ndim": 1, "grid_shapes": ("N", "K", "L")}, r"must be a pair \(primal, dual\)"),
        ({"ndim": 1, "grid_shapes": "NK"}, r"must be a pair \(primal, dual\)"),
        ({"ndim": 2, "grid_shapes": ("Nx", "Kx Ky")}, r"needs 2 primal and 2 dual dims"),
        ({"ndim": 2, "grid_shapes": ("N N", "Kx Ky")}, r"primal grid dims must be distinct"),
        ({"ndim": 1, "grid_shapes": ("...", "K")}, r"primal grid dims must be distinct"),
        ({"ndim": 1, "batch_shape": "Kx"}, r"batch dims and grid dims must differ"),
    ],
)
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jl.FFT(**kwargs)


def test_input_rank_error_names_fft():
    with pytest.raises(
        ValueError,
        match=r"`FFT` received incompatible input of shape .*: expected dims \(C, Nx, Ny\)",
    ):
        jl.FFT(2, batch_shape="C")(jnp.zeros((3, 4)))
