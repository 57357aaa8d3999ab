"""Properties every registered operator must have, for float32, float64, complex64 and
complex128.

Every dtype checks that the precision is kept and the dot test; the other properties run
in float32 and complex128, a real and a complex dtype (float64 and complex64 would repeat
their code paths in another precision, each at the cost of a quarter of the contract's
time; the dot test in float64 holds the real path to double precision).

Each check compares against an independent reference: inner products for the adjoint,
`jax.linear_transpose`, `A.H(A(x))` for the normal, eager results for jit and vmap, a dense
matrix built column by column for gradients, and finite differences for weight gradients.

The checks for one operator and dtype run in one test so that compiled functions are
shared between them (compilation dominates the cost of these small problems).
"""

import functools

import equinox as eqx
import factories  # noqa: F401  (registers the operators)
import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest
from helpers import DTYPES, OPERATOR_FACTORIES, KeyGen, assert_close, assert_refusal, rand

import jaxlinops as jl
from jaxlinops._arrays import dim_sizes
from jaxlinops._core import Coupling, all_dims
from jaxlinops._dims import ELLIPSIS, axis_of

C128 = jnp.complex128


def build(name, dtype, seed=0):
    getkey = KeyGen(seed)
    op, xshape = OPERATOR_FACTORIES[name](getkey, dtype)
    x = rand(getkey(), xshape, dtype)
    out = jax.eval_shape(op, x)
    y = rand(getkey(), out.shape, out.dtype)
    return op, x, y


def check(prop: str, fn, *args):
    """Run one property check, naming the property if it fails."""
    try:
        fn(*args)
    except AssertionError as e:
        raise AssertionError(f"[{prop}] {e}") from e


def dense_matrix(apply, x) -> np.ndarray:
    """The operator's matrix from unit inputs, column by column (complex128)."""
    n = x.size
    cols = []
    for j in range(n):
        e = np.zeros(n, x.dtype)
        e[j] = 1
        cols.append(np.asarray(apply(jnp.asarray(e.reshape(x.shape)))).ravel())
    return np.stack(cols, axis=1).astype(np.complex128)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@pytest.mark.parametrize("name", sorted(OPERATOR_FACTORIES))
def test_operator_contract(name, dtype):
    if name.startswith("batched_") and dtype != jnp.complex128:
        # the batched machinery is dtype-blind; its tiles' operators run every dtype above
        pytest.skip("batched operators: complex128 only (CI time)")
    op, x, y = build(name, dtype)
    traces = []

    @jax.jit
    def run(A, v, w, vs):
        """A, A.H, A.N, vmap over the stack `vs`, and the input gradient of Re<w, A v>, in
        one compiled program (compilation dominates the cost of these small problems)."""
        traces.append(1)
        grad = jax.grad(lambda u: jnp.real(jl.testing.inner(w, A(u))))(v)
        return A(v), A.H(w), A.N(v), jax.vmap(A)(vs), grad

    # independent inputs for vmap: collinear ones (x, 2x) would hide a mixed-up batch axis
    getkey = KeyGen(2)
    xs = jax.device_put(np.stack([x, *(rand(getkey(), x.shape, x.dtype) for _ in range(2))]))

    # eager results, in the input's precision (no silent upcast or downcast)
    Ax, AHy, ANx = op(x), op.H(y), op.N(x)
    for prop, out in (("A", Ax), ("A.H", AHy), ("A.N", ANx)):
        bits = jnp.finfo(out.dtype).bits
        assert bits == jnp.finfo(dtype).bits, f"[precision] {prop} returned {out.dtype}"

    check("adjoint", jl.testing.assert_adjoint, op, x, y)
    if dtype in (jnp.float64, jnp.complex64):
        return
    check("linear transpose", jl.testing.assert_linear_transpose, op, x, y)
    check("normal", lambda: assert_close(ANx, op.H(Ax), dtype))
    assert op.N.ishape == op.ishape and len(op.N.oshape) == len(op.ishape), "[normal dims]"
    assert op.H.ishape == op.oshape and op.H.oshape == op.ishape, "[adjoint dims]"

    # A.H.H is A, structurally and numerically
    assert eqx.tree_equal(op.H.H, op), "[H.H] not structurally equal to the operator"
    check("H.H", lambda: assert_close(op.H.H(x), Ax, dtype))

    # jit equals eager; new values do not re-trace
    jAx, jAHy, jANx, jvmap, g = run(op, x, y, xs)
    for prop, got, want in (("jit A", jAx, Ax), ("jit A.H", jAHy, AHy), ("jit A.N", jANx, ANx)):
        check(prop, assert_close, got, want, dtype)
    op2, x2, y2 = build(name, dtype, seed=1)
    run(op2, x2, y2, xs)
    assert len(traces) == 1, f"[no retrace] traced {len(traces)} times for new values"

    # vmap over an extra leading input axis equals a loop
    check("vmap", assert_close, jvmap, np.stack([op(v) for v in xs]), dtype)

    # grad w.r.t. the input against the dense matrix: f(x) = Re(c^H M x).
    # JAX returns df/dRe(x) - i df/dIm(x) = conj(M^H c) for complex x.
    M = dense_matrix(lambda v: run(op, v, y, xs)[0], np.asarray(x))
    c = np.asarray(y).ravel().astype(np.complex128)
    want = np.conj(M.conj().T @ c)
    if not jnp.issubdtype(dtype, jnp.complexfloating):
        want = want.real
    check("grad wrt input", assert_close, np.asarray(g).ravel(), want, dtype)

    # inputs are not mutated (numpy inputs are writable)
    xn, yn = np.array(x), np.array(y)
    op(xn), op.H(yn), op.N(xn)
    np.testing.assert_array_equal(xn, np.asarray(x))
    np.testing.assert_array_equal(yn, np.asarray(y))


