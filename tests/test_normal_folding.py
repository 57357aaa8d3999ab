"""Structured normals survive scaling and composition: the folded normal of a Toeplitz
SENSE operator has no gridding inside, however it is scaled or composed, and its values
match A^H (inner) A computed the slow way."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl

C, N, K = 3, 8, 40
GRIDDING = (jl.NUFFT, jl.Interpolate)


def gridding_nodes(op) -> int:
    """How many NUFFT/Interpolate nodes `op` holds anywhere in its tree."""
    is_grid = lambda x: isinstance(x, GRIDDING)
    return sum(map(is_grid, jax.tree.leaves(op, is_leaf=is_grid)))


def sense(seed=0):
    """A = sqrt(dcf) . NUFFT (Toeplitz) . coil maps, and the density compensation."""
    rng = np.random.default_rng(seed)
    maps = rand(seed, (C, N, N))
    F = jl.NUFFT(rng.uniform(-N / 2, N / 2, (K, 2)), (N, N), "K", batch_shape="C",
                 oversamp=2.0, width=6.0, toeplitz=True)  # fmt: skip
    dcf = rng.uniform(0.5, 1.0, K)
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    return jl.Diagonal(np.sqrt(dcf), "C K") @ F @ S, F, S, dcf


def slow_normal(A, x, inner=None):
    """A^H (inner) A x through the gridding operators themselves."""
    y = A(x)
    return A.H(y if inner is None else inner(y))


def assert_toeplitz(op, got, want):
    assert gridding_nodes(op) == 0, f"the normal fell off the Toeplitz form:\n{op}"
    # The Toeplitz normal differs from A^H A by the NUFFT's own error (width 6, os 2).
    err = np.abs(np.asarray(got) - np.asarray(want)).max() / np.abs(np.asarray(want)).max()
    assert err < 1e-3, err


def scaled_normals():
    A, *_ = sense()
    c = 0.3 - 0.2j
    return {
        "A.N": (A.N, 1.0),
        "(c*A).N": ((c * A).N, abs(c) ** 2),
        "(A*c).N": ((A * c).N, abs(c) ** 2),
        "(-A).N": ((-A).N, 1.0),
        "(A/4).N": ((A / 4).N, 1 / 16),
        "(2*(c*A)).N": ((2 * (c * A)).N, 4 * abs(c) ** 2),
        "A.H @ (c*A)": (A.H @ (c * A), c),
        "(c*A).H @ A": ((c * A).H @ A, np.conj(c)),
        "A.H @ A": (A.H @ A, 1.0),
    }


@pytest.mark.parametrize("name", list(scaled_normals()))
def test_scaled_and_composed_normals_stay_toeplitz(name):
    op, factor = scaled_normals()[name]
    A, *_ = sense()
    x = rand(1, (N, N))
    assert_toeplitz(op, op(x), factor * slow_normal(A, x))


def test_diagonal_scalar_diagonal_chain_folds_into_the_kernel():
    _, F, S, dcf = sense()
    w = np.sqrt(dcf)
    A = jl.Diagonal(w, "C K") @ jl.Scalar(0.5, "C K") @ jl.Diagonal(w, "C K") @ F @ S
    x = rand(2, (N, N))
    assert_toeplitz(A.N, A.N(x), slow_normal(A, x))


def test_normal_with_a_density_compensation_on_the_point_dims_only():
    # Diagonal(dcf, "K") on an operator whose output is (C, K): the weight broadcasts.
    _, F, _, dcf = sense()
    x = rand(3, (C, N, N))
    normal = F.normal(jl.Diagonal(dcf, "K"))
    assert normal.oshape == ("C", "Nx1", "Ny1")
    assert_toeplitz(normal, normal(x), F.H(dcf[None].astype(np.complex128) * F(x)))
    scaled = F.normal(jl.Scalar(2.0, "K"))
    assert_toeplitz(scaled, scaled(x), 2 * F.H(F(x)))


def test_inner_on_dims_the_operator_does_not_have_is_refused():
    _, F, _, _ = sense()
    with pytest.raises(ValueError, match=r"NUFFT.normal\(inner\)` needs `inner` to take"):
        F.normal(jl.Diagonal(np.ones(5), "Q"))


def test_tikhonov_identity_adopts_the_normal_dims():
    A, *_ = sense()
    lam = 0.1
    T = A.N + lam * jl.Identity()
    assert (T.ishape, T.oshape) == (A.N.ishape, A.N.oshape)
    x = rand(4, (N, N))
    assert_toeplitz(T, T(x), slow_normal(A, x) + lam * x)
    plain = jl.Identity() + A.N  # the identity first works the same way
    assert_close(plain(x), A.N(x) + x, np.complex128)


def np_laplacian(x):
    """D^H D x for periodic forward differences along both axes, by np.roll."""
    return sum(2 * x - np.roll(x, 1, axis=a) - np.roll(x, -1, axis=a) for a in (0, 1))


def test_a_normal_plus_an_operator_on_its_input_dims_adopts_the_renaming():
    """`A.N + rho * D.N` (ADMM's and total variation's system): `D.N` maps (Nx, Ny) to
    itself, `A.N` renames its output (Nx1, Ny1); the sum takes the renaming, in either
    order and beside a dimless identity, and keeps the Toeplitz normal."""
    A, *_ = sense()
    D = jl.FiniteDifference("Nx Ny")
    x = np.asarray(rand(6, (N, N)))
    slow = np.asarray(slow_normal(A, x))
    for op, want in [
        (A.N + 2.0 * D.N, slow + 2 * np_laplacian(x)),
        (D.N + A.N, slow + np_laplacian(x)),
        (D.N + 0.5 * jl.Identity() + A.N, slow + np_laplacian(x) + 0.5 * x),
    ]:
        assert (op.ishape, op.oshape) == (("Nx", "Ny"), ("Nx1", "Ny1"))
        assert_toeplitz(op, op(x), want)
    swapped = jl.Identity("Nx Ny", "Ny Nx")  # not a renaming in place: refused
    with pytest.raises(ValueError, match="requires all operators to share oshape"):
        _ = swapped + D.N


def test_cg_with_a_tikhonov_normal_solves_the_regularised_system():
    A, *_ = sense()
    lam = 0.5
    x_true = rand(5, (N, N))
    y = A.N(x_true) + lam * x_true
    x = jl.alg.conjugate_gradients(A.N + lam * jl.Identity(), y, max_num_iters=200, gtol=1e-12)
    # well conditioned by lam; the solution error follows the residual tolerance
    np.testing.assert_allclose(x, x_true, rtol=1e-6, atol=1e-6 * np.abs(x_true).max())


def test_adjoint_pairs_fold_under_jit_when_the_arrays_are_traced():
    A, *_ = sense()

    @jax.jit
    def count(A):
        op = A.H @ (0.5 * A)
        return gridding_nodes(op)

    # The NUFFT's adjoint wraps the same arrays, and a real density compensation's
    # conjugate is itself, so the pairs are recognised even on traced arrays; only the
    # coil maps (complex, conjugated into a new array) stay outside the folded normal.
    assert count(A) == 0


def test_a_chain_that_is_not_a_normal_is_left_alone():
    A, F, S, dcf = sense()
    B = jl.Diagonal(np.sqrt(dcf) + 1, "C K") @ F @ S  # a different weighting
    op = B.H @ A
    assert gridding_nodes(op) == 2
    x = rand(6, (N, N))
    assert_close(op(x), B.H(A(x)), np.complex128)
