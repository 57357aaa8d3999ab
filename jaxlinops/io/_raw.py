"""`RawData`: the record the raw-data readers return (k-space with named dims, its
sampling, the noise scan and the geometry), checked when it is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

NONCARTESIAN = ("C", "R", "K")
GRIDS = (("Kx", "Ky"), ("Kx", "Ky", "Kz"))
CARTESIAN = tuple((*s, "C", *g) for s in ((), ("S",)) for g in GRIDS)


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class RawData:
    """Raw k-space read from a scanner file, with named dims.

    **Fields:**

    - `kspace`: complex64 samples with dims `dims`.
    - `dims`: `("C", "Kx", "Ky"[, "Kz"])` for Cartesian data, with a leading `"S"` for
      slices (always present for fastMRI files, for ISMRMRD files when there is more
      than one slice); `("C", "R", "K")` (coils, readouts, samples per readout) for
      non-Cartesian data. Cartesian k-space is centred: DC at index `N // 2` of each
      grid axis (the `fftshift` convention), unsampled entries are 0.
    - `mask`: Cartesian only, bool over the grid dims `(Kx, Ky[, Kz])`, True where a
      sample was acquired; with a leading `S` when the slices sample different points.
      None for non-Cartesian data.
    - `locs`: non-Cartesian only, float32 `(R, K, D)`: the sample positions in cycles per
      field of view, $[-N/2, N/2]$ per axis with `N = matrix` (x, the readout axis,
      first), the convention of `jaxlinops.linops.NUFFT`. None for Cartesian data.
    - `noise`: complex64 `(C, N)` noise-scan samples, or None.
    - `matrix`: the reconstruction matrix per grid axis, x first.
    - `encoded_matrix`: the encoded matrix per grid axis (the Cartesian grid's shape, with
      any readout oversampling).
    - `fov_mm`: the reconstruction field of view per grid axis in mm; `()` when the file
      does not say.
    - `header`: the file's ISMRMRD XML header, or `""`.
    - `source`: the reader, `"ismrmrd"` or `"fastmri"`.
    - `skipped`: acquisitions the reader left out, counted per ISMRMRD flag name
      (navigators, phase correction, calibration-only, dummy scans, ...).
    - `attrs`: the file's other metadata (the fastMRI HDF5 attributes).
    """

    kspace: np.ndarray
    dims: tuple[str, ...]
    mask: np.ndarray | None = None
    locs: np.ndarray | None = None
    noise: np.ndarray | None = None
    matrix: tuple[int, ...]
    encoded_matrix: tuple[int, ...]
    fov_mm: tuple[float, ...] = ()
    header: str = ""
    source: str = ""
    skipped: Mapping[str, int] = field(default_factory=dict)
    attrs: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        _check_kspace(self)
        if self.locs is None:
            _check_cartesian(self)
        else:
            _check_noncartesian(self)
        _check_noise(self)
        if len(self.fov_mm) not in (0, len(self.matrix)):
            raise ValueError(
                f"RawData.fov_mm: {self.fov_mm} must give one size per grid axis of "
                f"matrix={self.matrix}, or be ()."
            )

    @property
    def cartesian(self) -> bool:
        """Whether the samples lie on a Cartesian grid (`mask`) rather than at `locs`."""
        return self.locs is None

    @property
    def coils(self) -> int:
        """The number of coils (the size of dim `"C"`)."""
        return self.kspace.shape[self.dims.index("C")]

    def summary(self) -> str:
        """One line for a log: source, layout, dims with sizes, coils, noise, geometry and
        the sampling (the fraction acquired, or the range of `locs`)."""
        sizes = ", ".join(f"{d}={n}" for d, n in zip(self.dims, self.kspace.shape))
        kind = "Cartesian" if self.cartesian else "non-Cartesian"
        noise = "no noise scan" if self.noise is None else f"{self.noise.shape[1]} noise samples"
        parts = [f"{self.source} {kind} k-space ({sizes})", f"{self.coils} coils", noise]
        parts.append("matrix " + "x".join(map(str, self.matrix)))
        if self.fov_mm:
            parts.append("FOV " + "x".join(f"{f:g}" for f in self.fov_mm) + " mm")
        parts.append(_sampling(self))
        if self.skipped:
            parts.append("skipped " + ", ".join(f"{k} {n}" for k, n in self.skipped.items()))
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"RawData({self.summary()})"


def _sampling(raw: RawData) -> str:
    if raw.mask is not None:
        return f"{100 * raw.mask.mean():.1f}% sampled"
    assert raw.locs is not None
    if raw.locs.size == 0:
        return "no samples"
    return f"locs in [{raw.locs.min():.4g}, {raw.locs.max():.4g}]"


def _check_kspace(raw: RawData) -> None:
    if not isinstance(raw.kspace, np.ndarray) or raw.kspace.dtype != np.complex64:
        kind = getattr(raw.kspace, "dtype", type(raw.kspace).__name__)
        raise ValueError(f"RawData.kspace must be a complex64 numpy array; got {kind}.")
    if len(raw.dims) != raw.kspace.ndim:
        raise ValueError(
            f"RawData.dims: {raw.dims} names {len(raw.dims)} dims but kspace has "
            f"{raw.kspace.ndim} (shape {raw.kspace.shape})."
        )


def _check_cartesian(raw: RawData) -> None:
    if raw.dims not in CARTESIAN:
        raise ValueError(
            f"RawData.dims: Cartesian k-space has dims one of {CARTESIAN}; got {raw.dims}."
        )
    grid = raw.kspace.shape[raw.dims.index("C") + 1 :]
    if tuple(raw.encoded_matrix) != grid:
        raise ValueError(
            f"RawData.encoded_matrix: {raw.encoded_matrix} differs from the k-space grid {grid}."
        )
    if len(raw.matrix) != len(grid):
        raise ValueError(
            f"RawData.matrix: {raw.matrix} needs {len(grid)} sizes, one per grid axis."
        )
    slices = raw.kspace.shape[:1] if raw.dims[0] == "S" else ()
    mask = raw.mask
    if mask is None or mask.dtype != np.bool_ or mask.shape not in (grid, (*slices, *grid)):
        got = None if mask is None else f"{mask.dtype} {mask.shape}"
        raise ValueError(
            f"RawData.mask: Cartesian data needs a bool mask of shape {grid}; got {got}."
        )


def _check_noncartesian(raw: RawData) -> None:
    assert raw.locs is not None
    if raw.dims != NONCARTESIAN:
        raise ValueError(
            f"RawData.dims: non-Cartesian k-space has dims {NONCARTESIAN}; got {raw.dims}."
        )
    want = (*raw.kspace.shape[1:], len(raw.matrix))
    if raw.locs.dtype != np.float32 or raw.locs.shape != want:
        raise ValueError(
            f"RawData.locs: must be float32 of shape (R, K, D) = {want}; got "
            f"{raw.locs.dtype} {raw.locs.shape}."
        )
    if raw.mask is not None:
        raise ValueError("RawData.mask: must be None for non-Cartesian data (it has locs).")
    if len(raw.encoded_matrix) != len(raw.matrix):
        raise ValueError(
            f"RawData.encoded_matrix: {raw.encoded_matrix} needs one size per axis of "
            f"matrix={raw.matrix}."
        )


def _check_noise(raw: RawData) -> None:
    noise = raw.noise
    if noise is None:
        return
    if noise.dtype != np.complex64 or noise.ndim != 2 or noise.shape[0] != raw.coils:
        raise ValueError(
            f"RawData.noise: must be complex64 (C, N) with C = {raw.coils} coils; got "
            f"{noise.dtype} {noise.shape}."
        )
