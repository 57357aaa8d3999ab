r"""The reconstruction, step by step: prewhiten with the noise scan, estimate coil maps
(ESPIRiT or Walsh) and density weights (Pipe–Menon or the radial ramp), build the SENSE
model, split it across the devices (`plan_batches`) and solve by CG-SENSE,
$\min_x \|A x - y\|_W^2$ through $A^H A x = A^H y_w$ (`_model`), or with a prior
(`_regularise`: ℓ1-wavelet, total variation, locally low rank)."""

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
from . import _model as model, _regularise as regularise
from ._steps import Say, Timeline

MAPS = ("espirit", "walsh")
REGULARISERS = ("none", *regularise.LAMDA)
CG_ITERS = 20


@dataclasses.dataclass(frozen=True)
class Settings:
    """What `reconstruct` does, beyond the data.

    - `maps`: `"espirit"` (eigenvalue approach, `jl.mri.espirit_maps`) or `"walsh"`
      (adaptive combination of low-resolution coil images, `jl.mri.walsh_maps`).
    - `dcf`: density compensation of non-Cartesian data, a `method` of
      `jl.mri.density_compensation` (`"auto"`: the radial ramp for a radial trajectory,
      else Pipe–Menon).
    - `calib_width`: entries per axis of the k-space centre the maps are estimated from.
    - `reg`: `"none"` (CG-SENSE), or a prior: `"l1-wavelet"` (FISTA), `"tv"` (ADMM) or
      `"llr"` (FISTA), as `jaxlinops.recon._regularise` describes.
    - `lamda`: with a prior, its weight λ as a fraction of the largest magnitude of
      $A^H y_w$ in its domain (None: the prior's default, `_regularise.LAMDA`).
    - `iters`: CG's or the prior's solver's iterations (None: 20 for CG, else
      `_regularise.ITERS`).
    - `devices`: the devices the normal operator is split across (None: all of
      `jax.devices()`).
    - `progress`: progress bars (None: in a terminal or notebook, with tqdm installed).
    """

    maps: str = "espirit"
    dcf: str = "auto"
    calib_width: int = 24
    reg: str = "none"
    lamda: float | None = None
    iters: int | None = None
    devices: Sequence[Device] | None = None
    progress: bool | None = None

    def __post_init__(self):
        for name, allowed in (("maps", MAPS), ("reg", REGULARISERS)):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"recon Settings: `{name}` must be one of {allowed}; got "
                    f"{getattr(self, name)!r}."
                )
        if self.lamda is not None and (self.reg == "none" or not self.lamda > 0):
            raise ValueError(
                f"recon Settings: `lamda` needs a prior (`reg`) and must be > 0; got "
                f"lamda={self.lamda!r} with reg={self.reg!r}."
            )
        for name in ("calib_width", "iters"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"recon Settings: `{name}` must be at least 1; got {value}.")

    @property
    def iterations(self) -> int:
        """`iters`, or the solver's default."""
        return self.iters or (CG_ITERS if self.reg == "none" else regularise.ITERS[self.reg])

    @property
    def method(self) -> str:
        """ "CG-SENSE", or the prior and its solver, e.g. "TV (ADMM)"."""
        if self.reg == "none":
            return "CG-SENSE"
        return f"{regularise.NAMES[self.reg]} ({regularise.SOLVERS[self.reg]})"


class Reconstruction(NamedTuple):
    """What `reconstruct` returns: the image `(S, Nx, Ny[, Nz])` (complex64, cropped to the
    reconstruction matrix; S slices, 1 for a 3-D or non-Cartesian scan), the coil maps
    `(S, C, Nx, Ny[, Nz])` on the encoded grid, the density weights `(R, K)` (None for
    Cartesian data), per slice CG's residual norms (`reg="none"`) or the regularised
    objective $F(x_k)$ from $x_0 = 0$ on (`iterations + 1` values), the split chosen,
    the weights λ per slice (empty for CG), and the timed steps."""

    image: np.ndarray
    maps: np.ndarray
    dcf: np.ndarray | None
    residuals: np.ndarray
    plan: str
    timeline: Timeline
    lamdas: tuple[float, ...] = ()


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
    with timeline.step(settings.method):
        images, residuals, plan, lamdas = solve_slices(models, maps, data, settings, say)
    image = crop(images, raw.matrix)
    return Reconstruction(image, maps, dcf, residuals, plan, timeline, lamdas)


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
    """CG-SENSE (or the regularised solve) per slice. CG runs on the normal operator of
    each slice's model, a prior's solver on the model itself, split by `plan_batches`
    across the devices as planned for the first slice (the same split serves every slice:
    the same shapes). Returns the images, the histories, the split and the λ per slice."""
    plan = None
    images, histories, lamdas = [], [], []
    for s in _each(maps, settings):
        A = models(s, maps[s])
        op = A.N if settings.reg == "none" else A
        if plan is None:
            plan = sharding.plan_batches(op, devices=settings.devices)
            say(f"    split of {'A^H A' if settings.reg == 'none' else 'A'}: {_chosen(plan)}")
        split = sharding.create_batched_linop(op, plan)
        y = jnp.asarray(data[s])
        if settings.reg == "none":
            x, history = _cg(split, A.H(y), settings)
        else:
            x, history, lamda = _regularised(split, A.H(y), y, settings)
            if not lamdas:
                say(f"    λ = {lamda:.3g} ({settings.iterations} iterations)")
            lamdas.append(lamda)
        images.append(x)
        histories.append(history)
    return np.stack(images), np.stack(histories), str(plan), tuple(lamdas)


def _cg(AN: core.NamedLinop, b: jax.Array, settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    result = alg.conjugate_gradients(
        AN, b, max_num_iters=settings.iterations, progress=settings.progress, return_info=True
    )
    return np.asarray(result.x, np.complex64), np.asarray(result.residual_norms)


def _regularised(A: core.NamedLinop, b: jax.Array, y: jax.Array, settings: Settings):
    """The prior's solve of `A x = y` (`b` = $A^H y$ sets λ): the image, the objective
    per iteration and λ."""
    fraction = settings.lamda or regularise.LAMDA[settings.reg]
    g, G, lamda = regularise.prior(settings.reg, np.asarray(b), fraction)
    result = regularise.solve(A, y, g, G, settings.reg, settings.iterations)
    history = regularise.objective_history(settings.reg, result.objective, np.asarray(y))
    return np.asarray(result.x, np.complex64), history, lamda


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
