"""Rearrange, SumReduce and Repeat against numpy reshape/transpose, sum and broadcast_to."""

import jax
import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl

RNG = np.random.default_rng(0)
C128 = np.complex128


def randn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# ------------------------------------------------------------------ Rearrange
@pytest.mark.parametrize(
    "ip, op, ishape, oshape, lengths, xshape, ref",
    [
        ("a b c", "a (b c)", "A B C", "A BC", {"c": 4}, (2, 3, 4), lambda x: x.reshape(2, 12)),
        (
            "(a b) c",
            "a b c",
            "AB C",
            "A B C",
            {"a": 2},
            (6, 4),
            lambda x: x.reshape(2, 3, 4),
        ),
        ("a b c", "c a b", "A B C", "C A B", {}, (2, 3, 4), lambda x: x.transpose(2, 0, 1)),
        (
            "(a b) c",
            "c (b a)",
            "AB C",
            "C BA",
            {"b": 3},
            (6, 4),
            lambda x: x.reshape(2, 3, 4).transpose(2, 1, 0).reshape(4, 6),
        ),
        (
            "... a b",
            "... b () a",
            "... A B",
            "... B One A",
            {},
            (5, 2, 3, 4),
            lambda x: x.transpose(0, 1, 3, 2)[:, :, :, None, :],
        ),
        ("a () b", "b a", "A One B", "B A", {}, (2, 1, 3), lambda x: x[:, 0, :].T),
    ],
)
def test_rearrange_matches_numpy(ip, op, ishape, oshape, lengths, xshape, ref):
    A = jl.Rearrange(ip, op, ishape, oshape, lengths)
    x = randn(*xshape)
    y = A(x)
    assert_close(y, ref(x), C128)
    assert_close(A.H(y), x, C128)  # a permutation: the adjoint is the inverse
    assert_close(jax.jit(lambda B, v: B(v))(A, x), ref(x), C128)


def test_rearrange_adjoint_and_normal_structure():
    A = jl.Rearrange("(a b) c", "c b a", "AB C", "C B A", {"a": 2})
    assert A.H == jl.Rearrange("c b a", "(a b) c", "C B A", "AB C", {"a": 2})
    assert A.H.H == A
    assert A.N == jl.ShapeSpec("AB C", "AB1 C")
    T = jl.Rearrange("a b", "b a", "A B", "B A")
    assert T.N == jl.Identity("A B")
    x = randn(3, 4)
    assert_close(T.normal(jl.Scalar(2.0, "B A"))(x), 2 * x, C128)


def test_rearrange_ellipsis_resolved_by_chain():
    A = jl.Rearrange("... a b", "... (b a)", "... A B", "... BA", {"a": 3})
    chain = A @ jl.Identity("C D A B")
    assert chain.ishape == ("C", "D", "A", "B") and chain.oshape == ("C", "D", "BA")
    resolved = chain.linops[1]
    assert resolved.size("A") == 3 and resolved.size("C") is None
    x = randn(2, 5, 3, 4)
    want = x.transpose(0, 1, 3, 2).reshape(2, 5, 12)
    assert_close(chain(x), want, C128)
    assert_close(chain.H(want), x, C128)


def test_rearrange_sizes():
    A = jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2, "b": 3})
    assert (A.size("AB"), A.size("A"), A.size("B"), A.size("C")) == (6, 2, 3, None)
    with pytest.raises(ValueError, match="expected dim AB with size 6"):
        A(randn(8, 4))
    B = jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2})
    assert B.size("AB") is None and B.size("A") == 2


@pytest.mark.parametrize(
    "pattern, msg",
    [
        ("a (b (c))", r"nested parentheses in 'a \(b \(c\)\)'"),
        ("a b)", r"unmatched '\)' in 'a b\)'"),
        ("a (b", r"unclosed '\(' in 'a \(b'"),
        ("(a ...) b", r"'\.\.\.' cannot be inside parentheses"),
        ("a 1b", r"axis names must be identifiers .* got '1b'"),
        ("a b-c", r"axis names must be identifiers .* got 'b-c'"),
        ("a (b a)", r"axes \['a'\] appear more than once"),
        ("... a ...", r"'\.\.\.' may appear at most once"),
    ],
)
def test_rearrange_bad_patterns(pattern, msg):
    with pytest.raises(ValueError, match=r"`Rearrange\(ipattern=...\)`: " + msg):
        jl.Rearrange(pattern, "a", "A", "A")


