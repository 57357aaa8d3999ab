"""Operator algebra that users write every day: wildcards survive composition, renaming
re-validates, and misuse of the operators is a clear TypeError."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4))
w = RNG.standard_normal(4)


@pytest.mark.parametrize("order", ["diagonal first", "dense first"])
def test_ellipsis_survives_composition(order):
    D = jl.Diagonal(w, "...")
    M = jl.Dense(W, "M N", "... N", "... M")
    D3 = jl.Diagonal(RNG.standard_normal(3), "...")
    A = M @ D if order == "diagonal first" else D3 @ M
    assert A.ishape == ("...", "N") and A.oshape == ("...", "M")
    x = rand(1, (2, 5, 4), np.float64)  # two leading batch axes
    ref = np.einsum("mn,abn->abm", W, w * np.asarray(x))
    if order == "dense first":
        ref = np.einsum("mn,abn->abm", W, np.asarray(x)) * np.asarray(D3.weight)
    assert_close(A(x), ref, np.float64)


def test_resolving_two_wildcards_keeps_the_wildcard():
    from jaxlinops._dims import resolve

    assert resolve(("...", "N"), ("...",)) == {}
    assert resolve(("...",), ("...", "N")) == {"...": ("...", "N")}
    assert resolve(("...", "N"), ("...", "N")) == {}
    assert resolve(("...", "K"), ("C", "K")) == {"...": ("C",)}
    assert resolve(("...", "K"), ("...", "C", "K")) == {"...": ("...", "C")}


def test_rename_refuses_to_merge_two_dims():
    sq = jl.Dense(RNG.standard_normal((4, 4)), "M N", "N", "M")
    with pytest.raises(ValueError, match=r"merge its distinct dims 'M' and 'N' into 'M'"):
        jl.rename(sq, {"N": "M"})


def test_rename_swaps_and_renames_correctly():
    A = jl.Dense(W, "M N", "N", "M")
    swapped = jl.rename(A, {"M": "N", "N": "M"})
    assert (swapped.ishape, swapped.oshape) == (("M",), ("N",))
    x = rand(2, (4,), np.float64)
    assert_close(swapped(x), W @ np.asarray(x), np.float64)
    B = jl.rename(A, {"N": "Q"})
    assert B.ishape == ("Q",)
    assert_close(B(x), W @ np.asarray(x), np.float64)


def test_rename_runs_the_operators_own_validation():
    # Renaming a NUFFT's point dim onto its batch dim makes the dims collide: NUFFT's
    # own check must refuse it, as at construction.
    F = jl.NUFFT(RNG.uniform(-4, 4, (10, 2)), (8, 8), "K", batch_shape="C")
    with pytest.raises(ValueError, match="distinct"):
        jl.rename(F, {"K": "Q", "C": "Nx"})


@pytest.mark.parametrize(
    ("expr", "match"),
    [
        (lambda A: A * "x", r"`Dense \* c` needs a number c; got str"),
        (lambda A: "x" * A, r"`c \* Dense` needs a number c; got str"),
        (lambda A: A * np.ones(3), r"`Dense \* c` needs a scalar c; got an array of shape"),
        (lambda A: A * A, r"compose operators with `@`"),
        (lambda A: A @ 3, r"`Dense @ x` composes with a NamedLinop or applies"),
        (lambda A: A("abc"), r"`Dense\(x\)` expects a numeric array, got str"),
        (lambda A: 3 @ A, r"`x @ Dense` is not defined"),
        (lambda A: A + 1, r"`Dense \+ B` needs a NamedLinop"),
        (lambda A: A - 1, r"`Dense - B` needs a NamedLinop"),
        (lambda A: 1 - A, r"`Dense - B` needs a NamedLinop"),
    ],
)
def test_misuse_of_the_algebra_is_a_type_error(expr, match):
    A = jl.Dense(W, "M N", "N", "M")
    with pytest.raises(TypeError, match=match):
        expr(A)


def test_reflected_difference_is_other_minus_self():
    A = jl.Dense(W, "M N", "N", "M")
    B = jl.Dense(2 * W + 1, "M N", "N", "M")
    x = RNG.standard_normal(W.shape[1])
    np.testing.assert_allclose(B.__rsub__(A)(x), W @ x - (2 * W + 1) @ x, rtol=1e-12)


def test_an_operator_that_forgets_its_shapes_cannot_be_built():
    class NoShapes(jl.NamedLinop):
        weight: float = 1.0

        def apply(self, x):
            return x

        def apply_adjoint(self, y):
            return y

    with pytest.raises(TypeError, match="abstract attributes.*ishape"):
        NoShapes()
