"""`Wavelet` against PyWavelets (`wavedecn`/`waverecn` with `mode="periodization"`, the
coefficients laid out by `coeffs_to_array`): filters, coefficients, inverse, orthogonality,
batch dims, default level and errors. The operator contract (adjoint, jit, vmap, grad,
split) runs on the factories of `tests/factories/wavelet.py`."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import pywt
from helpers import KeyGen, assert_close, rand, rtol

import jaxlinops as jl
from jaxlinops.functional._wavelet import (
    MAX_DB,
    SYMLETS,
    filter_bank,
    wavelet_transform,
    wavelet_transform_adjoint,
)
from jaxlinops.linops._wavelet import Wavelet

NAMES = ("haar", *(f"db{p}" for p in range(1, MAX_DB + 1)), *(f"sym{p}" for p in SYMLETS))
# (ishape, shape, level): 1-D, 2-D and 3-D; the coarsest level is shorter than the filters
CASES = {
    "1d": ("N", (64,), 3),
    "2d": ("Nx Ny", (16, 32), 2),
    "3d": ("Nx Ny Nz", (8, 4, 16), 2),
}
DTYPES = (jnp.float32, jnp.float64, jnp.complex64, jnp.complex128)


def reference(x, wavelet: str, level, axes) -> np.ndarray:
    """PyWavelets' coefficients of `x` (in double precision) in one array."""
    x = np.asarray(x).astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    with warnings.catch_warnings():
        # "Level value of ... is too high": boundary effects, harmless with periodization
        warnings.simplefilter("ignore", UserWarning)
        coeffs = pywt.wavedecn(x, wavelet, mode="periodization", level=level, axes=axes)
    return pywt.coeffs_to_array(coeffs, axes=axes)[0]


def reference_inverse(y, wavelet: str, level: int, axes) -> np.ndarray:
    """`pywt.waverecn` of the coefficient array `y`."""
    y = np.asarray(y).astype(np.complex128 if np.iscomplexobj(y) else np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        layout = pywt.wavedecn(np.zeros(y.shape), wavelet, "periodization", level, axes)
    slices = pywt.coeffs_to_array(layout, axes=axes)[1]
    coeffs = pywt.array_to_coeffs(y, slices, output_format="wavedecn")
    return np.asarray(pywt.waverecn(coeffs, wavelet, mode="periodization", axes=axes))


def pywt_filters(name: str) -> tuple[np.ndarray, np.ndarray]:
    """PyWavelets' `dec_lo` and `dec_hi` (`pywt.Wavelet` is a Cython class, which pyright
    does not see)."""
    w = pywt.Wavelet(name)  # pyright: ignore[reportAttributeAccessIssue]
    return np.asarray(w.dec_lo), np.asarray(w.dec_hi)


@pytest.mark.parametrize("name", NAMES)
def test_filters_match_pywavelets_and_are_orthonormal(name):
    """PyWavelets' symlet tables hold about 12 digits (its sym2 and db2, one filter,
    differ by 3e-13); the filters computed here are orthonormal to 1e-13."""
    h, g = map(np.asarray, filter_bank(name))
    atol = 5e-12 if name.startswith("sym") else 1e-13
    h_ref, g_ref = pywt_filters(name)
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=atol)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=atol)
    if name in ("sym2", "sym3"):  # the same filters as db2, db3
        assert filter_bank(name) == filter_bank(name.replace("sym", "db"))
    for m in range(len(h) // 2):  # sum_k h_k h_{k+2m} = delta_m, the same for g and h, g
        assert abs(h[: len(h) - 2 * m] @ h[2 * m :] - (m == 0)) < 1e-13
        assert abs(g[: len(g) - 2 * m] @ g[2 * m :] - (m == 0)) < 1e-13
        assert abs(h[: len(h) - 2 * m] @ g[2 * m :]) < 1e-13


def coefficient_cases() -> list:
    """Each wavelet in each case, the four dtypes in turn: every wavelet meets real and
    complex inputs in single and double precision, and so does every case."""
    wavelets = ("haar", "db2", "db4", "db8")
    cases = [
        (w, c, DTYPES[(i + j) % 4]) for i, w in enumerate(wavelets) for j, c in enumerate(CASES)
    ]
    return [*cases, ("sym4", "2d", jnp.complex128)]


@pytest.mark.parametrize(
    "wavelet, case, dtype",
    coefficient_cases(),
    ids=lambda v: jnp.dtype(v).name if not isinstance(v, str) else v,
)
def test_coefficients_and_inverse_match_pywavelets(wavelet, case, dtype):
    ishape, shape, level = CASES[case]
    W = Wavelet(ishape, wavelet=wavelet, level=level)
    axes = tuple(range(len(shape)))
    x = rand(KeyGen(0)(), shape, dtype)
    c = rand(KeyGen(1)(), shape, dtype)
    y, back = jax.jit(lambda x, c: (W(x), W.H(c)))(x, c)
    assert y.dtype == back.dtype == dtype and y.shape == back.shape == x.shape
    assert_close(y, reference(x, wavelet, level, axes), dtype)
    assert_close(back, reference_inverse(c, wavelet, level, axes), dtype)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex128], ids=lambda d: d.__name__)
