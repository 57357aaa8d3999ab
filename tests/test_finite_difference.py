"""`FiniteDifference` against dense matrices built column by column from the definition,
against sigpy, its normal (a Laplacian, diagonalised by the FFT when periodic), its
split across 8 devices by halo exchange, and its errors."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops._core import Coupling
from jaxlinops.linops._finite_difference import FiniteDifference, FiniteDifferenceNormal

C128 = jnp.complex128
BOUNDARIES = ("periodic", "zero", "neumann")
# (ishape, dims, sizes): 1-D, 2-D with a batch dim, 3-D tiny (dims out of order)
CASES = [("N", "N", (6,)), ("C Nx Ny", "Nx Ny", (2, 4, 3)), ("X Y Z", "Z X Y", (2, 3, 2))]


def reference_column(shape, axes, boundary, m):
    r"""The column of $D$ for the unit input at multi-index `m`, from the definition:
    $(De_m)_g[n] = e_m[n + e_g] - e_m[n]$, the last difference along $g$ wrapped
    (periodic), with $e_m$ zero past the end (zero), or 0 (neumann)."""
    col = np.zeros((len(axes), *shape))
    for g, a in enumerate(axes):
        for n in np.ndindex(*shape):
            last = n[a] == shape[a] - 1
            if last and boundary == "neumann":
                continue
            after = list(n)
            after[a] = (n[a] + 1) % shape[a]
            ahead = float(tuple(after) == m) if not last or boundary == "periodic" else 0.0
            col[(g, *n)] = ahead - float(n == m)
    return col


def reference_matrix(shape, axes, boundary):
    columns = [reference_column(shape, axes, boundary, m).ravel() for m in np.ndindex(*shape)]
    return np.stack(columns, axis=1)


def matrix_of(apply, shape, dtype=C128):
    """The operator's matrix, one column per unit input (applied under vmap)."""
    n = int(np.prod(shape))
    columns = jax.vmap(apply)(jnp.eye(n, dtype=dtype).reshape(n, *shape))
    return np.asarray(columns).reshape(n, -1).T


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("ishape, dims, sizes", CASES, ids=["1d", "2d_batch", "3d"])
def test_matches_the_dense_matrix_of_the_definition(ishape, dims, sizes, boundary):
    D = FiniteDifference(ishape, dims, boundary=boundary)
    axes = tuple(D.ishape.index(d) for d in D.diff_dims)
    M = reference_matrix(sizes, axes, boundary)
    assert D.oshape == ("G", *D.ishape)
    np.testing.assert_allclose(matrix_of(D, sizes), M, atol=1e-14)
    out_shape = (len(axes), *sizes)
    np.testing.assert_allclose(matrix_of(D.H, out_shape), M.T, atol=1e-14)
    assert isinstance(D.N, FiniteDifferenceNormal)
    np.testing.assert_allclose(matrix_of(D.N, sizes), M.T @ M, atol=1e-13)


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_normal_is_the_tridiagonal_laplacian(boundary):
    """Along one dim of 5: 2 on the diagonal, -1 beside it; the corners wrap (periodic),
    or the diagonal is 1 at the start (zero) and at both ends (neumann)."""
    L = 2 * np.eye(5) - np.eye(5, k=1) - np.eye(5, k=-1)
    if boundary == "periodic":
        L[0, -1] = L[-1, 0] = -1
    else:
        L[0, 0] = 1
    if boundary == "neumann":
        L[-1, -1] = 1
    D = FiniteDifference("N", boundary=boundary)
    np.testing.assert_allclose(matrix_of(D.N, (5,)), L, atol=1e-14)


@pytest.mark.parametrize("dtype", (jnp.float32, C128))
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_adjoint_and_normal_in_every_dtype(boundary, dtype):
    D = FiniteDifference("... Nx Ny", boundary=boundary)
    x, y = rand(0, (3, 5, 4), dtype), rand(1, (2, 3, 5, 4), dtype)
    jl.testing.assert_adjoint(D, x, y)
    for out in (D(x), D.H(y), D.N(x)):
        assert out.dtype == dtype
    assert_close(D.N(x), D.H(D(x)), dtype)


def test_against_sigpy():
    """sigpy differences backwards, $x[n] - x[n-1]$: ours is it shifted by one entry
    along the differenced dim; the normals are equal."""
    sp = pytest.importorskip("sigpy")
    x = np.asarray(rand(2, (3, 5, 4)))
    S = sp.linop.FiniteDifference(x.shape, axes=(1, 2))
    D = FiniteDifference("C Nx Ny", "Nx Ny")
    theirs = S(x)
    shifted = np.stack([np.roll(theirs[0], -1, 1), np.roll(theirs[1], -1, 2)])
    assert_close(D(x), shifted, C128)
    assert_close(D.N(x), S.N(x), C128)
    y = np.asarray(rand(3, (2, 3, 5, 4)))
    unshifted = np.stack([np.roll(y[0], 1, 1), np.roll(y[1], 1, 2)])
    assert_close(D.H(y), S.H(unshifted), C128)


