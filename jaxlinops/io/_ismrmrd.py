"""`read_ismrmrd`: an ISMRMRD HDF5 file (`dataset/xml` header, `dataset/data` acquisitions)
as a `RawData`.

The acquisition table is read in one HDF5 read with h5py, in the layout the `ismrmrd`
package writes (`ismrmrd.hdf5.acquisition_dtype`: `head`, `traj`, `data`), and its flags
tested with the package's constants: `ismrmrd.Dataset.read_acquisition` reads each
acquisition with three HDF5 reads (about 5 ms each here, minutes for a 3-D scan).
"""

from __future__ import annotations

import logging
from os import PathLike
from types import ModuleType

import numpy as np

from ._cartesian import place
from ._deps import require
from ._header import parse_header
from ._raw import RawData
from ._trajectory import check_units, to_locs

logger = logging.getLogger("jaxlinops")

NOISE = "ACQ_IS_NOISE_MEASUREMENT"
# acquisitions that are not image data: left out, counted in RawData.skipped and logged
SKIPPED = (
    "ACQ_IS_PARALLEL_CALIBRATION",  # calibration only (without _AND_IMAGING)
    "ACQ_IS_NAVIGATION_DATA",
    "ACQ_IS_PHASECORR_DATA",
    "ACQ_IS_HPFEEDBACK_DATA",
    "ACQ_IS_DUMMYSCAN_DATA",
    "ACQ_IS_RTFEEDBACK_DATA",
    "ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA",
    "ACQ_IS_PHASE_STABILIZATION_REFERENCE",
    "ACQ_IS_PHASE_STABILIZATION",
)
# loop counters that must take one value over the image readouts
COUNTERS = ("average", "contrast", "phase", "repetition", "set")
# header fields that must agree over the image readouts (they fix the array shapes)
SAME = ("number_of_samples", "active_channels", "trajectory_dimensions")
SAME += ("discard_pre", "discard_post")


def read_ismrmrd(
    path: str | PathLike, dataset: str = "dataset", *, trajectory_units: str = "auto"
) -> RawData:
    """Read an ISMRMRD HDF5 file (needs h5py and ismrmrd: `pip install 'jaxlinops[io]'`).

    Noise acquisitions (`ACQ_IS_NOISE_MEASUREMENT`) become `noise` `(C, N)`. Acquisitions
    that are not image data (calibration-only, navigators, phase correction, dummy scans,
    feedback, phase stabilisation: `SKIPPED`) are left out, counted per flag in
    `RawData.skipped` and reported in one INFO line on the `"jaxlinops"` logger.
    `discard_pre` / `discard_post` samples are dropped. The image readouts then make:

    - with trajectories (`trajectory_dimensions > 0`): non-Cartesian `(C, R, K)` with
      `locs` `(R, K, D)` in cycles per reconstruction FOV (see `trajectory_units`);
    - without: Cartesian `([S,] C, Kx, Ky[, Kz])`, centred, placed by `center_sample`,
      `idx.kspace_encode_step_1` / `_2` with the `encodingLimits` centres, and
      `idx.slice` (3-D when the encoded matrix has z > 1); `mask` marks the samples read.

    **Arguments:**

    - `path`: the file.
    - `dataset`: the HDF5 group holding `xml` and `data`.
    - `trajectory_units`: `"normalized"` (positions in $[-0.5, 0.5]$, Gadgetron's
      convention, scaled by the matrix: the encoded one times the ratio of the
      reconstruction to the encoded FOV, i.e. `matrix` when the spaces agree),
      `"cycles"` (cycles per FOV), or `"auto"`: judged by the largest |position|
      (normalised up to 0.5 plus 1%), with one INFO line saying which.

    **Returns:** a `RawData` with `source="ismrmrd"`.

    **Raises:** ValueError, naming the field, for a missing dataset, header or table, more
    than one encoding space, several values of an `idx` counter (averages, contrasts,
    phases, repetitions, sets), readouts differing in sample or channel counts, reversed
    (EPI) readouts, readouts outside the encoded matrix, two readouts on one line, a
    non-Cartesian header trajectory without positions, positions whose dimension is not
    the encoding's, or non-Cartesian readouts in several slices.
    """
    h5py = require("h5py", "read_ismrmrd")
    ismrmrd = require("ismrmrd", "read_ismrmrd")
    check_units(trajectory_units)
    xml, table = _load(h5py, path, dataset)
    encoding = parse_header(ismrmrd, xml, f"{dataset}/xml")
    heads = table["head"]
    noise = _flagged(ismrmrd, heads, NOISE)
    skip, skipped = _skipped(ismrmrd, heads, ~noise)
    rows = np.flatnonzero(~noise & ~skip)
    _check_imaging(ismrmrd, heads, rows)
    data, traj = _samples(table, rows)
    if traj is None:
        kspace, mask, dims = place(data, heads[rows], rows, encoding)
        ndim, locs = encoding.ndim, None
    else:
        ndim = traj.shape[-1]
        _check_noncartesian(heads, rows, encoding.ndim, ndim)
        kspace, mask, dims = np.ascontiguousarray(data.transpose(1, 0, 2)), None, ("C", "R", "K")
        locs = to_locs(traj, encoding, trajectory_units)
    return RawData(
        kspace=kspace,
        dims=dims,
        mask=mask,
        locs=locs,
        noise=_noise(table, np.flatnonzero(noise)),
        matrix=encoding.recon[:ndim],
        encoded_matrix=encoding.encoded[:ndim],
        fov_mm=encoding.recon_fov[:ndim],
        header=xml.decode() if isinstance(xml, bytes) else str(xml),
        source="ismrmrd",
        skipped=skipped,
    )


