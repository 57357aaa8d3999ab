"""From scanner data to image: `jaxlinops-recon INPUT.h5 -o OUTPUT` on the command line,
`jl.recon.reconstruct(jl.io.read_ismrmrd(path))` in Python.

The steps: read (`jl.io`), prewhiten with the noise scan, estimate coil maps (ESPIRiT or
Walsh, `jl.mri`) and, for non-Cartesian data, density weights (Pipe–Menon or the radial
ramp), build the SENSE model with its Toeplitz normal, split the normal across the devices
found (`jl.plan_batches`), solve CG-SENSE, and write NIfTI or `.npy` and a PNG.
"""

from ._cli import main as main
from ._model import gridded_kspace as gridded_kspace
from ._pipeline import (
    Reconstruction as Reconstruction,
    Settings as Settings,
    reconstruct as reconstruct,
)
