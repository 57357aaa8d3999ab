"""`Wavelet`: the orthogonal multilevel discrete wavelet transform along named dims."""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np

from .._arrays import as_inexact
from .._core import Coupling, NamedLinop, SameDims, Tiling, dims_field, identity_normal
from .._dims import Dims, DimsLike, as_dims, axis_of, fmt, is_wildcard
from ..functional._wavelet import (
    check_sizes,
    check_wavelet,
    default_level,
    wavelet_transform,
    wavelet_transform_adjoint,
)


class Wavelet(SameDims):
    r"""$y = W x$, the orthogonal multilevel discrete wavelet transform (DWT) along the
    named `transform_shape` dims, mapping `ioshape -> ioshape`.

    The coefficients fill one array of the input's shape, laid out as
    `pywt.coeffs_to_array(pywt.wavedecn(x, wavelet, mode="periodization", level=level,
    axes=axes), axes=axes)[0]`: at each level the current approximation block (the
    leading half of every transformed dim) is replaced by its one-level transform,
    `[approximation, detail]` along each transformed dim. The boundary is periodic
    (PyWavelets' `"periodization"`), which makes $W$ orthogonal: $W^H = W^{-1}$
    (`pywt.waverecn`), built as `Wavelet(..., inverse=True)`, and the normal
    $W^H W = I$ is an `Identity` (nothing is computed). The filters are real: a complex
    input has its real and imaginary parts transformed alike.

    Dims: the coefficients keep the input's dims, so `A.N` of `A = W @ B` is `B.N`, and
    a proximal operator (soft thresholding) applies entry by entry to `W(x)` laid out by
    the same `ioshape`. The dims not in `transform_shape` (coils, frames) are batch
    dims, transformed alike and split into tiles; the transformed dims couple all their
    entries (`Coupling.GLOBAL`, with no grid form): the operator refuses to be split
    along them.

    Every transformed size must be a multiple of $2^{\mathrm{level}}$, checked when the
    operator is applied (the sizes are those of the input).

    !!! Example
        ```python
        W = jl.Wavelet("C Nx Ny", "Nx Ny", wavelet="db4", level=3)
        coefficients = W(x)  # x of shape (C, 64, 64): same shape
        x_back = W.H(coefficients)
        ```
    """

    ioshape: Dims = dims_field()
    transform_shape: Dims = dims_field()
    wavelet: str = eqx.field(static=True)
    level: int | None = eqx.field(static=True)
    inverse: bool = eqx.field(static=True)

    def __init__(
        self,
        ishape: DimsLike,
        dims: DimsLike = None,
        *,
        wavelet: str = "db4",
        level: int | np.integer | None = None,
        mode: str = "periodization",
        inverse: bool = False,
    ):
        """**Arguments:**

        - `ishape`: the dims of input and output, e.g. `"C Nx Ny"` (may hold `"..."`).
        - `dims`: the dims transformed, named dims of `ishape` (sigpy's `axes`; default:
          every named dim of `ishape`).
        - `wavelet`: an orthogonal wavelet, `"haar"`, `"db1"` to `"db10"` or `"sym2"` to
          `"sym10"` (PyWavelets' names and filters; sigpy's `wave_name`).
        - `level`: the number of levels, at least 0 (0: the identity). Default: PyWavelets'
          `dwt_max_level` of the smallest transformed size, lowered until every size is a
          multiple of $2^{\\mathrm{level}}$, and at least 1 (decided from the input's
          shape when applied).
        - `mode`: the boundary; only `"periodization"` (the orthogonal one).
        - `inverse`: the inverse transform $W^{-1} = W^H$ (`pywt.waverecn`) instead;
          `Wavelet(...).H` is this.
        """
        self.ioshape = as_dims(ishape)
        named = tuple(d for d in self.ioshape if not is_wildcard(d))
        self.transform_shape = as_dims(dims, named)
        self.wavelet = wavelet
        self.level = int(level) if isinstance(level, np.integer) else level
        self.inverse = bool(inverse)
        if mode != "periodization":
            raise ValueError(
                f"`Wavelet(mode=...)` supports only 'periodization' (the orthogonal "
                f"boundary, whose coefficients fill the input's shape); got {mode!r}."
            )

    def __check_init__(self):
        check_dims(self.ioshape, self.transform_shape)
        check_wavelet("Wavelet", self.wavelet)
        level = self.level
        if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
            raise TypeError(f"`Wavelet(level=...)` expects an int or None; got {level!r}.")
        if level is not None and level < 0:
            raise ValueError(f"`Wavelet(level=...)` must be at least 0; got {level}.")

    @property
    def name(self) -> str:
        return "Wavelet.H" if self.inverse else "Wavelet"

    def tiling(self) -> Tiling:
        return Tiling(batch=tuple(d for d in self.ioshape if d not in self.transform_shape))

    def coupling(self, dim: str) -> Coupling:
        """`Coupling.GLOBAL` along the transformed dims: a coarse coefficient depends on
        a stretch of $2^{\\mathrm{level}} (L - 1)$ entries, and the coefficients of a
        level sit at fixed positions (not shift invariant, so no halo split either)."""
        if dim in self.transform_shape:
            return Coupling.GLOBAL
        return super().coupling(dim)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._transform(x, self.inverse)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._transform(y, not self.inverse)

    def _transform(self, x: jax.Array, inverse: bool) -> jax.Array:
        x = as_inexact(x)
        axes = tuple(axis_of(self.ioshape, d) % x.ndim for d in self.transform_shape)
        level = self.level
        if level is None:
            level = default_level([x.shape[a] for a in axes], self.wavelet)
        check_sizes(self.name, x.shape, axes, level, default=self.level is None)
        fn = wavelet_transform_adjoint if inverse else wavelet_transform
        return fn(x, axes, level, self.wavelet)

    def adjoint(self) -> NamedLinop:
        """$W^H = W^{-1}$: the same operator with `inverse` flipped."""
        return Wavelet(
            self.ioshape,
            self.transform_shape,
            wavelet=self.wavelet,
            level=self.level,
            inverse=not self.inverse,
        )

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """$W^H W = W W^H = I$ (orthogonal): an `Identity`, without `inner`."""
        return identity_normal(self) if inner is None else None


def check_dims(ioshape: Dims, transform: Dims) -> None:
    """Refuse repeated dims, or transformed dims that are not distinct named dims of
    `ioshape` (at least one)."""
    where = f"`Wavelet({fmt(ioshape)}, dims={fmt(transform)})`"
    if len(set(ioshape)) != len(ioshape):
        raise ValueError(f"{where}: the dims of `ishape` must be distinct.")
    if not transform:
        raise ValueError(
            f"{where} transforms no dim: pass `dims`, one or more named dims of `ishape` "
            f"(e.g. `dims='Nx Ny'`)."
        )
    bad = [d for d in transform if d not in ioshape or is_wildcard(d)]
    if bad or len(set(transform)) != len(transform):
        raise ValueError(
            f"{where}: `dims` must be distinct named dims of `ishape`; got {fmt(transform)} "
            f"(not in `ishape` or wildcards: {bad})."
        )
