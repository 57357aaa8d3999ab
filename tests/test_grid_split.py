"""Splitting the image grid by domain decomposition (`jaxlinops.sharding._grid`) across
2, 3 and 8 of the simulated devices, with even and ragged slabs, in 1-D, 2-D and 3-D:

- a Cartesian SENSE operator split along `Nx` (distributed FFTs);
- a `Convolution` (zero and circular padding, 1-D and 2-D kernels: halo exchange);
- `Crop @ FFT.H @ Diagonal @ FFT @ Pad` (slab transposes around the resizes) and the
  Toeplitz normal of a NUFFT, which has exactly that structure;

each equals the operator (forward, adjoint, normal, a CG solve), passes the dot test and
keeps its data split (no all-gather in the compiled program). Couplings not covered (the
NUFFT's gridding, a halo wider than a slab) are refused with an error naming the operator.

References: dense numpy matrices of the convolution and of the resize chain (built entry
by entry and with numpy's FFT), the unsplit operator for SENSE and the Toeplitz normal
(themselves tested against numpy elsewhere).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops.testing import assert_adjoint

C128 = jnp.complex128


def sense(shape, coils=3, seed=0):
    """mask @ centered FFT @ coil maps: (Nx, Ny[, Nz]) -> (C, Kx, Ky[, Kz])."""
    grid = ("Nx", "Ny", "Nz")[: len(shape)]
    kspace = ("Kx", "Ky", "Kz")[: len(shape)]
    maps = jl.Dense(rand(seed, (coils, *shape)), ("C", *grid), grid, ("C", *grid))
    fft = jl.FFT(len(shape), "C", centered=True)
    mask = np.random.default_rng(seed).random(shape) < 0.6
    return jl.Diagonal(jnp.asarray(mask, jnp.float64), ("C", *kspace), "C") @ fft @ maps


def split(A, devices, dim="Nx"):
    n = A.size(dim)
    spec = jl.BatchSpec({dim: -(-n // devices)}, device_matrix=jax.devices()[:devices])
    return jl.create_batched_linop(A, spec)


@pytest.mark.parametrize(
    "shape, devices",
    [((8, 6), 2), ((10, 6), 3), ((10, 12), 8), ((6, 4, 5), 3)],
    ids=["2d-even-2", "2d-ragged-3", "2d-ragged-8", "3d-ragged-3"],
)
def test_grid_split_sense_equals_the_operator(shape, devices):
    A = sense(shape)
    B = split(A, devices)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    x, y = rand(1, shape), rand(2, (3, *shape))
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    for g, want in zip(got, (A(x), A.H(y), A.N(x))):
        assert_close(g, want, C128)
    if shape[1] % devices == 0:  # (ragged outputs are resharded when their padding is cut)
        # the forward output stays split, along the dim the FFT moved the split to (Ky)
        assert got[0].sharding.spec[2] == "Nx" and len(got[0].sharding.device_set) == devices
    assert_adjoint(B, x, y)


def test_cg_on_a_grid_split_normal_solves_as_on_one_device():
    A = sense((10, 6))
    B = split(A, 3)
    y = A.H(rand(3, (3, 10, 6)))

    def solve(op):
        N = op.N + 0.1 * jl.Identity(("Nx", "Ny"), op.N.oshape)
        return jl.alg.conjugate_gradients(N, y, max_num_iters=50, gtol=1e-12)

    # both solves stop at a residual of 1e-12; the condition number (< 1e3 here) bounds
    # how far apart that leaves them
    want = solve(A)
    scale = float(jnp.max(jnp.abs(want)))
    np.testing.assert_allclose(jax.jit(solve)(B), want, rtol=0, atol=1e-8 * scale)


def test_compiled_normal_transposes_and_never_gathers_the_grid():
    """The normal of a 64x48 SENSE operator over 8 devices: its program exchanges blocks
    (`all-to-all`), gathers nothing, and each device's temporaries are a fraction of the
    whole coil images (a gather would need all of them on every device)."""
    A = sense((64, 48), coils=4)
    B = split(A, 8)
    x = rand(4, (64, 48))
    compiled = jax.jit(lambda B, x: B.N(x)).lower(B, x).compile()
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text
    whole = 4 * 64 * 48 * 16  # the coil images, complex128
    assert compiled.memory_analysis().temp_size_in_bytes < 0.5 * whole


@pytest.mark.parametrize("case", ["nufft", "interpolate", "wide-halo"])
def test_couplings_not_covered_are_refused_by_name(case):
    rng = np.random.default_rng(5)
    if case == "nufft":  # gridding onto the split grid: the points are not bucketed yet
        A = jl.NUFFT(rng.uniform(-4, 4, (20, 2)), (8, 8), "R")
        match = r"NUFFT.*couples it \(global\).*grid dim 'Nx'"
    elif case == "interpolate":  # a halo, but indexed along the grid: not shift invariant
        A = jl.Interpolate(rng.uniform(0, 7, (6, 2)), (8, 8), None, "K", width=3.0)
        match = r"Interpolate.*grid dim 'Nx' within a halo of 2 but fixes its size \(8\)"
    else:  # a halo of 3 wraps from the last slab, which holds 2 of the 10 entries
        A = conv_chain((7,), (10,), "circular")
        match = r"Convolution.*within a halo of 3, more than the 2 entries"
    with pytest.raises(ValueError, match=match):
        split(A, 3)


def test_resizing_the_split_dim_of_a_1d_array_is_refused():
    """Moving the edge slabs of a `Pad` trades the split with another dim: a 1-D array
    has none."""
    B = split(jl.Pad((15,), (9,)), 3)
    with pytest.raises(ValueError, match=r"Pad resizes the split dim 'Nx' of a 1-D array"):
        B(rand(1, (9,)))


def test_more_slabs_than_devices_is_refused():
    A = sense((8, 6))
    spec = jl.BatchSpec({"Nx": 1}, device_matrix=jax.devices()[:2])
    with pytest.raises(ValueError, match=r"one slab per device.*at least 4"):
        jl.create_batched_linop(A, spec)


# -- halo exchange: Convolution ------------------------------------------------------------


def conv_chain(kernel_shape, grid, mode, seed=0):
    """Convolution @ Diagonal (a weight over the grid fixes its size) over `C` + grid."""
    names = ("Nx", "Ny")[: len(grid)]
    kernel = rand(seed, kernel_shape)
    K = jl.Convolution(kernel, "C", names, ("Mx", "My")[: len(grid)], padding_mode=mode)
    return K @ jl.Diagonal(rand(seed + 1, grid), ("C", *names), "C")


def conv_matrix(kernel, grid, circular):
    """The dense matrix of $y[n] = \\sum_j h[j]\\, x[n - j + c]$ ($c = k // 2$ per axis) on
    `grid`, zero or periodic outside: entry by entry, with numpy."""
    h = np.asarray(kernel)
    M = np.zeros((math.prod(grid),) * 2, h.dtype)
    for m in np.ndindex(*grid):
        for j in np.ndindex(*h.shape):
            n = [mi + ji - k // 2 for mi, ji, k in zip(m, j, h.shape)]
            if circular:
                n = [ni % g for ni, g in zip(n, grid)]
            elif not all(0 <= ni < g for ni, g in zip(n, grid)):
                continue
            M[np.ravel_multi_index(n, grid), np.ravel_multi_index(m, grid)] += h[j]
    return M


def conv_reference(A, grid, circular):
    """Forward and adjoint of `conv_chain` from its kernel and weight, with numpy."""
    K, D = A.flatten()[::-1]
    M = conv_matrix(K.kernel, grid, circular) @ np.diag(np.ravel(np.asarray(D.weight)))

    def forward(x):
        return (np.reshape(x, (x.shape[0], -1)) @ M.T).reshape(x.shape)

    def adjoint(y):
        return (np.reshape(y, (y.shape[0], -1)) @ M.conj()).reshape(y.shape)

    return forward, adjoint


@pytest.mark.parametrize(
    "kernel, grid, devices, mode, dim",
    [
        ((3,), (9,), 8, "zeros", "Nx"),  # slabs of 2 on 5 devices, the last holding 1
        ((4,), (11,), 3, "circular", "Nx"),  # an even kernel; the last slab holds 3
        ((3, 4), (8, 5), 2, "circular", "Nx"),
        ((5, 3), (7, 6), 2, "zeros", "Nx"),  # halo 2, the last slab holds 3
        ((3, 3), (10, 6), 3, "zeros", "Nx"),
        ((5, 2), (10, 6), 8, "circular", "Nx"),  # halo 2 = the slab, wrapping from device 4
        ((2, 5), (5, 10), 3, "circular", "Ny"),  # split along the second grid dim
    ],
    ids=["1d-zeros-8", "1d-circular-3", "2d-circular-2", "2d-zeros-2", "2d-zeros-3",
         "2d-circular-8", "2d-ny-3"],
)  # fmt: skip
def test_grid_split_convolution_equals_the_dense_matrix(kernel, grid, devices, mode, dim):
    A = conv_chain(kernel, grid, mode)
    B = split(A, devices, dim)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    forward, adjoint = conv_reference(A, grid, mode == "circular")
    x, y = rand(1, (2, *grid)), rand(2, (2, *grid))
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    want = (forward(np.asarray(x)), adjoint(np.asarray(y)), adjoint(forward(np.asarray(x))))
    for g, w in zip(got, want):
        assert_close(g, w, C128)
    assert_adjoint(B, x, y)


def test_compiled_convolution_exchanges_halos_and_never_gathers():
    A = conv_chain((5, 3), (16, 6), "circular")
    B = split(A, 8)
    text = jax.jit(lambda B, x: B.N(x)).lower(B, rand(3, (2, 16, 6))).compile().as_text()
    assert "collective-permute" in text and "all-gather" not in text


# -- slab transposes: Pad, Crop and the Toeplitz normal -------------------------------------


def embedded(grid, padded, seed=0):
    """Crop @ FFT.H @ Diagonal @ FFT @ Pad: the structure of a Toeplitz normal."""
    names, pad = ("Nx", "Ny", "Nz")[: len(grid)], ("Px", "Py", "Pz")[: len(grid)]
    kspace, out = ("Kx", "Ky", "Kz")[: len(grid)], ("Mx", "My", "Mz")[: len(grid)]
    fft = jl.FFT(len(grid), grid_shapes=(pad, kspace), centered=True)
    return jl.Chain(
        jl.Pad(padded, grid, names, pad),
        fft,
        jl.Diagonal(rand(seed, padded), kspace),
        fft.H,
        jl.Crop(grid, padded, pad, out),
    )


def embedded_reference(x, kernel, padded):
    """`embedded` with numpy: centered pad, centered orthonormal FFTs (fftshift of the
    FFT of the ifftshift), the kernel, the centered crop."""
    grid = x.shape
    before = [p // 2 - n // 2 for n, p in zip(grid, padded)]
    z = np.pad(x, [(b, p - n - b) for b, n, p in zip(before, grid, padded)])
    z = np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(z), norm="ortho"))
    z = np.fft.fftshift(np.fft.ifftn(np.fft.ifftshift(kernel * z), norm="ortho"))
    return z[tuple(slice(b, b + n) for b, n in zip(before, grid))]


@pytest.mark.parametrize(
    "grid, padded, devices, dim",
    [
        ((8, 6), (16, 12), 2, "Nx"),
        ((9, 7), (19, 14), 3, "Nx"),  # ragged slabs before and after; odd pad totals
        ((10, 6), (20, 12), 8, "Nx"),  # 10 over 8: slabs of 2 on 5 devices; 20: 3 on 7
        ((6, 9), (12, 17), 3, "Ny"),  # split along the second dim
        ((6, 5, 4), (12, 10, 8), 3, "Nx"),
    ],
    ids=["2d-2", "2d-ragged-3", "2d-ragged-8", "2d-ny-3", "3d-3"],
)
def test_grid_split_pad_fft_crop_equals_numpy(grid, padded, devices, dim):
    A = embedded(grid, padded)
    B = split(A, devices, dim)
    kernel = np.asarray(A.flatten()[2].weight)
    x, y = rand(1, grid), rand(2, grid)
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    forward = embedded_reference(np.asarray(x), kernel, padded)
    want = (
        forward,
        embedded_reference(np.asarray(y), kernel.conj(), padded),
        embedded_reference(forward, kernel.conj(), padded),
    )
    for g, w in zip(got, want):
        assert_close(g, w, C128)
    assert_adjoint(B, x, y)


@pytest.mark.parametrize(
    "grid, padded, devices, dim",
    [
        ((2, 9), (2, 15), 3, "Nx"),  # a 1-D resize with a batch dim C (2 coils) to trade with
        ((9, 7), (19, 14), 3, "Nx"),
        ((10, 6), (20, 11), 8, "Nx"),
        ((6, 9), (12, 17), 2, "Ny"),
        ((8, 6), (8, 11), 3, "Nx"),  # the split dim keeps its size: no transposes
    ],
    ids=["1d-batch-3", "2d-ragged-3", "2d-ragged-8", "2d-ny-2", "2d-same-3"],
)
def test_grid_split_crop_weight_pad_equals_numpy(grid, padded, devices, dim):
    """`Crop @ Diagonal @ Pad`, a weight on the padded grid: unlike a circular convolution
    between them, it is not shift invariant, so each resize must center exactly."""
    batch = ("C",) if grid[0] == 2 else ()
    image = ("Nx", "Ny")[: len(grid) - len(batch)]
    pad, out = ("Px", "Py")[: len(image)], ("Mx", "My")[: len(image)]
    small, big = grid[len(batch) :], padded[len(batch) :]
    weight = rand(3, big)
    A = jl.Chain(
        jl.Pad(big, small, image, pad, batch),
        jl.Diagonal(weight, batch + pad, batch),
        jl.Crop(small, big, pad, out, batch),
    )
    B = split(A, devices, dim)
    x, y = rand(1, grid), rand(2, grid)
    before = [p // 2 - n // 2 for n, p in zip(small, big)]
    window = (Ellipsis, *(slice(b, b + n) for b, n in zip(before, small)))
    w = np.asarray(weight)[window]  # the weights the image lands on
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    want = (w * np.asarray(x), w.conj() * np.asarray(y), np.abs(w) ** 2 * np.asarray(x))
    for g, v in zip(got, want):
        assert_close(g, v, C128)
    assert_adjoint(B, x, y)


def toeplitz_normal(grid, points=30, seed=6):
    locs = np.random.default_rng(seed).uniform(-grid[0] / 2, grid[0] / 2, (points, len(grid)))
    return jl.NUFFT(locs, grid, "R", toeplitz=True, backend="jax").N


@pytest.mark.parametrize("grid, devices", [((10, 7), 2), ((10, 7), 3), ((10, 7), 8)])
def test_grid_split_toeplitz_normal_equals_the_operator(grid, devices):
    T = toeplitz_normal(grid)
    B = split(T, devices)
    x, y = rand(1, grid), rand(2, grid)
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    for g, want in zip(got, (T(x), T.H(y), T.N(x))):
        assert_close(g, want, C128)
    assert_adjoint(B, x, y)


def test_compiled_toeplitz_normal_transposes_and_never_gathers_the_grid():
    """A 32x24 image's Toeplitz normal (a 64x48 embedded grid) over 8 devices: the program
    exchanges slabs (`all-to-all`), gathers nothing, and each device's temporaries are a
    fraction of the embedded grid (a gather would need all of it on every device)."""
    T = toeplitz_normal((32, 24), points=200)
    B = split(T, 8)
    compiled = jax.jit(lambda B, x: B(x)).lower(B, rand(4, (32, 24))).compile()
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text
    whole = 64 * 48 * 16  # the embedded grid, complex128
    assert compiled.memory_analysis().temp_size_in_bytes < 0.5 * whole
