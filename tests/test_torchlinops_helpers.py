"""torchlinops' small helpers in jaxlinops give torchlinops' results on the same inputs:
the nameddim matchers, the NUFFT helpers, `Diagonal.from_weight`, `BatchSpec.resolve`,
`DeviceSpec`, the logging/progress utilities and `testing.BaseNamedLinopTests`."""

from __future__ import annotations

import importlib
import io
import itertools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl

tl = pytest.importorskip("torchlinops")
torch = pytest.importorskip("torch")

TOKENS = ("A", "B", "...", "()")
SHAPES = [s for n in range(4) for s in itertools.product(TOKENS, repeat=n)]


def _plain(result):
    ok, assignments = result
    return ok, None if assignments is None else dict(assignments)


def test_isequal_and_iscompatible_match_torchlinops_on_every_small_pair():
    """Every pair of shapes of up to 3 tokens, every consume flag: verdict and mapping."""
    for a, b in itertools.product(SHAPES, SHAPES):
        for flags in itertools.product((False, True), repeat=2):
            assert _plain(jl.isequal(a, b, *flags)) == _plain(tl.isequal(a, b, *flags)), (a, b)
        assert _plain(jl.iscompatible(a, b)) == _plain(tl.iscompatible(a, b)), (a, b)


def _outcome(fn, *args):
    try:
        return tuple(map(str, fn(*args)))
    except (ValueError, AssertionError):  # torchlinops asserts where jaxlinops raises
        return "error"


def test_align_resolve_wildcards_max_shape_match_torchlinops():
    names = ("N", "N1", "Q", "...", "()")
    shapes = [s for n in range(1, 4) for s in itertools.product(names, repeat=n)]
    for a, b in itertools.product(shapes, shapes):
        assert _outcome(jl.align, a, b) == _outcome(tl.align, a, b), (a, b)
        assert _outcome(jl.resolve_wildcards, a, b) == _outcome(tl.resolve_wildcards, a, b)
        assert _outcome(jl.max_shape, [a, b]) == _outcome(tl.max_shape, [a, b]), (a, b)


def test_coalesce_and_iscompatible_warns_on_strings():
    runs = ["...", "...", "A", "...", "B", "B"]
    cond = lambda d: d in ("...", "B")  # noqa: E731
    assert jl.coalesce(runs, cond) == tl.coalesce(runs, cond) == ["...", "A", "..."]
    with pytest.warns(UserWarning, match="iscompatible.*string shape is read as one dim per"):
        got = jl.iscompatible("AB", ("A", "B"))
    with pytest.warns(UserWarning):
        assert got == tl.iscompatible("AB", ("A", "B"))


def test_nufft_point_helpers_match_torchlinops():
    rng = np.random.default_rng(0)
    locs = rng.uniform(-8, 8, size=(2, 5, 2))
    ilocs = rng.integers(-9, 9, size=(7, 3))
    for fn in ("fftshift_locs", "ifftshift_locs"):
        for pts, size in ((locs, (16, 12)), (ilocs, (8, 9, 5))):
            want = getattr(tl, fn)(torch.from_numpy(pts), size).numpy()
            np.testing.assert_allclose(getattr(jl, fn)(pts, size), want, rtol=1e-12, err_msg=fn)
    args = ((0.5, -1.0), (16, 12), (2.0, 3.0), (40, 30))
    for dim, pts in ((-1, locs), (0, np.moveaxis(locs, -1, 0))):
        want = tl.rescale_locs(torch.from_numpy(pts), *args, dim=dim).numpy()
        np.testing.assert_allclose(jl.rescale_locs(pts, *args, dim=dim), want, rtol=1e-12)
    assert jl.scale_int((64, 48, 5), 1.25) == tl.scale_int((64, 48, 5), 1.25) == (80, 60, 6)
    with pytest.raises(ValueError, match="fftshift_locs.*len\\(size\\)"):
        jl.fftshift_locs(locs, (16,))


