"""torchlinops 0.8.3 calls of the leaf operators, unchanged, in jaxlinops: the signatures
bind the same way (names and positional order), and each call form built in both
libraries on the same small input gives the same numbers. References: torchlinops itself,
numpy (a centered DFT, sums, nonzero) and dot tests for the new adjoints."""

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl

torch = pytest.importorskip("torch")
tl = pytest.importorskip("torchlinops")


def crand(seed, shape):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def close(got, want, rtol=1e-10):
    """Relative error of the whole array (float64 in both libraries: rounding only)."""
    got = np.asarray(got)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert got.shape == want.shape
    assert np.linalg.norm(got - want) <= rtol * max(np.linalg.norm(want), 1e-300)


def dot_test(A, x, y, rtol=1e-12):
    lhs = np.vdot(y, np.asarray(A(jnp.asarray(x))))
    rhs = np.vdot(np.asarray(A.H(jnp.asarray(y))), x)
    assert abs(lhs - rhs) <= rtol * abs(lhs)


# ---------------------------------------------------------------------- signatures
def names(fn):
    """The parameter names a caller may pass by position or keyword, in order."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds]


def keywords(fn):
    return set(inspect.signature(fn).parameters)


NUFFT_BASE = tl.linops.NUFFTBase
SIGNATURES = {
    "ArrayToBlocks": (tl.ArrayToBlocks, jl.ArrayToBlocks),
    "BlocksToArray": (tl.BlocksToArray, jl.BlocksToArray),
    "FFT": (tl.FFT, jl.FFT),
    "NUFFT": (NUFFT_BASE, jl.NUFFT),  # torchlinops' NUFFT is `(*args, **kwargs)` to its base
    "SamplingNUFFT": (tl.SamplingNUFFT, jl.SamplingNUFFT),
    "FastSamplingNUFFT": (tl.FastSamplingNUFFT, jl.FastSamplingNUFFT),
    "Sampling": (tl.Sampling, jl.Sampling),
    "Sampling.from_stacked_idx": (tl.Sampling.from_stacked_idx, jl.Sampling.from_stacked_idx),
    "Pad": (tl.Pad, jl.Pad),
    "PadLast": (tl.PadLast, jl.PadLast),
    "Crop": (tl.Crop, jl.Crop),
    "Dense": (tl.Dense, jl.Dense),
    "Dense.from_einstr": (tl.Dense.from_einstr, jl.Dense.from_einstr),
    "Interpolate": (tl.Interpolate, jl.Interpolate),
    "Rearrange": (tl.Rearrange, jl.Rearrange),
    "Repeat": (tl.Repeat, jl.Repeat),
    "SumReduce": (tl.SumReduce, jl.SumReduce),
    "Truncate": (tl.Truncate, jl.Truncate),
    "PadDim": (tl.PadDim, jl.PadDim),
    "Convolution": (tl.Convolution, jl.Convolution),
    "ToDevice": (tl.ToDevice, jl.ToDevice),
    "NUFFT.prep_locs": (tl.NUFFT.prep_locs.__wrapped__, jl.NUFFT.prep_locs),
    "SamplingNUFFT.prep_locs": (
        tl.SamplingNUFFT.prep_locs.__wrapped__,
        jl.SamplingNUFFT.prep_locs,
    ),
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_torchlinops_positional_order_binds(name):
    """torchlinops' positional parameters are a prefix of jaxlinops' (same names, same
    order); jaxlinops' extra parameters come after them."""
    theirs, ours = (names(f) for f in SIGNATURES[name])
    if name == "Sampling.from_stacked_idx":  # torchlinops: (idx, *args, dim, **kwargs)
        theirs = ["cls", "idx"]
    theirs = [n for n in theirs if n not in ("cls", "self")]
    assert ours[: len(theirs)] == theirs


def test_torchlinops_options_are_accepted_keywords():
    """The NUFFTs' `**options` that torchlinops documents are keywords here."""
    nufft = {"oversamp", "width", "toeplitz", "toeplitz_dtype", "skip_prep_locs"}
    assert nufft <= keywords(jl.NUFFT)
    assert {"oversamp", "toeplitz", "toeplitz_dtype", "width"} <= keywords(jl.SamplingNUFFT)
    assert "phase_placement" in keywords(jl.FastSamplingNUFFT)
    assert jl.PadLast is jl.Pad and tl.PadLast is tl.Pad


# ---------------------------------------------------------------------- operators
def test_blocks_to_array_positional_order():
    args = ((8, 7), (4, 3), (2, 2), None, ("C",), ("Bx", "By", "Px", "Py"), ("X", "Y"))
    T, A = tl.BlocksToArray(*args), jl.BlocksToArray(*args)
    assert A.ishape == ("C", "Bx", "By", "Px", "Py") and A.oshape == ("C", "X", "Y")
    y = crand(0, (2, 3, 3, 4, 3))
    close(A(y), T(torch.tensor(y)))
    B = jl.ArrayToBlocks(*args[:5], ("X", "Y"), args[5])
    assert A.H == B and B.H == A
    x = crand(1, (2, 8, 7))
    close(B(x), tl.ArrayToBlocks(*args[:5], ("X", "Y"), args[5])(torch.tensor(x)))


