"""Named dims: parsing, wildcard matching and resolution, renaming."""

import pytest

import jaxlinops as jl
from jaxlinops._dims import axis_of, next_unused, resolve, shapes_match, substitute


@pytest.mark.parametrize(
    "text, dims",
    [
        ("CNxNy", ("C", "Nx", "Ny")),
        ("A1B2Kx1Ky2", ("A1", "B2", "Kx1", "Ky2")),
        ("", ()),
        (None, ()),
        ("ABCD", ("A", "B", "C", "D")),
        ("NxNyNz", ("Nx", "Ny", "Nz")),
        ("MN", ("M", "N")),
        ("()A()B", ("()", "A", "()", "B")),
        ("(1)A(23)", ("(1)", "A", "(23)")),
        ("...CNx", ("...", "C", "Nx")),
        ("C Nx Ny", ("C", "Nx", "Ny")),
        ("  C   Nx Ny ", ("C", "Nx", "Ny")),
        ("... coil x", ("...", "coil", "x")),
    ],
)
def test_dim_parses_both_forms(text, dims):
    assert jl.Dim(text) == dims


def test_capital_and_whitespace_forms_agree():
    assert jl.Dim("CNxNy") == jl.Dim("C Nx Ny")


@pytest.mark.parametrize(
    "text, match",
    [
        ("nx", "must start with a capital"),
        ("C(1", "unclosed"),
        ("(a)B", "Invalid wildcard"),
        ("...A...", "at most once"),
    ],
)
def test_dim_rejects_bad_strings(text, match):
    with pytest.raises(ValueError, match=match):
        jl.Dim(text)


def test_dim_rejects_non_strings():
    with pytest.raises(TypeError, match="expects a string"):
        jl.Dim(3)


@pytest.mark.parametrize(
    "dim, avoid, expected",
    [
        ("N", (), "N1"),
        ("N1", (), "N2"),
        ("Kx1", ("Kx2",), "Kx3"),
        ("A", ("A", "A1"), "A2"),
        ("(1)", (), "(2)"),
        ("()", ("(1)",), "(2)"),
        ("...", (), "..."),
    ],
)
def test_next_unused(dim, avoid, expected):
    assert next_unused(dim, avoid) == expected


@pytest.mark.parametrize(
    "a, b, ok",
    [
        (("A", "B"), ("A", "B"), True),
        (("A", "C"), ("A",), False),
        (("A", "C"), ("...",), True),
        (("A", "B", "C"), ("A", "...", "C"), True),
        (("...", "A", "C"), ("B", "C"), False),
        (("A", "B"), ("A", "()"), True),
        (("A",), ("()", "()"), False),
        (("...", "Kx"), ("C", "Kx"), True),
        (("...",), (), True),
    ],
)
def test_shapes_match_follows_torchlinops(a, b, ok):
    assert shapes_match(a, b) is ok
    assert shapes_match(b, a) is ok


def test_resolve_binds_wildcards_of_the_pattern():
    assert resolve(("...", "Kx"), ("C", "Kx")) == {"...": ("C",)}
    assert resolve(("...",), ("...", "Kx", "Ky")) == {"...": ("...", "Kx", "Ky")}
    assert resolve(("...", "N"), ("...", "N")) == {}
    assert resolve(("(1)", "M"), ("N", "M")) == {"(1)": "N"}
    assert resolve(("A",), ("B",)) is None


def test_substitute_and_axis_of():
    assert substitute(("...", "N"), {"...": ("C", "D"), "N": "N1"}) == ("C", "D", "N1")
    assert axis_of(("C", "Nx"), "Nx") == 1
    assert axis_of(("...", "C", "Nx"), "C") == -2
