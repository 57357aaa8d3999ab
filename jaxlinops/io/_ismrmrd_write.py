"""`write_ismrmrd`: k-space (Cartesian or with a trajectory) and a noise scan as an ISMRMRD
HDF5 file that `read_ismrmrd` and the `ismrmrd` package read back.

The header is built with `ismrmrd.xsd`; the acquisition table is written in one HDF5
write in the `ismrmrd` package's layout (`ismrmrd.hdf5.acquisition_dtype`), since
`ismrmrd.Dataset.append_acquisition` resizes the table once per readout (about 2.5 ms
each here).
"""

from __future__ import annotations

from os import PathLike
from types import ModuleType

import numpy as np

from ._deps import require
from ._header import Encoding, build_header
from ._trajectory import TOLERANCE, scale

MAX_SAMPLES = 65535  # number_of_samples is a uint16


def write_ismrmrd(
    path: str | PathLike,
    kspace: np.ndarray,
    *,
    locs: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    noise: np.ndarray | None = None,
    matrix: tuple[int, ...],
    fov_mm: tuple[float, ...] | None = None,
    dataset: str = "dataset",
    trajectory_units: str = "normalized",
) -> None:
    """Write an ISMRMRD HDF5 file (needs h5py and ismrmrd: `pip install 'jaxlinops[io]'`),
    replacing any file at `path`.

    The header has one encoding space (the trajectory `"cartesian"` or `"other"`, the
    matrices, fields of view and encoding limits); the noise scan comes first, in
    acquisitions flagged `ACQ_IS_NOISE_MEASUREMENT`, then one acquisition per readout.

    **Arguments:**

    - `path`: the file to write.
    - `kspace`: non-Cartesian `(C, R, K)` (with `locs`), or centred Cartesian
      `(C, Kx, Ky[, Kz])`, one acquisition per `(Ky[, Kz])` line, its encode steps the
      line's indices (encoding limits centred at `N // 2`).
    - `locs`: `(R, K, D)` positions in cycles per FOV, $[-N/2, N/2]$ (`N = matrix`).
    - `mask`: Cartesian only: bool `(Ky[, Kz])`, the lines to write (default all).
    - `noise`: `(C, N)` noise samples, or None.
    - `matrix`: the reconstruction matrix per grid axis, x first. For Cartesian data
      the encoded matrix is the grid of `kspace` (larger with readout oversampling).
    - `fov_mm`: the reconstruction field of view per axis in mm (default 1 mm voxels;
      a 2-D file's z is written as 1 mm).
    - `dataset`: the HDF5 group to write.
    - `trajectory_units`: `"normalized"` (`locs / N`, in $[-0.5, 0.5]$, Gadgetron's
      convention) or `"cycles"` (`locs` as they are).
    """
    h5py = require("h5py", "write_ismrmrd")
    ismrmrd = require("ismrmrd", "write_ismrmrd")
    kspace = np.asarray(kspace, np.complex64)
    matrix = tuple(int(n) for n in matrix)
    fov = tuple(float(f) for f in (matrix if fov_mm is None else fov_mm))
    if len(fov) != len(matrix):
        raise ValueError(f"write_ismrmrd: fov_mm {fov} needs one size per axis of {matrix}.")
    if locs is None:
        encoding, lines, table = _cartesian_table(ismrmrd, kspace, mask, matrix, fov)
    else:
        encoding, lines, table = _noncartesian_table(
            ismrmrd, kspace, locs, matrix, fov, trajectory_units
        )
    if noise is not None:
        table = np.concatenate([_noise(ismrmrd, np.asarray(noise, np.complex64), kspace), table])
    table["head"]["scan_counter"] = np.arange(len(table))
    with h5py.File(path, "w") as file:
        group = file.create_group(dataset)
        xml = group.create_dataset("xml", shape=(1,), dtype=h5py.special_dtype(vlen=bytes))
        xml[0] = build_header(ismrmrd, encoding, lines).encode()
        group.create_dataset(
            "data", shape=table.shape, maxshape=(None,), dtype=ismrmrd.hdf5.acquisition_dtype
        )[...] = table


def _pad3(values: tuple, fill) -> tuple:
    return (*values, *(fill,) * (3 - len(values)))


def _cartesian_table(ismrmrd: ModuleType, kspace, mask, matrix, fov):
    grid = kspace.shape[1:]
    if kspace.ndim not in (3, 4) or len(matrix) != len(grid):
        raise ValueError(
            f"write_ismrmrd: Cartesian kspace is (C, Kx, Ky[, Kz]) with one matrix size per "
            f"grid axis; got shape {kspace.shape} and matrix {matrix}."
        )
    mask = np.ones(grid[1:], bool) if mask is None else np.asarray(mask)
    if mask.shape != grid[1:] or mask.dtype != np.bool_:
        raise ValueError(
            f"write_ismrmrd: mask must be bool (Ky[, Kz]) = {grid[1:]}; got {mask.dtype} "
            f"{mask.shape}."
        )
    steps = np.argwhere(mask)  # (R, 1 or 2): the (Ky[, Kz]) of each line written
    lines = np.moveaxis(kspace, 1, -1)[(slice(None), *steps.T)]  # (C, R, Kx)
    encoded_fov = tuple(f * g / n for f, g, n in zip(fov, grid, matrix))
    encoding = Encoding(
        encoded=_pad3(grid, 1),
        recon=_pad3(matrix, 1),
        encoded_fov=_pad3(encoded_fov, 1.0),
        recon_fov=_pad3(fov, 1.0),
    )
    table = _imaging(ismrmrd, lines.transpose(1, 0, 2), None, _pad_steps(steps))
    return encoding, _pad3(grid[1:], 1)[:2], table


