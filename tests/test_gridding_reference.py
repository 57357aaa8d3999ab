"""Every NUFFT and Interpolate factory (`tests/factories/nufft.py`, `interp.py`), forward and
adjoint, against independent numpy references built from the factory's option table:

- Interpolate: the kernel sum written from the documented formulas, one point and one
  grid neighbour at a time (`test_interp.ref_matrix`), at the documented defaults (width
  4, Kaiser–Bessel with beta 1, norm 1, circular padding) unless the table says otherwise.
- NUFFT: the documented pipeline (apodize, centered pad to floor(os N), centered
  orthonormal FFT, Kaiser–Bessel interpolation with the documented beta, division by
  w^D sqrt(prod N / prod Npad); or the nearest padded-grid point in sampling mode) as a
  dense numpy matrix, itself checked against the exact non-uniform DFT; the Toeplitz
  normal against the exact E^H W E.
"""

import factories.interp as interp_cases
import factories.nufft as nufft_cases
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import OPERATOR_FACTORIES, KeyGen, rand
from test_interp import ref_matrix
from test_nufft import dft_matrix, nufft_matrix, rel_err

import jaxlinops as jl

# Relative L2 error of a result against the reference: the Abramowitz–Stegun I0 in the
# kernels agrees with np.i0 to 2e-7; single precision adds rounding of about 1e-6.
TOL = {jnp.complex128: 1e-6, jnp.complex64: 1e-5, jnp.float32: 1e-5}
# The NUFFT against the exact DFT: about 7e-3 at (oversamp, width) = (1.25, 4), 7e-6 at
# (2, 6), worse on the tiny grids of the factories; the Toeplitz normal at (2, 4).
DFT_TOL = {(1.25, 4.0): 5e-2, (1.25, 3.0): 1e-1, (2.0, 6.0): 1e-4, (2.0, 4.0): 1e-2}


def check(name, dtype, forward, adjoint, x_points):
    """Compare factory `name` with the dense references `forward` ([B, *grid] ->
    [B, *points]) and `adjoint`; `x_points` is whether the factory's input is the points
    side (an adjoint factory)."""
    op, shape = OPERATOR_FACTORIES[name](KeyGen(0), dtype)
    x = rand(1, shape, dtype)
    y = rand(2, op(x).shape, dtype)
    want_fwd, want_adj = (adjoint, forward) if x_points else (forward, adjoint)
    assert rel_err(op(x), want_fwd(np.asarray(x))) <= TOL[dtype]
    assert rel_err(op.H(y), want_adj(np.asarray(y))) <= TOL[dtype]


def batched(matrix, in_shape, out_shape, batch):
    """`v -> matrix @ v` over the trailing `in_shape` axes, with a leading batch (or none)."""
    lead = () if batch is None else (batch,)

    def apply(v):
        return (v.reshape(lead + (-1,)) @ matrix.T).reshape(lead + tuple(out_shape))

    return apply


# ------------------------------------------------------------------ Interpolate
def interp_matrix(locs, grid, options):
    return ref_matrix(
        locs,
        grid,
        options.get("width", 4.0),
        options.get("kernel", "kaiser_bessel"),
        options.get("norm", 1),
        options.get("pad_mode", "circular"),
        beta=options.get("kernel_params", {}).get("beta", 1.0),
    )


def test_every_interp_factory_is_covered():
    names = {n for n in OPERATOR_FACTORIES if OPERATOR_FACTORIES[n].__module__.endswith("interp")}
    assert names == set(interp_cases.OPTIONS)


@pytest.mark.parametrize("dtype", [jnp.complex128, jnp.float32], ids=["c128", "f32"])
@pytest.mark.parametrize("name", sorted(interp_cases.OPTIONS))
def test_interp_factory_against_the_kernel_sum(name, dtype):
    options = interp_cases.OPTIONS[name]
    grid, points, batch = options["grid"], options["points"], options["batch"]
    locs = interp_cases.data(name, KeyGen(0), dtype)["locs"]
    M = interp_matrix(locs, grid, options)
    forward = batched(M, grid, points, batch)
    adjoint = batched(M.T, points, grid, batch)
    check(name, dtype, forward, adjoint, options.get("adjoint", False))


