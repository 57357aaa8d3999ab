"""`NamedDimCollection` and `NamedShape`: torchlinops' mutable groups of named shapes.

jaxlinops operators are immutable and keep their dims as plain tuples; these classes are
for code written against torchlinops' shape objects. Renaming a dim in one shape renames
it in every shape of the collection (`jaxlinops._dims.substitute`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._dims import ELLIPSIS, as_dims, is_wildcard, next_unused, shapes_match, substitute
from ._nameddim import NamedDimension as ND

Shape = Sequence[ND | str]


class NamedDimCollection:
    """Named shapes over one pool of dims: `c = NamedDimCollection(a=("A", "B"),
    b=("B", "C"))`; `c.a == ("A", "B")`; `c.a = ("D", "E")` renames `A -> D` and `B -> E`
    in every shape, so `c.b == ("E", "C")`. A shape is a tuple of dims, a single dim, or a
    mapping keyed by dims (`{"A": 3}`: renames apply to its keys).

    Setting a shape of the same length renames position by position (a wildcard on either
    side changes only this shape); a `"..."` in the old shape takes up the extra dims of
    the new one, and a `"..."` in the new shape stands for the old dims it replaces. Any
    other update raises a ValueError, as does one renaming a dim to two names.
    """

    _shapes: dict[str, Any]  # set in `__init__` (past `__setattr__`)

    def __init__(self, **shapes: object):
        object.__setattr__(self, "_shapes", {})
        for key, value in shapes.items():
            self._add(key, value)

    @property
    def shapes(self) -> dict[str, Any]:
        """`{name: shape}`."""
        return dict(self._shapes)

    def __getattr__(self, key: str) -> Any:
        shapes = self.__dict__.get("_shapes", {})
        if key in shapes:
            return shapes[key]
        raise AttributeError(f"{key!r} is not a shape of {type(self).__name__}({shapes}).")

    def __setattr__(self, key: str, value: object) -> None:
        if key in self._shapes:
            self._update(key, value)
        else:
            self._add(key, value)

    def __getitem__(self, key: str) -> Any:
        return self._shapes[key]

    def __setitem__(self, key: str, value: object) -> None:
        setattr(self, key, value)

    def update(self, shapes: Mapping[str, object]) -> None:
        """Set every shape of `shapes`, as `dict.update`."""
        for key, value in shapes.items():
            self[key] = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._shapes})"

    def _add(self, key: str, value: object) -> None:
        """A new shape `key` (torchlinops' `_add`); a ValueError if it exists."""
        if key in self._shapes:
            raise ValueError(
                f"`{type(self).__name__}`: shape {key!r} is already in index "
                f"({self._shapes[key]}); set it to rename its dims."
            )
        self._shapes[key] = _as_shape(type(self).__name__, key, value)

    def _update(self, key: str, value: object) -> None:
        old, new = self._shapes[key], _as_shape(type(self).__name__, key, value)
        if isinstance(old, dict) or isinstance(new, dict):
            self._shapes[key] = new  # a mapping is replaced whole
            return
        if isinstance(old, ND) or isinstance(new, ND):
            if not (isinstance(old, ND) and isinstance(new, ND)):
                raise TypeError(
                    f"`{key}`: a single dim is updated with a single dim; got the "
                    f"non-singleton {new}."
                )
            old, new = (old,), (new,)
        renames: dict[str, str] = {}
        for o, n in _align(key, old, new):
            if isinstance(n, ND) and not is_wildcard(o) and not is_wildcard(n):
                if renames.setdefault(o, n) != n:
                    raise ValueError(
                        f"`{key}`: inconsistent mapping: dim {o} would be renamed to both "
                        f"{renames[o]} and {n} (update {old} -> {new})."
                    )
        for name, shape in self._shapes.items():
            if name == key:
                self._shapes[name] = new if isinstance(shape, tuple) else new[0]
            else:
                self._shapes[name] = _renamed(shape, renames)


class NamedShape(NamedDimCollection):
    """A linop's shape: `NamedShape(ishape, oshape)` (`oshape=None`: the same as `ishape`;
    both None: `("...",)`; `NamedShape(ioshape=dims)`: `dims -> dims`, as torchlinops'
    custom-linop guide writes it), with `.ishape`, `.oshape`, `.H` (swapped) and `.N` (the
    normal's shape: `ishape -> ishape'`, output dims renamed where they clash)."""

    def __init__(
        self,
        ishape: Sequence[str] | NamedShape | None = None,
        oshape: Sequence[str] | None = None,
        *,
        ioshape: Sequence[str] | None = None,
        **other_shapes: object,
    ):
        if isinstance(ishape, NamedShape):
            super().__init__(**ishape.shapes)
            return
        if ishape is None and oshape is None:
            ishape = ioshape
        if oshape is None:
            oshape = (ELLIPSIS,) if ishape is None else ishape
        super().__init__(
            ishape=(ELLIPSIS,) if ishape is None else ishape, oshape=oshape, **other_shapes
        )

    @property
    def other_shapes(self) -> dict[str, Any]:
        """The shapes besides `ishape` and `oshape` (keyword arguments of the constructor)."""
        return {k: v for k, v in self.shapes.items() if k not in ("ishape", "oshape")}

    def adjoint(self) -> NamedShape:
        """`oshape -> ishape`, the other shapes kept (torchlinops' `NamedShape.adjoint`;
        a subclass keeps its type)."""
        return type(self)(self.oshape, self.ishape, **self.other_shapes)

    def normal(self) -> NamedShape:
        """The shape of $A^H A$: `ishape -> ishape'`, each input dim that is not also an
        output dim renamed to its next unused index; the other shapes kept."""
        ishape = _dims(self.ishape)
        renamed = tuple(d if d in _dims(self.oshape) else next_unused(d, ishape) for d in ishape)
        return type(self)(ishape, renamed, **self.other_shapes)

    @property
    def H(self) -> NamedShape:
        return self.adjoint()

    @property
    def N(self) -> NamedShape:
        return self.normal()

    def __add__(self, other: NamedShape) -> NamedShape:
        return NamedShape(
            _dims(self.ishape) + _dims(other.ishape), _dims(self.oshape) + _dims(other.oshape)
        )

    def __radd__(self, other: object) -> NamedShape:
        """`None + shape` is `shape` (the start of a sum of shapes)."""
        if other is None:
            return self
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamedShape):
            return NotImplemented
        return shapes_match(_dims(self.ishape), _dims(other.ishape)) and shapes_match(
            _dims(self.oshape), _dims(other.oshape)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"{self.ishape} -> {self.oshape}"


def _as_shape(owner: str, key: str, value: object) -> Any:
    """A shape as stored: a tuple of NamedDimensions (adjacent `"..."` coalesced; checked
    by `as_dims`), one NamedDimension (a str), or a dict keyed by NamedDimensions."""
    if isinstance(value, str):
        return ND.infer(as_dims((value,))[0])
    if isinstance(value, Mapping):
        return {ND.infer(as_dims((k,))[0]): v for k, v in value.items()}
    if not isinstance(value, Iterable):
        raise TypeError(
            f"`{owner}.{key}`: expected a dim or a sequence of dims; got {type(value).__name__}."
        )
    items = list(value)
    dims = [d for i, d in enumerate(items) if not (i and d == ELLIPSIS == items[i - 1])]
    return tuple(ND.infer(d) for d in as_dims(tuple(dims)))


def _renamed(shape: Any, renames: Mapping[str, str]) -> Any:
    """`shape` (a tuple, a dim or a mapping keyed by dims) with `renames` applied."""
    if isinstance(shape, dict):
        return {ND.infer(renames.get(k, k)): v for k, v in shape.items()}
    if isinstance(shape, ND):
        return ND.infer(renames.get(shape, shape))
    return ND.infer(substitute(shape, renames))


def _dims(shape: tuple[ND, ...] | ND) -> tuple[ND, ...]:
    """A shape as a tuple of dims (a single dim is a shape of one dim)."""
    return shape if isinstance(shape, tuple) else (shape,)


def _align(key: str, old: tuple, new: tuple) -> list[tuple[ND, object]]:
    """Pair each dim of `old` with what replaces it in `new`: position by position, a
    `"..."` of `old` taking up the extra dims of `new` (paired with their tuple), or a
    `"..."` of `new` standing for the extra dims of `old` (each paired with it)."""
    if len(old) == len(new):
        return list(zip(old, new))
    if ELLIPSIS in old and len(new) >= len(old) - 1:
        k = old.index(ELLIPSIS)
        tail = len(old) - k - 1
        return [
            *zip(old[:k], new[:k]),
            (old[k], new[k : len(new) - tail]),
            *zip(old[k + 1 :], new[len(new) - tail :]),
        ]
    if ELLIPSIS in new and len(old) >= len(new) - 1:
        k = new.index(ELLIPSIS)
        tail = len(new) - k - 1
        return [
            *zip(old[:k], new[:k]),
            *((o, new[k]) for o in old[k : len(old) - tail]),
            *zip(old[len(old) - tail :], new[k + 1 :]),
        ]
    raise ValueError(f"`{key}`: the new shape {new} is not compatible with the old one {old}.")
