r"""The reconstruction, step by step: prewhiten with the noise scan, estimate coil maps
(ESPIRiT or Walsh) and density weights (Pipe–Menon or the radial ramp), build the SENSE
model, split its normal across the devices (`plan_batches`) and solve by CG-SENSE,
$\min_x \|A x - y\|_W^2$ through $A^H A x = A^H y_w$ (`_model`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import _core as core, alg, sharding
from .._arrays import Device
from .._progress import iterate
from ..io import RawData
from ..mri import density_compensation, espirit_maps, walsh_maps, whitening_matrix
from . import _model as model
from ._steps import Say, Timeline

MAPS = ("espirit", "walsh")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What `reconstruct` does, beyond the data.

    - `maps`: `"espirit"` (eigenvalue approach, `jl.mri.espirit_maps`) or `"walsh"`
      (adaptive combination of low-resolution coil images, `jl.mri.walsh_maps`).
    - `dcf`: density compensation of non-Cartesian data, a `method` of
      `jl.mri.density_compensation` (`"auto"`: the radial ramp for a radial trajectory,
      else Pipe–Menon).
    - `calib_width`: entries per axis of the k-space centre the maps are estimated from.
    - `iters`: CG iterations.
    - `devices`: the devices the normal operator is split across (None: all of
      `jax.devices()`).
    - `progress`: progress bars (None: in a terminal or notebook, with tqdm installed).
    """

    maps: str = "espirit"
    dcf: str = "auto"
    calib_width: int = 24
    iters: int = 20
    devices: Sequence[Device] | None = None
    progress: bool | None = None

    def __post_init__(self):
        if self.maps not in MAPS:
            raise ValueError(f"recon Settings: `maps` must be one of {MAPS}; got {self.maps!r}.")
        for name in ("calib_width", "iters"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"recon Settings: `{name}` must be at least 1; got {getattr(self, name)}."
                )


class Reconstruction(NamedTuple):
    """What `reconstruct` returns: the image `(S, Nx, Ny[, Nz])` (complex64, cropped to the
    reconstruction matrix; S slices, 1 for a 3-D or non-Cartesian scan), the coil maps
    `(S, C, Nx, Ny[, Nz])` on the encoded grid, the density weights `(R, K)` (None for
    Cartesian data), CG's residual norms per slice and iteration, the split chosen, and
    the timed steps."""

    image: np.ndarray
    maps: np.ndarray
    dcf: np.ndarray | None
    residuals: np.ndarray
    plan: str
    timeline: Timeline


def reconstruct(
    raw: RawData,
    settings: Settings = Settings(),
    say: Say = print,
    timeline: Timeline | None = None,
) -> Reconstruction:
    """CG-SENSE of `raw` (from `jl.io.read_ismrmrd` or `read_fastmri`), reporting each
    step through `say` (and adding it to `timeline`, when given)."""
    timeline = Timeline(say) if timeline is None else timeline
    say(f"Data: {raw.summary()}")
    with timeline.step("noise prewhitening"):
        kspace = prewhiten(raw, say)
    slices = kspace if "S" in raw.dims else kspace[None]
    ndim = len(raw.matrix)
    if raw.cartesian:
        assert raw.mask is not None
        masks = np.broadcast_to(raw.mask, (len(slices), *slices.shape[2:]))  # per slice
        dcf, calibration, data = None, slices, slices * masks[:, None]
        sampled = min(model.covered(m) for m in masks)
        models = lambda s, maps: model.cartesian_model(maps, masks[s])  # noqa: E731
    else:
        assert raw.locs is not None
        with timeline.step("density compensation"):
            dcf = np.asarray(density_compensation(raw.locs, raw.matrix, method=settings.dcf))
        F = model.nufft(raw.locs, raw.matrix)
        with timeline.step("gridding for calibration"):
            calibration = model.gridded_kspace(F, slices[0], dcf)[None]
        sampled = model.covered(model.sampled_cells(raw.locs, raw.matrix))
        models = lambda s, maps: model.noncartesian_model(maps, F, dcf)  # noqa: E731
        data = slices * np.sqrt(dcf)
    width = calibration_width(settings, sampled, say)
    with timeline.step(f"coil maps ({settings.maps})"):
        maps = np.stack([
            estimate_maps(calibration[s], ndim, width, settings.maps)
            for s in _each(calibration, settings)
        ])  # fmt: skip
    with timeline.step("CG-SENSE"):
        images, residuals, plan = solve_slices(models, maps, data, settings, say)
    image = crop(images, raw.matrix)
    return Reconstruction(image, maps, dcf, residuals, plan, timeline)