def _noncartesian_table(ismrmrd: ModuleType, kspace, locs, matrix, fov, units: str):
    locs = np.asarray(locs, np.float64)
    if kspace.ndim != 3 or locs.shape != (*kspace.shape[1:], len(matrix)):
        raise ValueError(
            f"write_ismrmrd: non-Cartesian kspace is (C, R, K) with locs (R, K, D), D = "
            f"len(matrix); got {kspace.shape}, locs {locs.shape}, matrix {matrix}."
        )
    if units not in ("normalized", "cycles"):
        raise ValueError(
            f"write_ismrmrd: trajectory_units must be 'normalized' or 'cycles'; got {units!r}."
        )
    matrix3, fov3 = _pad3(matrix, 1), _pad3(fov, 1.0)
    encoding = Encoding(matrix3, matrix3, fov3, fov3, trajectory="other")
    traj = locs / scale(encoding, units, len(matrix))
    if units == "normalized" and np.abs(traj).max(initial=0) > 0.5 * (1 + TOLERANCE):
        raise ValueError(
            f"write_ismrmrd: locs reach {np.abs(locs).max():.4g}, beyond N/2 for matrix "
            f"{matrix}: normalised positions would pass 0.5 and read back as cycles."
        )
    count = kspace.shape[1]
    steps = np.stack([np.arange(count), np.zeros(count, int)], axis=1)
    table = _imaging(ismrmrd, kspace.transpose(1, 0, 2), traj.astype(np.float32), steps)
    return encoding, (count, 1), table


def _pad_steps(steps: np.ndarray) -> np.ndarray:
    return np.concatenate([steps, np.zeros((len(steps), 2 - steps.shape[1]), int)], axis=1)


def _imaging(ismrmrd: ModuleType, data, traj, steps) -> np.ndarray:
    """The table of readouts `data` `(R, C, K)` at encode steps `steps` `(R, 2)`, with
    trajectories `traj` `(R, K, D)` or None; the first and last flagged for their slice."""
    if len(data) == 0 or data.shape[-1] > MAX_SAMPLES:
        raise ValueError(
            f"write_ismrmrd: {len(data)} readouts of {data.shape[-1]} samples; it writes at "
            f"least one, of at most {MAX_SAMPLES} samples."
        )
    table = _table(ismrmrd, data, traj)
    head = table["head"]
    head["center_sample"] = data.shape[-1] // 2
    head["idx"]["kspace_encode_step_1"] = steps[:, 0]
    head["idx"]["kspace_encode_step_2"] = steps[:, 1]
    head["flags"][0] |= _bit(ismrmrd, "ACQ_FIRST_IN_SLICE")
    last = _bit(ismrmrd, "ACQ_LAST_IN_SLICE") | _bit(ismrmrd, "ACQ_LAST_IN_MEASUREMENT")
    head["flags"][-1] |= last
    return table


def _noise(ismrmrd: ModuleType, noise: np.ndarray, kspace: np.ndarray) -> np.ndarray:
    """The noise scan as acquisitions of at most `MAX_SAMPLES` samples each."""
    if noise.ndim != 2 or noise.shape[0] != kspace.shape[0]:
        raise ValueError(
            f"write_ismrmrd: noise must be (C, N) with C = {kspace.shape[0]}; got {noise.shape}."
        )
    parts = max(1, -(-noise.shape[1] // MAX_SAMPLES))
    tables = [_table(ismrmrd, part[None], None) for part in np.array_split(noise, parts, axis=1)]
    table = np.concatenate(tables)
    table["head"]["flags"] = _bit(ismrmrd, "ACQ_IS_NOISE_MEASUREMENT")
    return table


def _bit(ismrmrd: ModuleType, name: str) -> np.uint64:
    return np.uint64(1) << np.uint64(getattr(ismrmrd, name) - 1)


def _table(ismrmrd: ModuleType, data: np.ndarray, traj: np.ndarray | None) -> np.ndarray:
    """Acquisitions of equal shape: `data` `(R, C, K)`, `traj` `(R, K, D)` or None."""
    count, coils, samples = data.shape
    table = np.zeros(count, np.dtype(ismrmrd.hdf5.acquisition_dtype))
    head = table["head"]
    head["version"] = 1
    head["number_of_samples"] = samples
    head["available_channels"] = head["active_channels"] = coils
    head["channel_mask"] = _channel_mask(coils)
    head["read_dir"], head["phase_dir"], head["slice_dir"] = np.eye(3, dtype=np.float32)
    head["trajectory_dimensions"] = 0 if traj is None else traj.shape[-1]
    empty = np.zeros(0, np.float32)
    for i in range(count):
        table["data"][i] = np.ascontiguousarray(data[i]).view(np.float32).reshape(-1)
        table["traj"][i] = empty if traj is None else np.ascontiguousarray(traj[i]).reshape(-1)
    return table


def _channel_mask(coils: int) -> np.ndarray:
    """ISMRMRD's 16 64-bit words with the bits of the first `coils` channels set."""
    bits = [min(max(coils - 64 * word, 0), 64) for word in range(16)]
    return np.array([(1 << n) - 1 for n in bits], np.uint64)
