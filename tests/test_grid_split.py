"""Splitting the image grid by domain decomposition (`jaxlinops.sharding._grid`) across
2, 3 and 8 of the simulated devices, with even and ragged slabs, in 1-D, 2-D and 3-D:

- a Cartesian SENSE operator split along `Nx` (distributed FFTs);
- a `Convolution` (zero and circular padding, 1-D and 2-D kernels: halo exchange);
- `Crop @ Identity @ Diagonal @ Pad` (slab transposes around the resizes, a renaming),
  `Truncate @ Diagonal @ PadDim` (resizes at the end of the dim) and
  `Crop @ FFT.H @ Diagonal @ FFT @ Pad`, the structure of the Toeplitz normal of a
  NUFFT, which is tested too;

each equals a numpy reference (forward, adjoint and normal, from one compiled program per
case), passes the dot test on those outputs, solves as on one device (CG) and keeps its
data split (no all-gather in the compiled program). A split not covered (a 1-D FFT of
the split dim) is refused with an error naming the operator.

References, all numpy on the whole array: the SENSE operator from its maps and mask, the
dense matrix of the convolution (built entry by entry), the resize chains with numpy's
padding, slicing and FFT (the Toeplitz normal's from its own kernel: its leaves are that
chain, tested against the NUFFT elsewhere).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split as split, rand, rtol

import jaxlinops as jl

C128 = jnp.complex128


def check_split(A, devices, dim, x, y, forward, adjoint):
    """`A` split along `dim` over `devices`: its forward, adjoint and normal, from one
    compiled program, equal the numpy `forward`, `adjoint` and `adjoint(forward)`, and
    pass the dot test $\\langle y, B x\\rangle = \\langle B^H y, x\\rangle$. Returns the
    outputs."""
    B = split(A, devices, dim)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    Ax = forward(np.asarray(x))
    for g, want in zip(got, (Ax, adjoint(np.asarray(y)), adjoint(Ax))):
        assert_close(g, want, C128)
    x, y, Bx, BHy = (np.asarray(a) for a in (x, y, *got[:2]))
    lhs, rhs = np.vdot(y, Bx), np.vdot(BHy, x)
    scale = np.linalg.norm(y) * np.linalg.norm(Bx) + np.linalg.norm(BHy) * np.linalg.norm(x)
    assert abs(lhs - rhs) <= rtol(C128) * scale, (lhs, rhs)
    return got


def centered(z, axes, inverse=False):
    """numpy's centered orthonormal DFT over `axes` (the FFT of `jl.FFT(centered=True)`)."""
    fn = np.fft.ifftn if inverse else np.fft.fftn
    z = np.fft.ifftshift(z, axes=axes)
    return np.fft.fftshift(fn(z, axes=axes, norm="ortho"), axes=axes)


# -- distributed FFTs: Cartesian SENSE -----------------------------------------------------


def sense(shape, coils=3, seed=0):
    """mask @ centered FFT @ coil maps: (Nx, Ny[, Nz]) -> (C, Kx, Ky[, Kz]), and its
    forward and adjoint with numpy."""
    grid = ("Nx", "Ny", "Nz")[: len(shape)]
    kspace = ("Kx", "Ky", "Kz")[: len(shape)]
    maps = rand(seed, (coils, *shape))
    mask = np.random.default_rng(seed).random(shape) < 0.6
    fft = jl.FFT(len(shape), "C", centered=True)
    A = (
        jl.Diagonal(jnp.asarray(mask, jnp.float64), ("C", *kspace), "C")
        @ fft
        @ jl.Dense(maps, ("C", *grid), grid, ("C", *grid))
    )
    axes, s = tuple(range(1, len(shape) + 1)), np.asarray(maps)

    def forward(x):
        return mask * centered(s * x, axes)

    def adjoint(y):
        return np.sum(s.conj() * centered(mask * y, axes, inverse=True), axis=0)

    return A, forward, adjoint


