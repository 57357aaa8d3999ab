"""`SamplingNUFFT` and `FastSamplingNUFFT`: torchlinops' nearest-grid-point NUFFTs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import as_array, as_sizes
from .._dims import DimsLike
from ._nufft import NUFFT, scaled_locs

PHASE_PLACEMENTS = ("auto", "samples", "grid")


class SamplingNUFFT(NUFFT):
    r"""$y_l = (F\, P x)[\mathrm{round}(p_l N_{pad} / N + \lfloor N_{pad}/2 \rfloor)
    \bmod N_{pad}]$: the centered orthonormal FFT of the zero-padded image, read at the
    padded-grid point nearest to each frequency.

    torchlinops' `SamplingNUFFT`: the chain centered `Pad` to
    $N_{pad} = \lfloor \mathrm{oversamp} \cdot N \rfloor$ $\to$ centered orthonormal
    [`FFT`][] $\to$ [`Sampling`][] at the points rounded by [`SamplingNUFFT.prep_locs`][]
    (no apodization, no kernel, no scaling). It is [`NUFFT`][] with `mode="sampling"`,
    held as one node; its adjoint is the exact adjoint of these steps (scatter-add, inverse
    FFT, crop) and `toeplitz=True` makes the normal an exact convolution on the padded grid.

    Dims: `batch_shape + input_shape -> batch_shape + output_shape`, by default
    `(..., Nx, Ny) -> (..., *output_shape)` in 2-D. Exact where the points lie on the padded
    grid (frequencies that are multiples of $N / N_{pad}$); otherwise the error is that of
    moving each point to its nearest grid point.
    """

    def __init__(
        self,
        locs,
        grid_size: Sequence[int],
        output_shape: DimsLike,
        input_shape: DimsLike = None,
        input_kshape: DimsLike = None,
        batch_shape: DimsLike = None,
        *,
        oversamp: float = 1.25,
        toeplitz: bool = False,
        toeplitz_oversamp: float = 2.0,
        toeplitz_dtype=None,
        width: float | None = None,
    ):
        """**Arguments** (the first six in torchlinops' order, the options keyword only):

        - `locs`: a real array `[L..., D]` of frequencies in cycles per field of view,
          $[-N/2, N/2]$ per axis (any finite value, taken modulo $N$).
        - `grid_size`: the `D` image sizes.
        - `output_shape`: the dims of the points, one per leading axis of `locs`.
        - `input_shape`: the `D` image dims (default `("Nx", "Ny", "Nz")[:D]`).
        - `input_kshape`: names of the (internal) padded k-space dims (default
          `("Kx", "Ky", "Kz")[:D]`).
        - `batch_shape`: leading dims shared by input and output (default `"..."`).
        - `oversamp`: the padding factor (at least 1).
        - `toeplitz`: make the normal the exact convolution on the padded grid.
        - `toeplitz_oversamp`, `toeplitz_dtype`: accepted for torchlinops; the sampling
          normal is exact on the padded grid, computed in the precision of `locs`.
        - `width`: accepted for torchlinops and ignored (there is no kernel).
        """
        del width  # no interpolation kernel: torchlinops ignores it too
        super().__init__(
            locs,
            grid_size,
            output_shape,
            input_shape,
            input_kshape,
            batch_shape,
            oversamp=oversamp,
            mode="sampling",
            toeplitz=toeplitz,
            toeplitz_oversamp=toeplitz_oversamp,
            toeplitz_dtype=toeplitz_dtype,
        )

    @staticmethod
    def prep_locs(locs, grid_size, padded_size, pad_mode: str = "circular") -> jax.Array:
        r"""torchlinops' `SamplingNUFFT.prep_locs`: points in cycles per field of view to
        integer padded-grid indices, $p \, N_{pad} / N + \lfloor N_{pad}/2 \rfloor$ rounded
        half to even and wrapped into $[0, N_{pad})$ (`pad_mode="circular"`), or clipped
        to $[0, N_{pad} - 1]$ and truncated (`"zero"`). Returns an integer array
        `[..., D]` (int64 with x64 enabled, else int32)."""
        out, npad = scaled_locs("SamplingNUFFT.prep_locs", locs, grid_size, padded_size, pad_mode)
        if pad_mode == "zero":
            out = jnp.clip(out, 0, npad - 1)
        else:
            out = jnp.remainder(jnp.round(out), npad)
        return out.astype(jnp.result_type(int))


class FastSamplingNUFFT(SamplingNUFFT):
    r"""torchlinops' `FastSamplingNUFFT`: the same operator as [`SamplingNUFFT`][].

    torchlinops builds it without the FFT shifts, folding the centering into the gather
    indices and a unit-modulus phase (placed on the samples or on the grid, by
    `phase_placement`); the operator, its adjoint and its normal are those of
    [`SamplingNUFFT`][], which jaxlinops computes as one compiled node. `phase_placement`
    is checked and kept (`"auto"`, `"samples"` or `"grid"`); it changes no result.
    """

    phase_placement: str = eqx.field(static=True)

    def __init__(
        self,
        locs,
        grid_size: Sequence[int],
        output_shape: DimsLike,
        input_shape: DimsLike = None,
        input_kshape: DimsLike = None,
        batch_shape: DimsLike = None,
        *,
        oversamp: float = 1.25,
        phase_placement: str = "auto",
        toeplitz: bool = False,
        toeplitz_oversamp: float = 2.0,
        toeplitz_dtype=None,
        width: float | None = None,
    ):
        """**Arguments:** those of [`SamplingNUFFT`][], and `phase_placement` (keyword
        only): `"auto"`, `"samples"` or `"grid"`, where torchlinops applies the centering
        phase (no effect on the result)."""
        if phase_placement not in PHASE_PLACEMENTS:
            raise ValueError(
                f"`FastSamplingNUFFT(phase_placement=...)` must be one of {PHASE_PLACEMENTS}; "
                f"got {phase_placement!r}."
            )
        self.phase_placement = phase_placement
        super().__init__(
            locs,
            grid_size,
            output_shape,
            input_shape,
            input_kshape,
            batch_shape,
            oversamp=oversamp,
            toeplitz=toeplitz,
            toeplitz_oversamp=toeplitz_oversamp,
            toeplitz_dtype=toeplitz_dtype,
            width=width,
        )

    @property
    def options(self) -> dict[str, object]:
        """torchlinops' `options`: those of [`NUFFT.options`][] and `phase_placement`."""
        return {**super().options, "phase_placement": self.phase_placement}

    @property
    def phase_placement_resolved(self) -> str:
        """Where torchlinops would apply the centering phase for these points
        ([`FastSamplingNUFFT.resolve_phase_placement`][]); no effect on the result."""
        nlocs = math.prod(self.plan.locs.shape[:-1])
        return self.resolve_phase_placement(self.phase_placement, nlocs, self.plan.padded_size)

    @staticmethod
    def resolve_phase_placement(phase_placement: str, nlocs: int, padded_size) -> str:
        """torchlinops' choice of where to apply the centering phase: `"auto"` is `"grid"`
        when there are more points `nlocs` than padded-grid points `prod(padded_size)`, else
        `"samples"` (a tie goes to `"samples"`); `"samples"` and `"grid"` are kept; any
        other value is a ValueError."""
        if phase_placement not in PHASE_PLACEMENTS:
            raise ValueError(
                f"`FastSamplingNUFFT.resolve_phase_placement`: phase_placement must be one of "
                f"{PHASE_PLACEMENTS}; got {phase_placement!r}."
            )
        if phase_placement != "auto":
            return phase_placement
        grid = as_sizes(padded_size, "`FastSamplingNUFFT.resolve_phase_placement`", 1)
        return "grid" if nlocs > math.prod(grid) else "samples"

    @staticmethod
    def fold_centering(locs_prepared, padded_size, *, dtype=jnp.complex64) -> jax.Array:
        r"""The unit-modulus phase that turns a plain FFT into the centered one at integer
        padded-grid points $k$ (`locs_prepared` `[..., D]`, as
        [`SamplingNUFFT.prep_locs`][] returns them):
        $\mathrm{cfft}(x)[k] = \mathrm{fft}(x)[m]\, e^{2\pi i \sum_d m_d
        \lfloor N_d/2 \rfloor / N_d}$ with $m = (k - \lfloor N/2 \rfloor) \bmod N$
        ($N$ = `padded_size`). Returns the phase `[...]` in `dtype` (torchlinops'
        complex64 by default; the angle is computed in the default float precision)."""
        name = "`FastSamplingNUFFT.fold_centering"
        locs = as_array(locs_prepared, f"{name}(locs_prepared=...)`")
        size = as_sizes(padded_size, f"{name}(padded_size=...)`", 1)
        if locs.ndim == 0 or locs.shape[-1] != len(size):
            raise ValueError(
                f"{name}`: locs_prepared must have shape [..., {len(size)}] for padded_size "
                f"{size}; got shape {tuple(locs.shape)}."
            )
        n = np.asarray(size).reshape((1,) * (locs.ndim - 1) + (len(size),))
        shifted = jnp.remainder(locs - (n // 2).astype(locs.dtype), n.astype(locs.dtype))
        real = jnp.result_type(float)
        angle = jnp.sum(shifted.astype(real) * jnp.asarray((n // 2) / n, real), axis=-1)
        return jnp.exp(angle.astype(jnp.result_type(complex)) * (2j * np.pi)).astype(dtype)
