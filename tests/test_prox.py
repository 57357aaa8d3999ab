"""The proximal operators of `jl.alg` (`L1`, `GroupL1`, `L2Ball`, `Box`, `NonNegative`,
`NoOp`, `Scaled`, `SeparableSum`, `NuclearNormBlocks`): against closed forms computed
independently in numpy, the prox optimality condition (no random perturbation of the
result lowers $g(z) + \\|z - v\\|^2 / 2t$), the Moreau identity against the conjugate's
prox computed directly, and `jax.jit`, `jax.vmap`, `jax.grad` (finite at zero) under strict
dtype promotion."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops.alg._prox import L1, Box, L2Ball, NonNegative, NoOp
from jaxlinops.alg._prox_base import AbstractProx, batched_prox, batched_value
from jaxlinops.alg._prox_combine import Scaled, SeparableSum
from jaxlinops.alg._prox_group import GroupL1
from jaxlinops.alg._prox_llr import NuclearNormBlocks

DTYPES = (jnp.float64, jnp.complex128)
STEP = 0.7


def orthonormal(seed: int, n: int, dtype) -> np.ndarray:
    q, _ = np.linalg.qr(np.asarray(rand(seed, (n, n), dtype)))
    return q


def array_to_blocks(grid, block, stride) -> jl.ArrayToBlocks:
    return jl.ArrayToBlocks(grid, block, stride)  # pyright: ignore[reportCallIssue]


def dense(q: np.ndarray) -> jl.Dense:
    return jl.Dense(jnp.asarray(q), ("K", "N"), ("N",), ("K",))


# numpy references ------------------------------------------------------------------------


def np_soft(v, tau):
    mag = np.abs(v)
    return np.where(mag > tau, v * (1 - tau / np.where(mag > tau, mag, 1)), 0)


def np_group_soft(v, tau, axis):
    """Each group (a 1-D slice along `axis`) shrunk by `tau` in Euclidean norm, by a loop."""
    out = np.zeros_like(v)
    moved, dest = np.moveaxis(v, axis, -1), np.moveaxis(out, axis, -1)
    tau = np.broadcast_to(tau, moved.shape[:-1])
    for idx in np.ndindex(*moved.shape[:-1]):
        norm = np.sqrt(np.sum(np.abs(moved[idx]) ** 2))
        if norm > tau[idx]:
            dest[idx] = moved[idx] * (1 - tau[idx] / norm)
    return out


def np_svt(m, tau, clip=False):
    """Singular value soft thresholding of a matrix (or clipping at `tau`)."""
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    s = np.minimum(s, tau) if clip else np.maximum(s - tau, 0)
    return (u * s) @ vh


def np_llr(v, tau, block, clip=False):
    """Each (frames x block pixels) matrix of a (T, Nx, Ny) array thresholded, by loops;
    pixels outside the complete blocks unchanged."""
    out = np.array(v, copy=True)
    _, nx, ny = v.shape
    for i in range(0, nx - block[0] + 1, block[0]):
        for j in range(0, ny - block[1] + 1, block[1]):
            patch = v[:, i : i + block[0], j : j + block[1]]
            m = patch.reshape(v.shape[0], -1).T
            out[:, i : i + block[0], j : j + block[1]] = np_svt(m, tau, clip).T.reshape(patch.shape)
    return out


def sq(a):
    return float(np.sum(np.abs(np.asarray(a)) ** 2))


# the proxes under test ---------------------------------------------------------------------


def cases(dtype):
    """(name, prox, input, numpy reference of prox_{STEP g}) for each prox."""
    v = np.asarray(rand(1, (6,), dtype))
    w = np.abs(np.asarray(rand(2, (6,), jnp.float64)))
    q = orthonormal(3, 6, dtype)
    c = np.asarray(rand(4, (6,), dtype))
    frames = np.asarray(rand(5, (3, 5, 4), dtype))
    grads = np.array(rand(6, (2, 5), dtype))  # a gradient field: (direction, pixel)
    grads[:, 1] *= 0.1  # a group below the threshold
    w5 = w[:5]
    d = v - c
    ball = c + d * min(1, 1.5 / np.linalg.norm(d))
    return [
        ("l1", L1(0.3), v, np_soft(v, STEP * 0.3)),
        ("l1-weights", L1(w), v, np_soft(v, STEP * w)),
        ("l1-transform", L1(0.3, dense(q)), v, q.conj().T @ np_soft(q @ v, STEP * 0.3)),
        ("l2ball", L2Ball(1.5, c), v, ball),
        ("box", Box(-0.2, 0.5), v, np.clip(np.real(v), -0.2, 0.5).astype(v.dtype)),
        ("nonnegative", NonNegative(), v, np.maximum(np.real(v), 0).astype(v.dtype)),
        ("zero", NoOp(), v, v),
        ("scaled", Scaled(L1(0.2), 3.0), v, np_soft(v, STEP * 0.6)),
        (
            "separable",
            SeparableSum([L1(0.4), NonNegative()], axis=0, sizes=(4, 2)),
            v,
            np.concatenate([np_soft(v[:4], STEP * 0.4), np.maximum(np.real(v[4:]), 0)]),
        ),
        ("llr", NuclearNormBlocks(0.8, (2, 2)), frames, np_llr(frames, STEP * 0.8, (2, 2))),
        ("group", GroupL1(0.6), grads, np_group_soft(grads, STEP * 0.6, 0)),
        ("group-last", GroupL1(w[:2], axes=-1), grads, np_group_soft(grads, STEP * w[:2], 1)),
        ("group-weights", GroupL1(w5), grads, np_group_soft(grads, STEP * w5, 0)),
    ]


def case_ids():
    return [name for name, *_ in cases(jnp.float64)]


def get_case(name, dtype):
    return next(c[1:] for c in cases(dtype) if c[0] == name)


@pytest.mark.parametrize("name", case_ids())
@pytest.mark.parametrize("dtype", DTYPES)
def test_prox_matches_numpy_reference(name, dtype):
    g, v, want = get_case(name, dtype)
    got = g(jnp.asarray(v), STEP)
    assert got.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", case_ids())
@pytest.mark.parametrize("dtype", DTYPES)
def test_prox_is_the_minimiser(name, dtype):
    """No point near z = prox(v) lowers g(z) + |z - v|^2 / (2 t): random perturbations of
    z (projected back onto the domain, so that indicators stay finite), and the proxes of
    nearby inputs at steps from t/2 to 3t/2 (points on z's face of a nonsmooth g, where a
    random direction would meet a kink: these catch a wrong threshold)."""
    g, v, _ = get_case(name, dtype)
    v = jnp.asarray(v)
    z = g(v, STEP)
    scales = jnp.repeat(jnp.array([1e-1, 1e-3]), 20).reshape((40,) + (1,) * v.ndim)
    points = z[None] + scales.astype(dtype) * rand(100, (40, *v.shape), dtype)
    if name in ("l2ball", "box", "nonnegative"):
        points = jax.vmap(lambda x: g(x, STEP))(points)  # feasible points
    sizes = jnp.linspace(0, 0.05, 41).reshape((41,) + (1,) * v.ndim).astype(dtype)
    noise = sizes * rand(101, (41, *v.shape), dtype)
    steps = STEP * jnp.linspace(0.5, 1.5, 41)
    points = jnp.concatenate([points, jax.vmap(lambda n, t: g(v + n, t))(noise, steps)])

    @jax.jit
    @jax.vmap
    def objective(x):
        return g.value(x) + jnp.sum(jnp.abs(x - v) ** 2) / (2 * STEP)

    best = objective(z[None])[0]
    assert np.isfinite(best)
    assert np.all(objective(points) >= best - 1e-12)


def test_weights_and_the_transform_domain():
    """`lamda` weights broadcast along the trailing axes (here a zero weight leaves an
    entry free); with a unitary FFT the soft threshold acts on the spectrum."""
    v = rand(6, (3, 4), jnp.complex128)
    got = L1(jnp.array([0.0, 1.0, 10.0, 0.5]))(v, 1.0)
    np.testing.assert_allclose(got[:, 0], v[:, 0])
    np.testing.assert_allclose(got[:, 2], 0)
    F = jl.FFT(1, "B", norm="ortho")
    want = np.fft.ifft(np_soft(np.fft.fft(np.asarray(v), norm="ortho"), 0.5), norm="ortho")
    np.testing.assert_allclose(L1(0.5, F)(v, 1.0), want, atol=1e-12)
    np.testing.assert_allclose(L1(0.5, F).value(v), 0.5 * np.abs(np.fft.fft(v, norm="ortho")).sum())


# the Moreau identity: conjugate_prox against the conjugate's prox computed directly -----


def test_l1_conjugate_is_the_projection_onto_the_linf_ball():
    v = rand(7, (8,), jnp.complex128)
    sigma, lam = 0.6, 0.5
    mag = np.abs(np.asarray(v))
    want = np.asarray(v) * np.minimum(1, lam / mag)  # clip magnitudes at lambda
    np.testing.assert_allclose(L1(lam).conjugate_prox(v, sigma), want, rtol=1e-12)
    # the generic Moreau identity gives the same
    np.testing.assert_allclose(AbstractProx.conjugate_prox(L1(lam), v, sigma), want, rtol=1e-12)


def test_l2ball_conjugate_is_a_shifted_block_soft_threshold():
    r"""$g^*(u) = r\|u\| + \mathrm{Re}\langle c, u\rangle$: its prox is the block soft
    threshold of $v - \sigma c$ at $\sigma r$."""
    v, c = rand(8, (5,), jnp.complex128), rand(9, (5,), jnp.complex128)
    sigma, r = 0.4, 0.3
    u = np.asarray(v - sigma * c)
    want = u * max(0, 1 - sigma * r / np.linalg.norm(u))
    np.testing.assert_allclose(L2Ball(r, c).conjugate_prox(v, sigma), want, rtol=1e-12)


def test_group_l1_conjugate_is_sigpys_projection_onto_the_group_balls():
    """g* of the l2,1 norm is the indicator of {|u_p| <= lamda_p}: its prox is sigpy's
    `thresh.l2_proj(lamda, u, axes)` (any sigma), and equals the Moreau identity's form."""
    thresh = pytest.importorskip("sigpy.thresh")
    u = np.asarray(rand(7, (2, 3, 5), jnp.complex128))
    g = GroupL1(0.8)
    want = thresh.l2_proj(0.8, u, axes=(0,))
    np.testing.assert_allclose(g.conjugate_prox(jnp.asarray(u), 0.3), want, rtol=1e-12)
    moreau = AbstractProx.conjugate_prox(g, jnp.asarray(u), 0.3)
    np.testing.assert_allclose(moreau, want, rtol=1e-10, atol=1e-12)
    want = np.stack([thresh.l2_proj(0.8, u[i], axes=(0, 1)) for i in range(2)])
    got = GroupL1(0.8, axes=(1, 2)).conjugate_prox(jnp.asarray(u), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_group_l1_on_finite_differences_is_isotropic_tv():
    """`GroupL1(lam).value(D x)` is lam * sum_p sqrt(sum_d |(D_d x)_p|^2), computed in numpy
    from np.roll differences (periodic)."""
    x = np.asarray(rand(8, (5, 6), jnp.complex128))
    grads = [np.roll(x, -1, axis=a) - x for a in (0, 1)]
    want = 0.7 * np.sum(np.sqrt(np.abs(grads[0]) ** 2 + np.abs(grads[1]) ** 2))
    D = jl.FiniteDifference("Nx Ny")
    np.testing.assert_allclose(GroupL1(0.7).value(D(jnp.asarray(x))), want, rtol=1e-12)


def test_box_conjugate_is_a_piecewise_shift():
    r"""$g^*(u) = \sum_i \max(l_i u_i, h_i u_i)$ (the support function of the box): its
    prox is $v - \sigma h$ above $\sigma h$, $v - \sigma l$ below $\sigma l$, else 0."""
    v = 2 * rand(10, (12,), jnp.float64)
    sigma, lo, hi = 0.5, -0.3, 0.8
    vn = np.asarray(v)
    want = np.where(vn > sigma * hi, vn - sigma * hi, np.where(vn < sigma * lo, vn - sigma * lo, 0))
    np.testing.assert_allclose(Box(lo, hi).conjugate_prox(v, sigma), want, rtol=1e-12)


def test_nuclear_norm_conjugate_clips_singular_values():
    """The conjugate of the nuclear norm is the indicator of the spectral-norm ball, whose
    prox clips each block's singular values at lambda."""
    v = rand(11, (3, 4, 4), jnp.complex128)
    want = np_llr(np.asarray(v), 0.9, (2, 2), clip=True)
    got = NuclearNormBlocks(0.9, (2, 2)).conjugate_prox(v, 0.3)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_separable_sum_of_a_tuple_acts_part_by_part():
    a, b = rand(12, (4,), jnp.complex128), rand(13, (2, 3), jnp.float64)
    g = SeparableSum([L1(0.2), L2Ball(0.5)])
    got = g.prox((a, b), 0.5)
    np.testing.assert_allclose(got[0], L1(0.2)(a, 0.5))
    np.testing.assert_allclose(got[1], L2Ball(0.5)(b, 0.5))
    assert float(g.value(got)) == pytest.approx(0.2 * float(jnp.sum(jnp.abs(got[0]))))
    conj = g.conjugate_prox((a, b), 0.5)
    np.testing.assert_allclose(conj[0], L1(0.2).conjugate_prox(a, 0.5))
    stacked = SeparableSum([L1(0.2), NoOp()], axis=1)(b.T, 0.5)  # one column per prox
    np.testing.assert_allclose(stacked[:, 1], b[1])


# the blocks of NuclearNormBlocks ------------------------------------------------------------


def test_llr_uses_an_array_to_blocks_and_leaves_uncovered_pixels():
    v = rand(14, (2, 3, 5, 5), jnp.complex128)  # (set, frames, Nx, Ny): 5 = 2 blocks + 1
    blocks = array_to_blocks((5, 5), (2, 2), (2, 2))
    got = NuclearNormBlocks(0.5, blocks, frame_axes=1)(v, 1.0)
    for s in range(2):  # axis 0 indexes independent matrices
        np.testing.assert_allclose(got[s], np_llr(np.asarray(v[s]), 0.5, (2, 2)), atol=1e-12)
    np.testing.assert_allclose(got[..., 4], v[..., 4])


def test_llr_value_is_the_sum_of_block_nuclear_norms():
    v = np.asarray(rand(15, (3, 4, 4), jnp.complex128))
    want = sum(
        np.linalg.svd(v[:, i : i + 2, j : j + 2].reshape(3, 4), compute_uv=False).sum()
        for i in (0, 2)
        for j in (0, 2)
    )
    assert float(NuclearNormBlocks(2.0, (2, 2)).value(jnp.asarray(v))) == pytest.approx(2 * want)


def test_llr_refuses_overlapping_blocks():
    with pytest.raises(ValueError, match="non-overlapping blocks"):
        NuclearNormBlocks(0.5, array_to_blocks((6, 6), (2, 2), (1, 1)))


# jit, vmap, grad, dtypes -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["l1", "l1-transform", "l2ball", "box", "separable", "llr", "group-weights"]
)
def test_jit_vmap_and_complex64_with_float64_parameters(name):
    """Under strict promotion: float64 weights and step on complex64 data give complex64;
    `jax.jit` (the prox as an argument) and `jax.vmap` equal the eager prox."""
    g, v, _ = get_case(name, jnp.complex128)
    v = jnp.asarray(v)
    batch = jnp.stack([v, 2 * v]).astype(jnp.complex64)
    got = jax.jit(lambda g, x, t: g(x, t))(g, batch[0], jnp.float64(STEP))
    assert got.dtype == jnp.complex64
    np.testing.assert_allclose(got, g(v, STEP), rtol=1e-5, atol=1e-6)
    mapped = jax.vmap(lambda x: g(x, STEP))(batch)
    np.testing.assert_allclose(mapped[1], g(batch[1], STEP), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "g, shape",
    [
        (L1(0.5), (4,)),
        (L2Ball(1.0), (4,)),
        (NuclearNormBlocks(0.5, (2, 2)), (3, 4, 4)),
        (Scaled(L1(0.5), 2.0), (4,)),
        (GroupL1(0.5), (2, 4)),
    ],
)
def test_gradients_are_finite_at_zero(g, shape):
    """At v = 0 (and for the values at x = 0): no NaN from |0| or the SVD of a zero block."""
    zero = jnp.zeros(shape, jnp.complex128)
    grad = jax.grad(lambda x: jnp.sum(jnp.abs(g(x, 1.0) + 1) ** 2))(zero)
    assert np.all(np.isfinite(grad))
    assert np.all(np.isfinite(jax.grad(lambda x: g.value(x))(zero)))