def _load(h5py: ModuleType, path: str | PathLike, dataset: str) -> tuple[bytes, np.ndarray]:
    """The XML header and the whole acquisition table of `path`'s group `dataset`."""
    with h5py.File(path, "r") as file:
        group = file.get(dataset)
        if not isinstance(group, h5py.Group):
            hint = " (a fastMRI file? read_fastmri reads those)" if "kspace" in file else ""
            raise ValueError(
                f"{path}: no ISMRMRD dataset {dataset!r}; the file holds {sorted(file)}{hint}."
            )
        for name in ("xml", "data"):
            if name not in group:
                raise ValueError(f"{path}: the ISMRMRD dataset has no {dataset}/{name}.")
        return group["xml"][0], group["data"][()]


def _flagged(ismrmrd: ModuleType, heads: np.ndarray, name: str) -> np.ndarray:
    """Which acquisitions have the flag `name` (an `ismrmrd` constant) set."""
    bit = np.uint64(1) << np.uint64(getattr(ismrmrd, name) - 1)
    return (heads["flags"] & bit) != 0


def _skipped(ismrmrd: ModuleType, heads: np.ndarray, among: np.ndarray):
    """Which of the acquisitions `among` to leave out (`SKIPPED` flags), and their count
    per flag; logs one INFO line when there are any."""
    imaging_too = _flagged(ismrmrd, heads, "ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING")
    skip = np.zeros(len(heads), bool)
    counts = {}
    for name in SKIPPED:
        hit = _flagged(ismrmrd, heads, name) & among
        if name == "ACQ_IS_PARALLEL_CALIBRATION":
            hit &= ~imaging_too
        if hit.any():
            counts[name] = int(hit.sum())
        skip |= hit
    if counts:
        listed = ", ".join(f"{name} {n}" for name, n in counts.items())
        logger.info("read_ismrmrd: left out %d acquisitions (%s)", skip.sum(), listed)
    return skip, counts


def _check_imaging(ismrmrd: ModuleType, heads: np.ndarray, rows: np.ndarray) -> None:
    if rows.size == 0:
        raise ValueError("ISMRMRD file has no image acquisitions (only noise or skipped ones).")
    reverse = np.flatnonzero(_flagged(ismrmrd, heads[rows], "ACQ_IS_REVERSE"))
    if reverse.size:
        raise ValueError(
            f"ISMRMRD acquisition {rows[reverse[0]]} has ACQ_IS_REVERSE set: reversed (EPI) "
            "readouts are not supported."
        )
    refs = heads["encoding_space_ref"][rows]
    if np.any(refs != 0):
        raise ValueError(
            f"ISMRMRD acquisition {rows[np.argmax(refs != 0)]} has encoding_space_ref "
            f"{refs.max()}; read_ismrmrd reads files with one encoding space (0)."
        )
    for counter in COUNTERS:
        values = np.unique(heads["idx"][counter][rows])
        if values.size > 1:
            raise ValueError(
                f"ISMRMRD image acquisitions take {values.size} values of idx.{counter} "
                f"({values.tolist()[:8]}); read_ismrmrd reads one {counter}: split the file."
            )
    _check_same(heads[rows], rows, SAME, "image")


def _check_same(heads: np.ndarray, rows: np.ndarray, fields, kind: str) -> None:
    for name in fields:
        values = heads[name]
        bad = np.flatnonzero(values != values[0])
        if bad.size:
            raise ValueError(
                f"ISMRMRD acquisition {rows[bad[0]]} has {name} = {values[bad[0]]} but "
                f"acquisition {rows[0]} has {values[0]}; read_ismrmrd needs one {name} for "
                f"all {kind} acquisitions."
            )


def _samples(table: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The readouts `rows` as `(R, C, K)` and their trajectories `(R, K, D)` (None without),
    with `discard_pre` / `discard_post` samples dropped."""
    head = table["head"][rows[0]]
    coils, samples = int(head["active_channels"]), int(head["number_of_samples"])
    keep = slice(int(head["discard_pre"]), samples - int(head["discard_post"]))
    data = np.stack(list(table["data"][rows])).view(np.complex64)
    data = data.reshape(len(rows), coils, samples)[..., keep]
    dims = int(head["trajectory_dimensions"])
    if dims == 0:
        return data, None
    traj = np.stack(list(table["traj"][rows])).reshape(len(rows), samples, dims)
    return data, traj[:, keep].astype(np.float64)


def _check_noncartesian(heads: np.ndarray, rows: np.ndarray, ndim: int, dims: int) -> None:
    if dims != ndim:
        raise ValueError(
            f"ISMRMRD trajectory_dimensions is {dims} but the encoding is {ndim}-D "
            "(encodedSpace matrixSize z); read_ismrmrd reads a position per axis (no "
            "density weights in the trajectory)."
        )
    slices = np.unique(heads["idx"]["slice"][rows])
    if slices.size > 1:
        raise ValueError(
            f"ISMRMRD non-Cartesian acquisitions take {slices.size} values of idx.slice; "
            "read_ismrmrd reads one slice of non-Cartesian data."
        )


def _noise(table: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
    """The noise acquisitions `rows` side by side, `(C, N)`; None without any."""
    if rows.size == 0:
        return None
    heads = table["head"][rows]
    _check_same(heads, rows, ("active_channels",), "noise")
    chunks = [
        table["data"][row].view(np.complex64).reshape(int(head["active_channels"]), -1)
        for row, head in zip(rows, heads)
    ]
    return np.concatenate(chunks, axis=1)
