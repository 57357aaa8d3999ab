"""`interop.from_torchlinops` against torchlinops itself: random operators built there,
converted, and compared on forward, adjoint and normal (both the jaxlinops adjoint and
normal of the converted operator, and the converted torchlinops adjoint and normal)."""

import jax
import numpy as np
import pytest

import jaxlinops as jl

torch = pytest.importorskip("torch")
interop = pytest.importorskip("interop")
tl = pytest.importorskip("torchlinops")


def tensor(seed, shape, dtype=torch.complex128):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal(shape)
    return torch.tensor(a, dtype=dtype)


def locs(seed, n, grid, centered):
    """`n` random points in a `grid`: in [-N/2, N/2) (NUFFT) or [0, N - 1] (Interpolate)."""
    u = np.random.default_rng(seed).random((n, len(grid)))
    points = (u - 0.5) * grid if centered else u * (np.array(grid) - 1)
    return torch.tensor(points)


def indices(n, grid):
    """`n` random grid indices per axis, one int64 tensor per axis."""
    rng = np.random.default_rng(7)
    return tuple(torch.tensor(rng.integers(0, size, n)) for size in grid)


def sense():
    maps = tl.Dense(tensor(1, (3, 4, 5)), ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    mask = tl.Diagonal((tensor(2, (4, 5), torch.float64) > 0).double(), ("C", "Kx", "Ky"))
    return tl.Chain(maps, tl.FFT(2, ("C",), centered=True), mask), (4, 5)


def nufft_sense(**options):
    maps = tl.Dense(tensor(1, (2, 6, 6)), ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    nufft = tl.NUFFT(locs(3, 9, (6, 6), True), (6, 6), ("K",), batch_shape=("C",), **options)
    return tl.Chain(maps, nufft), (6, 6)


BLOCKS = ("Bx", "By", "Px", "Py")


def dense(dims):
    return tl.Dense(tensor(hash(dims) % 100, (3, 4)), ("M", "N"), ("N",), ("M",))


# name -> () -> (torchlinops operator, input shape[, input dtype]); complex128 by default
CASES = {
    "dense": lambda: (dense("a"), (4,)),
    "dense_broadcast": lambda: (
        tl.Dense(tensor(0, (3, 4, 5)), ("C", "X", "Y"), ("X", "Y"), ("C", "X", "Y")),
        (4, 5),
    ),
    "dense_real": lambda: (
        tl.Dense(tensor(0, (3, 4), torch.float64), ("M", "N"), ("N",), ("M",)),
        (4,),
        torch.float64,
    ),
    "diagonal": lambda: (tl.Diagonal(tensor(0, (4, 5)), ("X", "Y")), (4, 5)),
    "diagonal_broadcast": lambda: (
        tl.Diagonal(tensor(0, (5,)), ("A", "Y"), broadcast_dims=("A",)),
        (3, 5),
    ),
    "scalar": lambda: (tl.Scalar(torch.tensor(2.0 - 0.5j), ("X",)), (4,)),
    "identity": lambda: (tl.Identity(("X", "Y")), (3, 4)),
    "shapespec": lambda: (tl.ShapeSpec(("X",), ("Z",)), (3,)),
    "zero": lambda: (tl.Zero(("X",), ("X",)), (3,)),
    "fft": lambda: (tl.FFT(2, ("C",), centered=True), (2, 4, 6)),
    "fft_uncentered": lambda: (tl.FFT(1, ("C",)), (2, 5)),
    "pad": lambda: (tl.Pad((8, 7), (5, 4), batch_shape=("C",)), (2, 5, 4)),
    "crop": lambda: (tl.Crop((5, 4), (8, 7), None, None, ("C",)), (2, 8, 7)),
    "truncate": lambda: (tl.Truncate(1, 8, 5, ("A", "X"), ("A", "Y")), (2, 8)),
    "paddim": lambda: (tl.PadDim(1, 5, 8, ("A", "X"), ("A", "Y")), (2, 5)),
    "sampling": lambda: (
        tl.Sampling(indices(7, (6, 5)), (6, 5), ("K",), ("X", "Y"), ("C",)),
        (2, 6, 5),
    ),
    "interpolate": lambda: (
        tl.Interpolate(locs(4, 7, (6, 6), False), (6, 6), ("C",), ("K",), ("X", "Y")),
        (2, 6, 6),
    ),
    "interpolate_zero_pad": lambda: (
        tl.Interpolate(
            locs(5, 7, (8,), False), (8,), ("C",), ("K",), ("X",), width=3.0, pad_mode="zero"
        ),
        (2, 8),
    ),
    "nufft": lambda: (
        tl.NUFFT(locs(3, 9, (6, 6), True), (6, 6), ("K",), batch_shape=("C",)),
        (2, 6, 6),
    ),
    "nufft_accurate": lambda: (
        tl.NUFFT(locs(3, 9, (8,), True), (8,), ("K",), oversamp=2.0, width=6.0),
        (8,),
    ),
    "sampling_nufft": lambda: (
        tl.SamplingNUFFT(locs(3, 9, (6, 6), True), (6, 6), ("K",), batch_shape=("C",)),
        (2, 6, 6),
    ),
    "fast_sampling_nufft": lambda: (
        tl.FastSamplingNUFFT(
            locs(3, 9, (6, 5), True), (6, 5), ("K",), batch_shape=("C",), phase_placement="grid"
        ),
        (2, 6, 5),
    ),
    "interpolate_spline_beta": lambda: (
        tl.Interpolate(
            locs(4, 7, (6, 6), False),
            (6, 6),
            ("C",),
            ("K",),
            ("X", "Y"),
            width=2.0,
            kernel="spline",
            kernel_params={"beta": 7.0},
        ),
        (2, 6, 6),
    ),  # fmt: skip
    "array_to_blocks": lambda: (
        tl.ArrayToBlocks((8, 7), (4, 3), (2, 2), None, ("C",), ("X", "Y"), BLOCKS),
        (2, 8, 7),
    ),
    "array_to_blocks_masked": lambda: (
        tl.ArrayToBlocks(
            (8,), (4,), (2,), torch.tensor([True, False, True, True]), ("C",), ("X",), ("B", "P")
        ),
        (2, 8),
    ),
    "blocks_to_array": lambda: (
        tl.BlocksToArray((8, 7), (4, 3), (2, 2), None, ("C",), BLOCKS, ("X", "Y")),
        (2, 3, 3, 4, 3),
    ),
    "rearrange": lambda: (tl.Rearrange("a b", "b a", ("A", "B"), ("B", "A")), (3, 4)),
    "repeat": lambda: (tl.Repeat({"C": 3}, ("X",), ("C", "X")), (4,)),
    "chain": sense,
    "add": lambda: (tl.Add(dense("a"), dense("b")), (4,)),
    "concat_out": lambda: (tl.Concat(dense("a"), dense("b"), odim="M"), (4,)),
    "concat_in": lambda: (tl.Concat(dense("a"), dense("b"), idim="N"), (8,)),
    "stack": lambda: (tl.Stack(dense("a"), dense("b"), odim_and_idx=("B", 0)), (4,)),
    "nufft_sense": nufft_sense,
}


def assert_close(got, want, rtol):
    """Relative error of the whole array (entrywise is too strict for near-zero entries)."""
    got, want = np.asarray(got), want.detach().numpy()
    assert got.shape == want.shape
    assert np.linalg.norm(got - want) <= rtol * max(np.linalg.norm(want), 1e-300)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torchlinops(name):
    T, ishape, *dtype = CASES[name]()
    A = interop.from_torchlinops(T)
    assert (A.ishape, A.oshape) == tuple(tuple(map(str, s)) for s in (T.ishape, T.oshape))
    x = tensor(10, ishape, *dtype)
    y = tensor(11, tuple(T(x).shape), *dtype)
    # float64 throughout: agreement to rounding, except the NUFFT, whose apodization
    # torchlinops computes in float32 (relative differences ~1e-6)
    rtol = 1e-5 if "nufft" in name else 1e-10
    checks = (
        (A, T, x),
        (A.H, T.H, y),
        (A.N, T.N, x),
        (interop.from_torchlinops(T.H), T.H, y),
        (interop.from_torchlinops(T.N), T.N, x),
    )
    for op, ref, v in checks:
        assert_close(op(v.numpy()), ref(v), rtol)


def exact_normal(T, x):
    """`sum_c m_c^* E^H E (m_c x)` for `nufft_sense`, with `E` the exact NUDFT matrix in
    the NUFFT's convention, `(prod N)^-1/2 exp(-2 pi i p . (n - N//2) / N)`."""
    maps, nufft = T.linops
    n = np.stack(np.meshgrid(np.arange(6) - 3, np.arange(6) - 3, indexing="ij"), -1)
    E = np.exp(-2j * np.pi * nufft.locs.numpy() @ n.reshape(-1, 2).T / 6) / 6
    m = maps.weight.detach().numpy().reshape(len(maps.weight), -1)
    return np.einsum("cn,kn,km,cm,m->n", m.conj(), E.conj(), E, m, x.numpy().reshape(-1))


@pytest.mark.parametrize(
    ("oversamp", "width", "toeplitz_oversamp"), [(1.25, 4.0, 2.0), (2.0, 6.0, 2.5)]
)
def test_toeplitz_normal(oversamp, width, toeplitz_oversamp):
    """A Toeplitz NUFFT converts with its setting: the jaxlinops normal is an embedding
    too, as accurate as the NUFFT against the exact normal (7e-3 and 7e-6 relative at
    these settings, documented). At (2, 6) it agrees with torchlinops' embedding and with
    the converted torchlinops normal. (At (1.25, 4) torchlinops 0.8.3's own embedding is
    ~30% off the exact normal, so it is no reference there.)"""
    T, ishape = nufft_sense(
        oversamp=oversamp, width=width, toeplitz=True, toeplitz_oversamp=toeplitz_oversamp,
        toeplitz_dtype=torch.complex128,
    )  # fmt: skip
    A = interop.from_torchlinops(T)
    assert A.linops[1].toeplitz and A.linops[1].toeplitz_oversamp == toeplitz_oversamp
    x = tensor(10, ishape)
    got, exact = np.asarray(A.N(x.numpy())).reshape(-1), exact_normal(T, x)
    assert np.linalg.norm(got - exact) <= (1e-2 if oversamp < 2 else 1e-5) * np.linalg.norm(exact)
    if oversamp == 2:
        assert_close(A.N(x.numpy()), T.N(x), 1e-5)
        assert_close(interop.from_torchlinops(T.N)(x.numpy()), T.N(x), 1e-5)


def test_sumreduce_adjoint_and_normal_without_lengths():
    """torchlinops' SumReduce adjoint returns a size-1 (broadcasting) axis for the summed
    dim, and so does the converted one. Its normal deliberately differs: torchlinops' keeps
    that size-1 axis, jaxlinops' repeats the sum to the input's size (the true A^H A)."""
    T = tl.SumReduce(("C", "X"), ("X",))
    A = interop.from_torchlinops(T)
    x = tensor(10, (3, 4))
    assert_close(A(x.numpy()), T(x), 1e-12)
    assert_close(A.H(x[0].numpy()), T.H(x[0]), 1e-12)
    assert_close(interop.from_torchlinops(T.H)(x[0].numpy()), T.H(x[0]), 1e-12)
    want = np.broadcast_to(x.numpy().sum(0), (3, 4))
    np.testing.assert_allclose(np.asarray(A.N(x.numpy())), want, rtol=1e-12)


def test_toeplitz_grid_too_small_is_an_error():
    """A Toeplitz embedding below 2N - 1 points per axis wraps around (torchlinops
    computes it anyway)."""
    T, _ = nufft_sense(toeplitz=True, toeplitz_oversamp=1.25)
    with pytest.raises(ValueError, match=r"`NUFFT`: toeplitz_oversamp=1.25 .* at least 2N - 1"):
        interop.from_torchlinops(T)


def test_complex64_operator_stays_complex64():
    T = tl.Dense(tensor(0, (3, 4), torch.complex64), ("M", "N"), ("N",), ("M",))
    A = interop.from_torchlinops(T)
    x = tensor(1, (4,), torch.complex64)
    out = A(x.numpy())
    assert out.dtype == np.complex64
    assert_close(out, T(x), 1e-6)


def test_converted_operator_jits_and_shards():
    T, ishape = sense()
    A = interop.from_torchlinops(T)
    x = tensor(10, ishape).numpy()
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:3]))
    assert_close(jax.jit(lambda op, v: op(v))(B, x), T(torch.tensor(x)), 1e-10)


def test_unsupported_and_bad_input():
    class Custom(tl.NamedLinop):
        pass

    with pytest.raises(TypeError, match=r"cannot convert the torchlinops operator `Custom`"):
        interop.from_torchlinops(Custom(tl.NS(("X",))))
    with pytest.raises(TypeError, match=r"cannot convert the torchlinops operator `Sleep`"):
        interop.from_torchlinops(tl.Chain(tl.Identity(("X",)), tl.Sleep(0.0, ("X",))))
    with pytest.raises(TypeError, match=r"expects a torchlinops NamedLinop; got Dense"):
        interop.from_torchlinops(jl.Dense(np.ones((2, 2)), "M N", "N", "M"))