def assert_gradient_matches_fd(loss, args, seed):
    """For each argument: <grad, d> equals the central finite difference along a random
    real direction d (float64, step 1e-6)."""
    grads = jax.jit(jax.grad(loss, tuple(range(len(args)))))(*args)
    loss = jax.jit(loss)
    for k, g in enumerate(grads):
        d = rand(seed + k, jnp.shape(args[k]), jnp.float64)
        plus, minus = list(args), list(args)
        plus[k], minus[k] = args[k] + 1e-6 * d, args[k] - 1e-6 * d
        want = (loss(*plus) - loss(*minus)) / 2e-6
        np.testing.assert_allclose(jnp.sum(g * d), want, rtol=1e-6, atol=1e-8)


def test_gradients_match_finite_differences():
    """w.r.t. the input and the weight `lamda` (L1, LLR), through a loss of the prox."""
    target = rand(16, (3, 4, 4), jnp.float64)

    def l1(x, lam):
        return jnp.sum(L1(lam)(x, STEP) * target)

    def llr(x, lam):
        return jnp.sum(NuclearNormBlocks(lam, (2, 2))(x, 1.0) * target)

    x = rand(17, (3, 4, 4), jnp.float64)
    assert_gradient_matches_fd(l1, (x, jnp.float64(0.3)), 20)
    assert_gradient_matches_fd(llr, (x, jnp.float64(0.5)), 30)


