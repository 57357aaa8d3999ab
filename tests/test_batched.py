"""`create_batched_linop` and `shard` on 8 simulated CPU devices: batched operators equal
the unbatched ones (forward, adjoint, normal) on 1-D and 2-D meshes, for every kind of
reassembly, ragged tiles, nested specs and memory-only tiling; output shardings; jit,
grad and vmap; no re-trace; the errors. The per-operator check of every family is
`test_contract.py::test_batched_matches_the_operator`."""

import logging

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from jax.sharding import AxisType, NamedSharding, PartitionSpec
from test_nufft import random_locs

import jaxlinops as jl
from jaxlinops.sharding._spec import fit_devices

C128 = jnp.complex128
DEVICES = jax.devices()


def sense(coils=8, n=8, frames=None, seed=0):
    """Mask @ FFT @ coil maps: (Nx, Ny) -> (C, Kx, Ky), or with a frame dim T on both."""
    batch = "" if frames is None else "T "
    lead = () if frames is None else (frames,)
    maps = jl.Dense(rand(seed, (coils, n, n)), "C Nx Ny", batch + "Nx Ny", batch + "C Nx Ny")
    fft = jl.FFT(2, batch_shape=batch + "C", centered=True)
    mask = np.random.default_rng(seed).random(lead + (1, n, n)) < 0.5
    return jl.Diagonal(jnp.asarray(mask, jnp.float64), batch + "C Kx Ky") @ fft @ maps


def check_all(B, A, x, y):
    """Forward, adjoint and normal of B against A, in one compiled program."""
    got = jax.jit(lambda op, v, w: (op(v), op.H(w), op.N(v)))(B, x, y)
    for g, want in zip(got, (A(x), A.H(y), A.N(x))):
        assert_close(g, want, C128)
    return got


@pytest.mark.devices(8)
def test_coils_across_8_devices_stay_sharded():
    A, x, y = sense(), rand(1, (8, 8)), rand(2, (8, 8, 8))
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=DEVICES))
    assert B.mesh.shape == {"C": 8}
    forward, adjoint, _ = check_all(B, A, x, y)
    # forward: coils concatenated through sharded out_specs; adjoint: a psum, replicated
    assert forward.sharding.spec == PartitionSpec("C") and len(forward.sharding.device_set) == 8
    assert forward.addressable_shards[3].data.shape == (1, 8, 8)
    assert adjoint.sharding.is_fully_replicated
    # the coil maps are stacked per tile and sharded: one coil per device
    weight = B.tiles.linops[0].weight
    assert weight.shape == (8, 1, 8, 8)
    assert {s.data.shape for s in weight.addressable_shards} == {(1, 1, 8, 8)}
    # the normal of A batched directly: coils are internal, summed across devices
    BN = jl.create_batched_linop(A.N, jl.BatchSpec({"C": 1}, device_matrix=DEVICES))
    assert_close(jax.jit(lambda op, v: op(v))(BN, x), A.N(x), C128)
    # eagerly, an input committed to one device (device_put, DLPack) is moved onto the mesh
    for device in (DEVICES[0], jax.devices()[-1]):
        committed = jax.device_put(x, device)
        assert_close(B(committed), A(x), C128)
        assert_close(B.H(jax.device_put(y, device)), A.H(y), C128)


@pytest.mark.devices(8)
def test_frames_and_coils_on_a_2x4_mesh():
    A = sense(coils=8, frames=2)
    x, y = rand(3, (2, 8, 8)), rand(4, (2, 8, 8, 8))
    devices = np.array(DEVICES).reshape(2, 4)
    B = jl.create_batched_linop(A, jl.BatchSpec({"T": 1, "C": 2}, device_matrix=devices))
    assert B.mesh.shape == {"T": 2, "C": 4}
    forward, adjoint, _ = check_all(B, A, x, y)
    assert forward.sharding.spec == PartitionSpec("T", "C")
    assert adjoint.sharding.spec == PartitionSpec("T")  # coils summed, frames kept


