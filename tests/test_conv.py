"""Convolution against numpy references: np.convolve, sums of shifted copies of the input
(zero-filled or periodic) and dense matrices built entry by entry."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl

RNG = np.random.default_rng(0)


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def sample(shape, dtype):
    """Random numpy data of `dtype` (complex entries for complex dtypes)."""
    x = crandn(*shape) if jnp.issubdtype(dtype, jnp.complexfloating) else crandn(*shape).real
    return x.astype(dtype)


def odd(h):
    """torchlinops' rule: an even kernel axis gets one trailing zero."""
    return np.pad(h, [(0, 1 - k % 2) for k in h.shape])


def shifted(x, offsets, circular):
    """`x[..., n - o]` over the trailing axes; zero outside the grid unless circular."""
    for axis, o in zip(range(x.ndim - len(offsets), x.ndim), offsets):
        if circular:
            x = np.roll(x, o, axis=axis)
        else:
            n, p = x.shape[axis], abs(o)
            pad = [(0, 0)] * x.ndim
            pad[axis] = (p, p)
            x = np.take(np.pad(x, pad), np.arange(n) + p - o, axis=axis)
    return x


def np_conv(x, h, circular):
    r"""$y[n] = \sum_j h[j]\, x[n - j + c]$ with $c = k // 2$ (odd-padded kernel)."""
    h = odd(np.asarray(h))
    c = np.array(h.shape) // 2
    y = np.zeros(np.shape(x), np.result_type(x, h))
    for j in np.ndindex(h.shape):
        y = y + h[j] * shifted(np.asarray(x), tuple(np.array(j) - c), circular)
    return y


def dense(h, grid, circular):
    """The matrix of the convolution on `grid`, entry by entry."""
    h = odd(np.asarray(h))
    c = np.array(h.shape) // 2
    M = np.zeros((int(np.prod(grid)),) * 2, complex)
    for n in np.ndindex(grid):
        for j in np.ndindex(h.shape):
            p = np.array(n) - np.array(j) + c
            if circular:
                p = p % np.array(grid)
            elif np.any(p < 0) or np.any(p >= np.array(grid)):
                continue
            M[np.ravel_multi_index(n, grid), np.ravel_multi_index(tuple(p), grid)] += h[j]
    return M


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex128])
def test_1d_matches_np_convolve(k, dtype):
    h, x = sample((k,), dtype), sample((2, 9), dtype)
    want = np.stack([np.convolve(row, odd(h), "same") for row in x])
    assert_close(jl.Convolution(h)(x), want, dtype)


@pytest.mark.parametrize("mode", ["zeros", "circular"])
@pytest.mark.parametrize("kshape, grid", [((3, 4), (5, 6)), ((2, 3, 3), (4, 5, 4))])
@pytest.mark.parametrize(
    "xdtype, kdtype",
    [
        (jnp.float32, jnp.float32),
        (jnp.complex128, jnp.float64),
        (jnp.float64, jnp.complex128),
    ],
)
def test_forward_matches_sum_of_shifts(mode, kshape, grid, xdtype, kdtype):
    h, x = sample(kshape, kdtype), sample((2, *grid), xdtype)
    y = jl.Convolution(h, padding_mode=mode)(x)
    assert y.dtype == jnp.result_type(np.result_type(x, h))
    dtype = jnp.float32 if jnp.float32 in (xdtype, kdtype) else jnp.float64
    assert_close(y, np_conv(x, h, mode == "circular"), dtype)


def test_zero_padding_with_kernel_larger_than_grid():
    h, x = crandn(7), crandn(3, 4)
    assert_close(jl.Convolution(h)(x), np_conv(x, h, circular=False), jnp.complex128)


@pytest.mark.parametrize(
    "kshape, grid, mode, wrap",
    [
        ((3,), (6,), "zeros", False),
        ((4,), (6,), "circular", False),
        ((3, 2), (4, 5), "zeros", False),
        ((2, 3), (4, 5), "circular", False),
        ((7,), (5,), "circular", True),
    ],
)
def test_forward_and_adjoint_match_dense_matrix(kshape, grid, mode, wrap):
    h = crandn(*kshape)
    M = dense(h, grid, mode == "circular")
    A = jl.Convolution(h, padding_mode=mode, wrap_kernel=wrap)
    x, y = crandn(*grid), crandn(*grid)
    assert_close(np.ravel(A(x)), M @ x.ravel(), jnp.complex128)
    assert_close(np.ravel(A.H(y)), M.conj().T @ y.ravel(), jnp.complex128)
    jl.testing.assert_adjoint(A, jnp.asarray(x), jnp.asarray(y))


