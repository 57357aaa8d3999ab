"""NamedDimCollection / NamedShape updates, against torchlinops' own objects as the
reference: both libraries get the same sequence of updates and must agree."""

from __future__ import annotations

import pytest

import jaxlinops.nameddim as jnd

tnd = pytest.importorskip("torchlinops.nameddim")

UPDATES = [
    ({"shape": ("...", "C"), "other": ("...", "D")}, "shape", ("A", "B", "C")),
    ({"shape": ("...", "C"), "other": ("...", "D")}, "shape", ("...", "B", "C")),
    ({"shape": ("C", "C"), "other": ("C", "D")}, "shape", ("B", "B")),
    ({"shape": ("A", "B", "C"), "other": ("B", "...")}, "shape", ("...", "C")),
    (
        {"ishape": ("...", "Nx", "Ny"), "oshape": ("...", "C", "Nx", "Ny")},
        "oshape",
        ("...", "Nx", "Ny"),
    ),
    ({"shape": ("A", "B"), "axes": {"A": 3, "B": 4}}, "shape", ("E", "F")),
]


def plain(shape):
    if isinstance(shape, dict):
        return {str(k): v for k, v in shape.items()}
    return tuple(map(str, shape)) if isinstance(shape, tuple) else str(shape)


@pytest.mark.parametrize(("shapes", "key", "new"), UPDATES)
def test_updates_agree_with_torchlinops(shapes, key, new):
    mine, theirs = jnd.NamedDimCollection(**shapes), tnd.NamedDimCollection(**shapes)
    setattr(mine, key, new)
    setattr(theirs, key, new)
    for name in shapes:
        assert plain(getattr(mine, name)) == plain(getattr(theirs, name)), name


def test_bad_updates_raise():
    c = jnd.NamedDimCollection(shape=("C", "C"), other=("C", "D"))
    with pytest.raises(ValueError, match="inconsistent mapping"):
        c.shape = ("A", "B")
    c = jnd.NamedDimCollection(single="A")
    with pytest.raises(TypeError, match="non-singleton"):
        c.single = ("B", "C")
    with pytest.raises(ValueError, match="already in index"):
        c._add("single", "B")


def test_repeated_ellipses_coalesce_and_none_plus_shape():
    assert jnd.NamedDimCollection(shape=("...", "...", "A")).shape == ("...", "A")
    shape = jnd.NamedShape(("A",), ("B",))
    assert None + shape is shape
