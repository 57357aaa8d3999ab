"""MRI estimation in JAX, batched and jit-able: what a reconstruction needs from the
scanner's data besides the data itself.

- Noise prewhitening from a noise scan: `noise_covariance`, `whitening_matrix` (the
  inverse Cholesky factor) and `noise_whitening` (an operator along the coil dim).
- Coil sensitivity maps: `espirit_maps` (ESPIRiT, sigpy's `EspiritCalib` parameters) from
  centred calibration k-space, and `walsh_maps` (adaptive combination) from coil images.
- Density compensation of a non-Cartesian trajectory: `pipe_menon_dcf` (the Pipe–Menon
  iteration with the library's `Interpolate`), `radial_dcf` (the analytic ramp), and
  `density_compensation`, which takes the ramp for a radial trajectory (`is_radial`) and
  Pipe–Menon otherwise.
"""

from ._dcf import (
    density_compensation as density_compensation,
    is_radial as is_radial,
    pipe_menon_dcf as pipe_menon_dcf,
    radial_dcf as radial_dcf,
)
from ._espirit import espirit_maps as espirit_maps
from ._walsh import walsh_maps as walsh_maps
from ._whiten import (
    noise_covariance as noise_covariance,
    noise_whitening as noise_whitening,
    whitening_matrix as whitening_matrix,
)