@pytest.mark.parametrize("normal_mode", ["conv", "fft"])
@pytest.mark.parametrize("kshape, grid", [((3, 2), (4, 5)), ((5,), (6,)), ((4,), (4,))])
def test_normal_modes_are_exact(normal_mode, kshape, grid):
    h = crandn(*kshape)
    A = jl.Convolution(h, padding_mode="circular", normal_mode=normal_mode)
    x = crandn(2, *grid)
    M = dense(h, grid, circular=True)
    want = (M.conj().T @ M @ x.reshape(2, -1).T).T.reshape(x.shape)
    assert_close(A.N(x), want, jnp.complex128)
    assert_close(A.N(x), A.H(A(x)), jnp.complex128)
    default = jl.Convolution(h, padding_mode="circular").N
    assert (A.N.ishape, A.N.oshape) == (default.ishape, default.oshape)


def test_conv_normal_is_a_convolution_with_the_autocorrelation():
    h = crandn(2, 3)
    N = jl.Convolution(h, padding_mode="circular", normal_mode="conv").N
    assert isinstance(N, jl.Convolution)
    assert N.kernel.shape == (5, 5) and N.padding_mode == "circular"
    r = np.zeros((5, 5), complex)  # autocorrelation of the odd-padded (3, 3) kernel
    hp = odd(h)
    for s in np.ndindex(5, 5):
        for m in np.ndindex(3, 3):
            q = np.array(s) + np.array(m) - 2
            if np.all(q >= 0) and np.all(q < 3):
                r[s] += np.conj(hp[m]) * hp[tuple(q)]
    assert_close(N.kernel, r, jnp.complex128)


def test_fft_normal_of_real_data_is_real():
    A = jl.Convolution(RNG.standard_normal((3, 3)), padding_mode="circular", normal_mode="fft")
    x = RNG.standard_normal((4, 5))
    assert A.N(x).dtype == jnp.float64
    assert A.N.name == "Convolution.N"
    assert_close(A.N(x), A.H(A(x)), jnp.float64)


def test_normal_renames_like_the_default():
    h = crandn(3, 3)
    kwargs = dict(batch_shape="C", in_grid_shape="XY", out_grid_shape="UV")
    default = jl.Convolution(h, **kwargs).N
    for mode in ("conv", "fft"):
        N = jl.Convolution(h, padding_mode="circular", normal_mode=mode, **kwargs).N
        assert N.ishape == ("C", "X", "Y")
        assert N.oshape == default.oshape == ("C", "X1", "Y1")
    same = jl.Convolution(h, None, "XY", "XY", padding_mode="circular", normal_mode="conv")
    assert same.N.oshape == ("...", "X", "Y")


def test_normal_inside_a_chain():
    h = crandn(3)
    A = jl.Convolution(h, padding_mode="circular", normal_mode="conv")
    D = jl.Diagonal(jnp.asarray(crandn(6)), "...")
    x = crandn(2, 6)
    assert_close((D @ A).N(x), A.H(D.H(D(A(x)))), jnp.complex128)


def test_default_shapes():
    A = jl.Convolution(jnp.ones((3, 3)))
    assert A.ishape == ("...", "Nx", "Ny") and A.oshape == ("...", "Nx1", "Ny1")
    assert jl.Convolution(jnp.ones((3, 3, 3))).ishape == ("...", "Nx", "Ny", "Nz")
    B = jl.Convolution(jnp.ones(3), batch_shape="BC", in_grid_shape="Kx")
    assert B.ishape == ("B", "C", "Kx") and B.oshape == ("B", "C", "Kx1")