def test_batched_prox_and_value_act_per_system():
    """`batched_prox` (what the solvers' `batch_dims` use): one ball per system, one step
    per system, one value per system."""
    v = rand(18, (3, 2, 4), jnp.complex128)  # systems along axis 1
    steps = jnp.array([0.5, 2.0])
    g = L2Ball(1.0)
    got = batched_prox(g, v, steps, (1,))
    for b in range(2):
        np.testing.assert_allclose(got[:, b], g(v[:, b], steps[b]))
    l1 = batched_prox(L1(0.5), v, steps, (1,))
    np.testing.assert_allclose(l1[:, 1], L1(0.5)(v[:, 1], 2.0))
    values = batched_value(L1(1.0), v, (1,))
    np.testing.assert_allclose(values, jnp.sum(jnp.abs(v), axis=(0, 2)))


def test_indicator_values():
    c = jnp.array([1.0 + 1j, 0.0])
    assert float(L2Ball(1.0, c).value(c + 0.5)) == 0
    assert float(L2Ball(1.0, c).value(c + 1.0)) == np.inf
    assert float(Box(0, 1).value(jnp.array([0.5, 1.0]))) == 0
    assert float(Box(0, 1).value(jnp.array([0.5 + 1e-3j]))) == np.inf  # not real
    assert float(NonNegative().value(jnp.array([-1e-9]))) == np.inf
    assert float(Scaled(NonNegative(), 0.0).value(jnp.array([-1.0]))) == np.inf


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"`L1\(lamda=...\)` expects values >= 0"):
        L1(-0.1)
    with pytest.raises(TypeError, match=r"`L1\(transform=...\)` expects a NamedLinop"):
        L1(0.1, jnp.fft.fft)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lower <= upper"):
        Box(1.0, 0.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        L1(jnp.ones(3))(jnp.ones(4), 1.0)
    with pytest.raises(ValueError, match=r"expects a scalar"):
        L2Ball(jnp.ones(2))
    with pytest.raises(TypeError, match="a tuple of 2 arrays"):
        SeparableSum([L1(0.1), NoOp()])(jnp.ones(2), 1.0)
    with pytest.raises(ValueError, match="expects 3 entries"):
        SeparableSum([L1(0.1), NoOp()], axis=0, sizes=(1, 2))(jnp.ones(2), 1.0)
    with pytest.raises(ValueError, match="expected the last axes to be the image"):
        NuclearNormBlocks(0.1, array_to_blocks((4, 4), (2, 2), (2, 2)))(jnp.ones((2, 6, 6)), 1.0)
    with pytest.raises(ValueError, match=r"names axis 2, but the input has 2 axes"):
        GroupL1(0.1, axes=2)(jnp.ones((2, 3)), 1.0)
    with pytest.raises(ValueError, match=r"to the groups' shape \(3,\)"):
        GroupL1(jnp.ones(2))(jnp.ones((2, 3)), 1.0)
    with pytest.raises(TypeError, match="distinct ints"):
        GroupL1(0.1, axes=(0, 0))
    with pytest.raises(TypeError, match="positive block sizes"):
        NuclearNormBlocks(0.1, (2, 0))


def test_nuclear_norm_blocks_in_chunks_equals_numpy():
    """100 blocks (more than one chunk of the CPU's SVD batches, the last one padded):
    the prox and the value against numpy's SVD of each block."""
    rng = np.random.default_rng(7)
    v = rng.standard_normal((3, 40, 40)) + 1j * rng.standard_normal((3, 40, 40))
    g = NuclearNormBlocks(0.5, (4, 4), frame_axes=0)
    blocks = v.reshape(3, 10, 4, 10, 4).transpose(1, 3, 2, 4, 0).reshape(100, 16, 3)
    u, s, vh = np.linalg.svd(blocks, full_matrices=False)
    shrunk = (u * np.maximum(s - 0.5 * 0.3, 0)[:, None, :]) @ vh
    want = shrunk.reshape(10, 10, 4, 4, 3).transpose(4, 0, 2, 1, 3).reshape(3, 40, 40)
    np.testing.assert_allclose(np.asarray(g.prox(jnp.asarray(v), 0.3)), want, atol=1e-10)
    assert float(g.value(jnp.asarray(v))) == pytest.approx(0.5 * s.sum(), rel=1e-10)
