"""The Pallas spread/interpolate kernels against a numpy reference: compiled (Triton) on
a GPU, in interpret mode elsewhere (`INTERPRET`; `scripts/gpu_check.sh` runs them on a GPU).

The reference applies the definition directly: for each window offset `l` in `[0, L)^D`,
point `p` reads (or adds into) cell `(starts[p] + l) mod N` with weight
`prod_d weights[p, d, l_d]`. Gradients are checked against `jax.grad` of a plain-jnp
version of the same loop. Tolerances are relative to the largest entry of the reference:
sums of at most `L^D` = 64 products (or 16 in 1D with L = 16) of O(1) values lose far
less than 1e-5 in float32 and 1e-12 in float64.
"""

import functools
import itertools
import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlinops.functional._pallas_gridding import pallas_grid, pallas_ungrid

TOL = {np.float32: 1e-5, np.float64: 1e-12}
INTERPRET = jax.default_backend() != "gpu"


def _offsets(starts, weights, sizes):
    """Each window offset's cells (a tuple of `D` `[P]` index arrays) and weights `[P]`."""
    dims, length = weights.shape[1:]
    starts = np.asarray(starts) % np.asarray(sizes)  # Python's modulo: in [0, N)
    for offset in itertools.product(range(length), repeat=dims):
        cells = tuple((starts[:, d] + offset[d]) % sizes[d] for d in range(dims))
        weight = functools.reduce(operator.mul, [weights[:, d, offset[d]] for d in range(dims)])
        yield cells, weight


def ref_ungrid(grid, starts, weights):
    grid, weights = np.asarray(grid, np.complex128), np.asarray(weights, np.float64)
    out = np.zeros(grid.shape[:1] + starts.shape[:1], np.complex128)
    for cells, weight in _offsets(starts, weights, grid.shape[1:]):
        out += weight * grid[(slice(None), *cells)]
    return out


def ref_grid(vals, starts, weights, sizes):
    vals, weights = np.asarray(vals, np.complex128), np.asarray(weights, np.float64)
    out = np.zeros(vals.shape[:1] + tuple(sizes), np.complex128)
    for cells, weight in _offsets(starts, weights, sizes):
        np.add.at(out, (slice(None), *cells), weight * vals)
    return out


def jnp_ungrid(grid, starts, weights):
    """Plain jnp, differentiable in `grid` and `weights`."""
    out = 0
    for cells, weight in _offsets(starts, weights, grid.shape[1:]):
        out = out + weight.astype(grid.dtype)[None] * grid[(slice(None), *cells)]
    return out


def jnp_grid(vals, starts, weights, sizes):
    out = jnp.zeros(vals.shape[:1] + tuple(sizes), vals.dtype)
    for cells, weight in _offsets(starts, weights, sizes):
        out = out.at[(slice(None), *cells)].add(weight.astype(vals.dtype)[None] * vals)
    return out


