"""Raw MRI data: `read_ismrmrd` (ISMRMRD HDF5) and `read_fastmri` (fastMRI HDF5) return a
`RawData`; `write_ismrmrd` writes an ISMRMRD file (the demo's synthetic scans). They need
the `io` extra (`pip install 'jaxlinops[io]'`: h5py, ismrmrd), imported when called.

A `RawData` holds numpy arrays with named dims:

- Cartesian k-space `([S,] C, Kx, Ky[, Kz])`: slices, coils, then the grid, `Kx` the
  readout, `Ky` the phase encoding (ISMRMRD encode step 1), `Kz` encode step 2. It is
  centred, DC at index `N // 2` per axis (the `fftshift` convention); unsampled entries
  are 0 and `mask` (bool over `(Kx, Ky[, Kz])`) says which were acquired.
- non-Cartesian k-space `(C, R, K)`: `R` readouts of `K` samples, at `locs` `(R, K, D)`,
  in cycles per field of view, $[-N/2, N/2]$ per axis with `N = matrix` the
  reconstruction matrix (x, the readout axis, first): the convention of
  `jaxlinops.linops.NUFFT`, so `NUFFT(raw.locs, raw.matrix, ...)` models the data.
- `noise` `(C, N)` from the noise scan, `matrix`, `encoded_matrix`, `fov_mm`, the XML
  `header` and the `source` reader.

`raw.summary()` is a one-line description for a log.
"""

from ._fastmri import read_fastmri as read_fastmri
from ._ismrmrd import read_ismrmrd as read_ismrmrd
from ._ismrmrd_write import write_ismrmrd as write_ismrmrd
from ._raw import RawData as RawData

__all__ = ["RawData", "read_fastmri", "read_ismrmrd", "write_ismrmrd"]
