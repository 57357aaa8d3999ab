"""Per-frame trajectories: a dim in both `batch_shape` and the point dims of `NUFFT` /
`Interpolate` pairs frame t of the input with `locs[t]`.

References: separate per-frame operators stacked, an exact non-uniform DFT (numpy), the
dot test, central finite differences (float64) and a dense per-frame `A_t^H W_t A_t`.
NUFFT comparisons with the exact DFT use (oversamp, width) = (2, 6), whose relative error
is about 7e-6: tolerances of 1e-4 leave a wide margin on every CPU.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from test_nufft import BACKENDS, dft_matrix, rel_err

import jaxlinops as jl
from jaxlinops.functional._gridding import point_order

C64, C128 = jnp.complex64, jnp.complex128
GRID = (6, 6)
T, R, C = 3, 5, 2
ACCURATE = {"oversamp": 2.0, "width": 6.0}


def frame_locs(seed, lead=(T,), npoints=R, dtype=np.float64):
    """Points `[*lead, npoints, 2]` in cycles per field of view, distinct per frame."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.5, 0.5, lead + (npoints, 2)) * np.array(GRID)).astype(dtype)


LOCS = frame_locs(0)


def per_frame_nufft(batch="C T", backend="jax", **kwargs):
    return jl.NUFFT(LOCS, GRID, "T R", batch_shape=batch, backend=backend, **kwargs)


def stacked(make, x, axis):
    """The operators `make(t)` applied frame by frame along `axis` of `x`, stacked there."""
    return jnp.stack([make(t)(jnp.take(x, t, axis)) for t in range(x.shape[axis])], axis)


def frame_dft(locs):
    """The exact DFT of each frame: `[T, R, prod(GRID)]`."""
    return np.stack([dft_matrix(frame, GRID) for frame in locs])


# ------------------------------------------------------------------ forward and adjoint
@pytest.mark.parametrize("batch", ["C T", "T C", "... T", "T ... C"])
def test_shapes_and_separate_nuffts(batch):
    """Each layout of the frame dim: ishape/oshape, forward and adjoint equal one NUFFT per
    frame, stacked along T."""
    A = per_frame_nufft(batch)
    axis = batch.replace(" ...", "").split().index("T")
    lead = (C, T) if axis else (T, C)
    assert A.ishape == A.batch_shape + ("Nx", "Ny")
    assert A.oshape == A.batch_shape + ("R",)
    assert A.size("T") == T and A.plan.order.shape == (T, R)
    x, y = rand(1, lead + GRID), rand(2, lead + (R,))

    def frame(t):
        return jl.NUFFT(LOCS[t], GRID, "R", batch_shape="B", backend="jax")

    assert_close(A(x), stacked(frame, x, axis), C128)
    assert_close(A.H(y), stacked(lambda t: frame(t).H, y, axis), C128)


def test_exact_dft_and_several_frame_dims():
    """Frame dims E T (locs [E, T, R, 2]) named in another order in batch_shape: each
    (e, t) entry is the exact DFT along locs[e, t]."""
    locs = frame_locs(3, lead=(2, T))
    A = jl.NUFFT(locs, GRID, "E T R", batch_shape="T C E", backend="jax", **ACCURATE)
    assert A.ishape == ("T", "C", "E", "Nx", "Ny") and A.oshape == ("T", "C", "E", "R")
    assert A.plan.order.shape == (2, T, R)
    x, y = rand(4, (T, C, 2) + GRID), rand(5, (T, C, 2, R))
    dft = np.stack([frame_dft(locs[e]) for e in range(2)])  # [E, T, R, prod(GRID)]
    want = np.einsum("etrn,tcen->tcer", dft, np.asarray(x).reshape(T, C, 2, -1))
    assert rel_err(A(x), want) < 1e-4
    want = np.einsum("etrn,tcer->tcen", dft.conj(), np.asarray(y)).reshape(x.shape)
    assert rel_err(A.H(y), want) < 1e-4


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_per_frame(backend):
    """Every backend grids frame by frame (pallas in its interpreter on a CPU)."""
    kwargs = {"eps": 1e-6} if backend == "finufft" else ACCURATE
    A = per_frame_nufft(backend=backend, **kwargs)
    assert A.plan.backend == backend
    x, y = rand(6, (C, T) + GRID), rand(7, (C, T, R))
    dft = frame_dft(LOCS)
    assert rel_err(A(x), np.einsum("trn,ctn->ctr", dft, np.asarray(x).reshape(C, T, -1))) < 1e-4
    want = np.einsum("trn,ctr->ctn", dft.conj(), np.asarray(y)).reshape(x.shape)
    assert rel_err(A.H(y), want) < 1e-4


