"""`read_fastmri`: a fastMRI HDF5 file as a `RawData`.

What the layout relies on, from the fastMRI code (`fastmri/data/mri_data.py`,
`fastmri/data/transforms.py`, `fastmri/fftc.py`):

- `kspace` is `(slices, coils, height, width)` (multi-coil) or `(slices, height, width)`
  (single-coil), complex64;
- height is the readout, `Kx`: the header's `encodedSpace` matrix x (640 for the knee
  data, twice oversampled) is the height, y (368) the width; width is the phase
  encoding, `Ky`: undersampling masks select columns of the width, and the loader finds
  the zero-padded columns from `encodingLimits` `kspace_encoding_step_1`;
- k-space is stored centred (`fastmri.ifft2c` is `fftshift(ifft(ifftshift(k)))`): DC at
  index `N // 2`, the convention of `RawData`, so it is used as it is;
- the optional `mask` dataset (test and challenge files) is `(width,)`, the sampled
  columns; the root attributes (`acquisition`, `max`, `norm`, `patient_id`, ...) are
  metadata.
"""

from __future__ import annotations

from os import PathLike
from xml.etree import ElementTree

import numpy as np

from ._deps import require
from ._raw import RawData

NS = {"m": "http://www.ismrm.org/ISMRMRD"}


def read_fastmri(path: str | PathLike) -> RawData:
    """Read a fastMRI HDF5 file (needs h5py: `pip install 'jaxlinops[io]'`).

    The k-space keeps the file's layout as dims `("S", "C", "Kx", "Ky")` (height `Kx`,
    width `Ky`, centred); a single-coil file reads as one coil (`C = 1`). The mask (over
    `(Kx, Ky)`, the same for every slice) marks the columns that hold data (non-zero in
    some slice and coil) and, when the file has a `mask` dataset, are set in it. From
    `ismrmrd_header`, when present: `matrix` (the reconstruction matrix x, y, e.g.
    320 x 320) and `fov_mm`; without it `matrix` is the k-space grid and `fov_mm` `()`.
    The root attributes go to `attrs`.

    **Arguments:**

    - `path`: the file.

    **Returns:** a `RawData` with `source="fastmri"` and no noise scan.

    **Raises:** ValueError, naming the dataset, without a complex `kspace` of 3 or 4 dims,
    with a `mask` that is not one entry per column, or an unreadable header.
    """
    h5py = require("h5py", "read_fastmri")
    with h5py.File(path, "r") as file:
        if "kspace" not in file:
            raise ValueError(
                f"{path}: no `kspace` dataset (a fastMRI file holds kspace (slices, coils, "
                f"height, width)); the file holds {sorted(file)}."
            )
        kspace = _coils(file["kspace"][()], path)
        header = _text(file["ismrmrd_header"][()]) if "ismrmrd_header" in file else ""
        stored = file["mask"][()] if "mask" in file else None
        attrs = {name: _plain(value) for name, value in file.attrs.items()}
    grid = kspace.shape[2:]
    matrix, fov = _geometry(header, path) if header else (grid, ())
    return RawData(
        kspace=kspace,
        dims=("S", "C", "Kx", "Ky"),
        mask=np.broadcast_to(_columns(kspace, stored, path), grid).copy(),
        matrix=matrix,
        encoded_matrix=grid,
        fov_mm=fov,
        header=header,
        source="fastmri",
        attrs=attrs,
    )


def _coils(kspace: np.ndarray, path) -> np.ndarray:
    """`kspace` as complex64 `(S, C, H, W)`, a single-coil file's as one coil."""
    if not np.iscomplexobj(kspace) or kspace.ndim not in (3, 4):
        raise ValueError(
            f"{path}: `kspace` must be complex (slices, coils, height, width) or (slices, "
            f"height, width); got {kspace.dtype} {kspace.shape}."
        )
    kspace = kspace.astype(np.complex64, copy=False)
    return kspace[:, None] if kspace.ndim == 3 else kspace


def _columns(kspace: np.ndarray, stored: np.ndarray | None, path) -> np.ndarray:
    """`(W,)`: the columns with data, and set in the stored mask when there is one."""
    columns = np.any(kspace != 0, axis=(0, 1, 2))
    if stored is None:
        return columns
    stored = np.asarray(stored)
    if stored.shape != columns.shape:
        raise ValueError(
            f"{path}: `mask` has shape {stored.shape}; it needs one entry per k-space column "
            f"(width {columns.size})."
        )
    return columns & (stored != 0)


def _geometry(header: str, path) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The reconstruction matrix and field of view (x, y) of the XML `header`."""
    try:
        root = ElementTree.fromstring(header)
    except ElementTree.ParseError as error:
        raise ValueError(f"{path}: `ismrmrd_header` does not parse: {error}") from error
    space = "m:encoding/m:reconSpace"
    matrix = tuple(int(_find(root, f"{space}/m:matrixSize/m:{a}", path)) for a in "xy")
    fov = tuple(float(_find(root, f"{space}/m:fieldOfView_mm/m:{a}", path)) for a in "xy")
    return matrix, fov


def _find(root: ElementTree.Element, where: str, path) -> str:
    found = root.find(where, NS)
    if found is None or found.text is None:
        raise ValueError(f"{path}: `ismrmrd_header` has no {where.replace('m:', '')}.")
    return found.text


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _plain(value):
    """An HDF5 attribute as a Python value: text, a number, or a list."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value.item() if isinstance(value, np.generic) else value