@pytest.mark.parametrize("name", sorted(OPERATOR_FACTORIES))
def test_grad_wrt_operator_arrays(name):
    """Gradients w.r.t. every floating-point array of the operator, by finite differences.
    NUFFTs on the JAX path (the default), whose derivative is that of the computed
    approximation; the finufft backend differentiates the exact transform to its
    tolerance instead (checked against the exact DFT's derivative in
    `test_nufft_finufft.py`)."""
    op, x, y = build(name, jnp.complex128)
    params, static = eqx.partition(op, eqx.is_inexact_array)
    if not jax.tree_util.tree_leaves(params):
        pytest.skip("operator has no floating-point arrays")

    def f(p):
        return jnp.real(jl.testing.inner(y, eqx.combine(p, static)(x)))

    jax.test_util.check_grads(jax.jit(f), (params,), order=1, modes=("rev",))


# The dims along which an operator may refuse to be split (it mixes or resizes them); every
# other dim of its input and output must split into tiles that match the operator. '...'
# is resolved into named dims E0, E1, ... (batch dims: they must split).
REFUSED_SPLITS = {
    "batched_grid_sense": "Nx Ny C Kx Ky",
    "batched_nested": "Nx Ny",
    "batched_sense": "Nx Ny Kx Ky",
    "blocks_1d_mask": "Nx Bx P",
    "blocks_2d_batch": "Nx Ny Bx By Px Py",
    "blocks_to_array": "Bx By P Nx Ny",
    "blocks_to_array_torch_order": "Bx By Px Py X Y",
    "conv_adjoint": "Nx1 Ny1 Nx Ny",
    # jl.split refuses a differenced dim (a stencil: create_batched_linop splits it with a
    # halo) and the stacked output dim
    "finite_difference_adjoint": "G Nx Ny",
    "finite_difference_fft_normal": "G Ny",
    "finite_difference_neumann_3d": "D X Y Z",
    "finite_difference_normal_zero": "Nx Ny",
    "finite_difference_periodic_2d": "G Nx Ny",
    "finite_difference_zero_1d": "G N",
    "conv_circular_2d_real_kernel": "Nx Ny Nx1 Ny1",
    "conv_normal_conv_operator": "Nx Nx2",
    "conv_normal_fft_operator": "Nx Ny Nx2 Ny2",
    "conv_normal_mode_conv": "Nx Ny Nx1 Ny1",
    "conv_normal_mode_fft": "Nx Ny Nx1 Ny1",
    "conv_zeros_1d": "Nx Nx1",
    "conv_zeros_2d_batch": "X Y X1 Y1",
    "crop": "Nx Ny Nx1 Ny1",
    "crop_normal": "Nx Ny Nx1 Ny1 Nx2 Ny2",
    "fft_adjoint": "Kx Ky Nx Ny",
    "fft_conv_2d": "X Y U V",
    "fft_conv_real_kernel": "Nx Nx1",
    "fft_backward": "N K",
    "fft_batched": "Nx Ny Kx Ky",
    "fft_forward_centered": "Nx Ny Kx Ky",
    "fast_sampling_nufft_toeplitz_normal": "Nx Nx1 Nx2 Kx1",
    "fft_normal_backward": "Nx Ny Nx1 Ny1",
    "interp_1d": "N",
    "interp_2d_batch": "Nx Ny",
    "interp_2d_zero_spline": "Nx Ny",
    "interp_adjoint": "Nx Ny Nz",
    "nufft_2d": "Nx Ny",
    "nufft_2d_batch_H": "Nx Ny",
    "nufft_3d": "Nx Ny Nz",
    "nufft_sampling": "Nx Ny",
    "nufft_toeplitz_normal_dcf": "Nx Ny Nx1 Ny1 Nx2 Ny2 Kx1 Ky1",
    "pad": "Nx Ny Nx1 Ny1",
    "pad_last": "X Y U V",
    "paddim": "N M",
    "rearrange_H": "B A AB",
    "rearrange_ellipsis": "One",
    "rearrange_merge": "B C BC",
    "rearrange_split_transpose": "AB B A",
    "sampling_1d": "N",
    "sampling_2d_batch": "Nx Ny",
    "sampling_H": "Nx Ny",
    "sampling_default_shapes": "(1) (2)",
    "sampling_from_mask": "Nx Ny",
    "sampling_normal": "Nx Ny Nx1 Ny1",
    "sampling_nufft": "Nx Ny",
    "shapespec": "Nx Ny Kx Ky",
    "sleep_renamed": "N M",
    # a SimpleLinop's functions are opaque: it cannot be split along any dim
    "simple_adjoint_of_derived": "B M N",
    "simple_derived_adjoint": "E0 N",
    "simple_derived_adjoint_sizes": "E0 N M",
    "simple_given_adjoint": "E0 N",
    "simple_given_normal": "N",
    "sumreduce_N_no_lengths": "B B1",
    "truncate": "N M",
    "truncate_normal": "N N1 M",
    # a wavelet transform is global along the dims it transforms (not shift invariant)
    "wavelet_db2_2d": "Nx Ny",
    "wavelet_db4_default_level": "Nx",
    "wavelet_haar_1d": "N",
    "wavelet_inverse": "Nx Ny",
    "wavelet_sym3_3d": "X Z",
}
# Operators with no dim to split along: opaque functions, and a pure renaming of every dim.
# (a grid-split operator refuses every split: it is split across its devices already)
NO_TILE = {
    "shapespec",
    "batched_grid_sense",
    *(n for n in REFUSED_SPLITS if n.startswith(("simple_", "custom_"))),
}


