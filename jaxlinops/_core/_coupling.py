r"""What an operator declares about splitting: how it couples the entries of each of its
dims (`Coupling`), and what a tile slices (`Tiling`).

The sharding layer decides from these declarations alone: a dim an operator applies
entry by entry (`Coupling.NONE`) is tiled; a dim it couples within a halo or globally is
split by domain decomposition instead (`jaxlinops.sharding._grid`): halo exchange for
`Coupling.halo(k)`, and for `Coupling.GLOBAL` what the operator's grid form says
(`jaxlinops._core._forms`: a distributed FFT, slab transposes around a resize, points
bucketed by slab).

**Declaring a halo is enough for grid splitting** when the operator is *shift invariant*
along the dim: output entry $j$ is the same function of the input entries $j - k, \dots,
j + k$ at every $j$ (a convolution), and the operator fixes no size of the dim
(`size(dim)` is None), mapping the dim to the same position of its output (renamed or
not). Each device then runs the operator itself on its slab extended by $k$ entries from
each neighbour (wrapped around the ends of the dim when `periodic`, zeros otherwise) and
keeps the interior, which is exact whatever the operator does at the ends of the extended
slab. An operator with arrays indexed along the dim (gridding onto a fixed grid) is not
shift invariant: grid splitting refuses it by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

ArrayAxes = tuple[Callable, Sequence[str | None]]


@dataclasses.dataclass(frozen=True)
class Coupling:
    """How an operator couples the entries of one dim.

    - `Coupling.NONE`: entry by entry (a batch dim, a weight indexed along the dim, a
      contracted dim whose tiles sum): tiles are independent.
    - `Coupling.halo(k, periodic=False)`: an output entry depends on the input entries
      within `k` of it (a convolution's radius, a gridding kernel's half width); with
      `periodic`, the dim wraps around (entry $N$ is entry 0: circular padding), else it
      is zero outside its ends.
    - `Coupling.GLOBAL`: an output entry may depend on every input entry along the dim
      (an FFT, a resize).
    """

    kind: str
    width: int = 0
    periodic: bool = False
    NONE: ClassVar[Coupling]
    GLOBAL: ClassVar[Coupling]

    @staticmethod
    def halo(k: int, periodic: bool = False) -> Coupling:
        return Coupling("halo", int(k), bool(periodic))

    def __str__(self) -> str:
        return f"a halo of {self.width}" if self.kind == "halo" else self.kind


Coupling.NONE = Coupling("none")
Coupling.GLOBAL = Coupling("global")
_RANK = {"none": 0, "halo": 1, "global": 2}


def strongest(couplings: Iterable[Coupling]) -> Coupling:
    """The strongest of several couplings (global > the widest halo > none)."""
    return max(couplings, key=lambda c: (_RANK[c.kind], c.width), default=Coupling.NONE)


@dataclasses.dataclass(frozen=True)
class Tiling:
    """What a tile of an operator slices (`jaxlinops.split_arrays` does it):

    - `arrays`: `(where, axes)` pairs: `where(op)` is one of its arrays and `axes` names
      the dim of each axis (None for an unnamed one);
    - `batch`: dims the operator applies entry by entry without an array along them;
    - `zeroed`: whether zero entries of the arrays give zero outputs (weights: yes;
      indices and points: no, so padded tiles are masked).

    These dims are the operator's `Coupling.NONE` dims.
    """

    arrays: Sequence[ArrayAxes] = ()
    batch: Sequence[str] = ()
    zeroed: bool = True

    @property
    def dims(self) -> frozenset[str]:
        named = {d for _, axes in self.arrays for d in axes if d is not None}
        return frozenset(named | set(self.batch))
