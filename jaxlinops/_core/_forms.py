r"""What an operator declares for grid splitting: its *grid form* (`NamedLinop.grid_form`).

Splitting a dim an operator couples (`Coupling.GLOBAL` or a halo) across devices needs
to know what the operator does along it; the sharding layer reads that from the form
alone, never from the operator's class (`jaxlinops.sharding._grid._split` keeps a table from
form to stage):

- `Rename`: the identity, renaming dims position by position (`Identity` between dims);
- `Fourier`: a DFT over trailing dims (`FFT`, its adjoint), split by a distributed FFT;
- `Resize`: a Kronecker product of 1-D zero paddings or croppings, one per resized dim
  (`Pad`, `Crop`, `Truncate`, `PadDim`), split by moving the slabs so that each resized
  dim is whole on a device while it is resized;
- `OffGrid`: a reader of a grid at off-grid points (`Interpolate`, gridding,
  `ArrayToBlocks`), split by bucketing the points by slab;
- `Steps`: a chain of simpler operators computing the same map (a `NUFFT`), split step
  by step.

An operator without a form (None, the default) is split by what its `coupling` says:
entry by entry, or by halo exchange. Every form but `OffGrid` has an `adjoint()`, the
form of the operator's adjoint, which `Adjoint` declares (a reader's adjoint, a
scatter, is split by other means).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

# The adjoint of fftn(norm=a) is ifftn(norm=_ADJOINT_NORM[a]).
ADJOINT_NORM = {"ortho": "ortho", "backward": "forward", "forward": "backward"}


@dataclasses.dataclass(frozen=True)
class Rename:
    """The identity map, dim `ishape[i]` called `oshape[i]` (same length)."""

    ishape: tuple[str, ...]
    oshape: tuple[str, ...]

    def adjoint(self) -> Rename:
        return Rename(self.oshape, self.ishape)

    def image(self, dim: str) -> str:
        """The name of `dim` (an input dim, or one the operator does not have) after it."""
        return self.oshape[self.ishape.index(dim)] if dim in self.ishape else dim


@dataclasses.dataclass(frozen=True)
class Fourier:
    r"""A DFT over the trailing dims `dims_in` of the input, called `dims_out` in the
    output (same positions): `jnp.fft.fftn(x, norm=norm)` over them (`inverse` False) or
    `ifftn` (True), with the origin at the center sample of each dim when `centered`."""

    dims_in: tuple[str, ...]
    dims_out: tuple[str, ...]
    centered: bool
    norm: str
    inverse: bool = False

    def adjoint(self) -> Fourier:
        return Fourier(
            self.dims_out, self.dims_in, self.centered, ADJOINT_NORM[self.norm], not self.inverse
        )

    def image(self, dim: str) -> str:
        """The output name of the transformed dim `dim`."""
        return self.dims_out[self.dims_in.index(dim)]


@dataclasses.dataclass(frozen=True)
class Resize:
    r"""Zero padding or cropping of some dims, each on its own (a Kronecker product of
    1-D resizes): the dim at position `axes[i]` of `ishape` (negative: from the end, as
    for a `"..."` input) has `sizes[i] = (n_in, n_out)` entries in the input and the
    output (same position in `oshape`, renamed or not). The shorter side is the window
    `offsets[i], ..., offsets[i] + min(n_in, n_out) - 1` of the longer: a crop keeps it, a
    pad puts the input there and zeros elsewhere. Every other dim is applied entry by
    entry."""

    ishape: tuple[str, ...]
    oshape: tuple[str, ...]
    axes: tuple[int, ...]
    sizes: tuple[tuple[int, int], ...]
    offsets: tuple[int, ...]

    def adjoint(self) -> Resize:
        sizes = tuple((m, n) for n, m in self.sizes)
        return Resize(self.oshape, self.ishape, self.axes, sizes, self.offsets)

    def resized(self) -> dict[str, tuple[str, int, int, int]]:
        """Each resized input dim -> `(its output name, n_in, n_out, offset)`."""
        return {
            self.ishape[a]: (self.oshape[a], n, m, o)
            for a, (n, m), o in zip(self.axes, self.sizes, self.offsets)
        }


@dataclasses.dataclass(frozen=True)
class OffGrid:
    r"""What an operator that reads a grid at off-grid points declares for grid splitting
    (`Interpolate`, the NUFFT's interpolation, `ArrayToBlocks`):
    `[B..., *grid] -> [B..., L..., W...]`, point $l$ reading the grid entries within
    `reach` of its cell.

    - `locs`: the points `[L..., D]` in grid units (concrete: the split buckets them);
    - `grid_dims`, `grid_size`: the `D` grid dims (the trailing input dims) and sizes;
    - `reach`: per grid axis, how many entries on either side of its cell
      $\lfloor p_d \rfloor$ a point may read (window entries of zero weight included);
    - `periodic`: the grid wraps around (coordinates are taken modulo its size), else it
      is zero outside;
    - `local(locs, grid_size)`: the same operator (a `NamedLinop`) on a grid of sizes
      `grid_size` (same grid dims) at the points `locs` `[P, D]` (one point dim, the
      first of `L...`), mapping `[B..., *grid_size] -> [B..., P, W...]`;
    - `trailing`: the sizes of the per-point dims `W...` that follow `L...` in the output
      (a block's entries for `ArrayToBlocks`), carried along with each point; none by
      default.

    Split along a grid dim, each device holds a slab of the grid and the points whose cell
    lies in it, shifted to the slab extended by `reach` entries from the neighbouring slabs: the
    operator runs there unchanged (`jaxlinops.sharding._grid._points`).
    """

    locs: Any
    grid_dims: Sequence[str]
    grid_size: tuple[int, ...]
    reach: tuple[int, ...]
    periodic: bool
    local: Callable[[Any, tuple[int, ...]], Any]
    trailing: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Steps:
    """The operator as `chain`, a `Chain` of simpler operators computing the same map,
    which grid splitting runs leaf by leaf; or, with `chain` None, why it has no such form
    where it would need one (`why`, a sentence naming the operator)."""

    chain: Any  # a `NamedLinop` (whose module imports this one), or None
    why: str = ""

    def adjoint(self) -> Steps:
        """The adjoint chain (the steps' adjoints in reverse order), or the same `why`."""
        return self if self.chain is None else Steps(self.chain.adjoint())


GridForm = Rename | Fourier | Resize | OffGrid | Steps