@pytest.mark.devices(8)
def test_input_only_dim_is_summed_and_psum_spans_the_mesh():
    A = jl.Dense(rand(5, (3, 16)), "M N", "N", "M")
    x, y = rand(6, (16,)), rand(7, (3,))
    B = jl.create_batched_linop(A, jl.BatchSpec({"N": 2}, device_matrix=DEVICES))
    forward, adjoint, _ = check_all(B, A, x, y)
    assert forward.sharding.is_fully_replicated
    assert adjoint.sharding.spec == PartitionSpec("N")


@pytest.mark.parametrize(
    "tile, devices", [(3, 2), (1, 4), (2, 8)], ids=["ragged", "2-per-device", "fewer-tiles"]
)
def test_ragged_tiles_and_more_tiles_than_devices(tile, devices):
    A, x, y = sense(coils=7), rand(8, (8, 8)), rand(9, (7, 8, 8))
    spec = jl.BatchSpec({"C": tile}, device_matrix=DEVICES[:devices])
    check_all(jl.create_batched_linop(A, spec), A, x, y)


def test_memory_only_tiling_and_nested_readout_chunks():
    """Coils across devices, then readout chunks one after another on each device, for a
    NUFFT SENSE operator; the non-Toeplitz normal has the readout dim inside it (ragged
    chunks there are masked)."""
    locs = random_locs(10, (8, 8), 3 * 12).reshape(3, 12, 2)
    maps = jl.Dense(rand(11, (4, 8, 8)), "C Nx Ny", "Nx Ny", "C Nx Ny")
    A = jl.NUFFT(locs, (8, 8), "S R", batch_shape="C", oversamp=2.0) @ maps
    x, y = rand(12, (8, 8)), rand(13, (4, 3, 12))
    specs = [jl.BatchSpec({"C": 1}, device_matrix=DEVICES[:4]), jl.BatchSpec({"R": 5})]
    B = jl.create_batched_linop(A, specs)
    assert isinstance(B.tiles, jl.BatchedLinop) and B.tiles.mesh is None
    check_all(B, A, x, y)
    memory_only = jl.create_batched_linop(A.N, jl.BatchSpec({"R": 5, "C": 3}))
    assert memory_only.mesh is None
    assert_close(jax.jit(lambda op, v: op(v))(memory_only, x), A.N(x), C128)


def test_jit_grad_vmap_and_no_retrace():
    A, x, y = sense(), rand(14, (8, 8)), rand(15, (8, 8, 8))
    spec = jl.BatchSpec({"C": 1}, device_matrix=DEVICES)
    B = jl.create_batched_linop(A, spec)
    traces = []

    @jax.jit
    def loss(op, v):
        traces.append(1)
        return jnp.sum(jnp.abs(op(v) - y) ** 2)

    gx_b, gx_a = jax.grad(loss, argnums=1)(B, x), jax.grad(loss, argnums=1)(A, x)
    assert_close(gx_b, gx_a, C128)
    # the gradient w.r.t. the coil maps, stacked per tile, is the unbatched one
    g_b = jax.grad(loss)(B, x).tiles.linops[0].weight
    g_a = jax.grad(loss)(A, x).linops[0].weight
    assert_close(g_b.reshape(g_a.shape), g_a, C128)
    xs = jnp.stack([x, 2 * x])
    assert_close(jax.jit(jax.vmap(B))(xs), jax.vmap(A)(xs), C128)
    # new data and new coil maps: the compiled program is reused
    loss(B, x)
    traces.clear()
    loss(jl.create_batched_linop(sense(seed=5), spec), rand(16, (8, 8)))
    assert not traces