@pytest.mark.parametrize("pad_mode", ["circular", "zero"])
@pytest.mark.parametrize("norm", [1, 2])
@pytest.mark.parametrize("kernel", ["kaiser_bessel", "spline"])
def test_interpolate_operator_at_every_kernel_option(kernel, norm, pad_mode):
    """The operator (not only the functional form) at each kernel, norm and padding, with
    per-axis widths and a batch dim."""
    grid, width = (7, 6), (3.0, 2.5)
    locs = np.random.default_rng(3).uniform(0, 5, (2, 4, 2))
    params = {"beta": 2.5} if kernel == "kaiser_bessel" else None
    op = jl.Interpolate(
        locs, grid, "C", "R K", width=width, kernel=kernel, norm=norm, pad_mode=pad_mode,
        kernel_params=params,
    )  # fmt: skip
    M = ref_matrix(locs, grid, width, kernel, norm, pad_mode, beta=2.5)
    x, y = rand(4, (3, *grid)), rand(5, (3, 2, 4))
    assert rel_err(op(x), batched(M, grid, (2, 4), 3)(np.asarray(x))) <= 1e-6
    assert rel_err(op.H(y), batched(M.T, (2, 4), grid, 3)(np.asarray(y))) <= 1e-6


# ------------------------------------------------------------------ NUFFT
def test_every_nufft_factory_is_covered():
    names = {n for n in OPERATOR_FACTORIES if OPERATOR_FACTORIES[n].__module__.endswith("nufft")}
    assert names == set(nufft_cases.OPTIONS)


def _nufft_options(options):
    return {k: options[k] for k in ("oversamp", "width", "mode") if k in options}


TOEPLITZ = sorted(n for n, o in nufft_cases.OPTIONS.items() if o.get("toeplitz"))
PLAIN = sorted(set(nufft_cases.OPTIONS) - set(TOEPLITZ))


def _dft_tol(options):
    return DFT_TOL[options.get("oversamp", 1.25), options.get("width", 4.0)]


@pytest.mark.parametrize("dtype", [jnp.complex128, jnp.complex64], ids=["c128", "c64"])
@pytest.mark.parametrize("name", PLAIN)
def test_nufft_factory_against_the_numpy_pipeline(name, dtype):
    options = nufft_cases.OPTIONS[name]
    grid, points, batch = options["grid"], options["points"], options["batch"]
    locs = nufft_cases.data(name, KeyGen(0), dtype)["locs"]
    A = nufft_matrix(locs, grid, **_nufft_options(options))
    forward = batched(A, grid, points, batch)
    adjoint = batched(A.conj().T, points, grid, batch)
    check(name, dtype, forward, adjoint, options.get("adjoint", False))


@pytest.mark.parametrize("name", sorted(nufft_cases.OPTIONS))
def test_the_numpy_pipeline_is_the_dft(name):
    """The reference of the test above approximates the exact DFT (interpolate mode)."""
    options = nufft_cases.OPTIONS[name]
    if options.get("mode") == "sampling":
        return
    locs = nufft_cases.data(name, KeyGen(0), jnp.complex128)["locs"]
    A = nufft_matrix(locs, options["grid"], **_nufft_options(options))
    assert rel_err(A, dft_matrix(locs, options["grid"])) <= _dft_tol(options)


@pytest.mark.parametrize("dtype", [jnp.complex128, jnp.complex64], ids=["c128", "c64"])
@pytest.mark.parametrize("name", TOEPLITZ)
def test_nufft_toeplitz_factory_against_the_exact_dft(name, dtype):
    """E^H diag(dcf) E with the exact DFT E: the Toeplitz normal carries the NUFFT's error."""
    options = nufft_cases.OPTIONS[name]
    grid, batch = options["grid"], options["batch"]
    found = nufft_cases.data(name, KeyGen(0), dtype)
    E = dft_matrix(found["locs"], grid)
    normal = E.conj().T @ (found["dcf"].astype(np.float64).ravel()[:, None] * E)
    op, shape = OPERATOR_FACTORIES[name](KeyGen(0), dtype)
    x = rand(1, shape, dtype)
    assert rel_err(op(x), batched(normal, grid, grid, batch)(np.asarray(x))) <= _dft_tol(options)
    adjoint = batched(normal.conj().T, grid, grid, batch)(np.asarray(x))
    assert rel_err(op.H(x), adjoint) <= _dft_tol(options)