def prewhiten(raw: RawData, say: Say) -> np.ndarray:
    r"""The k-space with noise decorrelated across coils, $W y$ with $W = L^{-1}$ and
    $L L^H$ the noise covariance (`jl.mri.whitening_matrix`); unchanged without a noise
    scan."""
    if raw.noise is None:
        say("    no noise scan: the data is not prewhitened")
        return raw.kspace
    W = np.asarray(whitening_matrix(raw.noise))
    coil = raw.dims.index("C")
    whitened = np.tensordot(W, np.moveaxis(raw.kspace, coil, 0), axes=1)
    say(f"    whitened {raw.coils} coils with {raw.noise.shape[1]} noise samples each")
    return np.moveaxis(whitened, 0, coil).astype(np.complex64)


ESPIRIT_KERNEL = 6  # jl.mri.espirit_maps' kernel_width
MIN_WIDTH = {"espirit": 2 * ESPIRIT_KERNEL, "walsh": 4}  # fewer rows: no kernel subspace


def calibration_width(settings: Settings, sampled: int, say: Say) -> int:
    """The width of the k-space centre the maps come from: `settings.calib_width`, or less
    where the data samples less of the centre (`sampled`: fully for Cartesian data, about
    at the Nyquist rate for non-Cartesian data, `_model.sampled_cells`)."""
    width = min(settings.calib_width, sampled)
    if width < MIN_WIDTH[settings.maps]:
        raise ValueError(
            f"jaxlinops-recon: the data samples a centre of only {sampled} entries per axis; "
            f"{settings.maps} coil maps need at least {MIN_WIDTH[settings.maps]}"
            + (" (try --maps walsh)" if settings.maps == "espirit" else "")
            + "."
        )
    say(f"    calibration region: {width} per axis (the data samples {sampled})")
    return width


def estimate_maps(calibration: np.ndarray, ndim: int, width: int, method: str) -> np.ndarray:
    """Coil maps `(C, *grid)` from the centre `width` of centred k-space `(C, *grid)`."""
    if method == "espirit":
        maps = espirit_maps(
            jnp.asarray(calibration), calib_width=width, kernel_width=ESPIRIT_KERNEL, ndim=ndim
        )
    else:
        maps = walsh_maps(jnp.asarray(model.calibration_images(calibration, width)), ndim=ndim)
    return np.asarray(maps, np.complex64)


def solve_slices(models, maps, data, settings: Settings, say: Say):
    """CG-SENSE per slice, with the normal operator of the first slice's model split by
    `plan_batches` across the devices (the same split serves every slice: the same
    shapes)."""
    plan = None
    images, residuals = [], []
    for s in _each(maps, settings):
        A = models(s, maps[s])
        if plan is None:
            plan = sharding.plan_batches(A.N, devices=settings.devices)
            say(f"    split of A^H A: {_chosen(plan)}")
        AN = sharding.create_batched_linop(A.N, plan)
        x, norms = _cg(AN, A.H(jnp.asarray(data[s])), settings)
        images.append(x)
        residuals.append(norms)
    return np.stack(images), np.stack(residuals), str(plan)


def _cg(AN: core.NamedLinop, b: jax.Array, settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    result = alg.conjugate_gradients(
        AN, b, max_num_iters=settings.iters, progress=settings.progress, return_info=True
    )
    return np.asarray(result.x, np.complex64), np.asarray(result.residual_norms)


def _chosen(plan) -> str:
    """The first line of the planner's choice, e.g. "unsplit" or "C/1 over 8"."""
    lines = str(plan).splitlines()
    chosen = [line.strip() for line in lines if line.strip().startswith("chosen")]
    return chosen[0] if chosen else lines[0]


def _each(stack: np.ndarray, settings: Settings):
    """The indices of `stack`'s first axis, with a progress bar when there are several."""
    return iterate(range(len(stack)), "slices", settings.progress if len(stack) > 1 else False)


def crop(images: np.ndarray, matrix: tuple[int, ...]) -> np.ndarray:
    """The centre `matrix` of the trailing axes of `images` (readout oversampling)."""
    ndim = len(matrix)
    index = tuple(
        slice(n // 2 - m // 2, n // 2 - m // 2 + m)
        for n, m in zip(images.shape[-ndim:], matrix, strict=True)
    )
    return images[(..., *index)]
