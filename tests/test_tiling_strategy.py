"""`TilingStrategy`, `create_batched_linop_v2` and torchlinops' split helpers: tiled
operators against the dense matrix (numpy) and torchlinops itself, placement on the
simulated CPU devices, jit and grad, and the errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops.linops.device import DeviceSpec
from jaxlinops.linops.split import (
    DeviceRole,
    TilingStrategy,
    create_batched_linop_v2,
    flatten_recursive,
    fuzzy_broadcast_to,
    repeat_along_axes,
    tile_along_axes,
)

tl = pytest.importorskip("torchlinops")
tl_split = pytest.importorskip("torchlinops.linops.split")
torch = pytest.importorskip("torch")
CPUS = jax.devices("cpu")


def dense(seed=0, B=3, M=5, N=7, dtype: type = np.complex128):
    """`Dense` of a random (B, M, N) weight, `B N -> B M`, and the weight (numpy)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((B, M, N)) + (
        1j * rng.standard_normal((B, M, N)) if dtype == np.complex128 else 0
    )
    return jl.Dense(jnp.asarray(w), "B M N", "B N", "B M"), w


def placed(bounds):
    return TilingStrategy(bounds, [CPUS[0]]).place_all(CPUS[0])


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize(
    "bounds",
    [
        {"N": [0, 3, 7]},
        {"M": [0, 1, 5]},
        {"B": [0, 2, 3]},
        {"N": [0, 2, 5, 7], "M": [0, 4, 5], "B": [0, 1, 3]},
    ],
)
def test_apply_against_the_dense_matrix(bounds, dtype):
    A, w = dense(1, dtype=dtype)
    batched = placed(bounds).apply(A)
    x = np.random.default_rng(2).standard_normal((3, 7)).astype(dtype)
    y = np.random.default_rng(3).standard_normal((3, 5)).astype(dtype)
    np.testing.assert_allclose(batched(jnp.asarray(x)), np.einsum("bmn,bn->bm", w, x), rtol=1e-12)
    np.testing.assert_allclose(
        batched.H(jnp.asarray(y)), np.einsum("bmn,bm->bn", w.conj(), y), rtol=1e-12
    )


def test_an_internal_dim_is_summed():
    """A dim between two operators (in neither shape) tiles into partial sums: `Add`."""
    rng = np.random.default_rng(4)
    w1, w2 = rng.standard_normal((6, 4)), rng.standard_normal((3, 6))
    A = jl.Dense(jnp.asarray(w2), "M K", "K", "M") @ jl.Dense(jnp.asarray(w1), "K N", "N", "K")
    batched = placed({"K": [0, 2, 6]}).apply(A)
    assert isinstance(batched, jl.Add)
    x = rng.standard_normal(4)
    np.testing.assert_allclose(batched(jnp.asarray(x)), w2 @ w1 @ x, rtol=1e-12)


def test_matches_torchlinops():
    """The same ragged two-level tiling in torchlinops gives the same operator."""
    A, w = dense(5)
    x = np.random.default_rng(6).standard_normal((3, 7)) + 0j
    cpu = torch.device("cpu")
    ref = tl.Dense(torch.from_numpy(w), ("B", "M", "N"), ("B", "N"), ("B", "M"))
    plans = [({"N": [0, 3, 7]}, {"M": [0, 2, 5]}), ({"B": [0, 1, 3], "N": [0, 6, 7]},)]
    for plan in plans:
        ours = create_batched_linop_v2(A, [placed(b) for b in plan])
        theirs = tl_split.create_batched_linop_v2(
            ref, [tl_split.TilingStrategy(b, [cpu]).place_all(cpu) for b in plan]
        )
        np.testing.assert_allclose(
            ours(jnp.asarray(x)), theirs(torch.from_numpy(x)).numpy(), rtol=1e-12
        )


@pytest.mark.devices(3)
def test_tiles_run_on_their_compute_devices():
    A, w = dense(7)
    s = TilingStrategy({"N": [0, 2, 4, 7]}, CPUS[:3]).place_all(CPUS[0])
    s.distribute_across_devices("N", roles=(DeviceRole.COMPUTE,))
    tiles, pre, post = s.split(A)
    for i in range(3):
        assert tiles[i].weight.devices() == {CPUS[i]}
        assert (pre[i] is None) == (i == 0) and (post[i] is None) == (i == 0)
    assert pre[1].ispec.device == CPUS[0] and pre[1].ospec.device == CPUS[1]
    assert [t for t, _, _ in s.transfers(DeviceRole.COMPUTE, DeviceRole.OUT)] == [(1,), (2,)]
    batched = s.apply(A)
    x = jax.device_put(jnp.asarray(np.random.default_rng(8).standard_normal((3, 7)) + 0j), CPUS[0])
    y = batched(x)
    assert y.devices() == {CPUS[0]}
    np.testing.assert_allclose(y, np.einsum("bmn,bn->bm", w, x), rtol=1e-12)