def test_rearrange_pattern_must_be_a_string():
    with pytest.raises(TypeError, match=r"`Rearrange\(opattern=...\)` expects a pattern string"):
        jl.Rearrange("a b", ("b", "a"), "A B", "B A")


def test_rearrange_errors():
    with pytest.raises(ValueError, match="both patterns must have the same axes"):
        jl.Rearrange("a b", "a c", "A B", "A C")
    with pytest.raises(ValueError, match="both patterns must have the same axes"):
        jl.Rearrange("... a", "a", "... A", "A")
    with pytest.raises(ValueError, match=r"`axes_lengths` names axes \['z'\]"):
        jl.Rearrange("a b", "b a", "A B", "B A", {"z": 2})
    with pytest.raises(ValueError, match=r"lengths must be positive integers; got \{'a': 0\}"):
        jl.Rearrange("a b", "b a", "A B", "B A", {"a": 0})
    with pytest.raises(TypeError, match="expects lengths as a mapping; got list"):
        jl.Rearrange("a b", "b a", "A B", "B A", [("a", 2)])
    with pytest.raises(ValueError, match=r"ishape \(A\) must have one dim per axis of ipattern"):
        jl.Rearrange("a b", "b a", "A", "B A")
    with pytest.raises(ValueError, match=r"oshape \(A\) must have one dim per axis of opattern"):
        jl.Rearrange("... a b", "... b a", "... A B", "A")
    with pytest.raises(ValueError, match=r"ishape \(\.\.\., A\) must have one dim per axis"):
        jl.Rearrange("a b", "b a", "... A", "B A")
    with pytest.raises(ValueError, match=r"the dims standing for '\.\.\.' must be the same"):
        jl.Rearrange("... a", "... a", "... A", "B A")
    with pytest.raises(ValueError, match="dim 'A' is in ishape and oshape but stands for"):
        jl.Rearrange("a b", "b a", "A B", "A B")


def test_rearrange_split_errors_at_application():
    merge = jl.Rearrange("a b c", "a (b c)", "A B C", "A BC")
    merge(randn(2, 3, 4))  # merging needs no lengths
    with pytest.raises(ValueError, match=r"`Rearrange`: cannot split an axis of size 12 into"):
        merge.H(randn(2, 12))
    A = jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 4})
    with pytest.raises(ValueError, match=r"an axis of size 6 cannot be split into \(a b\) with"):
        A(randn(6, 2))
    B = jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2, "b": 3})
    with pytest.raises(ValueError, match="expected dim AB with size 6"):
        B(randn(5, 2))
    one = jl.Rearrange("a () b", "b a", "A One B", "B A")
    with pytest.raises(ValueError, match="expected dim One with size 1"):
        one(randn(3, 2, 4))
    with pytest.raises(ValueError, match=r"an axis of size 2 cannot be split into \(\)"):
        one.apply(randn(3, 2, 4))  # the kernel checks too


# ------------------------------------------------------------------ SumReduce
@pytest.mark.parametrize(
    "ishape, oshape, axes, xshape",
    [
        ("A B C", "A C", (1,), (2, 3, 4)),
        ("A B C", "B", (0, 2), (2, 3, 4)),
        ("... B C D", "... C", (-3, -1), (5, 2, 3, 4)),
        ("... C", "...", (-1,), (5, 2, 3)),
    ],
)
def test_sumreduce_matches_numpy_sum(ishape, oshape, axes, xshape):
    A = jl.SumReduce(ishape, oshape)
    x = randn(*xshape)
    assert_close(A(x), np.sum(x, axis=axes), C128)


def test_sumreduce_adjoint_repeats_to_the_true_size():
    # torchlinops (reference section 9.2 d) returns a singleton axis here; we repeat to size 3.
    A = jl.SumReduce("A B C", "A C", {"B": 3})
    assert A.size("B") == 3 and A.size("A") is None
    y = randn(2, 4)
    got = A.H(y)
    assert got.shape == (2, 3, 4)
    assert_close(got, np.broadcast_to(y[:, None, :], (2, 3, 4)), C128)
    assert A.H == jl.Repeat({"B": 3}, "A C", "A B C")
    assert A.H.H == A
    x = randn(2, 3, 4)
    N = A.N
    assert N.ishape == ("A", "B", "C") and N.oshape == ("A", "B1", "C")
    assert_close(N(x), np.broadcast_to(x.sum(1, keepdims=True), (2, 3, 4)), C128)