@pytest.mark.parametrize(
    "shape, devices",
    [((8, 6), 2), ((10, 6), 3), ((10, 12), 8), ((6, 4, 5), 3)],
    ids=["2d-even-2", "2d-ragged-3", "2d-ragged-8", "3d-ragged-3"],
)
def test_grid_split_sense_equals_numpy(shape, devices):
    A, forward, adjoint = sense(shape)
    x, y = rand(1, shape), rand(2, (3, *shape))
    got = check_split(A, devices, "Nx", x, y, forward, adjoint)
    if shape[1] % devices == 0:  # (ragged outputs are resharded when their padding is cut)
        # the forward output stays split, along the dim the FFT moved the split to (Ky)
        assert got[0].sharding.spec[2] == "Nx" and len(got[0].sharding.device_set) == devices


def test_cg_on_a_grid_split_normal_solves_as_on_one_device():
    shape = (10, 6)
    A, forward, adjoint = sense(shape)
    y = adjoint(np.asarray(rand(3, (3, *shape))))
    # the regularised normal as a dense numpy matrix, column by column
    columns = np.eye(math.prod(shape)).reshape(-1, *shape)
    N = np.stack([np.ravel(adjoint(forward(e)) + 0.1 * e) for e in columns], axis=1)
    want = np.linalg.solve(N, y.ravel()).reshape(shape)

    def solve(op, y):
        N = op.N + 0.1 * jl.Identity(("Nx", "Ny"), op.N.oshape)
        return jl.alg.conjugate_gradients(N, y, max_num_iters=50, gtol=1e-12)

    # CG stops at a residual of 1e-12 |y|; the condition number (< 1e3 here) bounds how
    # far from the exact solution that leaves it
    got = jax.jit(solve)(split(A, 3), jnp.asarray(y))
    scale = float(np.max(np.abs(want)))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8 * scale)


def test_compiled_normal_transposes_and_never_gathers_the_grid():
    """The normal of a 64x48 SENSE operator over 8 devices: its program exchanges blocks
    (`all-to-all`), gathers nothing, and each device's temporaries are a fraction of the
    whole coil images (a gather would need all of them on every device)."""
    A, _, _ = sense((64, 48), coils=4)
    B = split(A, 8)
    x = rand(4, (64, 48))
    compiled = jax.jit(lambda B, x: B.N(x)).lower(B, x).compile()
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text
    whole = 4 * 64 * 48 * 16  # the coil images, complex128
    assert compiled.memory_analysis().temp_size_in_bytes < 0.5 * whole


def test_a_1d_fft_of_the_split_dim_is_refused_by_name():
    """A distributed FFT trades the split with another transformed dim: a 1-D FFT has none."""
    A = jl.FFT(1, "C") @ jl.Diagonal(rand(0, (2, 9)), ("C", "Nx"))
    with pytest.raises(ValueError, match=r"FFT transforms only the split dim 'Nx'.*second"):
        split(A, 3)


def test_resizing_the_split_dim_of_a_1d_array_is_refused():
    """Moving the edge slabs of a `Pad` trades the split with another dim: a 1-D array
    has none."""
    B = split(jl.Pad((15,), (9,)), 3)
    with pytest.raises(ValueError, match=r"Pad resizes the split dim 'Nx' of a 1-D array"):
        B(rand(1, (9,)))


def test_more_slabs_than_devices_is_refused():
    A, _, _ = sense((8, 6))
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
    forward, adjoint = conv_reference(A, grid, mode == "circular")
    check_split(A, devices, dim, rand(1, (2, *grid)), rand(2, (2, *grid)), forward, adjoint)


def test_compiled_convolution_exchanges_halos_and_never_gathers():
    A = conv_chain((5, 3), (16, 6), "circular")
    B = split(A, 8)
    text = jax.jit(lambda B, x: B.N(x)).lower(B, rand(3, (2, 16, 6))).compile().as_text()
    assert "collective-permute" in text and "all-gather" not in text


