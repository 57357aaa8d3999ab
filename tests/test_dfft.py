"""Distributed FFT inside `jax.shard_map` on 2, 3, 6 and 8 of the 8 simulated devices.

Every split result is gathered (the `shard_map`'s out_specs) and compared with numpy on
the whole array: `fftshift(fftn(ifftshift(x)))`, the definition `centered_fftn` follows.
Input padding entries are filled with junk, which the functions must ignore; output
padding entries must be zero.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rtol
from jax.sharding import NamedSharding, PartitionSpec as P

from jaxlinops.sharding._dfft import fft_split, transpose_split

RNG = np.random.default_rng(0)


def sample(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def block(size, devices):
    return -(-size // devices)


def padded(x, split):
    """`x` padded along each axis of `split` ({axis: devices}) to whole blocks, the padding
    junk (1e3 times random)."""
    for axis, devices in split.items():
        shape = list(x.shape)
        shape[axis] = block(x.shape[axis], devices) * devices - x.shape[axis]
        x = np.concatenate([x, 1e3 * sample(shape, x.dtype)], axis)
    return x


def valid(y, sizes):
    """The valid (unpadded) part of the gathered `y`."""
    return np.asarray(y)[tuple(slice(0, n) for n in sizes)]


def unpadded(y, sizes):
    """The valid part of the gathered `y`, after checking that its padding is zero."""
    rest = np.asarray(y).copy()
    rest[tuple(slice(0, n) for n in sizes)] = 0
    np.testing.assert_array_equal(rest, 0, err_msg="padding entries must be zero")
    return valid(y, sizes)


def mesh_of(*shape):
    names = ("i", "j")[: len(shape)]
    return jax.make_mesh(shape, names, devices=jax.devices()[: math.prod(shape)])


def spec(split, ndim):
    """The PartitionSpec of a layout {axis: mesh axis name}."""
    return P(*(split.get(a) for a in range(ndim)))


def split_run(fn, mesh, in_spec, out_specs):
    """`fn` on each device's block, under jit; takes a whole numpy array."""
    f = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_spec, out_specs=out_specs))

    def run(x):
        return f(jax.device_put(x, NamedSharding(mesh, in_spec)))

    run.jitted = f
    return run


def centered_reference(x, axes, inverse):
    """numpy's centered orthonormal DFT over `axes`, in double precision."""
    fn = np.fft.ifftn if inverse else np.fft.fftn
    x = np.fft.ifftshift(x.astype(np.complex128), axes=axes)
    return np.fft.fftshift(fn(x, axes=axes, norm="ortho"), axes=axes)


# (sizes, devices, split_axis, gather_axis, dtype): even and ragged sizes, devices holding
# padding only (3 or 10 entries on 8 devices), other axes passing through
TRANSPOSES = [
    ((10, 7), 3, 0, 1, np.complex64),
    ((7, 10), 3, 1, 0, np.float64),
    ((6, 4), 2, 0, 1, np.complex128),
    ((5, 3, 10), 8, 2, 1, np.complex64),
    ((10, 4, 7), 3, 0, 2, np.complex128),
]


@pytest.mark.parametrize("sizes, devices, split_axis, gather_axis, dtype", TRANSPOSES)
def test_transpose_moves_split_and_back(sizes, devices, split_axis, gather_axis, dtype):
    """A pure data move: exact equality with the whole array in the new layout, and the
    reverse call gives the input back (padding zero)."""
    ndim = len(sizes)

    def fn(b):
        t = transpose_split(b, split_axis, gather_axis, "i", sizes)
        return t, transpose_split(t, gather_axis, split_axis, "i", sizes)

    before, after = spec({split_axis: "i"}, ndim), spec({gather_axis: "i"}, ndim)
    run = split_run(fn, mesh_of(devices), before, (after, before))
    x = sample(sizes, dtype)
    t, back = run(padded(x, {split_axis: devices}))
    np.testing.assert_array_equal(unpadded(t, sizes), x)
    np.testing.assert_array_equal(unpadded(back, sizes), x)


# (sizes, mesh shape, axes, split, out_split expected (default) or given, dtype):
# slabs on 2, 3 and 8 devices, even and ragged, 2-D and 3-D; a grid split traded for a
# batch axis (out_split given); pencils on 2x3 and 2x4 meshes
FFTS = [
    ((10, 7), (3,), (0, 1), 0, 1, np.complex64),
    ((7, 10), (3,), (0, 1), 1, 0, np.complex128),
    ((8, 6), (2,), (0, 1), 0, 1, np.complex128),
    ((16, 8), (8,), (0, 1), 0, 1, np.complex64),
    ((7, 6, 5), (3,), (0, 1, 2), 0, 1, np.complex128),
    ((6, 10, 4), (8,), (0, 1, 2), 1, 0, np.complex64),
    ((5, 9, 7), (3,), (0, 1, 2), 2, 0, np.complex128),
    ((3, 10, 7), (3,), (1, 2), 1, 0, np.complex64),
    ((7, 6, 5), (2, 3), (0, 1, 2), (0, 1), (2, 0), np.complex128),
    ((8, 8, 4), (2, 4), (0, 1, 2), (0, 1), (2, 0), np.complex64),
]


