"""Property tests over random compositions of the library's operators (hypothesis).

An operator is drawn as a random base operator on a small random shape, transformed a few
times: chained with another operator, added to a modified copy, scaled (`c * A`, `A * c`),
replaced by its adjoint or normal, concatenated or stacked with a modified copy. For each,
in float32 and complex128:

- the dot test, $\\langle y, A x\\rangle = \\langle A^H y, x\\rangle$;
- `A.N(x) == A.H(A(x))`;
- `jit` gives the eager results;
- a tile `split(A, {d: slice})` along a dim `d` drawn from all of the operator's dims
  (input-only, output-only, shared and internal) equals the block $Q A P^T$ (computed
  from the unsplit operator, the input slice embedded in zeros), forward, adjoint and
  normal, or the tiles along an internal dim sum to `A`; `create_batched_linop` along
  `d` (on one device, or across 2 or 3, where a grid dim is split by domain
  decomposition) equals `A` (forward, adjoint and normal; ragged tiles included). Either
  may instead refuse with a ValueError from jaxlinops naming the operator and `d` —
  never give another shape or value, nor an error from inside JAX.

CI runs a few examples per property (profile "ci", deterministic); set
`JAXLINOPS_HYPOTHESIS_EXAMPLES=500` to run more, with fresh random draws.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, assert_refusal
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import jaxlinops as jl
from jaxlinops._core import all_dims

EXAMPLES = os.environ.get("JAXLINOPS_HYPOTHESIS_EXAMPLES")
SETTINGS = settings(
    max_examples=int(EXAMPLES) if EXAMPLES else 20,
    derandomize=not EXAMPLES,  # CI: the same examples on every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    # CI reports a failure as drawn (shrinking small examples of compiled code takes minutes)
    phases=list(Phase) if EXAMPLES else [Phase.explicit, Phase.generate],
)
# A composition of a few operators rounds a few times more than one operator: the results
# are compared at 10x the dtype's tolerance (1e-3 in single, 1e-9 in double precision); in
# 480 examples the largest error used 2e-4 of it.
FACTOR = 10
DTYPES = [jnp.float32, jnp.complex128]


class Draw:
    """Random operators: `hypothesis` draws the structure, numpy (from a drawn seed) the
    array values. Real dtypes get positive values so that sums cannot cancel (the
    comparisons are relative to the largest entry of the result)."""

    def __init__(self, data, dtype):
        self.data, self.dtype = data, np.dtype(dtype)
        self.rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
        self.count, self.used = 0, set()

    def __call__(self, strategy, label=None):
        return self.data.draw(strategy, label=label)

    def fresh(self) -> str:
        """A dim name not used before in this draw (nor in `self.used`, the dims of the
        operator being extended, which a normal may have renamed). Consecutive names
        (`D1`, `D2`) are what a normal's renaming (`D1 -> D2`) produces, so the draws
        also exercise fresh-name collisions."""
        self.count += 1
        while f"D{self.count}" in self.used:
            self.count += 1
        return f"D{self.count}"

    def array(self, shape, dtype=None) -> np.ndarray:
        dtype = np.dtype(dtype or self.dtype)
        if dtype.kind != "c":
            return self.rng.uniform(0.5, 1.5, shape).astype(dtype)
        values = self.rng.standard_normal(shape) + 1j * self.rng.standard_normal(shape)
        return values.astype(dtype)

    def scalar(self):
        if self.dtype.kind != "c":
            return float(self.rng.uniform(0.5, 2.0))
        return complex(*self.rng.uniform(0.5, 2.0, 2))


# ----------------------------------------------------------------------- base operators
# Each maps an input laid out by `dims` with `shape` to an operator with that input.


def diagonal(g, dims, shape):
    return jl.Diagonal(g.array(shape), dims)


def scalar(g, dims, shape):
    return jl.Scalar(g.scalar(), dims)


def dense(g, dims, shape):
    i = g(st.integers(0, len(dims) - 1), "axis")
    new, m = g.fresh(), g(st.integers(1, 3), "size")
    oshape = dims[:i] + (new,) + dims[i + 1 :]
    return jl.Dense(g.array((m, shape[i])), (new, dims[i]), dims, oshape)


def fft(g, dims, shape):
    """Over the last one or two dims (two: a grid a distributed FFT can split)."""
    ndim = g(st.integers(1, min(2, len(dims))), "fft dims")
    norm = g(st.sampled_from(["ortho", "backward", "forward"]), "norm")
    centered = g(st.booleans(), "centered")
    grids = (dims[-ndim:], tuple(g.fresh() for _ in range(ndim)))
    return jl.FFT(ndim, batch_shape=dims[:-ndim], grid_shapes=grids, norm=norm, centered=centered)


def pad_or_crop(g, dims, shape):
    """`Pad` or `Crop` (centred) of the last dim to a drawn length."""
    n = shape[-1]
    m = g(st.integers(1, n + 2), "length")
    kind = jl.Crop if m <= n else jl.Pad
    return kind((m,), (n,), dims[-1:], (g.fresh(),), dims[:-1])


def truncate_or_pad(g, dims, shape):
    n, new = shape[-1], g.fresh()
    m = g(st.integers(1, n + 2), "length")
    kind = jl.Truncate if m <= n else jl.PadDim
    return kind(len(dims) - 1, n, m, dims, dims[:-1] + (new,))


def repeat(g, dims, shape):
    new = g.fresh()
    return jl.Repeat({new: g(st.integers(1, 3), "size")}, dims, dims + (new,))


def sum_reduce(g, dims, shape):
    if len(dims) == 1:
        return diagonal(g, dims, shape)
    i = g(st.integers(0, len(dims) - 1), "axis")
    return jl.SumReduce(dims, dims[:i] + dims[i + 1 :], {dims[i]: shape[i]})


def sampling(g, dims, shape):
    n, m = shape[-1], g(st.integers(1, 4), "points")
    idx = g.rng.integers(0, n, m).astype(np.int32)
    return jl.Sampling((idx,), (n,), (g.fresh(),), dims[-1:], dims[:-1])


def convolution(g, dims, shape):
    mode = g(st.sampled_from(["zeros", "circular"]), "padding")
    k = g(st.integers(1, 3 if mode == "zeros" else shape[-1]), "kernel")
    kernel = g.array((k,))
    return jl.Convolution(kernel, dims[:-1], dims[-1:], (g.fresh(),), padding_mode=mode)


def interpolate(g, dims, shape):
    n = shape[-1]
    if n < 3:
        return sampling(g, dims, shape)
    m = g(st.integers(1, 3), "points")
    locs = g.rng.uniform(0, n, (m, 1)).astype(np.finfo(g.dtype).dtype)
    return jl.Interpolate(locs, (n,), dims[:-1], (g.fresh(),), dims[-1:], width=2.0)


BASE = [
    diagonal,
    scalar,
    dense,
    fft,
    truncate_or_pad,
    pad_or_crop,
    repeat,
    sum_reduce,
    sampling,
    convolution,
    interpolate,
]


# ----------------------------------------------------------------------- compositions
def out_shape(A, xshape, dtype) -> tuple[int, ...]:
    return jax.eval_shape(A, jax.ShapeDtypeStruct(xshape, dtype)).shape


def out_dtype(A, xshape, dtype):
    return jax.eval_shape(A, jax.ShapeDtypeStruct(xshape, dtype)).dtype


def modified(g, A, xshape):
    """A copy of `A` with different values: a positive diagonal after it."""
    w = g.array(out_shape(A, xshape, g.dtype), np.finfo(g.dtype).dtype)
    return jl.Diagonal(w, A.oshape) @ A


TRANSFORMS = ("chain", "add", "scale", "H", "N", "concat", "stack")


def transform(g, A, xshape, kinds=TRANSFORMS):
    """One random transformation of `A` (input shape `xshape`) among `kinds`: the new
    operator and its input shape."""
    g.used = all_dims(A)
    kind = g(st.sampled_from(kinds), "transform")
    if kind == "chain":
        base = g(st.sampled_from(BASE), "base")
        return base(g, A.oshape, out_shape(A, xshape, g.dtype)) @ A, xshape
    if kind == "add":
        return A + modified(g, A, xshape), xshape
    if kind == "scale":
        c = g.scalar()
        return (c * A if g(st.booleans(), "left") else A * c), xshape
    if kind == "H":
        return A.H, out_shape(A, xshape, g.dtype)
    if kind == "N":
        return A.N, xshape
    side = g(st.sampled_from(["input", "output"]), "side")
    B = modified(g, A, xshape)
    if kind == "stack":
        new = g.fresh()
        if side == "input":
            i = g(st.integers(0, len(A.ishape)), "index")
            return jl.Stack(A, B, idim_and_idx=(new, i)), xshape[:i] + (2,) + xshape[i:]
        i = g(st.integers(0, len(A.oshape)), "index")
        return jl.Stack(A, B, odim_and_idx=(new, i)), xshape
    # concat along an input dim (x is split between A and B) or an output dim whose size
    # both fix (a Concat needs it)
    dims = [e for e in (A.ishape if side == "input" else A.oshape) if A.size(e) and B.size(e)]
    if not dims:
        return A, xshape
    d = g(st.sampled_from(dims), "dim")
    both = d in A.ishape and d in A.oshape
    if side == "input" or both:
        grown = tuple(n * 2 if e == d else n for e, n in zip(A.ishape, xshape))
        return jl.Concat(A, B, idim=d, odim=d if both else None), grown
    return jl.Concat(A, B, odim=d), xshape


def operators(g, kinds=TRANSFORMS):
    """A random operator and its input shape, from transformations among `kinds`."""
    rank = g(st.integers(1, 3), "rank")
    xshape = tuple(g(st.lists(st.integers(1, 3), min_size=rank, max_size=rank), "shape"))
    dims = tuple(g.fresh() for _ in xshape)
    A = g(st.sampled_from(BASE), "base")(g, dims, xshape)
    for _ in range(g(st.integers(0, 3), "transforms")):
        A, xshape = transform(g, A, xshape, kinds)
    return A, xshape


def inputs(g, A, xshape):
    x = jnp.asarray(g.array(xshape))
    y = g.array(out_shape(A, xshape, g.dtype), out_dtype(A, xshape, g.dtype))
    return x, jnp.asarray(y)


# ----------------------------------------------------------------------- properties
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_dot_normal_and_jit(dtype, data):
    g = Draw(data, dtype)
    A, xshape = operators(g)
    x, y = inputs(g, A, xshape)
    Ax, AHy = A(x), A.H(y)
    jl.testing.assert_adjoint(A, x, y, rtol=FACTOR * jl.testing.default_rtol(dtype))
    assert_close(A.N(x), A.H(Ax), dtype, FACTOR)
    jAx, jAHy, jANx = jax.jit(lambda B, v, w: (B(v), B.H(w), B.N(v)))(A, x, y)
    assert_close(jAx, Ax, dtype, FACTOR)
    assert_close(jAHy, AHy, dtype, FACTOR)
    assert_close(jANx, A.H(Ax), dtype, FACTOR)


def dim_sizes_of(A, x, y) -> dict[str, int]:
    """Every dim of `A` whose size is known: from `x` and `y`, or fixed by `A` (internal)."""
    sizes = dict(zip(A.ishape, x.shape)) | dict(zip(A.oshape, y.shape))
    for d in sorted(all_dims(A) - set(sizes)):
        if A.size(d) is not None:
            sizes[d] = A.size(d)
    return sizes


def at(shape, ndim: int, d: str, part: slice) -> tuple:
    return tuple(part if e == d else slice(None) for e in shape) if d in shape else (...,)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
@SETTINGS
@given(data=st.data())
def test_split_and_batched_reassemble(dtype, data):
    g = Draw(data, dtype)
    A, xshape = operators(g, TRANSFORMS)
    x, y = inputs(g, A, xshape)
    sizes = dim_sizes_of(A, x, y)
    d = g(st.sampled_from(sorted(sizes)), "split dim")
    n = sizes[d]
    k = g(st.integers(1, n), "tile")
    start = g(st.integers(0, n - k), "start")
    part = slice(start, start + k)
    try:
        tile = jl.split(A, {d: part})
    except ValueError as e:
        assert_refusal(e, A, d)
    else:
        if d in A.ishape or d in A.oshape:
            at_in, at_out = at(A.ishape, x.ndim, d, part), at(A.oshape, y.ndim, d, part)
            Ax = A(jnp.zeros_like(x).at[at_in].set(x[at_in]))
            assert_close(tile(x[at_in]), Ax[at_out], dtype, FACTOR)
            want = A.H(jnp.zeros_like(y).at[at_out].set(y[at_out]))[at_in]
            assert_close(tile.H(y[at_out]), want, dtype, FACTOR)
            # the tile's normal P A^H Q^T Q A P^T
            want = A.H(jnp.zeros_like(Ax).at[at_out].set(Ax[at_out]))[at_in]
            assert_close(tile.N(x[at_in]), want, dtype, FACTOR)
        else:  # an internal dim: the tiles of a partition sum to A
            parts = [s for s in (slice(0, start), part, slice(start + k, n)) if s.stop > s.start]
            tiles = [jl.split(A, {d: s}) for s in parts]
            assert_close(sum(t(x) for t in tiles), A(x), dtype, FACTOR)
            assert_close(sum(t.H(y) for t in tiles), A.H(y), dtype, FACTOR)
    count = g(st.sampled_from([None, 2, 3]), "devices")
    devices = jax.devices()[:count] if count else None
    try:
        B = jl.create_batched_linop(A, jl.BatchSpec({d: k}, device_matrix=devices))
    except ValueError as e:
        assert_refusal(e, A, d, f"batched over {count} devices")
        return
    assert_close(B(x), A(x), dtype, FACTOR)
    assert_close(B.H(y), A.H(y), dtype, FACTOR)
    assert_close(B.N(x), A.N(x), dtype, FACTOR)


# ----------------------------------------------------------------------- regressions
# Bugs the properties above found, each pinned by the smallest case.


def test_normal_of_a_chain_whose_input_has_the_inner_normals_name():
    """`(B @ A).N` folds `B.N`, whose renamed output (`M -> M1`) is also the name of A's
    input: the normal then has two different dims `M1` (sizes 4 and 3)."""
    rng = np.random.default_rng(0)
    A = jl.Dense(rng.standard_normal((3, 4)), "M M1", "M1", "M")
    B = jl.Dense(rng.standard_normal((2, 3)), "K M", "M", "K")
    x = jnp.asarray(rng.standard_normal(4))
    assert_close((B @ A).N(x), (B @ A).H((B @ A)(x)), jnp.float64)


def test_tile_of_the_normal_of_a_chain_whose_input_has_the_inner_normals_name():
    """As above with equal sizes: the normal applies, but a tile along its input dim `M1`
    also slices the internal `M1`, a silent wrong value."""
    rng = np.random.default_rng(0)
    A = jl.Dense(rng.standard_normal((3, 3)), "M M1", "M1", "M")
    B = jl.Dense(rng.standard_normal((2, 3)), "K M", "M", "K")
    N, x = (B @ A).N, jnp.asarray(rng.standard_normal(3))
    want = N(jnp.zeros(3).at[:1].set(x[:1]))
    assert_close(jl.split(N, {"M1": slice(0, 1)})(x[:1]), want, jnp.float64)


def test_tile_of_a_concat_with_a_length_1_block():
    """The tile [2:4] of a Concat of two Diagonals of length 3 covers one entry of the
    first: that block's tile (weight of length 1) reads as broadcasting, so `Concat.size`
    sums `None` (a TypeError from inside jaxlinops)."""
    D = jl.Diagonal(jnp.arange(1.0, 4.0), "A")
    C = jl.Concat(D, 2 * D, idim="A", odim="A")
    x = jnp.arange(1.0, 7.0)
    want = C(jnp.zeros(6).at[2:4].set(x[2:4]))[2:4]
    assert_close(jl.split(C, {"A": slice(2, 4)})(x[2:4]), want, jnp.float64)


def test_batched_along_a_dim_the_operator_mixes():
    """`split` refuses the grid dim `N` of a Convolution (it mixes it), but
    `create_batched_linop` accepts it, as if the convolution acted on each entry of `N`
    alone: a silent wrong value. It must refuse with a ValueError naming 'N'."""
    K = jl.Convolution(jnp.asarray([1.0, 2.0, 0.5]), "B", "N", "M", padding_mode="circular")
    x = jnp.asarray(np.random.default_rng(0).standard_normal((2, 5)))
    try:
        B = jl.create_batched_linop(K, jl.BatchSpec({"N": 2}))
    except ValueError as e:
        assert_refusal(e, K, "N")
        return
    assert_close(B(x), K(x), jnp.float64)


def test_batched_normal_along_an_output_dim_named_like_the_normals_renaming():
    """Found by `test_split_and_batched_reassemble` (150 examples): `A` batched along its
    output-only dim `D3` (3 tiles on 2 devices: one all-padding); the tiles' normals
    rename their input `D1` to a fresh name that is `D3`, the batched dim."""
    rng = np.random.default_rng(0)
    A = jl.Repeat({"D3": 3}, "D2", "D2 D3") @ jl.Dense(
        rng.standard_normal((3, 3)), "D2 D1", "D1", "D2"
    )
    B = jl.create_batched_linop(A, jl.BatchSpec({"D3": 1}, device_matrix=jax.devices()[:2]))
    x = jnp.asarray(rng.standard_normal(3))
    assert_close(B.N(x), A.H(A(x)), jnp.float64)