def test_fft_centered_positional_and_normal_dims():
    T, A = tl.FFT(2, ("C",), None, True), jl.FFT(2, ("C",), None, True)
    assert A.centered and A.norm == "ortho"
    x = crand(2, (2, 4, 5))
    close(A(x), T(torch.tensor(x)))
    assert (A.N.ishape, A.N.oshape) == (tuple(map(str, T.N.ishape)), tuple(map(str, T.N.oshape)))
    assert A.N.oshape == ("C", "Nx", "Ny")
    with pytest.raises(TypeError, match=r"`FFT\(centered=...\)` expects a bool; got 'ortho'"):
        jl.FFT(2, None, None, "ortho")  # the old position of `norm`


NUFFT_LOCS = np.random.default_rng(3).uniform(-3, 3, (7, 2))


@pytest.mark.parametrize("pad_mode", ["circular", "zero"])
@pytest.mark.parametrize("cls", ["NUFFT", "SamplingNUFFT"])
def test_prep_locs_matches_torchlinops(cls, pad_mode):
    locs = np.concatenate([NUFFT_LOCS, [[-3.0, 2.9], [3.0, -0.4]]])  # one on the edge
    want = getattr(tl, cls).prep_locs.__wrapped__(torch.tensor(locs), (6, 6), (8, 7), pad_mode)
    got = getattr(jl, cls).prep_locs(locs, (6, 6), (8, 7), pad_mode)
    assert got.dtype == (np.int64 if cls == "SamplingNUFFT" else np.float64)
    close(got, want, 1e-14)


def test_prep_locs_bad_pad_mode():
    with pytest.raises(ValueError, match=r"`NUFFT.prep_locs`: Unrecognized padding mode 'reflect'"):
        jl.NUFFT.prep_locs(NUFFT_LOCS, (6, 6), (8, 8), "reflect")


def test_nufft_torchlinops_positional_args_and_options():
    """NUFFT(locs, grid_size, output_shape, input_shape, input_kshape, batch_shape,
    **options), options including torchlinops' `toeplitz_dtype` (ignored) and
    `skip_prep_locs` (points already in padded-grid units)."""
    args = ((6, 6), ("K",), ("X", "Y"), ("U", "V"), ("C",))
    T = tl.NUFFT(torch.tensor(NUFFT_LOCS), *args, oversamp=2.0, width=6.0)
    A = jl.NUFFT(NUFFT_LOCS, *args, oversamp=2.0, width=6.0, toeplitz_dtype=torch.complex64)
    assert A.ishape == ("C", "X", "Y") and A.oshape == ("C", "K")
    x = crand(4, (2, 6, 6))
    close(A(x), T(torch.tensor(x)), 1e-5)  # torchlinops apodizes in float32
    prepped = tl.NUFFT.prep_locs.__wrapped__(torch.tensor(NUFFT_LOCS), (6, 6), (12, 12))
    B = jl.NUFFT(prepped.numpy(), *args, oversamp=2.0, width=6.0, skip_prep_locs=True)
    close(B(x), A(x), 1e-12)
    Ts = tl.NUFFT(prepped, *args, oversamp=2.0, width=6.0, skip_prep_locs=True)
    close(B(x), Ts(torch.tensor(x)), 1e-5)


def centered_sampled_dft(x, grid, padded, idx):
    """numpy reference of SamplingNUFFT: centered zero pad, centered orthonormal DFT,
    read at integer points `idx` `[M, D]`."""
    pad = [(p // 2 - n // 2, p - n - (p // 2 - n // 2)) for n, p in zip(grid, padded)]
    xp = np.pad(x, [(0, 0)] * (x.ndim - len(grid)) + pad)
    axes = tuple(range(-len(grid), 0))
    k = np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(xp, axes), axes=axes, norm="ortho"), axes)
    return k[(...,) + tuple(idx.T)]


@pytest.mark.parametrize("cls", ["SamplingNUFFT", "FastSamplingNUFFT"])
def test_sampling_nufft_matches_torchlinops_and_a_dft(cls):
    grid, padded = (6, 5), (7, 6)  # oversamp 1.25, an odd padded axis
    args = (grid, ("K",), None, None, ("C",))
    T = getattr(tl, cls)(torch.tensor(NUFFT_LOCS), *args)
    A = getattr(jl, cls)(NUFFT_LOCS, *args)
    assert type(A).__name__ == cls and A.mode == "sampling"
    x, y = crand(5, (2, 6, 5)), crand(6, (2, 7))
    idx = np.asarray(jl.SamplingNUFFT.prep_locs(NUFFT_LOCS, grid, padded))
    close(A(x), centered_sampled_dft(x, grid, padded, idx), 1e-12)
    close(A(x), T(torch.tensor(x)), 1e-6)  # torchlinops' phases are complex64 in Fast*
    close(A.H(y), T.H(torch.tensor(y)), 1e-6)
    dot_test(A, x, y)
    close(A.N(x), A.H(A(x)), 1e-12)