def layouts(mesh, split, out):
    """The layouts {axis: mesh axis name} before and after, the names to pass, and the
    arguments (split, axis_name, out_split) of the reverse call."""
    if isinstance(split, tuple):
        names = mesh.axis_names
        before, after = dict(zip(split, names)), dict(zip(out, names))
        return before, after, names, (out[::-1], names[::-1], split[::-1])
    return {split: "i"}, {out: "i"}, "i", (out, "i", split)


@pytest.mark.parametrize("sizes, mesh_shape, axes, split, out, dtype", FFTS)
def test_fft_split_matches_whole_array(sizes, mesh_shape, axes, split, out, dtype):
    """Forward and inverse equal numpy's centered orthonormal DFT of the whole array, the
    new split is the documented one, and the reverse call undoes the forward one."""
    mesh = mesh_of(*mesh_shape)
    before, after, names, (r_split, r_names, r_out) = layouts(mesh, split, out)
    given = None if set(after) <= set(axes) else out  # the default, or a batch axis

    def fn(b):
        y, new = fft_split(b, axes, split, names, sizes, out_split=given)
        z, new_inverse = fft_split(b, axes, split, names, sizes, inverse=True, out_split=given)
        back, where = fft_split(y, axes, r_split, r_names, sizes, inverse=True, out_split=r_out)
        assert new == new_inverse == out and where == r_out, (new, new_inverse, where)
        return y, z, back

    ndim = len(sizes)
    out_specs = (spec(after, ndim), spec(after, ndim), spec(before, ndim))
    run = split_run(fn, mesh, spec(before, ndim), out_specs)
    x = sample(sizes, dtype)
    y, z, back = run(padded(x, {a: mesh.shape[n] for a, n in before.items()}))
    assert y.dtype == z.dtype == np.dtype(dtype)
    assert_close(unpadded(y, sizes), centered_reference(x, axes, False), dtype)
    assert_close(unpadded(z, sizes), centered_reference(x, axes, True), dtype)
    assert_close(unpadded(back, sizes), x, dtype)


# (sizes, mesh shape, split, out, dtype): slab ragged on 3 and 8 devices, a pencil
ADJOINTS = [
    ((10, 7), (3,), 0, 1, np.complex128),
    ((6, 10, 4), (8,), 1, 0, np.complex64),
    ((7, 6, 5), (2, 3), (0, 1), (2, 0), np.complex128),
]


@pytest.mark.parametrize("sizes, mesh_shape, split, out, dtype", ADJOINTS)
def test_inverse_is_adjoint_across_devices(sizes, mesh_shape, split, out, dtype):
    """<F x, y> = <x, F^H y>, each inner product summed over the devices' blocks (`psum`),
    junk in the padding of both x and y: F ignores x's padding and zeroes its own, so
    the reverse call must ignore y's padding and zero x's."""
    mesh = mesh_of(*mesh_shape)
    before, after, names, (r_split, r_names, r_out) = layouts(mesh, split, out)
    axes = tuple(range(len(sizes)))

    def fn(x, y):
        fx, _ = fft_split(x, axes, split, names, sizes)
        fhy, _ = fft_split(y, axes, r_split, r_names, sizes, inverse=True, out_split=r_out)
        return jax.lax.psum(jnp.stack([jnp.vdot(fx, y), jnp.vdot(x, fhy)]), mesh.axis_names)

    ndim = len(sizes)
    in_specs = (spec(before, ndim), spec(after, ndim))
    f = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=P()))
    x = padded(sample(sizes, dtype), {a: mesh.shape[n] for a, n in before.items()})
    y = padded(sample(sizes, dtype), {a: mesh.shape[n] for a, n in after.items()})
    put = [jax.device_put(a, NamedSharding(mesh, s)) for a, s in zip((x, y), in_specs)]
    lhs, rhs = np.asarray(f(*put))
    # relative to |x||y| over the valid entries (the sums' scale), not to their padding
    scale = np.linalg.norm(valid(x, sizes)) * np.linalg.norm(valid(y, sizes))
    assert abs(lhs - rhs) <= rtol(dtype) * scale, (lhs, rhs)


def test_uncentered_and_real_input():
    """`centered=False` is numpy's plain orthonormal FFT; a real float32 input gives a
    complex64 output."""
    sizes = (10, 7)
    x = sample(sizes, np.float32)

    def fn(b):
        return fft_split(b, (0, 1), 0, "i", sizes, centered=False)[0]

    run = split_run(fn, mesh_of(3), P("i"), P(None, "i"))
    y = run(padded(x, {0: 3}))
    assert y.dtype == np.complex64
    assert_close(unpadded(y, sizes), np.fft.fftn(x.astype(np.float64), norm="ortho"), np.float32)