def test_placement_and_queries():
    s = TilingStrategy({"N": [0, 2, 4, 6], "M": [0, 1, 2]}, ["cpu:0", CPUS[1]])
    assert s.devices == [CPUS[0], CPUS[1]] and s.shape == (3, 2) and s.tiles.shape == (3, 2, 3)
    s.place_all(CPUS[1]).distribute_across_devices("N", roles=(DeviceRole.IN,))
    np.testing.assert_array_equal(s.tiles[..., DeviceRole.IN], [[0, 0], [1, 1], [0, 0]])
    assert s.tiles_on(CPUS[0], DeviceRole.IN) == {DeviceRole.IN: [(0, 0), (0, 1), (2, 0), (2, 1)]}
    assert s.copy_role(DeviceRole.IN, DeviceRole.OUT).transfers(DeviceRole.IN, DeviceRole.OUT) == []
    assert s.device_of((1, 0), DeviceRole.COMPUTE) == CPUS[1]


def test_jit_and_grad_through_a_tiled_operator():
    A, w = dense(9, dtype=np.float64)
    batched = create_batched_linop_v2(A, [placed({"N": [0, 3, 7]}), placed({"M": [0, 2, 5]})])
    x = jnp.asarray(np.random.default_rng(10).standard_normal((3, 7)))
    np.testing.assert_allclose(
        jax.jit(lambda B, v: B(v))(batched, x), np.einsum("bmn,bn->bm", w, x), rtol=1e-12
    )
    g = jax.grad(lambda v: jnp.sum(batched(v) ** 2))(x)
    np.testing.assert_allclose(
        g, 2 * np.einsum("bmn,bm->bn", w, np.einsum("bmn,bn->bm", w, x)), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("bounds", "match"),
    [
        ({"N": [0, 3, 9]}, "invalid bounds"),
        ({"N": [0, 5, 3, 7]}, "monotonic"),
        ({"N": [1, 7]}, "monotonic"),
        ({"K": [0, 2]}, "does not fix the size of dim 'K'"),
    ],
)
def test_bounds_must_partition_the_dim(bounds, match):
    with pytest.raises(ValueError, match=match):
        placed(bounds).split(dense()[0])


def test_construction_and_option_errors():
    with pytest.raises(ValueError, match="at least two integer edges"):
        TilingStrategy({"N": [0]}, [CPUS[0]])
    with pytest.raises(ValueError, match="distinct devices"):
        TilingStrategy({"N": [0, 7]}, [CPUS[0], "cpu"])
    # a device this machine lacks plans placements (as torchlinops), and split refuses it
    planned = TilingStrategy({"N": [0, 3, 7]}, [CPUS[0], "tpu:0"]).distribute_across_devices("N")
    assert planned.device_of((1,), DeviceRole.COMPUTE) == "tpu:0"
    with pytest.raises(ValueError, match=r"`TilingStrategy.split`: JAX has no 'tpu' device"):
        planned.split(dense()[0])
    with pytest.raises(ValueError, match="a device string is"):
        TilingStrategy({"N": [0, 7]}, ["cpu:x"])
    with pytest.raises(TypeError, match="expects a jax.Device"):
        TilingStrategy({"N": [0, 7]}, [3])
    with pytest.raises(ValueError, match="not tiled"):
        placed({"N": [0, 7]}).distribute_across_devices("M")
    with pytest.raises(TypeError, match=r"unknown options \['workers'\]"):
        placed({"N": [0, 7]}).apply(dense()[0], workers=2)
    with pytest.raises(ValueError, match="same shape"):
        placed({"N": [0, 7]}).wrap(*(np.empty(n, object) for n in (1, 2, 1)))


def test_helpers_match_torchlinops():
    arr = np.arange(6).reshape(2, 3)
    for target in [(4,), (3, 5), (2, 3), (5, 2, 2), (1, 3)]:
        np.testing.assert_array_equal(
            fuzzy_broadcast_to(arr, target), tl_split.fuzzy_broadcast_to(arr, target)
        )
        out = fuzzy_broadcast_to(jnp.asarray(arr), target)
        assert isinstance(out, jax.Array)
        np.testing.assert_array_equal(out, tl_split.fuzzy_broadcast_to(arr, target))
    for counts in [[2], [1, 3], [2, 1, 2]]:
        np.testing.assert_array_equal(
            repeat_along_axes(arr, counts), tl_split.repeat_along_axes(arr, counts)
        )
        np.testing.assert_array_equal(
            tile_along_axes(jnp.asarray(arr), counts), tl_split.tile_along_axes(arr, counts)
        )
    nested = [[1, [2, [3]]], [4], 5]
    for depth in [None, 0, 1, 2]:
        assert flatten_recursive(nested, depth) == tl_split.flatten_recursive(nested, depth)


def test_device_spec_and_todevice():
    assert DeviceSpec("cpu").device == CPUS[0] and DeviceSpec("cpu:1").type == "cpu"
    T = jl.ToDevice(DeviceSpec(CPUS[1]), CPUS[0], "N")
    assert T.idevice == CPUS[1] and repr(T) == "ToDevice((N) -> (N), cpu:1 -> cpu:0)"
    with pytest.raises(ValueError, match="JAX has 8 'cpu' device"):
        DeviceSpec("cpu:99")


def test_scalar_split_weight():
    S = jl.Scalar(2.0, "N")
    assert S.split_weight([slice(0, 2)], [slice(0, 2)], S.weight) is S.weight
    with pytest.raises(AssertionError, match="split identically"):
        S.split_weight([slice(0, 2)], [slice(0, 3)], S.weight)
