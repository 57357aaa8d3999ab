"""`NamedDimension`: torchlinops' dim type, as a `str` subclass.

A `NamedDimension` *is* its name (`ND("A", 1) == "A1"`, same hash), so it can be used
wherever jaxlinops takes a dim, and jaxlinops' shapes (tuples of str) can be compared
with torchlinops-style ones directly. jaxlinops stores plain strings
(`jaxlinops._dims.as_dims` converts), except the dims `Dense(W)` infers without shapes,
torchlinops' `AnyDim(k)`, which it holds as these objects (`A.weightshape[0].name`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._dims import ANY, ELLIPSIS, is_wildcard

ELLIPSES = ELLIPSIS  # torchlinops' spelling


class NamedDimension(str):
    """A dim name `name` with an index `i` (0: none): `NamedDimension("A", 1)` is `A1`,
    `NamedDimension("()", 2)` is the ordinal wildcard `(2)`.

    It equals (and hashes as) the string it prints, `ND("A") == "A"`; `ND("A") + 1` is
    `A1`; `"..."` plus anything is `"..."`. Immutable.
    """

    name: str
    i: int

    def __new__(cls, name: str, i: int = 0) -> NamedDimension:
        if not isinstance(name, str):
            raise TypeError(f"`NamedDimension(name=...)` expects a str; got {type(name).__name__}.")
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ValueError(f"`NamedDimension(i=...)` expects an integer >= 0; got {i!r}.")
        text = f"({i})" if name == ANY and i > 0 else name + (str(i) if i else "")
        obj = super().__new__(cls, text)
        object.__setattr__(obj, "name", name)
        object.__setattr__(obj, "i", i)
        return obj

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError(f"NamedDimension is immutable; cannot set {key!r}.")

    def __getnewargs__(self) -> tuple[str, int]:  # pickling and copying
        return (self.name, self.i)

    def __repr__(self) -> str:
        return str(self)

    def __add__(self, k: object) -> NamedDimension:  # type: ignore[override]
        if not isinstance(k, int) or isinstance(k, bool):
            raise TypeError(f"Unsupported NamedDimension add: {self} + {k!r} (an int is needed).")
        if self.name == ELLIPSIS:
            return self
        return type(self)(self.name, self.i + k)

    @classmethod
    def infer(cls, dim: Any) -> Any:
        """`dim` as a NamedDimension (a sequence element by element, keeping its type):
        a two-character string ending in a digit is `(name, i)` (`"A1"` is `("A", 1)`),
        as in torchlinops; any other string is a name with `i = 0`."""
        if isinstance(dim, cls):
            return dim
        if isinstance(dim, (tuple, list)):
            return type(dim)(cls.infer(d) for d in dim)
        if isinstance(dim, str) and len(dim) == 2 and dim[1].isdigit():
            return cls(dim[0], int(dim[1]))
        return cls(dim)

    def next_unused(self, avoid: Sequence[str] | None = None) -> NamedDimension:
        """`self + 1` without `avoid`; else the first of `self`, `self + 1`, ... not in
        `avoid` (`"..."` is returned unchanged)."""
        if avoid is None:
            return self + 1
        current = self
        while current in avoid and current.name != ELLIPSIS:
            current = current + 1
        return current


def AnyDim(i: int | None = None) -> NamedDimension:
    """The wildcard `()` (one dim), or with `i` the ordinal wildcard `(i)`."""
    return NamedDimension(ANY, i or 0)


def is_any(dim: object) -> bool:
    """Whether `dim` is the wildcard `()` or an ordinal wildcard `(k)`."""
    return isinstance(dim, str) and dim != ELLIPSIS and is_wildcard(dim)