@pytest.mark.devices(8)
def test_chains_sharded_inputs_base_device_and_split_again():
    A, x, y = sense(), rand(17, (8, 8)), rand(18, (8, 8, 8))
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=DEVICES))
    apply = jax.jit(lambda op, v: op(v))
    # composition with another operator
    D = jl.Diagonal(rand(19, (8, 8)), "Nx Ny")
    assert_close(apply(B @ D, x), (A @ D)(x), C128)
    # an already sharded input
    ys = jax.device_put(y, NamedSharding(B.mesh, PartitionSpec("C")))
    assert_close(apply(B.H, ys), A.H(y), C128)
    # base_device gathers the output: replicated inside jit, on the device eagerly
    spec = jl.BatchSpec({"C": 2}, device_matrix=DEVICES[:4], base_device=DEVICES[5])
    gathered = jl.create_batched_linop(A, spec)
    out = apply(gathered, x)
    assert out.sharding.is_fully_replicated
    assert_close(out, A(x), C128)
    assert gathered(x).sharding.device_set == {DEVICES[5]}
    # the batched operator splits again along dims it is not batched along
    A2, x2 = sense(frames=2), rand(20, (2, 8, 8))
    B2 = jl.create_batched_linop(A2, jl.BatchSpec({"C": 1}, device_matrix=DEVICES))
    tile = jl.split(B2, {"T": slice(1, 2)})
    assert_close(apply(tile, x2[1:]), A2(x2)[1:], C128)
    # along a batched dim: the tile of the reassembled operator
    assert_close(apply(jl.split(B2, {"C": slice(3, 6)}), x2), A2(x2)[:, 3:6], C128)


@pytest.mark.devices(8)
def test_shard_on_a_user_mesh():
    A, x, y = sense(), rand(21, (8, 8)), rand(22, (8, 8, 8))
    mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Explicit,) * 2)
    B = jl.shard(A, mesh, {"C": "b"})
    assert dict(B.batch)["C"].tile == 2  # one tile of 8 / 4 coils per device along "b"
    forward, _, _ = check_all(B, A, x, y)
    assert forward.sharding.spec == PartitionSpec("b")
    with pytest.raises(ValueError, match=r"mesh axes \['z'\] are not in the mesh"):
        jl.shard(A, mesh, {"C": "z"})
    with jax.set_mesh(mesh), pytest.raises(ValueError, match=r"applied under `jax.set_mesh`"):
        B(x)


@pytest.mark.devices(8)
def test_fuzzy_device_matrix_fit():
    d = np.array(DEVICES, dtype=object)
    # more devices than tiles: truncated; fewer: kept (several tiles per device)
    assert list(fit_devices(d[:3], [2])) == list(d[:2])
    assert list(fit_devices(d[:3], [5])) == list(d[:3])
    # a 1-D matrix aligns with the last batched dim; the first gets a size-1 axis
    assert fit_devices(d[:4], [3, 4]).shape == (1, 4)
    # unknown tile counts (dims the input fixes) keep the matrix
    assert fit_devices(d[:4].reshape(2, 2), [None, 1]).shape == (2, 1)


@pytest.mark.devices(8)
def test_log_device_transfers(caplog, monkeypatch):
    monkeypatch.setattr(jl.config, "log_device_transfers", True)
    A, x = sense(), rand(23, (8, 8))
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        B = jl.create_batched_linop(A, jl.BatchSpec({"C": 2}, device_matrix=DEVICES[:4]))
        B.H(A(x))
    text = caplog.text
    assert "dim 'C': tiles of 2, 4 tiles over mesh axis 'C' (4 devices); concatenated" in text
    assert "TFRT_CPU_3: tiles {'C': '3..3'}" in text or "tiles {'C': '3..3'}" in text
    assert "psum over mesh axes ['C']" in text


@pytest.mark.devices(8)
def test_bad_input():
    A = sense()
    spec = jl.BatchSpec({"Q": 1}, device_matrix=DEVICES)
    with pytest.raises(ValueError, match=r"dim 'Q' is not a dim of Chain \(\(Nx, Ny\) -> "):
        jl.create_batched_linop(A, spec)
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match=r"tile size of dim 'C' must be a positive"):
            jl.BatchSpec({"C": bad})
    with pytest.raises(ValueError, match=r"device matrix of shape \(2, 4\) cannot broadcast"):
        jl.BatchSpec({"C": 1}, device_matrix=np.array(DEVICES).reshape(2, 4))
    with pytest.raises(ValueError, match="every device may appear only once"):
        jl.BatchSpec({"C": 1}, device_matrix=[DEVICES[0], DEVICES[0]])

    class OtherPlatform:
        platform = "gpu"

    with pytest.raises(ValueError, match=r"devices of one platform expected; got \['cpu', 'gpu'\]"):
        jl.BatchSpec({"C": 1}, device_matrix=[DEVICES[0], OtherPlatform()])
    with pytest.raises(ValueError, match="only the first BatchSpec may have a device matrix"):
        jl.create_batched_linop(A, [jl.BatchSpec({"C": 1}), jl.BatchSpec({"C": 1}, DEVICES)])
    nufft = jl.NUFFT(random_locs(24, (8, 8), 12), (8, 8), "R", batch_shape="C")
    with pytest.raises(ValueError, match="does not fix the size of dim 'Q'"):
        jl.create_batched_linop(
            jl.Repeat({}, "C", "C Q", broadcast_dims="Q"), jl.BatchSpec({"Q": 1})
        )
    # a dim only the input sizes is fine: its tile count follows the input
    B = jl.create_batched_linop(nufft, jl.BatchSpec({"C": 1}, device_matrix=DEVICES[:2]))
    x = rand(25, (3, 8, 8))
    assert_close(jax.jit(lambda op, v: op(v))(B, x), nufft(x), C128)