# (factory, dim) -> the bug that makes splitting along it fail today. The test fails when
# one of these passes (as a strict xfail): remove it from here then.
KNOWN_SPLIT_BUGS: dict = {}


def split_outcome(op, A, x, y, d: str, n: int, internal: bool, refusable: bool) -> str:
    """`A` (`op` with '...' resolved) split along `d` (of `n` entries) into the tiles [0:1]
    and [1:n], each checked against the unsplit operator (their sum for an `internal`
    dim), or refused (only where `refusable`); what happened, in words."""
    parts = [slice(0, 1), slice(1, n)] if n > 1 else [slice(0, 1)]
    try:
        tiles = [jl.split(A, {d: part}) for part in parts]
    except ValueError as e:
        assert refusable, f"[split along {d}] refused, but must split: {e}"
        assert_refusal(e, A, d)
        assert A.coupling(d) != Coupling.NONE, f"[split along {d}] refused, coupling none"
        return f"refused: {e}"
    assert A.coupling(d) == Coupling.NONE, f"[split along {d}] coupling {A.coupling(d)}"
    if internal:  # partial sums over a partition of the dim
        check(f"split along {d}", assert_close, sum(t(x) for t in tiles), op(x), C128)
        check(f"split along {d}: H", assert_close, sum(t.H(y) for t in tiles), op.H(y), C128)
        return "split ok"
    for tile, part in zip(tiles, parts):
        check(f"split along {d}[{part.start}:{part.stop}]", check_tile, op, tile, x, y, d, part)
    return "split ok"