# -- slab transposes: Pad, Crop and the Toeplitz normal -------------------------------------


def window(grid, padded):
    """The centered window of `grid` in `padded` (the entries a Pad fills)."""
    return tuple(slice(p // 2 - n // 2, p // 2 - n // 2 + n) for n, p in zip(grid, padded))


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


def embedded_reference(kernel, grid, padded):
    """`embedded` with numpy: zero padding into the centered window, the centered
    orthonormal FFTs, the kernel, the window; and its adjoint (the kernel conjugated)."""
    axes, inside = tuple(range(len(grid))), window(grid, padded)

    def apply(x, kernel):
        z = np.zeros(padded, x.dtype)
        z[inside] = x
        return centered(kernel * centered(z, axes), axes, inverse=True)[inside]

    return functools.partial(apply, kernel=kernel), functools.partial(apply, kernel=kernel.conj())


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
    forward, adjoint = embedded_reference(np.asarray(A.flatten()[2].weight), grid, padded)
    check_split(A, devices, dim, rand(1, grid), rand(2, grid), forward, adjoint)


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
def test_grid_split_crop_rename_weight_pad_equals_numpy(grid, padded, devices, dim):
    """`Crop @ Identity @ Diagonal @ Pad`, a weight on the padded grid and a renaming of
    the padded dims (the split moves to the new name): unlike a circular convolution
    between the resizes, the weight is not shift invariant, so each resize must center
    exactly."""
    batch = ("C",) if grid[0] == 2 else ()
    image = ("Nx", "Ny")[: len(grid) - len(batch)]
    pad, renamed = ("Px", "Py")[: len(image)], ("Qx", "Qy")[: len(image)]
    out = ("Mx", "My")[: len(image)]
    small, big = grid[len(batch) :], padded[len(batch) :]
    weight = rand(3, big)
    A = jl.Chain(
        jl.Pad(big, small, image, pad, batch),
        jl.Diagonal(weight, batch + pad, batch),
        jl.Identity(batch + pad, batch + renamed),
        jl.Crop(small, big, renamed, out, batch),
    )
    w = np.asarray(weight)[(Ellipsis, *window(small, big))]  # the weights the image lands on
    forward, adjoint = (lambda x: w * x), (lambda y: w.conj() * y)
    check_split(A, devices, dim, rand(1, grid), rand(2, grid), forward, adjoint)


@pytest.mark.parametrize(
    "grid, padded, kept, devices",
    [
        ((10, 6), 16, 12, 8),  # 10 over 8: slabs of 2 on 5 devices; 16 and 12 over 8
        ((9, 5), 14, 11, 3),  # ragged slabs
        ((7, 6), 7, 4, 3),  # PadDim keeps the size (no transposes), Truncate crops
    ],
    ids=["ragged-8", "ragged-3", "truncate-only-3"],
)
def test_grid_split_paddim_weight_truncate_equals_numpy(grid, padded, kept, devices):
    """`Truncate @ Diagonal @ PadDim` split along the dim they resize at its end (the
    `Resize` form they declare, with the window at entry 0: no operator class of theirs
    is known to the sharding layer), the weight not shift invariant."""
    n, ny = grid
    weight = rand(4, (padded, ny))
    A = jl.Chain(
        jl.PadDim(0, n, padded, ("Nx", "Ny"), ("Px", "Ny")),
        jl.Diagonal(weight, ("Px", "Ny")),
        jl.Truncate(0, padded, kept, ("Px", "Ny"), ("Mx", "Ny")),
    )
    w = np.asarray(weight)

    def forward(x):
        z = np.zeros((padded, ny), x.dtype)
        z[:n] = x
        return (w * z)[:kept]

    def adjoint(y):
        z = np.zeros((padded, ny), y.dtype)
        z[:kept] = y
        return (w.conj() * z)[:n]

    check_split(A, devices, "Nx", rand(1, grid), rand(2, (kept, ny)), forward, adjoint)


def test_grid_split_truncate_with_a_batch_dim_to_trade_with():
    """A 1-D `Truncate` (`dim=-1`, after `"..."`) split along the truncated dim over 8
    devices: the slabs trade places with the batch dim (coils) while it is truncated."""
    A = jl.Truncate(-1, 20, 13, ("...", "C", "Nx"), ("...", "C", "Mx"))
    x, y = rand(1, (3, 20)), rand(2, (3, 13))
    check_split(A, 8, "Nx", x, y, lambda x: x[:, :13], lambda y: np.pad(y, ((0, 0), (0, 7))))


@functools.cache
def toeplitz_normal(grid, points=30, seed=6):
    """The Toeplitz normal of a NUFFT on `grid`, and its forward with numpy (self adjoint)."""
    locs = np.random.default_rng(seed).uniform(-grid[0] / 2, grid[0] / 2, (points, len(grid)))
    T = jl.NUFFT(locs, grid, "R", toeplitz=True, backend="jax").N
    kernel = np.asarray(T.flatten()[2].weight)  # over the whole embedded grid
    return T, embedded_reference(kernel, grid, kernel.shape)[0]


@pytest.mark.parametrize("devices", [2, 3, 8])
def test_grid_split_toeplitz_normal_equals_numpy(devices):
    T, forward = toeplitz_normal((10, 7))
    check_split(T, devices, "Nx", rand(1, (10, 7)), rand(2, (10, 7)), forward, forward)


def test_compiled_toeplitz_normal_transposes_and_never_gathers_the_grid():
    """A 32x24 image's Toeplitz normal (a 64x48 embedded grid) over 8 devices: the program
    exchanges slabs (`all-to-all`), gathers nothing, each device's temporaries are a
    fraction of the embedded grid (a gather would need all of it on every device), and
    it computes the normal."""
    T, forward = toeplitz_normal((32, 24), points=200)
    B = split(T, 8)
    x = rand(4, (32, 24))
    compiled = jax.jit(lambda B, x: B(x)).lower(B, x).compile()
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text
    whole = 64 * 48 * 16  # the embedded grid, complex128
    assert compiled.memory_analysis().temp_size_in_bytes < 0.5 * whole
    assert_close(compiled(B, x), forward(np.asarray(x)), C128)


@pytest.mark.parametrize("devices", [3, 8])
def test_fft_and_convolution_alone_split_at_the_input_size(devices):
    """An FFT or a `Convolution` alone fixes no size of its grid: the spec's grid dim is
    split over all its devices, in slabs of the input's size (10 over 3 or 8: ragged, and
    devices 5-7 hold nothing on 8)."""
    x, y = rand(1, (2, 10, 6)), rand(2, (2, 10, 6))
    spec = jl.BatchSpec({"Nx": 4}, device_matrix=jax.devices()[:devices])
    F = jl.FFT(2, centered=True)
    assert F.size("Nx") is None
    B = jl.create_batched_linop(F, spec)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    got = jax.jit(lambda B, x, y: (B(x), B.H(y)))(B, x, y)
    assert_close(got[0], centered(np.asarray(x), (1, 2)), C128)
    assert_close(got[1], centered(np.asarray(y), (1, 2), inverse=True), C128)
    K = jl.Convolution(rand(3, (3, 4)), "C", ("Nx", "Ny"), ("Mx", "My"), padding_mode="circular")
    assert K.size("Nx") is None
    M = conv_matrix(K.kernel, (10, 6), circular=True)
    got = jax.jit(lambda B, x, y: (B(x), B.H(y)))(jl.create_batched_linop(K, spec), x, y)
    assert_close(got[0], (np.reshape(x, (2, -1)) @ M.T).reshape(x.shape), C128)
    assert_close(got[1], (np.reshape(y, (2, -1)) @ M.conj()).reshape(y.shape), C128)