def test_orthogonal_and_structured_normal(dtype):
    W = Wavelet("Nx Ny", wavelet="db3", level=3)
    x = rand(KeyGen(2)(), (16, 24), dtype)
    y, back, forth = jax.jit(lambda x: (W(x), W.H(W(x)), W(W.H(x))))(x)
    assert abs(float(jnp.linalg.norm(y) / jnp.linalg.norm(x)) - 1) < rtol(dtype)
    assert_close(back, x, dtype)  # W^H W = I
    assert_close(forth, x, dtype)  # W W^H = I
    for normal in (W.N, W.H.N):  # an Identity: nothing computed
        assert isinstance(normal, jl.Identity) and normal.oshape == W.ishape
    assert W.H.H == W and W.H == Wavelet("Nx Ny", wavelet="db3", level=3, inverse=True)
    D = jl.Diagonal(rand(KeyGen(3)(), (16, 24), dtype), "Nx Ny")
    assert not any(isinstance(op, Wavelet) for op in (W @ D).N.modules())


def test_batch_dims_are_untouched():
    """Dims not transformed (anywhere in ishape, or in '...') are batch dims; the
    transformed dims are found by name, in any order."""
    x = rand(KeyGen(4)(), (8, 3, 16, 2), jnp.complex128)
    W = Wavelet("Nx C Ny B", "Ny Nx", wavelet="db2", level=2)
    ellipsis = Wavelet("... Nx Ny", "Nx Ny", wavelet="db2", level=2)
    xt = jnp.moveaxis(x, (0, 2), (-2, -1))  # (C, B, Nx, Ny)
    y, yt = jax.jit(lambda x, xt: (W(x), ellipsis(xt)))(x, xt)
    assert_close(y, reference(x, "db2", 2, (0, 2)), jnp.complex128)
    assert_close(yt, jnp.moveaxis(y, (0, 2), (-2, -1)), jnp.complex128)
    assert_close(yt, reference(xt, "db2", 2, (-2, -1)), jnp.complex128)


def test_functional_kernels_match_the_operator():
    x = rand(KeyGen(5)(), (4, 8, 8), jnp.float64)
    W = Wavelet("C Nx Ny", "Nx Ny", wavelet="sym4", level=2)
    y, z, Wx, WHx = jax.jit(
        lambda x: (
            wavelet_transform(x, (-2, -1), 2, "sym4"),
            wavelet_transform_adjoint(x, (1, 2), 2, "sym4"),
            W(x),
            W.H(x),
        )
    )(x)
    assert_close(y, Wx, jnp.float64)
    assert_close(z, WHx, jnp.float64)