def test_fast_sampling_nufft_phase_placement():
    for placement in ("auto", "samples", "grid"):
        A = jl.FastSamplingNUFFT(NUFFT_LOCS, (6, 6), "K", phase_placement=placement)
        assert A.phase_placement == placement
    with pytest.raises(ValueError, match=r"`FastSamplingNUFFT\(phase_placement=...\)`.*'both'"):
        jl.FastSamplingNUFFT(NUFFT_LOCS, (6, 6), "K", phase_placement="both")


def test_sampling_nufft_split_keeps_the_class():
    A = jl.SamplingNUFFT(NUFFT_LOCS, (6, 6), ("K",), batch_shape=("C",))
    tile = jl.split(A, {"K": slice(2, 5)})
    assert type(tile) is jl.SamplingNUFFT
    x = crand(7, (2, 6, 6))
    close(tile(x), np.asarray(A(x))[:, 2:5], 1e-12)


def test_pad_last_matches_torchlinops():
    args = ((7, 6), (4, 3), ("X", "Y"), ("U", "V"), ("C",))  # odd and even pads
    T, A = tl.PadLast(*args), jl.PadLast(*args)
    x = crand(8, (2, 4, 3))
    close(A(x), T(torch.tensor(x)))
    y = crand(9, (2, 7, 6))
    close(A.H(y), T.H(torch.tensor(y)))


@pytest.mark.parametrize("bsize", [2, 1])
def test_dense_from_einstr_broadcast_dims(bsize):
    """torchlinops' docstring example: `broadcast_dims` marks dims a split leaves alone;
    the weight may hold the dim at full size (a batch dim) or at size 1 (broadcast)."""
    w = crand(10, (bsize, 3, 7))
    T = tl.Dense.from_einstr(torch.tensor(w), "BMN,BN->BM", broadcast_dims=["B"])
    A = jl.Dense.from_einstr(w, "BMN,BN->BM", broadcast_dims=["B"])
    x, y = crand(11, (2, 7)), crand(12, (2, 3))
    close(A(x), T(torch.tensor(x)))
    close(A.H(y), T.H(torch.tensor(y)))
    close(A.N(x), A.H(A(x)), 1e-12)
    assert A.size("B") == (2 if bsize == 2 else None)
    if bsize == 2:  # a split along B slices the full-size weight
        close(jl.split(A, {"B": slice(1, 2)})(x[1:]), np.asarray(A(x))[1:], 1e-12)


def test_sampling_from_mask_input_size_second():
    mask = np.random.default_rng(13).random((4, 5)) < 0.5
    T = tl.Sampling.from_mask(torch.tensor(mask), (4, 5), ("K",), ("X", "Y"), ("C",))
    A = jl.Sampling.from_mask(mask, (4, 5), ("K",), ("X", "Y"), ("C",))
    x = crand(14, (2, 4, 5))
    close(A(x), T(torch.tensor(x)))
    close(A(x), x[:, mask])


def test_sumreduce_adjoint_without_lengths_matches_torchlinops():
    T, A = tl.SumReduce(("A", "B", "C"), ("A", "C")), jl.SumReduce("A B C", "A C")
    y = crand(15, (2, 4))
    close(A.H(y), T.H(torch.tensor(y)))
    x = crand(16, (2, 3, 4))
    close(A.N(x), np.broadcast_to(x.sum(1, keepdims=True), x.shape))  # torchlinops: size 1


def test_interpolate_spline_accepts_beta():
    """torchlinops passes `beta` to every kernel; the spline ignores it (so here too), and
    the result matches torchlinops'. A key no kernel takes is still an error."""
    locs = np.random.default_rng(17).uniform(0, 5, (6, 2))
    args = ((6, 6), ("C",), ("K",), ("X", "Y"))
    opts = dict(width=2.0, kernel="spline", kernel_params={"beta": 7.0})
    T, A = tl.Interpolate(torch.tensor(locs), *args, **opts), jl.Interpolate(locs, *args, **opts)
    assert A == jl.Interpolate(locs, *args, width=2.0, kernel="spline")
    x = crand(18, (2, 6, 6))
    close(A(x), T(torch.tensor(x)))
    with pytest.raises(ValueError, match=r"`Interpolate`: unknown kernel_params \['bta'\]"):
        jl.Interpolate(locs, *args, width=2.0, kernel="spline", kernel_params={"bta": 1.0})
    with pytest.raises(TypeError, match=r"`Interpolate`: kernel_params\['beta'\] must be a real"):
        jl.Interpolate(locs, *args, width=2.0, kernel="spline", kernel_params={"beta": "7"})
