r"""Trajectory units. ISMRMRD does not fix them: Gadgetron and most converters store
normalised positions, $[-0.5, 0.5]$ (a fraction of the encoded k-space extent $1/\Delta x$),
others cycles per field of view. jaxlinops' NUFFT takes cycles per (reconstruction) field
of view, $[-N/2, N/2]$ for the reconstruction matrix $N$.

Per axis, from normalised units: `locs = traj * N_enc * FOV_recon / FOV_enc`, which is
`traj * N` when the encoded and reconstruction spaces agree (or differ only by readout
oversampling, `N_enc / FOV_enc = N / FOV_recon`); from cycles (per encoded field of view):
`locs = traj * FOV_recon / FOV_enc`, usually `traj` itself.
"""

from __future__ import annotations

import logging

import numpy as np

from ._header import Encoding

logger = logging.getLogger("jaxlinops")

UNITS = ("auto", "normalized", "cycles")
# how far past 0.5 a normalised trajectory may reach (rounding, a last sample at +0.5)
TOLERANCE = 0.01


def check_units(units: str) -> None:
    """A ValueError unless `units` is one of `UNITS`."""
    if units not in UNITS:
        raise ValueError(f"trajectory_units must be one of {UNITS}; got {units!r}.")


def scale(encoding: Encoding, units: str, ndim: int) -> np.ndarray:
    """Per axis, the factor from trajectory units `units` (`"normalized"` or `"cycles"`)
    to cycles per reconstruction field of view."""
    ratio = np.ones(ndim)
    for axis in range(ndim):
        recon, encoded = encoding.recon_fov[axis], encoding.encoded_fov[axis]
        if recon > 0 and encoded > 0:
            ratio[axis] = recon / encoded
    if units == "cycles":
        return ratio
    return ratio * np.asarray(encoding.encoded[:ndim], dtype=float)


def resolve_units(traj: np.ndarray, units: str) -> str:
    """`units`, or for `"auto"` the units `traj` is in, judged by its largest magnitude:
    normalised up to `0.5 * (1 + TOLERANCE)`, cycles above."""
    if units != "auto":
        return units
    top = float(np.abs(traj).max()) if traj.size else 0.0
    return "normalized" if top <= 0.5 * (1 + TOLERANCE) else "cycles"


def to_locs(traj: np.ndarray, encoding: Encoding, units: str) -> np.ndarray:
    """`traj` `(R, K, D)` in the file's units (`units`, or judged for `"auto"`, with one
    INFO line saying what was assumed) as float32 cycles per reconstruction field of view."""
    ndim = traj.shape[-1]
    chosen = resolve_units(traj, units)
    factor = scale(encoding, chosen, ndim)
    if units == "auto":
        top = float(np.abs(traj).max()) if traj.size else 0.0
        other = "cycles" if chosen == "normalized" else "normalized"
        logger.info(
            "read_ismrmrd: trajectory max |k| = %.4g, assumed %s units: scaled by %s to "
            "cycles per FOV (trajectory_units=%r to override)",
            top,
            "normalised [-0.5, 0.5]" if chosen == "normalized" else "cycles-per-FOV",
            tuple(float(f"{f:.6g}") for f in factor),
            other,
        )
    return (traj * factor).astype(np.float32)