def fourier_eigenvalues(sizes) -> np.ndarray:
    r"""$\sum_g |1 - e^{-2\pi i k_g / N_g}|^2$ on the unshifted DFT grid (the formula)."""
    grids = np.meshgrid(*(np.arange(n) / n for n in sizes), indexing="ij")
    return np.sum([np.abs(1 - np.exp(-2j * np.pi * k)) ** 2 for k in grids], axis=0)


def normal_of(D: FiniteDifference) -> FiniteDifferenceNormal:
    N = D.N
    assert isinstance(N, FiniteDifferenceNormal), N
    return N


@pytest.mark.parametrize("normal_mode", ("stencil", "fft"))
def test_periodic_normal_is_diagonalised_by_the_fft(normal_mode):
    """Each Fourier mode is an eigenvector of the normal with the formula's eigenvalue,
    and `eigenvalues` gives them, broadcastable over the batch dim."""
    D = FiniteDifference("Nx C Ny", "Ny Nx", normal_mode=normal_mode)
    lam = fourier_eigenvalues((5, 4))
    for k in [(0, 0), (1, 0), (2, 3), (4, 1)]:
        n = np.meshgrid(np.arange(5), np.arange(4), indexing="ij")
        mode = np.exp(2j * np.pi * (k[0] * n[0] / 5 + k[1] * n[1] / 4))[:, None, :]
        mode = np.broadcast_to(mode, (5, 2, 4))
        assert_close(D.N(mode), lam[k] * mode, C128)
    np.testing.assert_allclose(normal_of(D).eigenvalues((5, 2, 4)), lam[:, None, :], atol=1e-14)
    x = rand(4, (5, 2, 4), jnp.float32)
    assert D.N(x).dtype == jnp.float32
    assert_close(D.N(x), D.H(D(x)), jnp.float32)


def test_eigenvalues_solve_a_cartesian_mri_problem():
    r"""$(A^H A + \lambda D^H D) x = b$ for $A = M \mathcal{F}$ (a mask after the unitary
    DFT) solved in the Fourier domain, $x = \mathcal{F}^{-1} (M + \lambda \Lambda)^{-1}
    \mathcal{F} b$, and checked by applying the operators."""
    D = FiniteDifference("Nx Ny")
    mask = np.random.default_rng(0).random((8, 6)) < 0.4
    mask[0, 0] = True  # the centre of k-space (D^H D vanishes on constant images)
    b, lam = np.asarray(rand(5, (8, 6))), 0.1
    x = np.fft.ifftn(np.fft.fftn(b) / (mask + lam * normal_of(D).eigenvalues((8, 6))))
    AHA = np.fft.ifftn(mask * np.fft.fftn(x))
    assert_close(AHA + lam * np.asarray(D.N(x)), b, C128)


def test_normal_survives_composition():
    """Scaled (the scalar is pulled out), written by hand as `D.H @ D`, the normal keeps
    its structure."""
    D = FiniteDifference("C Nx Ny", "Nx Ny", boundary="zero")
    x = rand(6, (2, 4, 3))
    for N in ((3.0 * D).N, D.H @ D):
        assert any(isinstance(op, FiniteDifferenceNormal) for op in N.flatten()), N
    assert_close((3.0 * D).N(x), 9 * D.N(x), C128)
    assert_close((D.H @ D)(x), D.N(x), C128)
    R = jl.rename(D, {"Nx": "X", "G": "H"})
    assert isinstance(R, FiniteDifference)
    assert R.oshape == ("H", "C", "X", "Ny") and R.diff_dims == ("X", "Ny")
    assert_close(R(x), D(x), C128)


def test_jit_vmap_grad_and_integer_input():
    D = FiniteDifference("Nx Ny", boundary="neumann")
    x, xs = rand(7, (5, 4), jnp.float64), rand(8, (3, 5, 4), jnp.float64)
    assert_close(jax.jit(lambda A, v: A(v))(D, x), D(x), jnp.float64)
    assert_close(jax.vmap(D)(xs), jnp.stack([D(v) for v in xs]), jnp.float64)
    grad = jax.grad(lambda v: jnp.sum(D(v) ** 2))(x)  # the gradient of |Dx|^2 is 2 D^H D x
    assert_close(grad, 2 * D.N(x), jnp.float64)
    counts = jnp.arange(20, dtype=jnp.int32).reshape(5, 4)
    assert jnp.issubdtype(D(counts).dtype, jnp.floating)
    assert_close(D(counts), D(counts.astype(jnp.float64)), jnp.float64)