def test_even_kernel_gradient_has_the_kernel_shape():
    x = jnp.asarray(crandn(6))

    def f(h):
        return jnp.real(jnp.vdot(x, jl.Convolution(h, padding_mode="circular")(x)))

    assert jax.grad(f)(jnp.asarray(crandn(4))).shape == (4,)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(padding_mode="reflect"), r"`Convolution\(padding_mode=...\)` must be one of"),
        (dict(normal_mode="toeplitz"), r"`Convolution\(normal_mode=...\)` must be one of"),
        (dict(in_grid_shape="XYZ"), r"one dim per trailing kernel axis \(at most 2\), as many"),
        (dict(in_grid_shape="Y", batch_shape=()), r"convolves 1 batch axes too; got batch_shape"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jl.Convolution(jnp.ones((3, 3)), **kwargs)


@pytest.mark.parametrize("shape", [(), (2, 2, 2, 2)])
def test_kernel_needs_one_to_three_axes(shape):
    with pytest.raises(ValueError, match=r"must have 1 to 3 axes .* got a kernel of shape"):
        jl.Convolution(jnp.ones(shape))


@pytest.mark.parametrize("normal_mode, name", [("conv", "Conv"), ("fft", "FFT")])
def test_normal_mode_needs_circular_padding_when_the_normal_is_built(normal_mode, name):
    """As torchlinops: the operator is built, its normal refuses zero padding."""
    A = jl.Convolution(jnp.ones((3, 3)), normal_mode=normal_mode)
    assert A(jnp.ones((4, 4))).shape == (4, 4)
    match = rf"normal_mode='{normal_mode}'\)`.N: {name} normal mode only supports circular"
    with pytest.raises(ValueError, match=match):
        A.N


def test_circular_kernel_larger_than_grid():
    """A kernel larger than the grid wraps around it while its radius fits (torch's
    circular padding); a larger radius, or any kernel larger than the grid under an FFT,
    is refused."""
    x = crandn(2, 4, 2)
    h = crandn(3, 3)
    M = dense(h, (4, 2), circular=True)
    A = jl.Convolution(h, padding_mode="circular")
    assert_close(A(x).reshape(2, -1), (M @ x.reshape(2, -1).T).T, jnp.complex128)
    match = r"`{}`: with circular padding the grid_sizes must be at least the kernel's {}; got "
    match += r"a kernel of shape \({}\) and an array of shape \(2, 4, 2\) \(grid_sizes \(4, 2\)\)"
    radius = match.format("Convolution", "radius k // 2 on each axis", "7, 7")
    B = jl.Convolution(jnp.ones((7, 7)), padding_mode="circular", normal_mode="fft")
    with pytest.raises(ValueError, match=radius):
        B(x)
    with pytest.raises(ValueError, match=radius):
        B.H(x)
    whole = match.format(r"Convolution\.N", "shape", "3, 3")
    with pytest.raises(ValueError, match=whole):
        jl.Convolution(h, padding_mode="circular", normal_mode="fft").N(x)


def test_kernel_axes_beyond_the_grid_convolve_batch_axes():
    """A 3-axis kernel on a 2-dim grid convolves the last batch axis too, as torchlinops'
    Convolution (a 3-D convolution over the last three axes); that batch dim is not tiled."""
    h, x = crandn(3, 3, 2), crandn(2, 4, 5, 6)
    for mode in ("zeros", "circular"):
        A = jl.Convolution(h, in_grid_shape="XY", out_grid_shape="UV", padding_mode=mode)
        M = dense(h, (4, 5, 6), circular=mode == "circular")
        assert_close(A(x).reshape(2, -1), (M @ x.reshape(2, -1).T).T, jnp.complex128)
        assert_close(A.H(x).reshape(2, -1), (M.conj().T @ x.reshape(2, -1).T).T, jnp.complex128)
    B = jl.Convolution(h, batch_shape="B C", in_grid_shape="XY", out_grid_shape="UV")
    assert B.tiling().batch == ("B",)
    with pytest.raises(ValueError, match=r"cannot be split along dim 'C'"):
        B.split({"C": slice(0, 1)})
    with pytest.raises(ValueError, match=r"convolves the last 3 axes of its input"):
        jl.Convolution(h, in_grid_shape="XY")(jnp.ones((5, 6)))


def test_kernel_axes_beyond_the_grid_match_torchlinops():
    torch = pytest.importorskip("torch")
    conv = pytest.importorskip("torchlinops.linops.convolution")
    h, x = crandn(3, 2, 3), crandn(3, 6, 5)
    shapes = dict(in_grid_shape=("x", "y"), out_grid_shape=("x", "y"), padding_mode="circular")
    A, T = jl.Convolution(h, **shapes), conv.Convolution(torch.tensor(h), **shapes)
    for mine, theirs in ((A, T), (A.H, T.H)):
        assert_close(mine(x), theirs(torch.tensor(x)).numpy(), jnp.complex128)


# --------------------------------------------------------------- FFTConvolution
@pytest.mark.parametrize("kshape, grid", [((5,), (16,)), ((3, 2), (4, 5)), ((3, 3, 2), (4, 5, 3))])
def test_fft_convolution_matches_dense_matrix(kshape, grid):
    """Forward, adjoint and normal against the circular convolution's matrix, entry by
    entry; the normal is the |h^|^2 multiplier, not a chain."""
    h = crandn(*kshape)
    M = dense(h, grid, circular=True)
    A = jl.FFTConvolution(h, "B", in_grid_shape=("x", "y", "z")[: len(grid)])
    x, y = crandn(2, *grid), crandn(2, *grid)
    flat = (2, -1)
    assert_close(A(x).reshape(flat), (M @ x.reshape(flat).T).T, jnp.complex128)
    assert_close(A.H(y).reshape(flat), (M.conj().T @ y.reshape(flat).T).T, jnp.complex128)
    want = (M.conj().T @ M @ x.reshape(flat).T).T
    assert_close(A.N(x).reshape(flat), want, jnp.complex128)
    assert A.N.name == "Convolution.N"
    C = jl.Convolution(h, "B", A.in_grid_shape, padding_mode="circular")
    assert (A.N.ishape, A.N.oshape) == (C.N.ishape, C.N.oshape)
    jl.testing.assert_adjoint(A, jnp.asarray(x), jnp.asarray(y))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64, jnp.complex64])