@pytest.mark.parametrize(
    "shape, wavelet, want",
    [
        ((64, 32), "db2", 3),  # PyWavelets' dwt_max_level(32, 4)
        ((48,), "haar", 4),  # dwt_max_level(48, 2) = 5, but 48 = 3 * 2**4
        ((4, 8), "db4", 1),  # dwt_max_level(4, 8) = 0: at least one level
    ],
)
def test_default_level(shape, wavelet, want):
    x = rand(KeyGen(6)(), shape, jnp.float64)
    W = Wavelet(jl.Dim("ABC")[: len(shape)], wavelet=wavelet)
    axes = tuple(range(len(shape)))
    y = jax.jit(W)(x)
    assert_close(y, reference(x, wavelet, want, axes), jnp.float64)
    if want == pywt.dwt_max_level(min(shape), len(pywt_filters(wavelet)[0])):
        assert_close(y, reference(x, wavelet, None, axes), jnp.float64)


def test_gradient_of_a_sparsity_penalty():
    """$\\nabla_x \\|W x\\|_1 = W^H \\mathrm{sign}(W x)$ (conjugated: JAX's convention);
    the contract checks jit, vmap and grad against dense matrices on small cases."""
    W = Wavelet("C Nx Ny", "Nx Ny", wavelet="db4", level=2)
    x = rand(KeyGen(7)(), (2, 8, 8), jnp.complex64)
    g, want = jax.jit(
        lambda v: (jax.grad(lambda u: jnp.sum(jnp.abs(W(u))))(v), W.H(jnp.sign(W(v))))
    )(x)
    assert g.dtype == jnp.complex64
    assert_close(g, jnp.conj(want), jnp.complex64)


def test_numpy_integer_level():
    W = Wavelet("N", wavelet="haar", level=np.int64(2))
    assert W.level == 2 and type(W.level) is int


def test_integer_input_is_transformed_in_floating_point():
    y = Wavelet("N", wavelet="haar", level=1)(jnp.arange(4))
    np.testing.assert_allclose(np.asarray(y), np.array([1, 5, -1, -1]) / np.sqrt(2), rtol=1e-6)


@pytest.mark.parametrize(
    "shape, level, match",
    [
        (
            (12,),
            3,
            r"`Wavelet\(level=3\)` needs .* multiple of 2\*\*level = 8 .* got sizes \(12,\)",
        ),
        ((9,), None, r"`Wavelet\(level=None\)` \(the default, here 1\) .* sizes \(9,\)"),
    ],
)
def test_sizes_that_do_not_allow_the_level_raise(shape, level, match):
    with pytest.raises(ValueError, match=match):
        Wavelet("N", level=level)(jnp.zeros(shape))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"wavelet": "coif1"}, ValueError, r"`Wavelet\(wavelet=...\)` must be 'haar', .*'coif1'"),
        ({"wavelet": "db11"}, ValueError, r"'db1' to 'db10' .*got 'db11'"),
        ({"wavelet": "sym1"}, ValueError, r"'sym2' to 'sym10'.*got 'sym1'"),
        ({"wavelet": 4}, ValueError, r"got 4\."),
        ({"wavelet": "db04"}, ValueError, r"got 'db04'"),
        ({"level": -1}, ValueError, r"`Wavelet\(level=...\)` must be at least 0; got -1"),
        ({"level": 1.0}, TypeError, r"expects an int or None; got 1.0"),
        ({"level": True}, TypeError, r"expects an int or None; got True"),
        ({"mode": "symmetric"}, ValueError, r"only 'periodization' .*got 'symmetric'"),
        ({"dims": "Nz"}, ValueError, r"`dims` must be distinct named dims of `ishape`"),
        ({"dims": "Nx Nx"}, ValueError, r"`dims` must be distinct named dims"),
        ({"dims": "..."}, ValueError, r"`dims` must be distinct named dims"),
    ],
)
def test_bad_arguments_raise(kwargs, error, match):
    with pytest.raises(error, match=match):
        Wavelet("... Nx Ny", **kwargs)


def test_bad_dims_raise():
    with pytest.raises(ValueError, match=r"transforms no dim: pass `dims`"):
        Wavelet("...")
    with pytest.raises(ValueError, match=r"the dims of `ishape` must be distinct"):
        Wavelet("Nx Nx")