def test_sumreduce_lengths_order_does_not_matter():
    A = jl.SumReduce("A B C D", "B", {"D": 2, "A": 3, "C": 4})
    assert A == jl.SumReduce("A B C D", "B", {"A": 3, "C": 4, "D": 2})
    assert A.H.H == A


def test_sumreduce_adjoint_without_lengths_is_a_singleton_axis():
    """As torchlinops: without `axes_lengths` the adjoint repeats into a size-1 axis
    that broadcasts (a `Repeat` broadcast dim)."""
    A = jl.SumReduce("A B C", "A C")
    assert A.H == jl.Repeat({}, "A C", "A B C", broadcast_dims="B") and A.H.H == A
    y = randn(2, 4)
    assert_close(A.H(y), y[:, None, :], C128)
    assert_close(A.apply_adjoint(y), y[:, None, :], C128)
    half = jl.SumReduce("A B C", "C", {"A": 2})  # one length known, one not
    assert_close(half.H(randn(4)).shape, (2, 1, 4), C128)


@pytest.mark.parametrize("lengths", [None, {"B": 3}])
def test_sumreduce_normal_repeats_to_the_input_size(lengths):
    """`.N` is the true A^H A on the input it is applied to, lengths given or not."""
    A = jl.SumReduce("... B C", "... C", lengths)
    N = A.N
    assert (N.ishape, N.oshape) == (("...", "B", "C"), ("...", "B1", "C"))
    x = randn(5, 3, 4)
    assert_close(N(x), np.broadcast_to(x.sum(1, keepdims=True), x.shape), C128)
    y = randn(5, 3, 4)  # self-adjoint: a dot test against the numpy reference
    lhs, rhs = np.vdot(y, np.asarray(N(x))), np.vdot(np.asarray(N.H(y)), x)
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


def test_sumreduce_rename_keeps_lengths():
    A = jl.rename(jl.SumReduce("A B C", "A C", {"B": 3}), {"B": "K"})
    assert A.ishape == ("A", "K", "C") and A.size("K") == 3
    assert A.H(randn(2, 4)).shape == (2, 3, 4)


@pytest.mark.parametrize(
    "ishape, oshape",
    [
        ("A B", "A B"),
        ("A B C", "A B C"),
        ("A B C", "C A"),
        ("A B", "A D"),
        ("... A B", "A"),
        ("A A B", "A"),
    ],
)
def test_sumreduce_oshape_must_be_a_subsequence(ishape, oshape):
    with pytest.raises(ValueError, match="`SumReduce`: `oshape` must be `ishape` with at least"):
        jl.SumReduce(ishape, oshape)


def test_sumreduce_lengths_only_for_summed_dims():
    with pytest.raises(ValueError, match=r"lengths are given for dims \['A'\], which are not"):
        jl.SumReduce("A B", "A", {"A": 2, "B": 3})
    with pytest.raises(ValueError, match="lengths must be positive integers"):
        jl.SumReduce("A B", "A", {"B": -1})


# ------------------------------------------------------------------ Repeat
@pytest.mark.parametrize(
    "n, ishape, oshape, xshape, ref",
    [
        ({"C": 3}, "A B", "A B C", (4, 5), lambda x: np.broadcast_to(x[:, :, None], (4, 5, 3))),
        ({"C": 3}, "A B", "C A B", (4, 5), lambda x: np.broadcast_to(x, (3, 4, 5))),
        (
            {"B": 2, "D": 3},
            "... A C",
            "... A B C D",
            (6, 4, 5),
            lambda x: np.broadcast_to(x[:, :, None, :, None], (6, 4, 2, 5, 3)),
        ),
    ],
)
def test_repeat_matches_numpy_broadcast(n, ishape, oshape, xshape, ref):
    A = jl.Repeat(n, ishape, oshape)
    x = randn(*xshape)
    assert_close(A(x), ref(x), C128)
    prod = int(np.prod(list(n.values())))
    assert A.N == jl.Scalar(prod, ishape)
    assert_close(A.N(x), prod * x, C128)
    assert isinstance(A.H, jl.SumReduce) and A.H.H == A