def test_fft_convolution_keeps_real_data_real_and_any_grid(dtype):
    """Real kernel and input give a real output of their dtype; the grid size comes from
    the input (two sizes, one operator); a kernel larger than the grid is refused."""
    h = sample((3, 3), dtype)
    A = jl.FFTConvolution(h)
    assert A.size("Nx") is None and A.ishape == ("...", "Nx", "Ny")
    for grid in ((5, 4), (8, 8)):
        x = sample((2, *grid), dtype)
        got = A(x)
        assert got.dtype == dtype
        assert_close(got, np_conv(x, h, circular=True), dtype)
    with pytest.raises(ValueError, match=r"`FFTConvolution`: with circular padding the grid_s"):
        A(sample((2, 2), dtype))
    hf = np.fft.fftn(np.roll(np.pad(np.asarray(h), ((0, 5), (0, 5))), (-1, -1), (0, 1)))
    assert_close(A.fourier_kernel((8, 8)), hf, dtype)
    assert_close(A._get_fourier_kernel((8, 8)), hf, dtype)
    with pytest.raises(ValueError, match=r"grid_sizes \(2, 2\)"):
        A.fourier_kernel((2, 2))
    with pytest.raises(ValueError, match=r"`FFTConvolution\(kernel=...\)` must have 1 to 3"):
        jl.FFTConvolution(np.ones((2, 2, 2, 2)))


def test_fft_convolution_matches_torchlinops():
    torch = pytest.importorskip("torch")
    conv = pytest.importorskip("torchlinops.linops.convolution")
    h, x = crandn(3, 2), crandn(2, 6, 5)
    shapes = dict(batch_shape=("B",), in_grid_shape=("x", "y"), out_grid_shape=("u", "v"))
    A, T = jl.FFTConvolution(h, **shapes), conv.FFTConvolution(torch.tensor(h), **shapes)
    assert A.ishape == tuple(map(str, T.ishape)) and A.oshape == tuple(map(str, T.oshape))
    for mine, theirs in ((A, T), (A.H, T.H), (A.N, T.N)):
        assert_close(mine(x), theirs(torch.tensor(x)).numpy(), jnp.complex128)
