"""Noise prewhitening (`jaxlinops.mri._whiten`): covariance and whitening matrix against
numpy, whitened noise against the identity, and the operator's algebra."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops.mri._whiten import noise_covariance, noise_whitening, whitening_matrix

C, M = 4, 20_000


def correlated_noise(rng, coils=C, samples=M):
    """Complex noise `[coils, samples]` with covariance Sigma = A A^H (A random, so the
    coils are correlated and of unequal power); returns the noise and Sigma."""
    A = rng.normal(size=(coils, coils)) + 1j * rng.normal(size=(coils, coils))
    white = (rng.normal(size=(coils, samples)) + 1j * rng.normal(size=(coils, samples))) / np.sqrt(
        2
    )
    return A @ white, A @ A.conj().T


def test_covariance_and_whitening_matrix_match_numpy():
    noise, _ = correlated_noise(np.random.default_rng(0))
    sigma = noise @ noise.conj().T / M
    np.testing.assert_allclose(noise_covariance(noise), sigma, rtol=1e-12)
    want = np.linalg.inv(np.linalg.cholesky(sigma))
    np.testing.assert_allclose(whitening_matrix(noise), want, rtol=1e-10, atol=1e-12)


def test_coil_axis_and_extra_sample_axes():
    noise, _ = correlated_noise(np.random.default_rng(1), samples=600)
    laid_out = np.moveaxis(noise.reshape(C, 20, 30), 0, -1)  # [20, 30, C]
    np.testing.assert_allclose(
        whitening_matrix(laid_out, coil_axis=-1), whitening_matrix(noise), rtol=1e-12
    )


def test_whitened_noise_has_identity_covariance():
    """Fresh noise with the known covariance Sigma, whitened by W estimated from another
    draw, has covariance I up to sampling error. An entry of a sample covariance of M
    complex samples (unit variance) has standard deviation 1/sqrt(M); W itself comes from
    M samples, adding as much again. 6 / sqrt(M) is > 4 standard deviations of both."""
    rng = np.random.default_rng(2)
    noise, sigma = correlated_noise(rng)
    A = np.linalg.cholesky(sigma)
    fresh = A @ (rng.normal(size=(C, M)) + 1j * rng.normal(size=(C, M))) / np.sqrt(2)
    whitened = np.asarray(noise_whitening(noise)(fresh))
    cov = whitened @ whitened.conj().T / M
    assert np.max(np.abs(cov - np.eye(C))) < 6 / np.sqrt(M)
    # and the estimate's own noise is white exactly (the sample covariance is I)
    own = np.asarray(noise_whitening(noise)(noise))
    np.testing.assert_allclose(own @ own.conj().T / M, np.eye(C), atol=1e-10)


@pytest.fixture
def whitening():
    rng = np.random.default_rng(3)
    noise, _ = correlated_noise(rng, samples=200)
    x = rng.normal(size=(C, 3, 5)) + 1j * rng.normal(size=(C, 3, 5))
    y = rng.normal(size=(C, 3, 5)) + 1j * rng.normal(size=(C, 3, 5))
    return noise, jnp.asarray(x), jnp.asarray(y)


def test_operator_on_extra_dims(whitening):
    noise, x, y = whitening
    A = noise_whitening(noise)
    assert A.ishape == A.oshape == ("C", "...")
    W = np.linalg.inv(np.linalg.cholesky(noise @ noise.conj().T / noise.shape[1]))
    np.testing.assert_allclose(A(x), np.einsum("cd,drk->crk", W, x), rtol=1e-10)
    jl.testing.assert_adjoint(A, x, y)
    jl.testing.assert_normal(A, x)
    jl.testing.assert_linear_transpose(A, x, y)
    np.testing.assert_allclose(jax.jit(lambda op, v: op(v))(A, x), A(x), rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(A, in_axes=2, out_axes=2)(x), A(x), rtol=1e-12)


def test_operator_splits_along_non_coil_dims(whitening):
    noise, x, _ = whitening
    A = noise_whitening(noise, coil_dim="Coil", ioshape="R Coil K")
    xr = jnp.moveaxis(x, 0, 1)  # [R, C, K]
    tile = A.split({"R": slice(0, 2)})
    np.testing.assert_allclose(tile(xr[:2]), A(xr)[:2], rtol=1e-12)
    with pytest.raises(ValueError, match="'Coil'"):
        A.split({"Coil": slice(0, 2)})


def test_built_under_jit(whitening):
    noise, x, _ = whitening
    f = jax.jit(lambda n, v: noise_whitening(n)(v))
    np.testing.assert_allclose(f(noise, x), noise_whitening(noise)(x), rtol=1e-10)


def test_singular_covariance():
    """A dead coil: a ValueError for concrete noise, NaN under jit."""
    noise, _ = correlated_noise(np.random.default_rng(4), samples=50)
    noise[2] = 0
    with pytest.raises(ValueError, match="whitening_matrix: .* not positive definite"):
        whitening_matrix(noise)
    assert np.all(np.isnan(jax.jit(lambda n: whitening_matrix(n))(noise)))


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda n: whitening_matrix(n[:, :3]),
            r"whitening_matrix: `noise` has 3 samples .* 4 coils",
        ),
        (lambda n: noise_covariance(n, coil_axis=2), "noise_covariance: `coil_axis` 2"),
        (lambda n: noise_whitening(n, ioshape="X ..."), "noise_whitening: `coil_dim` 'C'"),
        (lambda n: noise_whitening(n[:, :2]), "noise_whitening: `noise` has 2 samples"),
    ],
)
def test_errors_name_the_function_and_argument(call, match):
    noise, _ = correlated_noise(np.random.default_rng(5), samples=10)
    with pytest.raises(ValueError, match=match):
        call(noise)