@pytest.mark.parametrize(
    "mesh_shape, split, inverse", [((8,), 0, False), ((8,), 0, True), ((2, 4), (0, 1), False)]
)
def test_compiled_program_exchanges_blocks_only(mesh_shape, split, inverse):
    """No hidden gather: the compiled program of a 64^3 complex64 FFT on 8 devices has one
    `all-to-all` per split axis and no `all-gather`, and its per-device temporaries are at
    most 3 blocks (3/8 of the whole array): the method holds at most an exchange's input
    and output and one FFT layout copy at a time, each one block (1/8); a gather would
    need the whole array (8 blocks). Observed: about 1.9 blocks."""
    n = 64
    sizes = (n, n, n)
    mesh = mesh_of(*mesh_shape)
    before, after, names, _ = layouts(mesh, split, (2, 0) if len(mesh_shape) > 1 else 1)

    def fn(b):
        return fft_split(b, (0, 1, 2), split, names, sizes, inverse=inverse)[0]

    in_spec = spec(before, 3)
    f = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_spec, out_specs=spec(after, 3)))
    x = jax.ShapeDtypeStruct(sizes, jnp.complex64, sharding=NamedSharding(mesh, in_spec))
    compiled = f.lower(x).compile()
    hlo = compiled.as_text()
    assert hlo.count("all-to-all(") == len(mesh_shape)
    assert "all-gather" not in hlo
    whole = n**3 * np.dtype(np.complex64).itemsize
    temps = compiled.memory_analysis().temp_size_in_bytes
    assert temps <= 3 / 8 * whole, temps / whole


def trace(fn, mesh_shape=(3,), in_spec=P("i"), shape=(12, 7)):
    """Trace `fn` inside `jax.shard_map` (no compile): the Python checks run."""
    mesh = mesh_of(*mesh_shape)
    f = jax.shard_map(fn, mesh=mesh, in_specs=in_spec, out_specs=in_spec)
    sharding = NamedSharding(mesh, in_spec)
    jax.eval_shape(f, jax.ShapeDtypeStruct(shape, jnp.complex64, sharding=sharding))


S = (10, 7)  # blocks of 4 rows on 3 devices: the padded global shape (12, 7)


@pytest.mark.parametrize(
    "fn, exc, match",
    [
        (
            lambda b: transpose_split(b, 0, 0, "i", S),
            ValueError,
            r"split_axis.*gather_axis.*differ",
        ),
        (lambda b: transpose_split(b, 0, 2, "i", S), ValueError, r"transpose_split\(gather_axis"),
        (
            lambda b: transpose_split(b, 0, 1, "k", S),
            ValueError,
            r"transpose_split.*'k'.*not bound",
        ),
        (lambda b: transpose_split(b, 0, 1, "i", (10,)), ValueError, r"transpose_split\(sizes"),
        (lambda b: transpose_split(b, 0, 1, "i", (7, 7)), ValueError, r"axis 0 of global size 7"),
        (lambda b: transpose_split(b, 0, 1, "i", (10, 8)), ValueError, r"axis 1 .* held whole"),
        (lambda b: transpose_split(b, 0.5, 1, "i", S), ValueError, r"split_axis.*integer"),
        (lambda b: fft_split(b, (0, 0), 0, "i", S), ValueError, r"fft_split\(axes.*repeat"),
        (lambda b: fft_split(b, (1,), 0, "i", S), ValueError, r"fft_split\(split.*out_split"),
        (lambda b: fft_split(b, (0, 1), 0, ("i", "j"), S), ValueError, r"fft_split\(axis_name"),
        (lambda b: fft_split(b, (0, 1), 0, "i", S, inverse=1), TypeError, r"fft_split\(inverse"),
        (lambda b: fft_split(b, (0, 1), 0, "i", S, norm="bad"), ValueError, r"fft_split\(norm"),
        (
            lambda b: fft_split(b, (0, 1), 0, "i", S, out_split=0),
            ValueError,
            r"axis 0 must be held",
        ),
        (lambda b: fft_split(b, (0, 1), 0, "i", S, out_split=(1, 0)), ValueError, r"one axis per"),
    ],
)
def test_bad_arguments_are_refused(fn, exc, match):
    with pytest.raises(exc, match=match):
        trace(fn)


def test_pencil_without_a_whole_axis_is_refused():
    """A 2-D array split along both axes has no whole axis to transpose with."""
    with pytest.raises(ValueError, match=r"fft_split.*no whole axis.*out_split"):
        trace(
            lambda b: fft_split(b, (0, 1), (0, 1), ("i", "j"), (4, 8))[0],
            (2, 4),
            P("i", "j"),
            (4, 8),
        )