def along_every_dim(name: str, cases: dict, known: dict) -> dict[str, str]:
    """Run `cases` (`{dim: function}`, each returning its outcome in words) for the factory
    `name`; those in `known` (`{(name, dim): bug}`) must fail, as strict xfails: the test
    is marked xfailed after every other dim passed, and fails if a known bug passes."""
    outcomes, failed = {}, {}
    for d, case in cases.items():
        bug = known.get((name, d))
        try:
            outcomes[d] = case()
        except Exception:
            if bug is None:
                raise
            failed.setdefault(bug, []).append(d)
        else:
            assert bug is None, f"[along {d}] passes: remove it from the known bugs ({bug})"
    if failed:
        pytest.xfail("; ".join(f"{' '.join(dims)}: {bug}" for bug, dims in failed.items()))
    return outcomes


@pytest.mark.parametrize("name", sorted(OPERATOR_FACTORIES))
def test_split_matches_a_block_of_the_operator(name):
    """Along every dim of the operator (input-only, output-only, shared and internal, '...'
    resolved into named dims), the tiles [0:1] and [1:n] equal the blocks Q A P^T of the
    operator, forward, adjoint and normal: the input slice embedded in zeros, the unsplit
    operator applied, the output sliced; tiles along an internal dim sum to the operator.
    A dim in `REFUSED_SPLITS` may instead be refused with a ValueError from jaxlinops
    naming it and the operator; any other outcome (another error, another shape, another
    value) fails. The operator's declared `coupling` agrees: `Coupling.NONE` exactly along
    the dims that split. The dims of `KNOWN_SPLIT_BUGS` must fail (strict xfail)."""
    op, x, y = build(name, jnp.complex128)
    A = resolve_ellipsis(op, x, y)
    sizes = every_dim(A, x, y)
    internal = set(sizes) - set(A.ishape) - set(A.oshape)
    refusable = set(REFUSED_SPLITS.get(name, "").split())
    cases = {
        d: functools.partial(split_outcome, op, A, x, y, d, n, d in internal, d in refusable)
        for d, n in sizes.items()
        if n is not None
    }
    outcomes = along_every_dim(name, cases, KNOWN_SPLIT_BUGS)
    compared = [d for d, outcome in outcomes.items() if outcome == "split ok"]
    assert compared or name in NO_TILE, "[split] no tile compared: give the factory a batch dim"


def resolve_ellipsis(op, x, y):
    """`op` with its '...' renamed to dims E0, E1, ... (one per axis it stands for)."""
    shape, array = (op.ishape, x) if ELLIPSIS in op.ishape else (op.oshape, y)
    if ELLIPSIS not in shape:
        return op
    return jl.rename(op, {ELLIPSIS: tuple(f"E{i}" for i in range(array.ndim - len(shape) + 1))})


def check_tile(op, tile, x, y, dim: str, part: slice):
    """`tile` (of `op` along `dim`) applied to the slice of `x` equals `op` applied to that
    slice embedded in zeros, sliced on the output; the same for the adjoint with `y`, and
    for the tile's normal."""
    at_in, at_out = _index(tile.ishape, x.ndim, dim, part), _index(tile.oshape, y.ndim, dim, part)
    # slices and embeddings in numpy: JAX would compile a program for each one
    x, y, put = np.asarray(x), np.asarray(y), jax.device_put
    Ax = np.asarray(op(put(_embedded(x, at_in))))
    assert_close(tile(put(x[at_in])), Ax[at_out], C128)
    want = np.asarray(op.H(put(_embedded(y, at_out))))[at_in]
    assert_close(tile.H(put(y[at_out])), want, C128)
    # the tile's normal P A^H Q^T Q A P^T: the output slice of A x embedded in zeros
    want = np.asarray(op.H(put(_embedded(Ax, at_out))))[at_in]
    assert_close(tile.N(put(x[at_in])), want, C128)


