"""torchlinops' functional kernels under their torchlinops names and arguments: every call
form of torchlinops 0.8.3 binds, and the results equal torchlinops' own on small inputs
(float64; the block kernels and indexing are exact, the NUFFT agrees to its kernel's
rounding with the `"jax"` backend, which is torchlinops' kernel)."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
import jaxlinops.functional as F

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torchlinops.functional")

NAMES = (
    "array_to_blocks",
    "blocks_to_array",
    "get_nblocks",
    "fold",
    "unfold",
    "index",
    "index_adjoint",
    "mask2idx",
    "interpolate",
    "interpolate_adjoint",
    "grid",
    "ungrid",
    "nufft",
    "nufft_adjoint",
    "center_pad",
    "center_crop",
)


def params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_are_torchlinops_in_order(name):
    """torchlinops' parameters come first, same names, same order; jaxlinops adds none
    here, and the defaults torchlinops gives are defaults here too."""
    ours, theirs = inspect.signature(getattr(F, name)), inspect.signature(getattr(TF, name))
    assert params(getattr(F, name))[: len(theirs.parameters)] == list(theirs.parameters)
    for p in theirs.parameters.values():
        if p.default is not inspect.Parameter.empty:
            assert ours.parameters[p.name].default == p.default, p.name


def t(x):
    return torch.from_numpy(np.array(x))  # a writable copy


GEOMETRIES = [((7, 6), (3, 2), (2, 1), None), ((6, 5), (2, 3), (1, 2), [[1, 0, 1], [0, 1, 1]])]


@pytest.mark.parametrize("im, block, stride, mask", GEOMETRIES)
def test_blocks_fold_unfold_equal_torchlinops(im, block, stride, mask):
    x = np.asarray(rand(0, (2,) + im))
    m = None if mask is None else np.array(mask, bool)
    tm = None if m is None else t(m)
    want = TF.array_to_blocks(t(x), block, stride, tm).numpy()
    got = F.array_to_blocks(input=x, block_shape=block, stride=stride, mask=m, out=None)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(F.unfold(x, block, stride, m)), want)
    back = TF.blocks_to_array(t(want), im, block, stride, tm).numpy()
    got = F.blocks_to_array(input=want, im_size=im, block_shape=block, stride=stride, mask=m)
    # overlap-adds of a few terms: summation order may differ in the last bit
    np.testing.assert_allclose(np.asarray(got), back, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(F.fold(want, im, block, stride, m)), back, rtol=1e-13)
    assert F.get_nblocks(im, block, block_stride=stride) == TF.get_nblocks(im, block, stride)


def test_out_buffers_warn_and_the_result_is_returned():
    """JAX cannot fill the caller's buffer: a warning says so (code reading it would see
    stale values), and the returned array is the result."""
    x = jnp.arange(12.0).reshape(3, 4)
    buffer = jnp.zeros((2, 3, 2, 2))
    with pytest.warns(UserWarning, match=r"`array_to_blocks\(out=...\)`: .*not filled"):
        got = F.array_to_blocks(x, (2, 2), out=buffer)
    np.testing.assert_array_equal(got, F.array_to_blocks(x, (2, 2)))
    with pytest.warns(UserWarning, match=r"`blocks_to_array\(out=...\)`"):
        F.blocks_to_array(got, (3, 4), (2, 2), out=jnp.zeros((3, 4)))
    with pytest.warns(UserWarning, match=r"`unfold\(output=...\)`"):
        F.unfold(x, (2, 2), output=buffer)
    with pytest.warns(UserWarning, match=r"`fold\(output=...\)`"):
        F.fold(got, (3, 4), (2, 2), None, output=jnp.zeros((3, 4)))


def test_errors_name_torchlinops_arguments():
    with pytest.raises(ValueError, match=r"`array_to_blocks\(block_shape=...\)` expects integer"):
        F.array_to_blocks(jnp.ones((4, 4)), (2, 2.5))
    with pytest.raises(ValueError, match=r"`get_nblocks\(block_stride=...\)` expects integer"):
        F.get_nblocks((4,), (2,), (1.5,))
    with pytest.raises(ValueError, match=r"`fold`: the block size \(5,\) is larger"):
        F.fold(jnp.ones((1, 5)), (4,), (5,), (1,))


def test_mask2idx_and_index_as_torchlinops():
    mask = np.array([[True, False, True], [False, True, True]])
    vals = np.asarray(rand(1, (2, 2, 3)))
    idx = F.mask2idx(mask)
    for got, want in zip(idx, TF.mask2idx(t(mask))):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
    np.testing.assert_array_equal(np.asarray(F.index(vals, idx)), vals[..., mask])
    tidx = tuple(t(i) for i in idx)
    for det in (False, True):
        want = TF.index(t(vals), tidx, deterministic_backward=det).numpy()
        got = F.index(vals, idx, deterministic_backward=det)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(TypeError, match=r"`mask2idx\(mask=...\)` must be a boolean array"):
        F.mask2idx(np.ones((2, 2), int))
    with pytest.raises(TypeError, match=r"`mask2idx\(mask=...\)`: the mask must be concrete"):
        jax.jit(F.mask2idx)(mask)


def test_deterministic_backward(monkeypatch):
    """CPU scatter-adds are deterministic: no warning. On a GPU without XLA's
    deterministic-ops flag the request cannot be honoured: a warning."""
    vals, idx = jnp.arange(6.0), (jnp.array([0, 0, 3]),)
    F.index(vals, idx, deterministic_backward=True)  # pytest turns a warning into an error
    with pytest.raises(TypeError, match=r"`index\(deterministic_backward=...\)` must be a bool"):
        F.index(vals, idx, deterministic_backward="yes")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setenv("XLA_FLAGS", "")
    with pytest.warns(UserWarning, match="xla_gpu_deterministic_ops"):
        F.index(vals, idx, deterministic_backward=True)
    F.index(vals, idx)  # the default (False) asks for nothing
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops=true")
    F.index(vals, idx, deterministic_backward=True)


def test_grid_and_ungrid_are_the_interpolation_kernels():
    locs = np.random.default_rng(2).uniform(0, 5, (4, 2))
    vals, pts = np.asarray(rand(3, (2, 6, 6))), np.asarray(rand(4, (2, 4)))
    want = TF.ungrid(t(vals), t(locs), 3.0).numpy()
    np.testing.assert_allclose(np.asarray(F.ungrid(vals, locs, 3.0)), want, rtol=1e-10)
    want = TF.grid(t(pts), t(locs), (6, 6), 3.0).numpy()
    np.testing.assert_allclose(np.asarray(F.grid(pts, locs, (6, 6), 3.0)), want, rtol=1e-10)


def test_nufft_takes_points_as_torchlinops_or_a_plan():
    rng = np.random.default_rng(5)
    x, y = np.asarray(rand(5, (2, 8, 8))), np.asarray(rand(6, (2, 5)))
    locs = rng.uniform(-4, 4, (5, 2))
    with jl.config.using(nufft_backend="jax"):  # torchlinops' kernel
        fwd = F.nufft(x, locs, 1.25, 4.0)
        adj = F.nufft_adjoint(y, locs, (8, 8), oversamp=1.25, width=4.0)
        plan = F.nufft_plan(locs, (8, 8))
    # same kernel, same steps: agreement to the kernel's rounding (measured 5e-7)
    np.testing.assert_allclose(np.asarray(fwd), TF.nufft(t(x), t(locs)).numpy(), rtol=1e-5)
    want = TF.nufft_adjoint(t(y), t(locs), (8, 8)).numpy()
    np.testing.assert_allclose(np.asarray(adj), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(F.nufft(x, plan)), np.asarray(fwd), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(F.nufft_adjoint(y, plan)), np.asarray(adj), rtol=1e-12)
    with pytest.raises(ValueError, match=r"`nufft`: a plan fixes `oversamp` and `width`"):
        F.nufft(x, plan, oversamp=2.0)
    with pytest.raises(ValueError, match=r"`nufft_adjoint\(grid_size=...\)`: the plan is for"):
        F.nufft_adjoint(y, plan, (6, 6))
    with pytest.raises(TypeError, match=r"`nufft_adjoint`: `grid_size` is needed"):
        F.nufft_adjoint(y, locs)


def test_index_helpers_as_torchlinops():
    for s, n in ((slice(None), 4), (slice(None, None, -1), 3), (slice(1, None, 2), 6)):
        assert F.slice2range(s, n) == TF.slice2range(s, n)
    idx = np.arange(12).reshape(3, 2, 2) % 3
    for dim in (0, -1):
        ours, theirs = F.canonicalize_idx(idx, dim), TF.canonicalize_idx(t(idx), dim)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(np.asarray(a), b.numpy())
    tidx = (slice(1, 3), np.array([0, 2]))
    ours = F.ensure_tensor_indexing(tidx, (2, 4, 3))
    theirs = TF.ensure_tensor_indexing((slice(1, 3), t(tidx[1])), (2, 4, 3))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), b.numpy())
    vals = np.asarray(rand(7, (2, 4, 3)))
    # torchlinops broadcasts index arrays; jaxlinops wants them broadcast explicitly
    got = F.index(vals, tuple(jnp.broadcast_arrays(*ours)))
    np.testing.assert_array_equal(np.asarray(got), t(vals)[theirs].numpy())
    with pytest.raises(ValueError, match=r"share one shape; .*jnp\.broadcast_arrays"):
        F.index(vals, ours)