def data(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return jnp.asarray(x.astype(dtype))


def layout(seed, points, sizes, length, dtype, spread=1):
    """Random window origins (`spread` > 1: also outside `[0, N)`, which wraps) and
    weights. Origins near `N - 1` make windows wrap around the edge."""
    rng = np.random.default_rng(seed)
    high = np.asarray(sizes) * spread
    starts = rng.integers(-high + high // spread, high, (points, len(sizes)), dtype=np.int32)
    weights = rng.uniform(-1, 1, (points, len(sizes), length)).astype(dtype)
    return jnp.asarray(starts), jnp.asarray(weights)


def assert_close(actual, expected, dtype):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    scale = np.max(np.abs(expected))
    assert scale > 0
    error = np.max(np.abs(actual - expected))
    assert error <= TOL[np.finfo(dtype).dtype.type] * scale, error / scale


# (sizes, L, P, B, dtype, block, spread): P never a multiple of the block
CASES = [
    ((12,), 4, 300, 1, np.float32, 128, 1),
    ((12,), 16, 70, 3, np.complex128, 32, 3),  # windows longer than the grid
    ((12, 7), 3, 200, 3, np.complex64, 64, 1),
    ((6, 5, 7), 2, 150, 1, np.float64, 128, 2),  # origins outside [0, N)
    ((8, 6, 5), 4, 130, 3, np.complex128, 64, 1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{len(c[0])}d-{np.dtype(c[4])}-b{c[3]}")
def test_matches_reference(case):
    sizes, length, points, batch, dtype, block, spread = case
    real = np.finfo(dtype).dtype
    starts, weights = layout(0, points, sizes, length, real, spread)
    grid = data(1, (batch, *sizes), dtype)
    vals = data(2, (batch, points), dtype)
    out = pallas_ungrid(grid, starts, weights, interpret=INTERPRET, block_size=block)
    assert out.dtype == dtype
    assert_close(out, ref_ungrid(grid, starts, weights), real)
    out = pallas_grid(vals, starts, weights, sizes, interpret=INTERPRET, block_size=block)
    assert out.dtype == dtype
    assert_close(out, ref_grid(vals, starts, weights, sizes), real)


def test_adjoint_dot_product():
    """`<ungrid(g), v> = <g, grid(v)>` (bilinear, real weights: no conjugate)."""
    sizes = (9, 11)
    starts, weights = layout(3, 100, sizes, 3, np.float64)
    grid, vals = data(4, (2, *sizes), np.complex128), data(5, (2, 100), np.complex128)
    left = jnp.sum(pallas_ungrid(grid, starts, weights, interpret=INTERPRET) * vals)
    right = jnp.sum(grid * pallas_grid(vals, starts, weights, sizes, interpret=INTERPRET))
    assert abs(left - right) <= 1e-12 * abs(left)


def test_nan_weights_propagate():
    """A point with a NaN weight (how the plan marks a bad location) gives NaN where it
    reads or writes, and only there: never a plausible number."""
    sizes = (10,)
    starts = jnp.asarray([[0], [3], [9], [6], [6]], jnp.int32)
    weights = jnp.ones((5, 1, 2), jnp.float32).at[2].set(jnp.nan)
    grid, vals = data(22, (1, 10), np.float32), data(23, (1, 5), np.float32)
    out = pallas_ungrid(grid, starts, weights, interpret=INTERPRET)
    np.testing.assert_array_equal(np.isnan(out[0]), [False, False, True, False, False])
    out = pallas_grid(vals, starts, weights, sizes, interpret=INTERPRET)
    np.testing.assert_array_equal(np.flatnonzero(np.isnan(out[0])), [0, 9])  # wraps to 0


def _losses(starts, sizes, target_grid, target_vals):
    """Real losses of (data, weights), one per kernel, with their plain-jnp twins."""

    def ungrid_loss(fn):
        return lambda g, w: jnp.sum(jnp.abs(fn(g, starts, w) - target_vals) ** 2)

    def grid_loss(fn):
        return lambda v, w: jnp.sum(jnp.abs(fn(v, starts, w, sizes) - target_grid) ** 2)

    kernel_ungrid = interpreted(pallas_ungrid)
    kernel_grid = interpreted(pallas_grid)
    return [
        (ungrid_loss(kernel_ungrid), ungrid_loss(jnp_ungrid)),
        (grid_loss(kernel_grid), grid_loss(jnp_grid)),
    ]


def interpreted(fn):
    return lambda *args: fn(*args, interpret=INTERPRET, block_size=64)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_grad_data_and_weights(dtype):
    """`jax.grad` w.r.t. the data and the weights (the dependence on the locations), under
    jit, against the plain-jnp loop; the data cotangent goes through the other kernel."""
    sizes = (7, 6)
    starts, weights = layout(6, 90, sizes, 3, np.float64)
    grid, vals = data(7, (2, *sizes), dtype), data(8, (2, 90), dtype)
    target_grid, target_vals = data(9, (2, *sizes), dtype), data(10, (2, 90), dtype)
    for (kernel, plain), x in zip(_losses(starts, sizes, target_grid, target_vals), (grid, vals)):
        got = jax.jit(jax.grad(kernel, argnums=(0, 1)))(x, weights)
        want = jax.jit(jax.grad(plain, argnums=(0, 1)))(x, weights)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            assert_close(g, w, np.float64)


def test_grad_data_only_float32():
    """Only the data differentiated (the weights' cotangent is skipped), float32."""
    sizes = (10,)
    starts, weights = layout(11, 50, sizes, 5, np.float32)
    grid = data(12, (1, *sizes), np.complex64)
    target = data(13, (1, 50), np.complex64)
    (kernel, plain), _ = _losses(starts, sizes, None, target)
    got = jax.grad(kernel)(grid, weights)
    assert_close(got, jax.jit(jax.grad(plain))(grid, weights), np.float32)


def test_vmap_and_jit():
    """`vmap` over a leading axis of the data (and, for spreading, of the weights)."""
    sizes = (5, 4, 6)
    starts, weights = layout(14, 40, sizes, 2, np.float32)
    grids = data(15, (3, 2, *sizes), np.complex64)
    vals = data(16, (3, 2, 40), np.complex64)
    ungrid = jax.jit(jax.vmap(lambda g: pallas_ungrid(g, starts, weights, interpret=INTERPRET)))
    out = ungrid(grids)
    for k in range(3):
        assert_close(out[k], ref_ungrid(grids[k], starts, weights), np.float32)
    stacked = jnp.stack([weights, 2 * weights, -weights])
    spread = jax.vmap(lambda v, w: pallas_grid(v, starts, w, sizes, interpret=INTERPRET))
    out = jax.jit(spread)(vals, stacked)
    for k in range(3):
        assert_close(out[k], ref_grid(vals[k], starts, stacked[k], sizes), np.float32)


def test_lowers_for_cuda():
    """Both kernels lower to a Triton custom call for CUDA without a GPU (the kernel is
    traced to Triton IR here, which checks the power-of-two block shapes; compiling the
    IR to PTX needs a GPU)."""
    pytest.importorskip(
        "jax._src.pallas.triton.pallas_call_registration",
        reason="this jaxlib cannot lower Pallas to Triton",
    )
    sizes = (8, 6, 5)
    starts, weights = layout(17, 130, sizes, 4, np.float32)
    grid, vals = data(18, (2, *sizes), np.complex64), data(19, (2, 130), np.complex64)

    def both(g, v, w):
        grad = jax.grad(lambda w: jnp.sum(pallas_ungrid(g, starts, w).real))(w)
        return pallas_ungrid(g, starts, w), pallas_grid(v, starts, w, sizes), grad

    traced = jax.jit(both).trace(grid, vals, weights)
    try:
        lowered = traced.lower(lowering_platforms=("cuda",))
    except RuntimeError as error:  # jax >= 0.12 wants an abstract GPU device without one
        if "No supported GPU devices" not in str(error):
            raise
        pytest.skip("this jax cannot lower for CUDA without a GPU device")
    assert lowered.as_text().count("__gpu$xla.gpu.triton") >= 2


BAD = [
    (lambda s, w, g: pallas_ungrid(g, s.astype(jnp.float32), w), TypeError, "starts.*integer"),
    (lambda s, w, g: pallas_ungrid(g, s[:, :1], w), ValueError, "weights.*shape"),
    (lambda s, w, g: pallas_ungrid(g.astype(jnp.complex128), s, w), TypeError, "grid.*precision"),
    (lambda s, w, g: pallas_ungrid(g[0], s, w), ValueError, "grid.*3 axes"),
    (lambda s, w, g: pallas_ungrid(g, s, w, block_size=100), ValueError, "block_size.*power"),
    (lambda s, w, g: pallas_grid(g[:, 0, :5], s, w, (4, 5)), ValueError, "vals.*per point"),
    (lambda s, w, g: pallas_grid(g[:, 0, :4], s, w, (4,)), ValueError, "grid_size.*one size"),
    (lambda s, w, g: pallas_grid(g[:, 0, :4], s, w, (4, 2.5)), ValueError, "grid_size.*integral"),
    (
        lambda s, w, g: pallas_grid(g[:, 0, :4], s, w, (2**16, 2**15)),
        ValueError,
        "grid_size.*2\\*\\*31",
    ),
]


@pytest.mark.parametrize("call, exc, match", BAD)
def test_bad_inputs(call, exc, match):
    starts, weights = layout(20, 4, (4, 5), 2, np.float32)
    grid = data(21, (1, 4, 5), np.complex64)
    with pytest.raises(exc, match=match) as info:
        call(starts, weights, grid)
    assert "jaxlinops" in info.traceback[-1].path.parts
