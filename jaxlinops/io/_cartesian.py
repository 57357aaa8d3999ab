r"""Cartesian ISMRMRD readouts placed on the centred k-space grid.

The grid is the encoded matrix, `(Nx, Ny[, Nz])`, with DC at index `N // 2` per axis (the
`fftshift` convention). A readout's sample `center_sample` (the k = 0 sample, counted
before `discard_pre` samples are dropped) lands at `Kx = Nx // 2`. An encode step lands at
`step - center + N // 2`, where `center` is the `encodingLimits` centre of
`kspace_encoding_step_1` (for `Ky`) or `_2` (for `Kz`), the step of k = 0; without
limits the step is the index itself. Partial Fourier and asymmetric echoes so leave
zeros (and False in the mask) at one end.
"""

from __future__ import annotations

import numpy as np

from ._header import Encoding

STEPS = ("kspace_encode_step_1", "kspace_encode_step_2")


def place(
    data: np.ndarray, heads: np.ndarray, rows: np.ndarray, encoding: Encoding
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """`(kspace, mask, dims)` from readouts `data` `(R, C, K)` with their acquisition
    headers `heads` (file order numbers `rows`, named in errors)."""
    if encoding.trajectory != "cartesian":
        raise ValueError(
            f"ISMRMRD header trajectory is {encoding.trajectory!r} but the acquisitions carry "
            "no positions (trajectory_dimensions 0); read_ismrmrd places only Cartesian "
            "readouts without them."
        )
    ndim = encoding.ndim
    grid = encoding.encoded[:ndim]
    idx = heads["idx"]
    if ndim == 2 and np.unique(idx[STEPS[1]]).size > 1:
        raise ValueError(
            "ISMRMRD idx.kspace_encode_step_2 takes several values but the encoding is 2-D "
            "(encodedSpace matrixSize z = 1)."
        )
    starts = grid[0] // 2 - (heads["center_sample"].astype(int) - heads["discard_pre"])
    _check_readouts(starts, data.shape[-1], grid[0], heads, rows)
    lines = tuple(_lines(idx, encoding, axis, grid[axis], rows) for axis in range(1, ndim))
    slices = idx["slice"].astype(int)
    _check_unique(np.stack([slices, *lines], axis=1), rows)
    return _fill(data, starts, slices, lines, grid)


def _check_readouts(starts, samples: int, size: int, heads, rows) -> None:
    bad = np.flatnonzero((starts < 0) | (starts + samples > size))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"ISMRMRD acquisition {rows[i]}: its {samples} samples with center_sample "
            f"{heads['center_sample'][i]} reach Kx {starts[i]}..{starts[i] + samples - 1}, "
            f"outside the encoded matrix x = {size} (center_sample marks the k = 0 sample)."
        )


def _lines(idx, encoding: Encoding, axis: int, size: int, rows) -> np.ndarray:
    """The grid index along axis `axis` (1: Ky, 2: Kz) of each readout."""
    field = STEPS[axis - 1]
    steps = idx[field].astype(int)
    center = encoding.centers[axis - 1]
    lines = steps if center is None else steps - center + size // 2
    bad = np.flatnonzero((lines < 0) | (lines >= size))
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"ISMRMRD acquisition {rows[i]}: idx.{field} = {steps[i]} (encodingLimits centre "
            f"{center}) lands at index {lines[i]}, outside the encoded matrix "
            f"{'xyz'[axis]} = {size}."
        )
    return lines


def _check_unique(keys: np.ndarray, rows) -> None:
    """A ValueError naming two readouts at the same (slice, Ky[, Kz])."""
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    same = np.flatnonzero(np.all(ordered[1:] == ordered[:-1], axis=1))
    if same.size:
        a, b = sorted(rows[order[same[0] : same[0] + 2]])
        raise ValueError(
            f"ISMRMRD acquisitions {a} and {b} both sample (slice, Ky[, Kz]) = "
            f"{tuple(int(k) for k in keys[order[same[0]]])}; read_ismrmrd reads one readout "
            "per line (no averages or repeated lines)."
        )


def _fill(data, starts, slices, lines, grid) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    _, coils, samples = data.shape
    kspace = np.zeros((slices.max() + 1, coils, *grid), np.complex64)
    mask = np.zeros((slices.max() + 1, *grid), bool)
    for start in np.unique(starts):
        take = starts == start
        readout = slice(start, start + samples)
        at = tuple(line[take] for line in lines)
        kspace[(slices[take], slice(None), readout, *at)] = data[take]
        mask[(slices[take], readout, *at)] = True
    if np.all(mask == mask[:1]):
        mask = mask[0]
    dims = ("C", "Kx", "Ky", "Kz")[: len(grid) + 1]
    if kspace.shape[0] == 1:
        return kspace[0], mask, dims
    return kspace, mask, ("S", *dims)
