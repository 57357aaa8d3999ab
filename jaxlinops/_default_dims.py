"""The dim names an operator uses when its caller names none, all in one place.

A leaf module: it imports nothing from jaxlinops, so any layer may use it.

- `GRID_DIMS = ("Nx", "Ny", "Nz")`: the axes of an image (a grid): the input of `Pad`,
  `Crop`, `NUFFT`, `Convolution` and `Interpolate`, the primal side of `FFT`, the array of
  `ArrayToBlocks`.
- `KSPACE_DIMS = ("Kx", "Ky", "Kz")`: the Fourier duals of the grid axes: the output of
  `FFT`, the internal padded k-space grid of `NUFFT`.
- `NBLOCKS_DIMS = ("Bx", "By", "Bz")`: the block counts of `ArrayToBlocks`.
- `BLOCK_DIMS = ("Px", "Py", "Pz")`: the entries of a block; with a mask they become the
  single dim `MASKED_BLOCK_DIM = "P"`.
- `ordinal_wildcards(first, count)`: the single-dim wildcards `"(first)"`, `"(first + 1)"`,
  ... (`Sampling`'s index dims, `Interpolate`'s point dims), which a `Chain` resolves from
  the neighbouring operators.

An operator takes the first `D` names of a tuple for `D` axes; with more than three axes
the caller names them. Derived names (`Nx1` for the renamed output of a normal or a
`Pad`) come from `jaxlinops._dims.next_unused`, not from here.
"""

from __future__ import annotations

GRID_DIMS = ("Nx", "Ny", "Nz")
KSPACE_DIMS = ("Kx", "Ky", "Kz")
NBLOCKS_DIMS = ("Bx", "By", "Bz")
BLOCK_DIMS = ("Px", "Py", "Pz")
MASKED_BLOCK_DIM = "P"


def ordinal_wildcards(first: int, count: int) -> tuple[str, ...]:
    """`count` single-dim wildcards numbered from `first`: `("(1)", "(2)")` for
    `(1, 2)`."""
    return tuple(f"({k})" for k in range(first, first + count))