# -- splitting --------------------------------------------------------------------------


@pytest.mark.devices(8)
@pytest.mark.parametrize("n", (16, 13), ids=("even", "ragged"))
@pytest.mark.parametrize(
    "boundary, mode", [("periodic", "stencil"), ("periodic", "fft"), ("zero", "stencil")]
)
def test_split_along_a_differenced_dim_over_8_devices(boundary, mode, n):
    D = FiniteDifference("C Nx Ny", "Nx Ny", boundary=boundary, normal_mode=mode)
    spec = jl.BatchSpec({"Nx": -(-n // 8)}, device_matrix=jax.devices()[:8])
    B = jl.create_batched_linop(D, spec)
    assert isinstance(B, jl.sharding.GridSplitLinop), type(B)
    x, y = rand(9, (2, n, 5)), rand(10, (2, 2, n, 5))
    run = jax.jit(lambda A, v, w: (A(v), A.H(w), A.N(v)))
    for got, want in zip(run(B, x, y), (D(x), D.H(y), D.N(x))):
        assert_close(got, want, C128)
    BH = jl.create_batched_linop(D.H, spec)  # the adjoint alone: its steps in reverse
    assert isinstance(BH, jl.sharding.GridSplitLinop), type(BH)
    assert_close(jax.jit(lambda A, w: A(w))(BH, y), D.H(y), C128)
    if boundary == "periodic":  # the Laplacian runs as one stencil (no D then D^H)
        N = B.N
        assert isinstance(N, jl.sharding.GridSplitLinop) and len(N.stages) == 1, N


def raised_here(info) -> bool:
    """Whether the error was raised from jaxlinops' own code."""
    package = Path(jl.__file__).resolve().parent
    return Path(info.traceback[-1].path).resolve().is_relative_to(package)


@pytest.mark.devices(8)
def test_neumann_refuses_a_split_along_a_differenced_dim():
    D = FiniteDifference("C Nx Ny", "Nx Ny", boundary="neumann")
    spec = jl.BatchSpec({"Nx": 2}, device_matrix=jax.devices()[:8])
    with pytest.raises(ValueError, match=r"FiniteDifference.*neumann.*'Nx'") as info:
        jl.create_batched_linop(D, spec)
    assert raised_here(info)
    B = jl.create_batched_linop(D, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:2]))
    x = rand(11, (2, 6, 5))
    assert_close(B.N(x), D.N(x), C128)


def test_tiles_along_a_batch_dim_and_refusals_along_coupled_dims():
    D = FiniteDifference("C Nx Ny", "Nx Ny", boundary="zero")
    x = rand(12, (3, 4, 5))
    tile = jl.split(D, {"C": slice(1, 3)})
    assert_close(tile(x[1:]), D(x)[:, 1:], C128)
    assert (D.coupling("C"), D.coupling("Nx"), D.coupling("G")) == (
        Coupling.NONE, Coupling.halo(1), Coupling.GLOBAL,
    )  # fmt: skip
    for dim, why in (("Nx", "differences that dim"), ("G", "output dim")):
        with pytest.raises(ValueError, match=rf"FiniteDifference.*'{dim}'") as info:
            jl.split(D, {dim: slice(0, 1)})
        assert raised_here(info) and why in str(info.value)


# -- errors -----------------------------------------------------------------------------

ERRORS = [
    ({"boundary": "reflect"}, r"FiniteDifference\(boundary=...\).*'neumann'\).*'reflect'"),
    ({"dims": "Nz"}, r"FiniteDifference\(dims=...\).*\(C, Nx, Ny\).*'Nz' is not in ishape"),
    ({"dims": "Nx Nx"}, r"FiniteDifference\(dims=...\).*distinct.*\(Nx, Nx\)"),
    ({"odim": "Nx"}, r"FiniteDifference\(odim=...\).*new dim.*\(C, Nx, Ny\).*'Nx'.*odim='Nx1'"),
    ({"odim": "A B"}, r"FiniteDifference\(odim=...\).*one dim name.*'A B'"),
    ({"normal_mode": "fft", "boundary": "zero"}, r"\(normal_mode=...\).*'fft'.*'zero'"),
]  # fmt: skip


@pytest.mark.parametrize("kwargs, match", ERRORS, ids=[str(k) for k, _ in ERRORS])
def test_clear_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        FiniteDifference("C Nx Ny", **kwargs)
    assert raised_here(info)


def test_eigenvalues_need_a_periodic_boundary():
    with pytest.raises(ValueError, match=r"FiniteDifference.N.eigenvalues.*'zero'"):
        normal_of(FiniteDifference("Nx", boundary="zero")).eigenvalues((4,))
