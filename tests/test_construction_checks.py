"""Regression tests for construction bugs of issue 18: Diagonal's weight alignment, sizes
that were truncated, dim names that parsed wrongly, traced sizes and integer overflow."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops import functional as F

C128 = jnp.complex128


# ------------------------------------------------------------------ Diagonal alignment
@pytest.mark.parametrize(
    "ioshape, wshape, xshape, numpy_weight",
    [
        # a non-leading '...': the weight aligns with the named dims, never with '...'
        ("C ...", (3,), (3, 3), lambda w: w[:, None]),
        ("C ...", (3,), (3,), lambda w: w),
        ("C ...", (3,), (3, 2, 4), lambda w: w[:, None, None]),
        ("C ... N", (3, 4), (3, 2, 5, 4), lambda w: w[:, None, None, :]),
        ("C ... N", (4,), (3, 2, 4), lambda w: w[None, None, :]),
        ("C ... N", (3, 1), (3, 2, 4), lambda w: w[:, None, :]),
        # a leading or no '...': numpy broadcasting (right-aligned)
        ("... N", (4,), (3, 2, 4), lambda w: w),
        ("...", (2, 4), (3, 2, 4), lambda w: w),
        ("C N", (4,), (3, 4), lambda w: w),
    ],
)
def test_diagonal_weight_aligns_with_the_named_dims(ioshape, wshape, xshape, numpy_weight):
    w, x = np.asarray(rand(0, wshape)), rand(1, xshape)
    want = numpy_weight(w) * np.asarray(x)
    D = jl.Diagonal(w, ioshape)
    assert_close(D(x), want, C128)
    assert_close(D.H(x), np.conj(numpy_weight(w)) * np.asarray(x), C128)
    assert_close(D.N(x), np.abs(numpy_weight(w)) ** 2 * np.asarray(x), C128)
    assert_close(jax.jit(lambda A, v: A(v))(D, x), want, C128)


def test_diagonal_size_and_split_follow_the_alignment():
    w = np.arange(1.0, 4.0)
    D = jl.Diagonal(w, "C ...")
    assert D.size("C") == 3
    x = rand(0, (3, 2))
    tile = D.split({"C": slice(1, 3)})
    assert_close(tile(x[1:3]), w[1:3, None] * np.asarray(x[1:3]), C128)


@pytest.mark.parametrize(
    "ioshape, wshape, xshape, aligned",
    [
        ("...", (3,), (3, 4), r"\(1, 3\)"),
        ("C ...", (3,), (4, 3), r"\(3, 1\)"),
        ("... N", (4,), (2, 1), r"\(1, 4\)"),  # no silent growth of a size-1 input axis
    ],
)
def test_diagonal_weight_that_does_not_broadcast_is_refused(ioshape, wshape, xshape, aligned):
    D = jl.Diagonal(np.ones(wshape), ioshape)
    match = (
        rf"the weight of shape {re_shape(wshape)} does not broadcast to the input of shape "
        rf"{re_shape(xshape)} \(aligned as {aligned}"
    )
    for apply in (D.apply, jax.jit(lambda v: D.apply(v)), D.H.apply):
        with pytest.raises(ValueError, match=match):
            apply(jnp.ones(xshape))
    for apply in (D, (D @ jl.Identity(ioshape)).apply):
        # where the weight fixes a dim's size, the input check says so first
        with pytest.raises(ValueError, match=rf"{match}|`Diagonal` expected dim"):
            apply(jnp.ones(xshape))


def re_shape(shape):
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


# ------------------------------------------------------------------ sizes
@pytest.mark.parametrize(
    "build, n, arg",
    [
        (lambda n: jl.Pad((n, 6), (3, 4)), 9, r"Pad\(pad_im_size"),
        (lambda n: jl.Pad((9, 6), (n, 4)), 8, r"Pad\(im_size"),
        (lambda n: jl.Crop((n,), (9,)), 2, r"Crop\(crop_im_size"),
        (lambda n: jl.Crop((2,), (n,)), 9, r"Crop\(im_size"),
        (lambda n: jl.Truncate(0, n, 2, "N", "M"), 9, r"Truncate\(from_length"),
        (lambda n: jl.Truncate(0, 9, n, "N", "M"), 2, r"Truncate\(to_length"),
        (lambda n: jl.PadDim(0, 2, n, "N", "M"), 9, r"PadDim\(to_length"),
        (lambda n: jl.PadDim(n, 2, 4, "A N", "A M"), 1, r"PadDim\(dim"),
        (lambda n: jl.ArrayToBlocks((n,), (2,)), 9, r"ArrayToBlocks\(grid_size"),
        (lambda n: jl.ArrayToBlocks((9,), (n,)), 4, r"ArrayToBlocks\(block_size"),
        (lambda n: jl.BlocksToArray((9,), (2,), (n,)), 3, r"BlocksToArray\(stride"),
        (lambda n: F.get_nblocks((n,), (2,)), 9, r"get_nblocks\(im_size"),
        (lambda n: F.array_to_blocks(jnp.ones(9), (n,)), 4, r"array_to_blocks\(block_shape"),
        (lambda n: F.blocks_to_array(jnp.ones((8, 2)), (n,), (2,)), 9, r"blocks_to_array\(im_"),
        (lambda n: F.center_pad(jnp.ones(3), (3,), (n,)), 9, r"center_pad\(pad_im_size"),
        (lambda n: F.center_crop(jnp.ones(9), (9,), (n,)), 4, r"center_crop\(crop_im_size"),
        (
            lambda n: jl.Rearrange("(a b)", "a b", "X", "A B", {"a": n}),
            3,
            r"Rearrange\(axes_lengths",
        ),
        (lambda n: jl.SumReduce("A B", "A", {"B": n}), 9, r"SumReduce\(axes_lengths"),
        (lambda n: jl.Repeat({"B": n}, "A", "A B"), 9, r"Repeat\(n_repeats"),
        (
            lambda n: jl.SimpleLinop(jnp.cumsum, ishape="N", oshape="M", sizes={"N": n}),
            9,
            r"SimpleLinop\(sizes",
        ),
    ],
)
def test_sizes_must_be_integral(build, n, arg):
    """`n + 0.5` was truncated to `n` before; now it raises. `float(n)` and numpy integers
    are still sizes, and give the same operator."""
    reference = build(n)
    for integral in (float(n), np.int64(n), np.float32(n)):
        assert jax.tree.structure(build(integral)) == jax.tree.structure(reference)
    with pytest.raises(ValueError, match=rf"`{arg}.*=...\)` expects integer sizes; got {n}.5"):
        build(n + 0.5)
    with pytest.raises(TypeError, match=rf"`{arg}.*=...\)` expects integer sizes; got True"):
        build(True)


def test_integral_float_sizes_give_python_ints():
    P = jl.Pad((8.0, np.int32(6)), (np.float64(3), 4))
    assert P.pad_im_size == (8, 6) and P.im_size == (3, 4)
    assert all(type(n) is int for n in P.pad_im_size + P.im_size)
    A = jl.ArrayToBlocks((np.int64(9),), (2.0,), (np.int8(2),))
    assert (A.grid_size, A.block_size, A.stride) == ((9,), (2,), (2,))


def test_traced_sizes_are_refused_with_a_jaxlinops_error():
    with pytest.raises(TypeError, match=r"`Pad\(pad_im_size=...\)` needs concrete sizes"):
        jax.jit(lambda n: jl.Pad((n,), (3,)))(8)
    with pytest.raises(TypeError, match=r"`Truncate\(to_length=...\)` needs concrete sizes"):
        jax.jit(lambda n: jl.Truncate(0, 5, n, "N", "M"))(3)
    with pytest.raises(TypeError, match=r"`center_pad\(pad_im_size=...\)` needs concrete"):
        jax.jit(lambda n: F.center_pad(jnp.ones(3), (3,), (n,)))(5)


# ------------------------------------------------------------------ dim names
@pytest.mark.parametrize("text", ["C, Nx", "C Nx,", "C Nx-1", "1C Nx", "C N.x", "C _N"])
def test_dim_refuses_characters_outside_names(text):
    with pytest.raises(ValueError, match=r"Invalid dim .* dim name is ASCII letters, digits"):
        jl.Dim(text)


@pytest.mark.parametrize("dims", [("C,", "Nx"), ("C Nx",), ("C", "N-x"), ("", "N")])
def test_dim_sequences_refuse_bad_names(dims):
    with pytest.raises((ValueError, TypeError), match=r"dim"):
        jl.Diagonal(np.ones(1), dims)


def test_dim_accepts_names_and_wildcards():
    assert jl.Dim("coil_2 Nx (1) () ...") == ("coil_2", "Nx", "(1)", "()", "...")
    assert jl.Identity(("x1", "...", "(2)")).ishape == ("x1", "...", "(2)")


# ------------------------------------------------------------------ integer dtypes
def test_integer_products_are_refused_not_wrapped():
    """int8: 100 * 100 wrapped to 16 before."""
    i8 = np.array([100, 100], np.int8)
    with pytest.raises(TypeError, match=r"`Diagonal` would compute in int8"):
        jl.Diagonal(i8)(i8)
    with pytest.raises(TypeError, match=r"`Dense` would compute in int8"):
        jl.Dense(i8[None, :], "M N", "N", "M")(i8)
    with pytest.raises(TypeError, match=r"`Convolution` would compute in int8"):
        jl.Convolution(i8)(i8)
    with pytest.raises(TypeError, match=r"`Convolution.N` would compute in int8"):
        jl.Convolution(i8, padding_mode="circular", normal_mode="fft").N.apply(i8)
    with pytest.raises(TypeError, match=r"`BlocksToArray` would compute in int8"):
        jl.BlocksToArray((3,), (2,))(np.full((2, 2), 100, np.int8))
    with pytest.raises(TypeError, match=r"`Diagonal` would compute in bool"):
        jl.Diagonal(np.array([True]))(np.array([True]))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex128])
def test_integer_weights_on_floating_data_are_exact_and_keep_the_dtype(dtype):
    i8 = np.array([100, -100, 7], np.int8)
    x = rand(0, (3,), dtype)
    xn = np.asarray(x).astype(C128)
    D = jl.Diagonal(i8)
    assert D(x).dtype == dtype
    assert_close(D(x), i8 * xn, dtype)
    assert_close(D.N(x), i8.astype(float) ** 2 * xn, dtype)  # 10000 does not fit int8
    assert_close((D**2)(x), i8.astype(float) ** 2 * xn, dtype)
    W = np.array([[100, 100, -100]], np.int8)
    A = jl.Dense(W, "M N", "N", "M")
    assert A(x).dtype == dtype
    assert_close(A(x), W @ xn, dtype)
    assert_close(A.N(x), W.T.astype(float) @ W @ xn, dtype)
    C = jl.Convolution(i8, padding_mode="circular", normal_mode="conv")
    assert_close(C.N(x), C.H(C(x)), dtype)  # the autocorrelation of 100s overflows int8


def test_exact_operators_keep_integer_data():
    """Operators that only move or copy entries are exact in integers, so they keep them."""
    x = np.arange(12, dtype=np.int8).reshape(3, 4)
    assert jl.Pad((5, 6), (3, 4))(x).dtype == np.int8
    np.testing.assert_array_equal(jl.ArrayToBlocks((3, 4), (2, 2))(x)[0, 0], x[:2, :2])
    np.testing.assert_array_equal(jl.Truncate(0, 3, 2, "N A", "M A")(x), x[:2])


# ------------------------------------------------------------------ sizes when composed
def test_composition_checks_the_sizes_at_each_link():
    """`A @ B` refuses a dim whose size `B` outputs differs from the size `A` expects (a
    32² NUFFT after 64² coil maps), naming the dim, both sizes and both operators, at the
    `@` and not at the first call; matching sizes compose."""
    maps = np.ones((2, 64, 64), np.complex64)
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    locs = np.random.default_rng(0).uniform(-5, 5, (10, 2)).astype(np.float32)
    match = r"dim 'Nx' has size 64 in the output of operator 0 \(Dense\) but size 32 in the input"
    with pytest.raises(ValueError, match=match):
        jl.NUFFT(locs, (32, 32), "K", batch_shape="C", backend="jax") @ S
    with pytest.raises(ValueError, match=r"dim 'Nx1' has size 6 .* \(Pad\) but size 5"):
        jl.Pad((8, 8), (5, 5), "Nx1 Ny1", "Nx2 Ny2") @ jl.Pad((6, 6), (4, 4))
    A = jl.NUFFT(locs, (64, 64), "K", batch_shape="C", backend="jax") @ S
    assert A(np.ones((64, 64), np.complex64)).shape == (2, 10)


@pytest.mark.parametrize("build", [lambda P: P.N, lambda P: P.H @ P, lambda P: P.N.N])
def test_sizeless_normals_keep_the_operators_sizes(build):
    """`Pad.N` (and `P.H @ P`, which folds to it) is an identity that still checks the
    image size, as `Pad` and torchlinops' `Pad.N` do; right-sized images pass unchanged."""
    N = build(jl.Pad((6, 6), (4, 4)))
    x = rand(0, (4, 4))
    assert_close(N(x), x, C128)
    with pytest.raises(ValueError, match=r"expected dim Nx with size 4 in its input"):
        N(rand(1, (5, 5)))
    with pytest.raises(ValueError, match=r"with size 4"):
        N.H(rand(2, (5, 5)))