def test_sampling_mode_per_frame():
    A = jl.SamplingNUFFT(LOCS, GRID, "T R", batch_shape="T")
    x = rand(8, (T,) + GRID)
    want = stacked(lambda t: jl.SamplingNUFFT(LOCS[t], GRID, "R"), x, 0)
    assert_close(A(x), want, C128)


@pytest.mark.parametrize(
    "real, dtype",
    [(False, np.float64), (True, np.float64), (False, np.float32), (True, np.float32)],
    ids=["c128", "f64", "c64", "f32"],
)
def test_dot_test(real, dtype):
    A = jl.NUFFT(LOCS.astype(dtype), GRID, "T R", batch_shape="C T")
    cdtype = C128 if dtype == np.float64 else C64
    x = rand(9, (C, T) + GRID, dtype if real else cdtype)
    jl.testing.assert_adjoint(A, x, rand(10, (C, T, R), cdtype))
    B = jl.Interpolate(LOCS.astype(dtype) + 3, GRID, "C T", "T R")
    jl.testing.assert_adjoint(B, x, rand(11, (C, T, R), dtype if real else cdtype))


def test_order_is_sorted_within_each_frame():
    """`plan.order` visits each frame's points by padded-grid cell, one frame at a time."""
    A = per_frame_nufft()
    locs, order = np.asarray(A.plan.locs), np.asarray(A.plan.order)
    padded = A.plan.padded_size
    for t in range(T):
        assert sorted(order[t]) == list(range(R))
        cells = np.floor(locs[t, order[t]]).astype(int) % padded
        keys = cells[:, 0] * padded[1] + cells[:, 1]
        assert np.all(np.diff(keys) >= 0)
    assert point_order(LOCS[None], GRID, 1).shape == (1, T * R)


# ------------------------------------------------------------------ transformations
def test_jit_vmap_and_grad_wrt_the_image():
    A = per_frame_nufft()
    x, y = rand(12, (C, T) + GRID), rand(13, (C, T, R))
    assert_close(jax.jit(lambda op, v: op(v))(A, x), A(x), C128)
    xs = jnp.stack([x, 2 * x])
    assert_close(jax.vmap(A)(xs), jnp.stack([A(x), A(2 * x)]), C128)
    # d/dx ||A x - y||^2 for a real x is 2 Re(A^H (A x - y))
    xr = jnp.real(x)
    grad = jax.grad(lambda v: jnp.sum(jnp.abs(A(v) - y) ** 2))(xr)
    assert_close(grad, 2 * jnp.real(A.H(A(xr) - y)), C128)


def test_grad_wrt_locs_matches_finite_differences():
    """Central differences in float64 with h = 1e-6 (cycles per FOV, entries of order 1):
    truncation error ~h^2 and rounding ~eps/h, both far below the 1e-4 tolerance."""
    x = rand(14, (T,) + GRID)

    def loss(locs):
        A = jl.NUFFT(locs, GRID, "T R", batch_shape="T", backend="jax")
        return jnp.sum(jnp.abs(A(x)) ** 2)

    direction = np.random.default_rng(15).standard_normal(LOCS.shape)
    h = 1e-6
    fd = (loss(LOCS + h * direction) - loss(LOCS - h * direction)) / (2 * h)
    for grad in (jax.grad(loss)(LOCS), jax.jit(jax.grad(loss))(LOCS)):
        assert abs(float(jnp.sum(grad * direction)) - float(fd)) <= 1e-4 * abs(float(fd))


# ------------------------------------------------------------------ Toeplitz normal
def dense_normal(x, weights):
    """sum_r A_t^H w[t, r] A_t x[c, t] with the exact per-frame DFTs."""
    dft = frame_dft(LOCS)
    k = np.einsum("trn,ctn->ctr", dft, np.asarray(x).reshape(C, T, -1))
    return np.einsum("trn,ctr->ctn", dft.conj(), weights * k).reshape(x.shape)


@pytest.mark.parametrize("inner, batch", [("none", "C T"), ("T R", "C T"), ("R", "C T"),
                                          ("C T R", "T C")])  # fmt: skip
