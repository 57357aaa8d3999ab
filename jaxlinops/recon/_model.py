r"""The SENSE forward models of the reconstruction command, and the calibration data
its coil-map estimators start from.

With coil maps $S_c$ (`(C, *grid)`, `grid = (Nx, Ny[, Nz])`):

- Cartesian: $A = M\, F\, S$, $F$ the centred orthonormal FFT, $M$ the sampling mask
  (`(Kx, Ky[, Kz])`, broadcast over coils);
- non-Cartesian: $A = \sqrt{w}\, \mathrm{NUFFT}\, S$ with density weights $w$ (`(R, K)`),
  the NUFFT built with its Toeplitz normal, so that $A^H A$ runs as FFTs on a
  twice-oversampled grid.

Reconstructions solve $A^H A x = A^H y_w$ with $y_w = M y$ or $\sqrt{w}\, y$: the weight
scale cancels from the solution.
"""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np

from .. import _core as core, linops

GRID = ("Nx", "Ny", "Nz")
KGRID = ("Kx", "Ky", "Kz")


def coil_operator(maps: np.ndarray) -> core.NamedLinop:
    """$S$: the image `(Nx, Ny[, Nz])` to coil images `(C, Nx, Ny[, Nz])`."""
    grid = GRID[: maps.ndim - 1]
    return linops.Dense(maps, ("C", *grid), grid, ("C", *grid))


def cartesian_model(maps: np.ndarray, mask: np.ndarray) -> core.NamedLinop:
    """$A = M F S$: the image to masked centred k-space `(C, Kx, Ky[, Kz])`."""
    ndim = maps.ndim - 1
    F = linops.FFT(ndim, "C", (GRID[:ndim], KGRID[:ndim]), centered=True)
    M = linops.Diagonal(mask.astype(np.float32), ("C", *KGRID[:ndim]), broadcast_dims="C")
    return M @ F @ coil_operator(maps)


def nufft(locs: np.ndarray, matrix: tuple[int, ...], **options) -> core.NamedLinop:
    """The coil-batched NUFFT `(C, Nx, Ny[, Nz]) -> (C, R, K)` with its Toeplitz normal."""
    grid = GRID[: len(matrix)]
    return linops.NUFFT(locs, matrix, ("R", "K"), grid, batch_shape="C", toeplitz=True, **options)


def noncartesian_model(maps: np.ndarray, F: core.NamedLinop, dcf: np.ndarray) -> core.NamedLinop:
    r"""$A = \sqrt{w}\, F S$ for the NUFFT `F` and density weights `dcf` `(R, K)`."""
    root = jnp.sqrt(jnp.asarray(dcf, jnp.float32))
    return linops.Diagonal(root, ("C", "R", "K"), broadcast_dims="C") @ F @ coil_operator(maps)


def centered_fft(images: np.ndarray, ndim: int) -> np.ndarray:
    """The centred orthonormal FFT over the last `ndim` axes (numpy)."""
    axes = tuple(range(-ndim, 0))
    shifted = np.fft.ifftshift(images, axes=axes)
    return np.fft.fftshift(np.fft.fftn(shifted, axes=axes, norm="ortho"), axes=axes)


def centered_ifft(kspace: np.ndarray, ndim: int) -> np.ndarray:
    """The inverse of `centered_fft`."""
    axes = tuple(range(-ndim, 0))
    shifted = np.fft.ifftshift(kspace, axes=axes)
    return np.fft.fftshift(np.fft.ifftn(shifted, axes=axes, norm="ortho"), axes=axes)


def gridded_kspace(F: core.NamedLinop, kspace: np.ndarray, dcf: np.ndarray) -> np.ndarray:
    r"""Non-Cartesian data on the Cartesian grid, $\mathcal{F}\, F^H (w\, y)$: the
    density-compensated adjoint NUFFT (coil images) transformed back to centred k-space,
    where its fully sampled centre calibrates the coil maps."""
    images = np.asarray(F.H(jnp.asarray(kspace * dcf[None])))
    return centered_fft(images, images.ndim - 1)


def calibration_images(kspace: np.ndarray, width: int) -> np.ndarray:
    """Low-resolution coil images: the inverse FFT of the centre `width` entries per axis
    of centred k-space `(C, *grid)` (the rest zero)."""
    window = np.zeros(kspace.shape[1:], bool)
    window[tuple(slice(n // 2 - width // 2, n // 2 - width // 2 + width) for n in window.shape)] = 1
    return centered_ifft(np.where(window, kspace, 0), kspace.ndim - 1)


def covered(hit: np.ndarray) -> int:
    """The width of the largest centred cube of grid cells (centre at index N//2, the same
    width along every axis) in which every cell is `hit`."""
    centre = [n // 2 for n in hit.shape]
    width = 0
    while width + 1 <= min(hit.shape):
        lo = [c - (width + 1) // 2 for c in centre]
        if min(lo) < 0 or not hit[tuple(slice(a, a + width + 1) for a in lo)].all():
            break
        width += 1
    return width


GAP = 0.8  # the farthest a calibration cell's centre may be from a sample, in cells


def sampled_cells(locs: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    """Which cells of the grid (centred, unit spacing in cycles per FOV) have one of the
    points `locs` `(..., D)` within `GAP` of their centre. On a Cartesian grid every cell
    has one at distance 0; a radial centre sampled at the Nyquist rate, at most about 0.6;
    coil maps are smooth, so calibration tolerates a little less (at 0.8, ESPIRiT from a
    radial centre agrees with the true maps to 0.98 or better per pixel)."""
    points = np.asarray(locs, np.float64).reshape(-1, len(grid))
    nearest = np.floor(points + 0.5).astype(int)
    size = np.array(grid)
    distance = np.full(grid, np.inf)
    for offset in itertools.product((-1, 0, 1), repeat=len(grid)):  # the cells around each
        cells = nearest + np.array(offset)
        index = cells + size // 2
        inside = np.all((index >= 0) & (index < size), axis=1)
        gap = np.linalg.norm(points - cells, axis=1)
        np.minimum.at(distance, tuple(index[inside].T), gap[inside])
    return distance <= GAP