@pytest.mark.parametrize("devices", [None, 4], ids=["memory-tiles", "4-devices"])
def test_sum_batched_along_the_summed_dim(devices):
    """A sum over `C` batched along `C`: the forward sums the tiles' partial sums (as the
    unbatched operator); the adjoint and normal, whose output `C` no size fixes (a
    broadcast axis), refuse with a jaxlinops error naming the dim (they crashed with
    `KeyError: 'C'`)."""
    S = jl.SumReduce(("C", "N"), ("N",))
    x = rand(3, (4, 6))
    device_matrix = None if devices is None else DEVICES[:devices]
    B = jl.create_batched_linop(S, jl.BatchSpec({"C": 1}, device_matrix=device_matrix))
    assert_close(B(x), x.sum(0), C128)
    with pytest.raises(ValueError, match=r"batched along dim 'C', whose size neither the"):
        B.H(rand(4, (6,)))
    with pytest.raises(ValueError, match=r"batched along dim 'C1', whose size neither the"):
        B.N(x)


def test_padded_dim_that_a_child_does_not_size():
    """A ragged padded tile along `C`, where the SumReduce child does not know the size of
    `C`: the mask takes the size from the tile grid (it crashed in `slice.indices`)."""
    w = np.arange(1.0, 11.0).reshape(2, 5)
    x = np.random.default_rng(0).standard_normal((2, 5))
    A = jl.SumReduce("N C", "N") @ jl.Diagonal(jnp.asarray(w), ("N", "C"))
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 3}))
    assert_close(B(jnp.asarray(x)), (w * x).sum(1), np.float64)


@pytest.mark.devices(8)
def test_torchlinops_arguments_bind():
    """`create_batched_linop(linop, batch_specs, default_device, _mmap, **options)`: the
    thread options and `_mmap` change nothing; `default_device` is where outputs go."""
    A, x = sense(coils=4), rand(26, (8, 8))
    spec = jl.BatchSpec({"C": 1}, device_matrix=DEVICES[:4])
    B = jl.create_batched_linop(
        linop=A, batch_specs=spec, _mmap=None, threaded=True, num_workers=2, accumulate=False
    )
    assert_close(B(x), A(x), C128)
    out = jl.create_batched_linop(A, [spec], DEVICES[5])(x)
    assert_close(out, A(x), C128)
    assert out.devices() == {DEVICES[5]}  # gathered on the default device, as torchlinops
    kept = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, DEVICES[:4], DEVICES[6]), DEVICES[5])
    assert kept(x).devices() == {DEVICES[6]}  # the spec's own base device wins
    with pytest.raises(TypeError, match=r"unknown options \['workers'\]"):
        jl.create_batched_linop(A, spec, workers=2)
    with pytest.raises(TypeError, match=r"`create_batched_linop\(default_device=...\)` must be"):
        jl.create_batched_linop(A, spec, "cpu")


def tile_devices(B, tiles):
    """The device of each tile, read from the sharding of the stacked coil maps."""
    weight = B.tiles.linops[0].weight  # [tile, 1, ...] stacked along the tile axis
    where = {}
    for shard in weight.addressable_shards:
        for i in range(*shard.index[0].indices(weight.shape[0])):
            where[i] = shard.device
    return [where[i] for i in range(tiles)]


