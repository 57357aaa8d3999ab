"""torchlinops' small shape helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._nameddim import NamedDimension as ND


def partition(seq: Sequence, val: Any) -> tuple[Sequence, Sequence, Sequence]:
    """Split `seq` at the first `val`: `(before, (val,), after)`, or `(seq, (), ())` if
    absent. `partition(("A", "B", "C"), "B") == (("A",), ("B",), ("C",))`."""
    if val not in seq:
        return seq, type(seq)(), type(seq)()
    i = list(seq).index(val)
    return seq[:i], seq[i : i + 1], seq[i + 1 :]


def get_nd_shape(dim: int, kspace: bool = False) -> tuple[str, ...]:
    """The spatial dims of a `dim`-D image, `("Nx", "Ny")`, or of k-space with `kspace`,
    `("Kx", "Ky")` (`dim` in 1, 2, 3)."""
    if dim not in (1, 2, 3):
        raise ValueError(f"`get_nd_shape(dim=...)` must be 1, 2 or 3; got {dim!r}.")
    return tuple(("K" if kspace else "N") + axis for axis in "xyz"[:dim])


def fake_dims(letter: str, n: int) -> tuple[str, ...]:
    """`n` placeholder dims `letter_0, letter_1, ...`."""
    return tuple(f"{letter}_{i}" for i in range(n))


def N2K(tup: Sequence[str]) -> tuple[ND, ...]:
    """Image dims to k-space dims: `N` becomes `K` in each spatial dim (one whose name
    holds x, y or z): `N2K(("C", "Nx")) == ("C", "Kx")`."""
    return _swap(tup, "N", "K")


def K2N(tup: Sequence[str]) -> tuple[ND, ...]:
    """The inverse of [`N2K`][]: `K` becomes `N` in each spatial dim."""
    return _swap(tup, "K", "N")


def is_spatial_dim(d: str) -> bool:
    """Whether `d` is a spatial dim: its name holds x, y or z (`Nx`, `Ky`; not `B`)."""
    return any(axis in ND.infer(d).name for axis in "xyz")


def _swap(tup: Sequence[str], old: str, new: str) -> tuple[ND, ...]:
    out = []
    for d in ND.infer(tuple(tup)):
        out.append(ND(d.name.replace(old, new), d.i) if is_spatial_dim(d) else d)
    return tuple(out)