@pytest.mark.parametrize(
    ("x", "lo", "hi"),
    [
        ([0, 2, 4], [1], None),
        ([0, 2, 4], None, [3]),
        ([[0, 2, 4], [1, 3, 5]], [[1], [2]], None),
        ([[0.0, 2.5, 4.0], [1.0, 3.0, 5.0]], 1, 4),
    ],
)
def test_clamp_broadcasts_like_torchlinops(x, lo, hi):
    t = lambda v: v if v is None or isinstance(v, int) else torch.tensor(v)  # noqa: E731
    a = lambda v: v if v is None or isinstance(v, int) else jnp.asarray(v)  # noqa: E731
    want = tl.clamp(torch.tensor(x), t(lo), t(hi)).numpy()
    got = jl.clamp(jnp.asarray(x), a(lo), a(hi))
    np.testing.assert_array_equal(np.asarray(got), want)


def test_toeplitz_psf_matches_torchlinops_kernel():
    """Both kernels are the centered DFT of the same point spread function on the grid
    embedded at 2x; each carries its NUFFT's approximation error (torchlinops' and
    jaxlinops' Kaiser-Bessel settings differ at the 1e-3 level), hence the tolerance."""
    locs = np.random.default_rng(1).uniform(-4, 4, size=(10, 2))
    dims = (("K",), ("Nx", "Ny"), ("Kx", "Ky"))
    T = tl.NUFFT(torch.from_numpy(locs), (8, 8), *dims)
    J = jl.NUFFT(locs, (8, 8), *dims)
    want = tl.toeplitz_psf(T, dtype=torch.complex128).weight.numpy()[0, 0]
    kernel = jl.toeplitz_psf(J)
    assert kernel.ioshape == ("...", "Kx", "Ky") and kernel.weight.shape == (16, 16)
    got = np.asarray(kernel.weight)
    assert np.abs(got - want).max() <= 2e-2 * np.abs(want).max()
    want_sizing = tl.psf_sizing(T, tl.Identity(T.oshape))
    want_sizing = tuple(tuple(map(str, p)) for p in want_sizing[:3]) + want_sizing[3:]
    assert jl.psf_sizing(J, jl.Identity(J.oshape)) == want_sizing
    with pytest.raises(ValueError, match="toeplitz_psf.*2N - 1"):
        jl.toeplitz_psf(J, oversamp=1.5)


def test_nufft_base_and_caches():
    locs = np.zeros((3, 2))
    for cls in (jl.NUFFT, jl.SamplingNUFFT):
        assert isinstance(cls(locs, (4, 4), ("K",)), jl.linops.NUFFTBase)
    assert jl.clear_nufft_parameter_caches() is None


def test_diagonal_from_weight_matches_torchlinops():
    w = np.arange(6.0).reshape(2, 3)
    T = tl.Diagonal.from_weight(torch.from_numpy(w), ("A", "B"), ("B", "C", "A"), {"C": 4})
    J = jl.Diagonal.from_weight(w, ("A", "B"), ("B", "C", "A"), {"C": 4})
    np.testing.assert_array_equal(np.asarray(J.weight), T.weight.numpy())
    assert J.ioshape == ("B", "C", "A")
    with pytest.raises(ValueError, match="from_weight.*size of each new dim.*C"):
        jl.Diagonal.from_weight(w, ("A", "B"), ("B", "C", "A"))
    with pytest.raises(ValueError, match="from_weight.*must be in ioshape"):
        jl.Diagonal.from_weight(w, ("A", "B"), ("B", "C"), {"C": 4})


def test_shapespec_defaults():
    assert jl.ShapeSpec().ishape == tl.ShapeSpec().ishape == ("...",)
    assert jl.ShapeSpec(("A", "B")).oshape == ("A", "B")