def test_toeplitz_normal_one_kernel_per_frame(inner, batch):
    """A.N and A.normal(density weights): Pad, FFT, one kernel per frame, FFT.H, Crop; equal
    to the exact per-frame A_t^H W_t A_t."""
    A = per_frame_nufft(batch, toeplitz=True, **ACCURATE)
    rng = np.random.default_rng(16)
    weights = rng.uniform(0.5, 1.5, {"none": (), "T R": (T, R), "R": (R,), "C T R": (T, R)}[inner])
    if inner == "C T R":  # weights over (T, C, R), the same for each coil
        N = A.normal(jl.Diagonal(weights[:, None], "T C R"))
    else:
        N = A.N if inner == "none" else A.normal(jl.Diagonal(weights, inner))
    parts = N.flatten()
    assert not any(isinstance(op, jl.NUFFT) for op in parts)
    (kernel,) = [op for op in parts if isinstance(op, jl.Diagonal)]
    # one PSF per frame on the embedded 2N grid, aligned with the frame dim of the batch
    assert kernel.weight.shape == ((T, 12, 12) if batch == "C T" else (T, 1, 12, 12))
    x = rand(17, (C, T) + GRID)
    xb = x if batch == "C T" else jnp.swapaxes(x, 0, 1)
    got = N(xb) if batch == "C T" else jnp.swapaxes(N(xb), 0, 1)
    assert rel_err(got, dense_normal(x, 1.0 if inner == "none" else weights)) < 1e-4


# ------------------------------------------------------------------ split and sharding
def test_split_along_frames_and_points():
    A = per_frame_nufft()
    x, y = rand(18, (C, T) + GRID), rand(19, (C, T, R))
    tile = jl.split(A, {"T": slice(1, 3)})
    assert tile.plan.locs.shape == (2, R, 2) and tile.plan.order.shape == (2, R)
    assert_close(tile(x[:, 1:]), A(x)[:, 1:], C128)
    assert_close(tile.H(y[:, 1:]), A.H(y)[:, 1:], C128)
    tile = jl.split(A, {"R": slice(1, 4), "T": slice(0, 2)})
    assert tile.plan.order.shape == (2, 3)
    assert_close(tile(x[:, :2]), A(x)[:, :2, 1:4], C128)
    tiles, _, outs = jl.split_linop(A, {"T": 2})
    assert_close(jnp.concatenate([t(x[:, o[1]]) for t, o in zip(tiles, outs)], 1), A(x), C128)
    N = per_frame_nufft(toeplitz=True).N
    assert_close(jl.split(N, {"T": slice(2, 3)})(x[:, 2:]), N(x)[:, 2:], C128)
    B = jl.Interpolate(LOCS + 3, GRID, "C T", "T R")
    part = jl.split(B, {"T": slice(0, 2), "R": slice(2, 5)})
    assert part.order.shape == (2, 3)
    assert_close(part(x[:, :2]), B(x)[:, :2, 2:], C128)


@pytest.mark.devices(8)
@pytest.mark.parametrize("frames, tile, devices", [(8, 1, 8), (5, 2, 3)], ids=["8", "ragged"])
def test_batched_across_devices(frames, tile, devices):
    """Frames across the simulated CPU devices, for the operator and its Toeplitz normal
    (a ragged last tile pads locs with zeros, whose outputs are cut off)."""
    locs = frame_locs(20, lead=(frames,))
    A = jl.NUFFT(locs, GRID, "T R", batch_shape="T C", toeplitz=True, backend="jax")
    spec = jl.BatchSpec({"T": tile}, device_matrix=jax.devices()[:devices])
    B, BN = jl.create_batched_linop(A, spec), jl.create_batched_linop(A.N, spec)
    x, y = rand(21, (frames, C) + GRID), rand(22, (frames, C, R))
    got = jax.jit(lambda op, n, v, w: (op(v), op.H(w), n(v)))(B, BN, x, y)
    for g, want in zip(got, (A(x), A.H(y), A.N(x))):
        assert_close(g, want, C128)
    assert B.mesh.shape == {"T": devices} and BN.mesh.shape == {"T": devices}


# ------------------------------------------------------------------ Interpolate
def test_interpolate_per_frame_equals_separate_operators():
    grid_locs = LOCS + 3  # grid units
    B = jl.Interpolate(grid_locs, GRID, "T C", "T R", width=3.0)
    assert B.ishape == ("T", "C", "Nx", "Ny") and B.oshape == ("T", "C", "R")
    assert B.order.shape == (T, R)
    x, y = rand(23, (T, C) + GRID), rand(24, (T, C, R))

    def frame(t):
        return jl.Interpolate(grid_locs[t], GRID, "C", "R", width=3.0)

    assert_close(B(x), stacked(frame, x, 0), C128)
    assert_close(B.H(y), stacked(lambda t: frame(t).H, y, 0), C128)
    assert_close(jax.jit(lambda op, v: op(v))(B, x), B(x), C128)
