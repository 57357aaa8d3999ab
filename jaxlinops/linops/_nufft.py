"""`NUFFT`: the non-uniform fast Fourier transform as one operator."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_array, as_inexact, as_sizes
from .._core import (
    Chain,
    Coupling,
    Diagonal,
    NamedLinop,
    Steps,
    dims_field,
    mask_padded,
    slice_arrays,
)
from .._default_dims import GRID_DIMS, KSPACE_DIMS
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, size_of
from ..functional._gridding import point_order
from ..functional._kernels import as_number
from ..functional._nufft import (
    NUFFTPlan,
    default_apodization,
    jax_plan,
    kaiser_bessel_beta,
    logger,
    make_plan,
    nufft_adjoint_unchecked,
    nufft_unchecked,
)
from ..functional._toeplitz import check_embedding
from ._fft import FFT
from ._interp import check_frames, frames_back, frames_last, leading_frames
from ._nufft_interp import NUFFTInterp
from ._pad import Pad
from ._toeplitz import KernelBuilder, toeplitz_normal


class NUFFT(NamedLinop):
    r"""$y_l \approx (\prod_d N_d)^{-1/2} \sum_n x[n]\, e^{-2\pi i \sum_d p_{l,d}
    (n_d - N_d // 2) / N_d}$: the Fourier transform of an image at off-grid frequencies.

    Dims: `batch_shape + input_shape -> batch_shape + output_shape`, by default
    `(..., Nx, Ny) -> (..., *output_shape)` in 2-D. The points $p_l$ (rows of `locs`) are in
    cycles per field of view, $[-N/2, N/2]$. With `mode="interpolate"` this is torchlinops'
    chain apodize $\to$ centered pad to $\lfloor \mathrm{os} N \rfloor$ $\to$ centered
    orthonormal FFT $\to$ Kaiser–Bessel interpolation (width $w$,
    $\beta = \pi \sqrt{(w/\mathrm{os})^2 (\mathrm{os} - 1/2)^2 - 0.8}$) $\to$ division by
    $w^D \sqrt{\prod N / \prod N_{pad}}$, held as one node (a precomputed
    [`jaxlinops.functional.nufft_plan`][]); the relative error against the exact DFT is
    about 7e-3 at `(oversamp, width) = (1.25, 4)` and 7e-6 at `(2, 6)`. With
    `mode="sampling"` the padded spectrum is read at the nearest grid points instead (no
    apodization or scaling). The adjoint is the exact adjoint of these steps.

    The normal is the default $A^H A$ unless `toeplitz=True`: then `A.N` and
    `A.normal(inner)` for a point weighting `inner` (a density-compensation `Diagonal`, or a
    `Dense` mixing batch dims) are `Pad -> FFT -> kernel -> FFT.H -> Crop` on a grid of
    $\lfloor \mathrm{toeplitz\_oversamp} \cdot N \rfloor$, with no interpolation: the
    kernel is the point-spread function, computed once by an adjoint NUFFT on that grid.
    Its error against $A^H A$ is of the order of the NUFFT's own. In sampling mode the
    embedded grid is the padded grid and the normal is exact. Other `inner` operators get
    the default normal.

    **Per-frame trajectories.** A dim named in both `batch_shape` and `output_shape` is a
    *frame* dim (dynamic imaging): frame $t$ of the image is sampled along `locs[t]` only.
    Frame dims must be the leading axes of `locs` (any number, e.g. `"E T"`). For `locs`
    `[T, R, D]`, `grid_size=(Nx, Ny)`, `output_shape="T R"` and `batch_shape="C T"`, the
    dims are `(C, T, Nx, Ny) -> (C, T, R)`: a frame dim appears once, in its batch
    position, and the output keeps the other point dims. It is exactly one NUFFT per
    frame, stacked ($y[c, t] = A_t x[c, t]$; each frame's points are sorted on their own,
    `plan.order` is `[T, R]`); the Toeplitz normal has one kernel per frame (`[T, *M]`);
    a split along `T` slices `locs` (and re-sorts the tile's points).

    **Bad values:** concrete `locs` with NaN or Inf raise a ValueError at construction
    (also for a constant array inside a traced function). Traced `locs` (built inside
    `jit`, `vmap` or `grad`) cannot be checked in Python: with `mode="interpolate"` such a
    point gets NaN kernel weights, so its output is NaN, the adjoint spreads NaN onto the
    grid and a Toeplitz normal is all NaN (no extra cost); with `mode="sampling"` the
    rounded indices cannot hold NaN, so the plan checks them with `equinox.error_if`,
    which raises at run time. Any finite frequency is valid: coordinates are reduced
    modulo $N$ exactly, so a large one keeps the precision its dtype holds.
    """

    plan: NUFFTPlan
    output_shape: Dims = dims_field()
    input_shape: Dims = dims_field()
    input_kshape: Dims = dims_field()
    batch_shape: Dims = dims_field()
    toeplitz: bool = eqx.field(static=True)
    toeplitz_oversamp: float = eqx.field(static=True)
    # how its Toeplitz normal's kernel is computed where not by `toeplitz_kernel` (None):
    # split across devices, set by grid splitting (`with_kernel_builder`)
    kernel_builder: KernelBuilder | None = eqx.field(static=True)

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
        width: float = 4.0,
        mode: str = "interpolate",
        apodize_weights=None,
        toeplitz: bool = False,
        toeplitz_oversamp: float = 2.0,
        eps: float | None = None,
        backend: str | None = None,
        skip_prep_locs: bool = False,
        toeplitz_dtype=None,
    ):
        """**Arguments** (the first six in torchlinops' order; the rest, torchlinops'
        `**options` and jaxlinops' own, keyword only):

        - `locs`: a real array `[L..., D]` of frequencies in cycles per field of view,
          $[-N/2, N/2]$ per axis (any finite value, taken modulo $N$;
          `D = len(grid_size)`).
        - `grid_size`: the `D` image sizes (integers; integral floats are accepted).
        - `output_shape`: the dims of the points, one per leading axis of `locs`.
        - `input_shape`: the `D` image dims (default `("Nx", "Ny", "Nz")[:D]`).
        - `input_kshape`: names of the (internal) padded k-space dims (default
          `("Kx", "Ky", "Kz")[:D]`).
        - `batch_shape`: leading dims shared by input and output (default `"..."`); a dim
          also in `output_shape` is a per-frame dim (see above).
        - `oversamp`: the padding factor (at least 1),
          $N_{pad} = \\lfloor \\mathrm{os} N \\rfloor$.
        - `width`: the Kaiser–Bessel kernel width in padded-grid points (at most $N_{pad}$
          on every axis).
        - `mode`: `"interpolate"` or `"sampling"`.
        - `apodize_weights`: real weights of shape `grid_size` replacing the default
          apodization (interpolate mode).
        - `toeplitz`: make the normal the Toeplitz-embedded convolution (see above).
        - `toeplitz_oversamp`: the embedding factor of that normal (at least about 2, so
          that the grid holds $2N - 1$ points per axis).
        - `eps`: the relative error wanted, instead of `oversamp` and `width` (chosen from
          a measured table; see [`jaxlinops.functional.nufft_plan`][]).
        - `backend`: `"auto"`, `"jax"`, `"pallas"` or `"finufft"`, or None for
          `jaxlinops.config.nufft_backend` (default `"auto"`); see
          [`jaxlinops.functional.nufft_plan`][]. The resolved one is `plan.backend`.
        - `skip_prep_locs`: `locs` are already in padded-grid units, as
          [`NUFFT.prep_locs`][] returns them for this `oversamp` (torchlinops' option);
          they are converted back to cycles per field of view.
        - `toeplitz_dtype`: accepted for torchlinops and ignored: the Toeplitz kernel is
          computed in the precision of `locs` (torchlinops' default is complex64).
        """
        if skip_prep_locs:
            locs = _unprep_locs(locs, grid_size, oversamp)
        self.output_shape = as_dims(output_shape)
        self.batch_shape = as_dims(batch_shape, ELLIPSIS)
        frames = leading_frames(self.batch_shape, self.output_shape)
        settings = (oversamp, width, mode, apodize_weights, eps, backend, frames)
        self.plan = make_plan("NUFFT", locs, grid_size, *settings)
        ndim = len(self.plan.grid_size)
        defaults = ndim <= len(GRID_DIMS)
        self.input_shape = as_dims(input_shape, GRID_DIMS[:ndim] if defaults else None)
        self.input_kshape = as_dims(input_kshape, KSPACE_DIMS[:ndim] if defaults else None)
        self.toeplitz = bool(toeplitz)
        self.toeplitz_oversamp = as_number("NUFFT", "toeplitz_oversamp", toeplitz_oversamp, 1.0)
        self.kernel_builder = None

    def __check_init__(self):
        where = f"`NUFFT({fmt(self.ishape)} -> {fmt(self.oshape)})`"
        grid, npoints = self.plan.grid_size, self.plan.locs.ndim - 1
        if ELLIPSIS in self.input_shape + self.output_shape + self.input_kshape:
            raise ValueError(f"{where}: '...' may appear only in `batch_shape`.")
        for role, shape, n in (
            ("input_shape", self.input_shape, len(grid)),
            ("input_kshape", self.input_kshape, len(grid)),
            ("output_shape", self.output_shape, npoints),
        ):
            if len(shape) != n:
                raise ValueError(
                    f"{where}: `{role}` must name {n} dims (grid_size {grid}, locs shape "
                    f"{tuple(self.plan.locs.shape)}); got {fmt(shape)}."
                )
        check_frames(where, "output_shape", self.batch_shape, self.output_shape, self.plan.frames)
        named = [d for d in self.ishape + self.point_dims if d not in (ELLIPSIS, "()")]
        if len(set(named)) != len(named):
            raise ValueError(f"{where}: batch, input and output dims must all be distinct.")
        if self.toeplitz:
            check_embedding("NUFFT", self.plan, self.toeplitz_oversamp)

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.input_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.point_dims

    @property
    def frame_dims(self) -> Dims:
        """The per-frame dims: the leading dims of `output_shape` in `batch_shape`."""
        return self.output_shape[: self.plan.frames]

    @property
    def point_dims(self) -> Dims:
        """The dims of the points within a frame: `output_shape` less the frame dims."""
        return self.output_shape[self.plan.frames :]

    @property
    def mode(self) -> str:
        return self.plan.mode

    @property
    def grid_size(self) -> tuple[int, ...]:
        """The image grid, one size per spatial dim (torchlinops' `grid_size`)."""
        return self.plan.grid_size

    @property
    def options(self) -> dict[str, object]:
        """torchlinops' `options`: the settings the operator was built with (`oversamp`,
        `width`, `toeplitz`, `toeplitz_oversamp`), as a fresh dict."""
        return {
            "oversamp": self.plan.oversamp,
            "width": self.plan.width,
            "toeplitz": self.toeplitz,
            "toeplitz_oversamp": self.toeplitz_oversamp,
        }

    @staticmethod
    def beta(width: float, oversamp: float) -> float:
        r"""The Kaiser–Bessel shape parameter of a NUFFT with kernel width `width` and
        oversampling `oversamp` (Beatty et al., IEEE TMI 2005; as sigpy):
        $\beta = \pi \sqrt{(w/\mathrm{os})^2 (\mathrm{os} - 1/2)^2 - 0.8}$. A ValueError
        where the root is not real (a kernel too narrow for `oversamp`)."""
        width = as_number("NUFFT.beta", "width", width, 0.0)
        oversamp = as_number("NUFFT.beta", "oversamp", oversamp, 1.0)
        return kaiser_bessel_beta("NUFFT.beta", width, oversamp)

    @staticmethod
    def apodize_weights(grid_size, padded_size, width: float, beta: float) -> jax.Array:
        r"""The default apodization on the image grid `grid_size` (float64 with x64
        enabled): $\prod_d a_d / \sinh(a_d)$ with
        $a_d = \sqrt{\beta^2 - (\pi w (n_d - \lfloor N_d/2 \rfloor) / N_{pad,d})^2}$,
        the inverse of the kernel's Fourier transform (as sigpy's `_apodize`)."""
        grid = as_sizes(grid_size, "`NUFFT.apodize_weights(grid_size=...)`", 1)
        padded = as_sizes(padded_size, "`NUFFT.apodize_weights(padded_size=...)`", 1)
        if len(grid) != len(padded):
            raise ValueError(
                f"`NUFFT.apodize_weights`: grid_size and padded_size must have the same "
                f"length; got {grid} and {padded}."
            )
        width = as_number("NUFFT.apodize_weights", "width", width, 0.0)
        beta = as_number("NUFFT.apodize_weights", "beta", beta, 0.0)
        weights = default_apodization(grid, padded, width, beta)
        return jnp.asarray(weights, jnp.result_type(float))

    def __repr__(self) -> str:
        """The operator's dims, with the backend that grids (and why, when `"auto"` chose
        it) and the relative error the plan promises (`NUFFTPlan.accuracy`), the same
        contract for every backend."""
        plan = self.plan
        why = "" if plan.auto is None else f" ({plan.auto})"
        extra = "" if plan.accuracy is None else f", error<={plan.accuracy:.2g}"
        return f"{super().__repr__()} [{plan.mode}, backend={plan.backend}{why}{extra}]"

    def size(self, dim: str) -> int | None:
        layouts = (self.output_shape, self.plan.locs.shape), (self.input_shape, self.plan.grid_size)
        return size_of(dim, *layouts)

    def coupling(self, dim: str) -> Coupling:
        """None along the batch and point dims; global along the image dims (an FFT)."""
        return Coupling.NONE if dim in self.batch_shape + self.output_shape else Coupling.GLOBAL

    def split(self, tile) -> NamedLinop:
        arrays = [(lambda o: o.plan.locs, self.output_shape + (None,))]
        out, _ = slice_arrays(self, tile, arrays, self.batch_shape)
        if out.plan.order is not None and out.plan.locs.shape != self.plan.locs.shape:
            order = point_order(out.plan.locs, self.plan.padded_size, self.plan.frames)
            out = eqx.tree_at(lambda o: o.plan.order, out, order)
        return mask_padded(out, self, tile)

    def apply(self, x: jax.Array) -> jax.Array:
        frames = self.frame_dims
        y = nufft_unchecked(frames_last(x, self.ishape, frames, len(self.input_shape)), self.plan)
        return frames_back(y, self.oshape, frames, len(self.point_dims))

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        frames = self.frame_dims
        y = frames_last(y, self.oshape, frames, len(self.point_dims))
        return frames_back(
            nufft_adjoint_unchecked(y, self.plan), self.ishape, frames, len(self.input_shape)
        )

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        return toeplitz_normal(self, inner) if self.toeplitz else None

    def grid_form(self) -> Steps:
        """Its steps (`decompose`), or why it has none."""
        try:
            return Steps(self.decompose())
        except ValueError as error:
            return Steps(None, str(error))

    def decompose(self) -> NamedLinop:
        r"""The NUFFT as the chain of its steps: apodize (interpolate mode) $\to$ `Pad`
        to the padded grid (dims `input_kshape`) $\to$ centered orthonormal `FFT` $\to$
        `NUFFTInterp` (interpolation and scaling, or sampling). Grid splitting runs it
        leaf by leaf. A ValueError where there are no such steps: per-frame trajectories
        (one transform per frame) and the finufft backend (one call of jax-finufft)."""
        plan, batch, grid = self.plan, self.batch_shape, self.input_shape
        where = f"`NUFFT({fmt(self.ishape)} -> {fmt(self.oshape)})`"
        if plan.frames:
            raise ValueError(
                f"{where} has per-frame trajectories (frame dims {self.frame_dims}): one "
                f"transform per frame, not one chain of steps on the grid; split it along a "
                f"frame dim instead."
            )
        if plan.backend == "finufft" and plan.auto:  # the JAX path's steps stand in
            logger.info("%s: split on the grid by the JAX path (finufft takes it whole)", where)
            plan = jax_plan(plan)
        elif plan.backend == "finufft":
            raise ValueError(
                f"{where} with backend='finufft' transforms the whole grid in one call of "
                f"jax-finufft, which cannot run on slabs of it; build it with backend='jax' "
                f"(or 'pallas' on a GPU) to split a grid dim."
            )
        steps = [] if plan.apodize is None else [Diagonal(plan.apodize, batch + grid)]
        ndim, kshape = len(grid), self.input_kshape
        return Chain(
            *steps,
            Pad(plan.padded_size, plan.grid_size, grid, kshape, batch),
            FFT(ndim, batch, (kshape, kshape), centered=True),
            NUFFTInterp(
                plan=plan,
                scale=plan.scale if plan.mode == "interpolate" else 1.0,
                batch_shape=batch,
                grid_shape=kshape,
                point_dims=self.point_dims,
            ),
        )

    @staticmethod
    def prep_locs(locs, grid_size, padded_size, pad_mode: str = "circular") -> jax.Array:
        r"""torchlinops' `NUFFT.prep_locs`: points in cycles per field of view,
        $[-N/2, N/2]$, to padded-grid units $p \, N_{pad} / N + \lfloor N_{pad}/2 \rfloor$,
        wrapped into $[0, N_{pad})$ (`pad_mode="circular"`) or clipped to
        $[0, N_{pad} - 1]$ (`"zero"`). Returns a floating-point array `[..., D]`."""
        out, npad = scaled_locs("NUFFT.prep_locs", locs, grid_size, padded_size, pad_mode)
        return jnp.clip(out, 0, npad - 1) if pad_mode == "zero" else jnp.remainder(out, npad)


def scaled_locs(name: str, locs, grid_size, padded_size, pad_mode: str):
    """`(locs * N_pad / N + N_pad // 2, N_pad)`: `locs` `[..., D]` (cycles per field of
    view) in padded-grid units, not yet wrapped or clipped; the arguments of torchlinops'
    `prep_locs` are checked (errors name `name`)."""
    locs = as_inexact(as_array(locs, f"`{name}(locs=...)`"))
    grid = as_sizes(grid_size, f"`{name}(grid_size=...)`", 1)
    padded = as_sizes(padded_size, f"`{name}(padded_size=...)`", 1)
    if len(grid) != len(padded) or locs.ndim == 0 or locs.shape[-1] != len(grid):
        raise ValueError(
            f"`{name}`: locs must have shape [..., D] with D = len(grid_size) = "
            f"len(padded_size); got locs of shape {tuple(locs.shape)}, grid_size {grid} and "
            f"padded_size {padded}."
        )
    if pad_mode not in ("circular", "zero"):
        raise ValueError(
            f"`{name}`: Unrecognized padding mode {pad_mode!r}; expected 'circular' or 'zero'."
        )
    n, npad = (_trailing(sizes, locs) for sizes in (grid, padded))
    return locs * npad / n + npad // 2, npad


def _trailing(sizes: tuple[int, ...], locs: jax.Array) -> jax.Array:
    """`sizes` as an array of `locs`' dtype and rank, along its last axis."""
    return jnp.asarray(sizes, locs.dtype).reshape((1,) * (locs.ndim - 1) + (len(sizes),))


def _unprep_locs(locs, grid_size, oversamp) -> jax.Array:
    """Points in padded-grid units (for `oversamp`) back to cycles per field of view."""
    locs = as_inexact(as_array(locs, "`NUFFT(locs=...)`"))
    grid = as_sizes(grid_size, "`NUFFT(grid_size=...)`", 1)
    oversamp = as_number("NUFFT", "oversamp", oversamp, 1.0)
    n, npad = _trailing(grid, locs), _trailing(tuple(int(g * oversamp) for g in grid), locs)
    return (locs - npad // 2) * (n / npad)