@pytest.mark.parametrize("devices, tile", [(8, 1), (3, 1), (1, 2), (8, 3)])
def test_broadcast_device_matrix_is_where_tiles_run(devices, tile):
    """The device matrix fitted to the tile grid names the device that holds each tile
    of the batched operator (checked on the shards it really builds)."""
    A = sense(coils=8)
    spec = jl.BatchSpec({"C": tile}, device_matrix=DEVICES[:devices])
    matrix = spec.broadcast_device_matrix(A)
    tiles = -(-8 // tile)
    assert matrix.shape == (tiles,)
    assert list(matrix) == tile_devices(jl.create_batched_linop(A, spec), tiles)


@pytest.mark.devices(8)
def test_broadcast_device_matrix_as_torchlinops():
    """With at least as many devices as tiles (and for broadcast axes) the matrix is
    torchlinops'; with fewer, jaxlinops gives each device a contiguous run of tiles where
    torchlinops deals them out in turn."""
    torch = pytest.importorskip("torch")
    tl = pytest.importorskip("torchlinops")
    W = rand(27, (6, 4, 3))
    A = jl.Dense(W, "C M N", "C N", "C M")
    T = tl.Dense(torch.from_numpy(np.array(W)), ("C", "M", "N"), ("C", "N"), ("C", "M"))
    ids = np.array([d.id for d in DEVICES])
    for devices, sizes in (([[0]], {"C": 2, "M": 1}), (ids[:4], {"C": 2, "M": 1})):
        devs = np.vectorize(lambda i: DEVICES[i], otypes=[object])(np.array(devices))
        ours = jl.BatchSpec(sizes, devs).broadcast_device_matrix(A)
        theirs = tl.BatchSpec(sizes, np.array(devices)).broadcast_device_matrix(T)
        np.testing.assert_array_equal(np.vectorize(lambda d: d.id)(ours), theirs)
    ours = jl.BatchSpec({"C": 1}, DEVICES[:4]).broadcast_device_matrix(A)
    theirs = tl.BatchSpec({"C": 1}, ids[:4]).broadcast_device_matrix(T)
    assert [d.id for d in ours] == [0, 0, 1, 1, 2, 2] and list(theirs) == [0, 1, 2, 3, 0, 1]
    assert list(jl.BatchSpec({"C": 3}).broadcast_device_matrix(A)) == [DEVICES[0]] * 2
    B = jl.NUFFT(random_locs(28, (8, 8), 6), (8, 8), "R", batch_shape="C")
    with pytest.raises(ValueError, match="does not fix the size of dim 'C'"):
        jl.BatchSpec({"C": 1}).broadcast_device_matrix(B)


class CustomMatrix(jl.NamedLinop):
    """$y = W x$, `(N) -> (M)`, written to torchlinops' protocol with its own `split` (which
    slices `W` and knows nothing of padded tiles) and `normal_fn`."""

    def __init__(self, weight):
        super().__init__(jl.NamedShape(("N",), ("M",)))
        self.weight = weight

    @staticmethod
    def fn(linop, x, /):
        return linop.weight @ x

    @staticmethod
    def adj_fn(linop, y, /):
        return jnp.conj(linop.weight).T @ y

    @staticmethod
    def normal_fn(linop, x, /):
        return jnp.conj(linop.weight).T @ (linop.weight @ x)

    @staticmethod
    def split(linop, tile):
        return CustomMatrix(linop.weight[tile.get("M", slice(None)), tile.get("N", slice(None))])

    def size(self, dim):
        return dict(zip("MN", self.weight.shape)).get(dim)


@pytest.mark.parametrize(
    "specs",
    [
        {"M": 2},  # concatenated: a ragged tile and an all-padding one on 2 devices
        {"N": 2},  # summed across devices, the same padding
        ({"M": 2}, {"N": 2}),  # nested: tiles of padded tiles
    ],
    ids=["output-dim", "input-dim", "nested"],
)
def test_custom_operator_with_its_own_split(specs):
    """A torchlinops-style operator with its own `split` is batched along its dims (5
    entries, tiles of 2 over 2 devices: a ragged tile and an all-padding one, which its
    `split` never sees): forward, adjoint and normal equal the dense matrix's, and a tile
    of the batched operator is the block of the matrix."""
    W, x, y = np.asarray(rand(30, (5, 5))), rand(31, (5,)), rand(32, (5,))
    A = CustomMatrix(jnp.asarray(W))
    first, *rest = [specs] if isinstance(specs, dict) else specs
    spec = [jl.BatchSpec(first, device_matrix=DEVICES[:2])] + [jl.BatchSpec(s) for s in rest]
    B = jl.create_batched_linop(A, spec)
    got = jax.jit(lambda op, v, w: (op(v), op.H(w), op.N(v)))(B, x, y)
    for g, want in zip(got, (W @ x, W.conj().T @ y, W.conj().T @ (W @ x))):
        assert_close(g, want, C128)
    dim = next(iter(first))
    tile = jl.split(B, {dim: slice(1, 4)})
    block = W[1:4] if dim == "M" else W[:, 1:4]
    assert_close(tile(x if dim == "M" else x[1:4]), block @ (x if dim == "M" else x[1:4]), C128)


def test_custom_normal_splits_through_the_operator():
    """`A.N` by the class's `normal_fn` is batched along `A`'s output dim (internal to the
    normal: tiles sum, the all-padding one adds zero); its input dim, renamed in the
    output, is refused by name."""
    W, x = np.asarray(rand(33, (5, 3))), rand(34, (3,))
    A = CustomMatrix(jnp.asarray(W))
    assert type(A.N).__name__ == "NormalFn"
    B = jl.create_batched_linop(A.N, jl.BatchSpec({"M": 2}, device_matrix=DEVICES[:2]))
    assert_close(jax.jit(lambda op, v: op(v))(B, x), W.conj().T @ (W @ x), C128)
    with pytest.raises(ValueError, match=r"`CustomMatrix.N` cannot be split along dims \['N'\]"):
        jl.split(A.N, {"N": slice(0, 1)})


def test_custom_split_without_size_is_refused():
    """An operator with its own `split` that does not report a dim's size cannot have
    tiles sliced along it (the batcher would apply it whole to every tile): a ValueError
    naming it, the dim and the fix."""

    class Unsized(CustomMatrix):
        def size(self, dim):
            return None

    A = Unsized(rand(35, (5, 5)))
    with pytest.raises(ValueError, match=r"`Unsized` .* does not report the size of dim 'N'"):
        jl.create_batched_linop(A, jl.BatchSpec({"N": 2}))


def test_custom_operator_batched_as_torchlinops():
    """The same class written for torchlinops, batched by torchlinops with the same
    ragged tiles, gives the same forward and adjoint."""
    torch = pytest.importorskip("torch")
    tl = pytest.importorskip("torchlinops")

    class TorchMatrix(tl.NamedLinop):
        def __init__(self, weight):
            super().__init__(tl.NS(("N",), ("M",)))
            self.weight = weight

        @staticmethod
        def fn(linop, x, /):
            return linop.weight @ x

        @staticmethod
        def adj_fn(linop, y, /):
            return linop.weight.conj().T @ y

        @staticmethod
        def split(linop, tile):
            return TorchMatrix(linop.weight[tile.get("M", slice(None)), tile.get("N", slice(None))])

        def size(self, dim):
            return dict(zip("MN", self.weight.shape)).get(dim)

    # writable copies: torch.from_numpy warns on a read-only array
    W, x, y = (np.array(rand(seed, n)) for seed, n in ((36, (5, 5)), (37, (5,)), (38, (5,))))
    for sizes in ({"M": 2}, {"N": 2}):
        ours = jl.create_batched_linop(CustomMatrix(jnp.asarray(W)), jl.BatchSpec(sizes))
        theirs = tl.create_batched_linop(TorchMatrix(torch.from_numpy(W)), tl.BatchSpec(sizes))
        assert_close(ours(x), theirs(torch.from_numpy(x)).numpy(), C128)
        assert_close(ours.H(y), theirs.H(torch.from_numpy(y)).numpy(), C128)


def nufft_names(op: jl.NamedLinop) -> list[str]:
    """The names of every operator inside `op` (a tree walk)."""
    names = [type(op).__name__]
    for child in getattr(op, "children", ()) or ():
        names += nufft_names(child)
    return names


@pytest.mark.parametrize(
    "dims, sizes", [("C", {"C": 1}), ("R", {"R": 4}), ("both", {"C": 2, "R": 8})]
)
def test_batched_normal_keeps_the_toeplitz_fast_path(dims, sizes):
    """`create_batched_linop(A).N` of a Toeplitz NUFFT SENSE operator is the tiles' Toeplitz
    normals, batched (no NUFFT inside), and equals the unbatched normal: along coils, along
    points (30 points in tiles of 4: ragged, the padding masked out of each tile's PSF),
    and both; also with a density compensation split like the points."""
    locs = random_locs(20, (8, 8), 30)
    maps = jl.Dense(rand(21, (4, 8, 8)), "C Nx Ny", "Nx Ny", "C Nx Ny")
    nufft = jl.NUFFT(locs, (8, 8), "R", batch_shape="C", oversamp=2.0, toeplitz=True, backend="jax")
    A = nufft @ maps
    B = jl.create_batched_linop(A, jl.BatchSpec(sizes, device_matrix=DEVICES))
    dcf = jl.Diagonal(1.0 + jnp.abs(rand(22, (30,), jnp.float64)), ("...", "R"))
    x = rand(23, (8, 8))
    for got, want in ((B.N, A.N), (B.normal(dcf), A.normal(dcf))):
        assert isinstance(got, jl.BatchedLinop) and "NUFFT" not in nufft_names(got)
        assert_close(jax.jit(lambda op, v: op(v))(got, x), want(x), C128)


def test_batched_normal_along_an_input_dim_is_the_default_chain():
    """Tiles along an input-only dim are partial sums: their normals would miss the cross
    terms, so the normal is the chain B, B.H (and still equals A.N)."""
    A = jl.Dense(rand(24, (3, 16)), "M N", "N", "M")
    B = jl.create_batched_linop(A, jl.BatchSpec({"N": 2}, device_matrix=DEVICES))
    assert isinstance(B.N, jl.Chain)
    assert_close(B.N(rand(25, (16,))), A.N(rand(25, (16,))), C128)


class _Copies(jl.NamedLinop):
    """`x` `(N)` copied into each of `n` entries of `C`: `(N) -> (C, N)`, with a `split`
    along `C` that neither zero-pads nor masks (a ragged tile past the end of `C` copies
    `x` into its padding too, as an operator written without padding in mind would)."""

    n: int = eqx.field(static=True)
    ishape: tuple = jl.dims_field()
    oshape: tuple = jl.dims_field()

    def __init__(self, n, ishape=("N",), oshape=("C", "N")):
        self.n, self.ishape, self.oshape = n, tuple(ishape), tuple(oshape)

    def size(self, dim):
        return self.n if dim == self.oshape[0] else None

    def tiling(self):
        return jl.Tiling(batch=self.oshape)

    def split(self, tile):
        c = self.oshape[0]
        return self if c not in tile else _Copies(tile[c].stop - tile[c].start, *self.shapes)

    @property
    def shapes(self):
        return self.ishape, self.oshape

    def apply(self, x):
        return jnp.broadcast_to(x, (self.n,) + x.shape)

    def apply_adjoint(self, y):
        return y.sum(0)


@pytest.mark.parametrize("devices", [None, 3])
def test_batched_normal_masks_the_padding_of_ragged_tiles(devices):
    """5 copies batched in tiles of 2 along `C` (the last tile padded): the normal
    $\\sum_t A_t^H W_t A_t$ leaves out the padded entry, whose copy the reassembly of the
    forward cuts off, with no weight (5 x, not 6 x) and with a `Diagonal` weight on
    `(C, N)` (the padding's weight is not read)."""
    A = _Copies(5)
    x = rand(1, (3,))
    w = np.arange(1.0, 16.0).reshape(5, 3)
    device_matrix = None if devices is None else DEVICES[:devices]
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 2}, device_matrix=device_matrix))
    assert_close(B.N(x), 5 * np.asarray(x), C128)
    W = jl.Diagonal(jnp.asarray(w), ("C", "N"))
    assert_close(B.normal(W)(x), w.sum(0) * np.asarray(x), C128)