def _embedded(a: np.ndarray, index: tuple) -> np.ndarray:
    """`a[index]` in zeros of `a`'s shape."""
    out = np.zeros_like(a)
    out[index] = a[index]
    return out


def _index(shape, ndim: int, dim: str, part: slice) -> tuple:
    """An index selecting `part` along `dim` of an array laid out by `shape` (everything
    when `dim` is not in it)."""
    index = [slice(None)] * ndim
    if dim in shape:
        index[axis_of(shape, dim) % ndim] = part
    return tuple(index)


def every_dim(A, x, y) -> dict[str, int | None]:
    """Every dim of `A` (input-only, output-only, shared, then internal) and its size: from
    `x` and `y`, else the one `A` fixes (None where it fixes none)."""
    sizes = {**dim_sizes(A.ishape, x.shape), **dim_sizes(A.oshape, y.shape)}
    return sizes | {d: A.size(d) for d in sorted(all_dims(A) - set(sizes) - {ELLIPSIS})}


# one jit object for every batched operator (each new structure still compiles once)
RUN = jax.jit(lambda B, v, w: (B(v), B.H(w), B.N(v)))

# (factory, dim) -> the bug that makes batching along it fail today. The test fails when
# one of these passes (as a strict xfail): remove it from here then.
KNOWN_BATCHED_BUGS: dict = {}


def batched_outcome(A, d: str, n: int | None, devices: int, x, y, want) -> str:
    """`A` batched along `d` across `devices` devices: checked against `want` (forward,
    adjoint and normal of `A` at `x`, `y`) or as a refusal; what happened, in words."""
    if n is None:
        tile = 1
    elif A.coupling(d) == Coupling.NONE:
        tile = max(1, n // 3)
    else:
        tile = -(-n // devices)
    spec = jl.BatchSpec({d: tile}, device_matrix=jax.devices()[:devices])
    try:
        B = jl.create_batched_linop(A, spec)
    except ValueError as e:
        assert_refusal(e, A, d, f"batched over {devices} devices")
        return f"refused: {e}"
    for prop, got, ref in zip(("A", "A.H", "A.N"), RUN(B, x, y), want):
        check(f"batched along {d} over {devices} devices: {prop}", assert_close, got, ref, C128)
    return f"batched ok ({type(B).__name__})"


@pytest.mark.parametrize("name", sorted(OPERATOR_FACTORIES))
def test_batched_along_every_dim(name):
    """`create_batched_linop(A, BatchSpec({d: t}, device_matrix=devices))` along every dim
    `d` of the operator in turn (input-only, output-only, shared and internal, '...'
    resolved into named dims), across 2 or 3 devices (alternating), under jit: forward,
    adjoint and normal equal the unbatched operator's, or the build refuses with a
    ValueError from jaxlinops naming the operator and `d`. Any other outcome (an error
    from inside JAX, another shape or value) fails. A dim the operator applies entry by
    entry gets tiles of a third of it (ragged tiles, all-padding tiles and several tiles
    per device occur); a coupled dim (a grid dim, split by domain decomposition where the
    operator allows it, `GridSplitLinop`) one slab per device, ragged where the size is
    not a multiple of the device count. Which dims are refused is not fixed here. The
    dims of `KNOWN_BATCHED_BUGS` must fail (strict xfail), after every other dim passed."""
    op, x, y = build(name, C128)
    A = resolve_ellipsis(op, x, y)
    want = (A(x), A.H(y), A.N(x))
    cases = {
        d: functools.partial(batched_outcome, A, d, n, 2 + i % 2, x, y, want)
        for i, (d, n) in enumerate(every_dim(A, x, y).items())
    }
    along_every_dim(name, cases, KNOWN_BATCHED_BUGS)
