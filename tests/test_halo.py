"""Halo exchange inside `jax.shard_map` on 2, 3 and 8 of the 8 simulated devices.

`halo_extend` is compared with numpy slices of the whole array (with wraparound or zeros),
`halo_reduce` by the dot test against it. Then the pattern grid splitting will use: a
convolution and a gridding interpolation run block by block on extended blocks equal the
unsplit `jaxlinops.Convolution` and `interpolate` on the whole array.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rtol
from jax.sharding import NamedSharding, PartitionSpec as P

import jaxlinops as jl
from jaxlinops.functional import interpolate, interpolate_adjoint
from jaxlinops.sharding._halo import halo_extend, halo_reduce

RNG = np.random.default_rng(0)

# (size, devices, width, periodic): even and ragged sizes, devices that hold no entries
# (size 10 or 9 on 8 devices: blocks of 2 on devices 0-4), a width equal to the block
# and, with zeros outside, a width beyond the last block's valid entries (halos wider
# than a block, from several neighbours: tests/test_halo_hops.py)
SPLITS = [
    (12, 3, 2, True),
    (10, 3, 2, True),
    (10, 3, 4, False),
    (7, 2, 3, True),
    (5, 2, 2, False),
    (16, 8, 2, True),
    (10, 8, 1, True),
    (9, 8, 2, False),
]


def sample(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def block_of(size, devices):
    return -(-size // devices)


def ext_index(size, devices, width, periodic):
    """The global index held at each entry of the concatenated extended blocks (-1: a zero).

    Device i's block starts at i * B; its extended block holds the global indices
    i * B - width + j for j < n_i + 2 * width (n_i valid entries), wrapped modulo `size`
    or zero outside [0, size), then zeros; an empty block extends to zeros."""
    block = block_of(size, devices)
    rows = []
    for i in range(devices):
        valid = min(max(size - i * block, 0), block)
        j = np.arange(block + 2 * width)
        g = i * block - width + j
        g = g % size if periodic else np.where((g >= 0) & (g < size), g, -1)
        rows.append(np.where(j < (valid + 2 * width if valid else 0), g, -1))
    return np.concatenate(rows)


def take(x, axis, index):
    """`x` at `index` along `axis`, zero where the index is -1."""
    shape = [1] * x.ndim
    shape[axis] = -1
    return np.where(index.reshape(shape) >= 0, np.take(x, np.maximum(index, 0), axis), 0)


def padded(x, axis, devices, fill=None):
    """`x` padded along `axis` to `devices` blocks; the padding is random junk (which
    halo_extend must never read) unless `fill` (a number) is given."""
    pad = block_of(x.shape[axis], devices) * devices - x.shape[axis]
    shape = list(x.shape)
    shape[axis] = pad
    junk = 1e3 * sample(shape, x.dtype) if fill is None else np.full(shape, fill, x.dtype)
    return np.concatenate([x, junk], axis)


def mesh_of(*shape):
    names = ("i", "j")[: len(shape)]
    return jax.make_mesh(shape, names, devices=jax.devices()[: math.prod(shape)])


def split(fn, mesh, in_specs, out_specs):
    """`fn` on each device's blocks, under jit; takes and returns whole numpy arrays."""
    specs = in_specs if isinstance(in_specs, tuple) else (in_specs,)
    f = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=out_specs))

    def run(*arrays):
        args = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip(arrays, specs)]
        return np.asarray(f(*args))

    run.jitted = f
    return run


def halo_pair(mesh, axis, width, size, periodic):
    spec = P(None, "i") if axis == 1 else P("i")
    ext = split(lambda x: halo_extend(x, axis, width, "i", size, periodic), mesh, spec, spec)
    red = split(lambda y: halo_reduce(y, axis, width, "i", size, periodic), mesh, spec, spec)
    return ext, red