def test_batchspec_resolve_and_devicespec():
    A = jl.Dense(jnp.ones((6, 4)), ("M", "N"), ("N",), ("M",))
    cpu = jax.devices()
    resolved = jl.BatchSpec({"M": 2}, device_matrix=cpu[:2]).resolve(A, cpu[3])
    assert isinstance(resolved, jl.ResolvedBatchSpec)
    # jaxlinops gives each device a contiguous run of tiles (torchlinops deals them out)
    assert list(resolved.device_matrix) == [cpu[0], cpu[0], cpu[1]]
    assert resolved.base_device == cpu[3]
    plain = jl.BatchSpec({"M": 4}).resolve(A)
    assert list(plain.device_matrix) == [cpu[0]] * 2 and plain.base_device == cpu[0]
    spec = jl.DeviceSpec()
    assert spec.device == cpu[0] and spec.type == "cpu" and spec.compute_stream is None
    tl_device = importlib.import_module("torchlinops.linops.device")
    assert jl.DeviceSpec("cpu").type == tl_device.DeviceSpec("cpu").type == "cpu"
    assert jl.DeviceSpec("cpu:2").device == cpu[2]
    with pytest.raises(TypeError, match="DeviceSpec\\(device=...\\).*jax.Device"):
        jl.DeviceSpec(0)


def test_batch_tqdm_and_indenter_match_torchlinops(capsys):
    tl_utils = importlib.import_module("torchlinops.utils")  # `tl.utils` is another module
    assert list(jl.utils.batch_tqdm(7, 3, disable=True)) == list(
        tl_utils.batch_tqdm(7, 3, disable=True)
    )
    for utils in (tl_utils, jl.utils):
        with utils.Indenter() as ind:
            ind.print("a\nb")
            with ind:
                ind.print("c\nd")
                with ind:
                    ind.print("e")
    torch_out, jax_out = capsys.readouterr().out.split("a\nb\n", 2)[1:]
    assert "a\nb\n" + jax_out == "a\nb\n" + torch_out == "a\nb\n    c\n    d\n        e\n"
    assert jl.INDENT.level == 0


def test_setup_console_logger_reuses_its_handler():
    logger = logging.getLogger("jaxlinops.test_setup_console_logger")
    stream = io.StringIO()
    logger.addHandler(logging.StreamHandler(stream))
    try:
        out = jl.utils.setup_console_logger(logger, logging.DEBUG, fmt="%(levelname)s:%(message)s")
        assert out is logger and len(logger.handlers) == 1 and logger.level == logging.DEBUG
        logger.debug("hello")
        assert stream.getvalue() == "DEBUG:hello\n"
    finally:
        logger.handlers.clear()


def _dense_case():
    w = jax.random.normal(jax.random.key(0), (3, 4))
    A = jl.Dense(w, ("M", "N"), ("N",), ("M",))
    return A, jax.random.normal(jax.random.key(1), (4,)), jax.random.normal(jax.random.key(2), (3,))


class TestDenseWithBaseSuite(jl.testing.BaseNamedLinopTests):
    """A user's test class, as torchlinops documents it: every inherited check runs."""

    @pytest.fixture
    def linop_input_output(self):
        return _dense_case()


class _WrongAdjoint(jl.NamedLinop):
    """`adj_fn` forgets a factor 2: the suite's dot test must catch it."""

    def __init__(self):
        super().__init__(jl.NamedShape(("N",), ("N",)))

    @staticmethod
    def fn(linop, x, /):
        return 2 * x

    @staticmethod
    def adj_fn(linop, x, /):
        return x


def test_base_suite_catches_a_wrong_adjoint():
    suite = jl.testing.BaseNamedLinopTests()
    x = jnp.arange(1.0, 5.0)
    with pytest.raises(AssertionError, match="Adjoint test failed"):
        suite.test_adjoint((_WrongAdjoint(), x, x))
    suite.equality_check = "bitwise"
    with pytest.raises(ValueError, match="equality_check"):
        suite.test_adjoint(_dense_case())


def test_from_pytorch_gives_numpy_as_torchlinops():
    t = torch.randn(3, 2, dtype=torch.complex64, requires_grad=True)
    got = jl.utils.from_pytorch(t)
    assert isinstance(got, np.ndarray)
    from torchlinops.utils import from_pytorch

    np.testing.assert_array_equal(got, from_pytorch(t.detach()))
    np.testing.assert_array_equal(jl.utils.from_pytorch(jnp.arange(3)), np.arange(3))