def test_repeat_adjoint_sums_and_sizes():
    A = jl.Repeat({"C": 3}, "A B", "A C B")
    assert A.size("C") == 3 and A.size("A") is None
    y = randn(4, 3, 5)
    assert_close(A.H(y), y.sum(1), C128)
    with pytest.raises(ValueError, match="expected dim C with size 3"):
        A.H(randn(4, 2, 5))


def test_repeat_broadcast_dims_have_size_one():
    A = jl.Repeat({"C": 2}, "A B", "A C B D", broadcast_dims="D")
    x = randn(3, 4)
    y = A(x)
    assert y.shape == (3, 2, 4, 1)
    assert_close(y, np.broadcast_to(x[:, None, :, None], (3, 2, 4, 1)), C128)
    assert A.size("D") is None and A.size("C") == 2
    assert A.H == jl.SumReduce("A C B D", "A B", {"C": 2}) and A.H.H == A
    assert_close(A.H(randn(3, 2, 4, 5)).shape, (3, 4), C128)  # D of any size is summed


def test_repeat_normal_with_inner_falls_back():
    A = jl.Repeat({"C": 3}, "A", "A C")
    N = A.normal(jl.Scalar(2.0, "A C"))
    x = randn(4)
    assert_close(N(x), 6 * x, C128)


def test_repeat_errors():
    with pytest.raises(ValueError, match="`Repeat`: `oshape` must be `ishape` with at least one"):
        jl.Repeat({}, "A B", "A B")
    with pytest.raises(ValueError, match="`Repeat`: `oshape` must be `ishape` with at least one"):
        jl.Repeat({"C": 3}, "A B C", "A B")
    with pytest.raises(ValueError, match="`Repeat`: `oshape` must be `ishape` with at least one"):
        jl.Repeat({"C": 3}, "A B", "B A C")
    with pytest.raises(ValueError, match=r"must give the length of every new dim; missing \['D'\]"):
        jl.Repeat({"C": 3}, "A", "A C D")
    with pytest.raises(ValueError, match=r"lengths are given for dims \['A'\], which are not"):
        jl.Repeat({"A": 2, "C": 3}, "A", "A C")
    with pytest.raises(ValueError, match="broadcast dim 'A' must be a new dim"):
        jl.Repeat({"C": 3}, "A", "A C", broadcast_dims="A")
    with pytest.raises(ValueError, match="broadcast dim 'C' must be a new dim .* repeated once"):
        jl.Repeat({"C": 3}, "A", "A C", broadcast_dims="C")
    with pytest.raises(TypeError, match="`Repeat\\(n_repeats=...\\)` expects lengths as a mapping"):
        jl.Repeat(3, "A", "A C")


def test_rearrange_split_along_a_merged_dim():
    """A tile covering all of a merged dim leaves the operator unchanged, with
    torchlinops' warning; a part of it is refused; its batch dims split silently."""
    A = jl.Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2, "b": 3})
    with pytest.warns(UserWarning, match=r"splitting along \['AB'\], dims it merges or splits"):
        assert A.split({"AB": slice(None), "C": slice(0, 2)}) == A
    with pytest.raises(ValueError, match="cannot be split along dim 'AB'"):
        A.split({"AB": slice(0, 3)})


def test_repeat_axes_lengths_and_torchlinops_assertions():
    """`Repeat.axes_lengths` is torchlinops' dict of new-dim lengths (a tile's is sliced);
    dims that do not nest raise an error that is both a ValueError and torchlinops'
    AssertionError."""
    A = jl.Repeat({"C": 3}, "A B", "A B C")
    assert A.axes_lengths == {"C": 3}
    tile = A.split({"C": slice(0, 2)})
    assert isinstance(tile, jl.Repeat) and tile.axes_lengths == {"C": 2}
    for bad in (lambda: jl.SumReduce("A B", "A B"), lambda: jl.Repeat({}, "A B", "A B")):
        with pytest.raises(AssertionError, match=r"`oshape` must be `ishape` with at least"):
            bad()
        with pytest.raises(ValueError, match=r"`oshape` must be `ishape` with at least"):
            bad()