def inner(a, b):
    return np.vdot(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("size, devices, width, periodic", SPLITS)
def test_extend_slices_whole_array(size, devices, width, periodic, dtype):
    x = sample((2, size), dtype)
    ext, _ = halo_pair(mesh_of(devices), 1, width, size, periodic)
    want = take(x, 1, ext_index(size, devices, width, periodic))
    np.testing.assert_array_equal(ext(padded(x, 1, devices)), want)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("size, devices, width, periodic", SPLITS)
def test_reduce_is_adjoint(size, devices, width, periodic, dtype):
    """<extend(x), y> = <x, reduce(y)> summed over devices, for arbitrary padding in x
    (extend ignores it, reduce returns zeros there) and arbitrary y."""
    mesh = mesh_of(devices)
    block = block_of(size, devices)
    ext, red = halo_pair(mesh, 0, width, size, periodic)
    x = sample((block * devices, 3), dtype)
    y = sample((devices * (block + 2 * width), 3), dtype)
    lhs, rhs = inner(ext(x), y), inner(x, red(y))
    # a sum of ~100 products of unit entries: the error is a few eps times its sqrt
    assert abs(lhs - rhs) <= 100 * rtol(dtype) * np.sqrt(y.size)
    assert np.all(red(y)[size:] == 0)


@pytest.mark.parametrize("periodic", [True, False])
def test_pencil_extends_corners(periodic):
    """A block split along two axes, extended along one and then the other, is the slice
    of the whole array (corners included), in either order; the dot test with the
    reductions in the reverse order."""
    sizes, widths = (5, 10), (1, 2)  # blocks 3 (2 valid on the last) and 4 (last: 2)
    mesh = mesh_of(2, 3)
    spec = P("i", "j")
    ext_i = lambda x: halo_extend(x, 0, widths[0], "i", sizes[0], periodic)  # noqa: E731
    ext_j = lambda x: halo_extend(x, 1, widths[1], "j", sizes[1], periodic)  # noqa: E731
    red_i = lambda y: halo_reduce(y, 0, widths[0], "i", sizes[0], periodic)  # noqa: E731
    red_j = lambda y: halo_reduce(y, 1, widths[1], "j", sizes[1], periodic)  # noqa: E731
    x = sample(sizes, np.complex128)
    xp = padded(padded(x, 0, 2), 1, 3)
    want = take(
        take(x, 0, ext_index(sizes[0], 2, widths[0], periodic)),
        1,
        ext_index(sizes[1], 3, widths[1], periodic),
    )
    np.testing.assert_array_equal(split(lambda b: ext_j(ext_i(b)), mesh, spec, spec)(xp), want)
    np.testing.assert_array_equal(split(lambda b: ext_i(ext_j(b)), mesh, spec, spec)(xp), want)
    y = sample(want.shape, np.complex128)
    reduced = split(lambda b: red_i(red_j(b)), mesh, spec, spec)(y)
    assert abs(inner(want, y) - inner(xp, reduced)) <= 1e-10 * np.sqrt(y.size)


def test_width_zero_is_identity():
    mesh = mesh_of(3)
    x = sample((12,), np.float64)
    for fn in (halo_extend, halo_reduce):
        run = split(lambda b: fn(b, 0, 0, "i", 10, True), mesh, P("i"), P("i"))  # noqa: B023
        np.testing.assert_array_equal(run(x), x)


@pytest.mark.parametrize("fn", [halo_extend, halo_reduce])
def test_compiled_program_permutes_and_gathers_nothing(fn):
    """Under jit, halos move by collective-permute; nothing gathers the whole array."""
    size, devices, width = 10, 3, 2
    mesh = mesh_of(devices)
    length = block_of(size, devices) + (2 * width if fn is halo_reduce else 0)
    run = split(lambda b: fn(b, 0, width, "i", size, True), mesh, P("i"), P("i"))
    arg = jax.ShapeDtypeStruct(
        (devices * length,), jnp.complex64, sharding=NamedSharding(mesh, P("i"))
    )
    hlo = run.jitted.lower(arg).compile().as_text()
    assert "collective-permute" in hlo
    assert "all-gather" not in hlo and "all-reduce" not in hlo


@pytest.mark.parametrize(
    "kwargs, shape, match",
    [
        (dict(width=1, periodic=True), (5,), r"halo_extend`.*must have 4 entries along axis 0"),
        (dict(width=1, periodic=1), (4,), r"halo_extend\(periodic=...\)` must be a bool"),
        (dict(width=1, periodic=True, axis=1), (4,), r"halo_extend\(axis=...\)` must be an axis"),
        (dict(width=1.5, periodic=True), (4,), r"halo_extend\(width=...\)`.*not integral"),
    ],
)
def test_bad_arguments(kwargs, shape, match):
    """Size 10 on 3 devices: blocks of 4, the last with 2 valid entries."""
    kwargs = dict(axis=0, axis_name="i", size=10) | kwargs
    exc = TypeError if "bool" in match else ValueError
    mesh = mesh_of(3)
    run = split(lambda b: halo_extend(b, **kwargs), mesh, P("i"), P("i"))
    with pytest.raises(exc, match=match):
        run(np.zeros((3 * shape[0],)))


def test_outside_shard_map_is_refused():
    with pytest.raises(ValueError, match=r"halo_reduce` must be called inside `jax.shard_map`"):
        halo_reduce(jnp.zeros(8), 0, 2, "i", 10, True)


# --- the pattern grid splitting generalises: local operators on extended blocks ---


def local_correlate(ext, w):
    """The 'valid' correlation of an extended block with an odd-sized `w`: one output per
    block entry, $y[n] = \\sum_m w[m]\\, e[n + m]$."""
    nd = w.ndim
    out = jax.lax.conv_general_dilated(
        ext[None, None],
        w.astype(ext.dtype)[None, None],
        (1,) * nd,
        "VALID",
        precision=jax.lax.Precision.HIGHEST,
    )
    return out[0, 0]


@pytest.mark.parametrize("mode", ["circular", "zeros"])
@pytest.mark.parametrize(
    "sizes, mesh_shape, kernel_shape, dtype",
    [
        ((10,), (3,), (4,), np.complex128),  # ragged, even kernel (odd-padded, radius 2)
        ((16,), (8,), (5,), np.float64),
        ((5, 10), (2, 3), (3, 4), np.complex128),  # a pencil, ragged along both axes
    ],
)
def test_convolution_on_extended_blocks(sizes, mesh_shape, kernel_shape, dtype, mode):
    """Forward: extend by the kernel radius (`Convolution.coupling`), correlate the valid
    part; adjoint: the transpose of that local map, then halo_reduce. Both equal the
    unsplit `Convolution` on the whole array."""
    periodic = mode == "circular"
    h = sample(kernel_shape, dtype)
    A = jl.Convolution(h, padding_mode=mode)
    radii = [A.coupling(d).width for d in A.in_grid_shape]
    names = ("i", "j")[: len(sizes)]
    w = jnp.flip(jnp.pad(jnp.asarray(h), [(0, 1 - k % 2) for k in kernel_shape]))
    mesh, spec = mesh_of(*mesh_shape), P(*names)

    def extend(b):
        for axis, (r, name, n) in enumerate(zip(radii, names, sizes)):
            b = halo_extend(b, axis, r, name, n, periodic)
        return b

    def reduce(e):
        for axis in reversed(range(len(sizes))):
            e = halo_reduce(e, axis, radii[axis], names[axis], sizes[axis], periodic)
        return e

    def adjoint(b):
        # the local map's adjoint: its transpose (by JAX, at any varying primal) conjugated
        _, transpose = jax.vjp(lambda e: local_correlate(e, w), jnp.pad(b, [(r, r) for r in radii]))
        (e,) = transpose(jnp.conj(b))
        return reduce(jnp.conj(e))

    def whole(blocks):
        return blocks[tuple(slice(n) for n in sizes)]

    def pad_all(x, fill=None):
        for axis, d in enumerate(mesh_shape):
            x = padded(x, axis, d, fill)
        return x

    x, y = sample(sizes, dtype), sample(sizes, dtype)
    forward = split(lambda b: local_correlate(extend(b), w), mesh, spec, spec)
    assert_close(whole(forward(pad_all(x))), A(jnp.asarray(x)), dtype)
    # the local adjoint spreads every entry it gets: the padding of y must be zero
    backward = split(adjoint, mesh, spec, spec)
    assert_close(whole(backward(pad_all(y, 0))), A.H(jnp.asarray(y)), dtype)


def bucketed(locs, size, devices, halo):
    """The points of each device (the block holding their nearest grid index along axis 0,
    modulo `size`), in its extended block's coordinates, padded to a common count with
    dummy points at `halo`; and each device slot's point (-1: dummy)."""
    block = block_of(size, devices)
    nearest = np.floor(locs[:, 0] + 0.5)
    owner = (nearest % size) // block
    count = max(np.bincount(owner.astype(int), minlength=devices))
    slots = np.full((devices, count), -1)
    local = np.full((devices, count, locs.shape[1]), float(halo))
    for d in range(devices):
        (ids,) = np.nonzero(owner == d)
        slots[d, : ids.size] = ids
        local[d, : ids.size] = locs[ids]
        local[d, : ids.size, 0] += nearest[ids] % size - nearest[ids] - d * block + halo
    return local.reshape(-1, locs.shape[1]), slots.ravel()


@pytest.mark.parametrize(
    "grid, devices, kernel, width",
    [((11, 6), 3, "kaiser_bessel", 4.0), ((20,), 8, "spline", 2.0)],
)
def test_interpolation_on_extended_blocks(grid, devices, kernel, width):
    """Points bucketed by the block of their nearest grid index: interpolating on the
    extended block (halo: the grid points within width / 2 of a point whose nearest index
    is in the block) equals the unsplit periodic interpolation; spreading onto the
    extended block and halo_reduce equals the unsplit adjoint."""
    halo = int(np.floor(width / 2 + 0.5))
    block = block_of(grid[0], devices)
    edges = np.arange(1, devices) * block
    points = RNG.uniform(0, 1, (24, len(grid))) * np.array(grid)
    # points beside each block edge, at the grid's start and near its end (whose nearest
    # index wraps around to 0)
    near = np.concatenate([edges - 0.49, edges + 0.49, [0.01, grid[0] - 0.4]])
    points[: near.size, 0] = near
    local, slots = bucketed(points, grid[0], devices, halo)
    kw = dict(width=width, kernel=kernel, pad_mode="circular")
    ext_grid = (block + 2 * halo,) + grid[1:]
    mesh = mesh_of(devices)
    vals = sample(grid, np.complex128)

    def forward(v, p):
        return interpolate(halo_extend(v, 0, halo, "i", grid[0], True), p, **kw)

    got = split(forward, mesh, (P("i"), P("i")), P("i"))(padded(vals, 0, devices), local)
    want = interpolate(jnp.asarray(vals), jnp.asarray(points), **kw)
    assert_close(got[slots >= 0], np.asarray(want)[slots[slots >= 0]], np.complex128)

    pvals = sample((len(points),), np.complex128)
    slot_vals = np.where(slots >= 0, pvals[np.maximum(slots, 0)], 0)

    def adjoint(q, p):
        spread = interpolate_adjoint(q, p, ext_grid, **kw)
        return halo_reduce(spread, 0, halo, "i", grid[0], True)

    got = split(adjoint, mesh, (P("i"), P("i")), P("i"))(slot_vals, local)[: grid[0]]
    want = interpolate_adjoint(jnp.asarray(pvals), jnp.asarray(points), grid, **kw)
    assert_close(got, want, np.complex128)
