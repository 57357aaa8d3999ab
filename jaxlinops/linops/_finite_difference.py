r"""`FiniteDifference`: forward differences along named dims (the operator behind total
variation), and its normal, a (negative) Laplacian.

Along each differenced dim the operator is a 2-point stencil and its normal a 3-point
one: both declare `Coupling.halo(1)`, so grid splitting runs them on slabs extended by
one entry from each neighbour. `FiniteDifference` adds the stacked output dim, so it is
split as its grid form, `Steps`: a `Repeat` onto that dim, then `StackedDifference`.
"""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from equinox import AbstractVar

from .._arrays import as_inexact
from .._core import Chain, Coupling, NamedLinop, SameDims, Steps, Tiling, dims_field, split_arrays
from .._dims import Dims, DimsLike, as_dims, axis_of, fmt, is_wildcard, next_unused
from ..functional._finite_difference import difference, difference_adjoint, second_difference
from ._einops import Repeat

_BOUNDARIES = ("periodic", "zero", "neumann")
_NORMAL_MODES = ("stencil", "fft")


class AbstractDifference(NamedLinop):
    """Shared by the operators of this module: a field laid out by `field_shape`,
    differenced along `diff_dims` under `boundary`; entry by entry along its other dims."""

    diff_dims: AbstractVar[Dims]
    boundary: AbstractVar[str]

    @property
    @abc.abstractmethod
    def field_shape(self) -> Dims:
        """The dims of the differenced field (`ishape`, less a stacked leading dim)."""

    def __check_init__(self):
        mode = getattr(self, "normal_mode", "stencil")
        check_args(self.name, self.field_shape, self.diff_dims, self.boundary, mode)

    def axes(self) -> tuple[int, ...]:
        """The array axis of each differenced dim in an array laid out by `field_shape`."""
        return tuple(axis_of(self.field_shape, d) for d in self.diff_dims)

    def tiling(self) -> Tiling:
        return Tiling(batch=tuple(d for d in self.field_shape if d not in self.diff_dims))

    def coupling(self, dim: str) -> Coupling:
        """A halo of 1 along the differenced dims (periodic with a periodic boundary)."""
        if dim in self.diff_dims:
            return Coupling.halo(1, periodic=self.boundary == "periodic")
        return super().coupling(dim)


class FiniteDifference(AbstractDifference):
    r"""Forward differences $(Dx)_g[n] = x[n + e_g] - x[n]$ along each dim $g$ of `dims`,
    stacked along a new leading output dim `odim` (size `len(dims)`, in the order of
    `dims`): $\|Dx\|_1$ is anisotropic total variation, and the 2-norm over `odim` of
    $Dx$ the isotropic one.

    Dims: `ishape -> (odim, *ishape)`. The boundary decides the last difference along
    each dim: `"periodic"` $x[0] - x[N-1]$, `"zero"` $-x[N-1]$ ($x$ extended by zeros),
    `"neumann"` $0$. Real and complex inputs; integer ones are computed in floating point.
    sigpy's `FiniteDifference` (periodic) takes backward differences $x[n] - x[n-1]$: the
    same up to a circular shift by one entry along each dim, with the same normal.

    The normal $D^H D = \sum_g D_g^H D_g$ is a (negative) Laplacian,
    `FiniteDifferenceNormal`: a 3-point stencil per dim, periodic or tridiagonal;
    periodic, it is also $\mathcal{F}^{-1} \operatorname{diag}(\lambda) \mathcal{F}$ with
    $\lambda = \sum_g |1 - e^{-2\pi i k_g / N_g}|^2$ (`normal_mode="fft"`, and
    `D.N.eigenvalues(shape)` for solves in the Fourier domain).

    Splitting: along the other dims of `ishape`, entry by entry; along a differenced dim,
    `Coupling.halo(1)`: `jaxlinops.split` refuses (a tile needs its neighbour's entries),
    and `create_batched_linop` splits it across devices by halo exchange (periodic and
    zero boundaries; a Neumann boundary refuses, naming the dim). `odim` is not split.
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    diff_dims: Dims = dims_field()
    boundary: str = eqx.field(static=True)
    normal_mode: str = eqx.field(static=True)

    def __init__(
        self,
        ishape: DimsLike,
        dims: DimsLike = None,
        *,
        boundary: str = "periodic",
        odim: str = "G",
        normal_mode: str = "stencil",
    ):
        """**Arguments:**

        - `ishape`: the input dims, e.g. `"C Nx Ny"` (a `"..."` is allowed).
        - `dims`: the dims to difference, in the order of the output's `odim` (default:
          every named dim of `ishape`).
        - `boundary`: `"periodic"`, `"zero"` or `"neumann"` (see above).
        - `odim`: the name of the new output dim (not a dim of `ishape`).
        - `normal_mode`: how `D.N` applies: `"stencil"` (3-point stencils, the faster on
          CPU) or `"fft"` (periodic only: through FFTs over `dims`).
        """
        self.ishape = as_dims(ishape)
        self.diff_dims = as_dims(dims, tuple(d for d in self.ishape if not is_wildcard(d)))
        self.oshape = (*_odim(odim), *self.ishape)
        self.boundary = boundary
        self.normal_mode = normal_mode

    def __check_init__(self):
        odim = self.oshape[0]
        if odim in self.ishape or is_wildcard(odim):
            raise ValueError(
                f"`FiniteDifference(odim=...)` must be a new dim, not a wildcard nor one of "
                f"ishape {fmt(self.ishape)}; got {odim!r}. Pass another name, e.g. "
                f"odim={next_unused(odim, self.ishape)!r}."
            )

    @property
    def field_shape(self) -> Dims:
        return self.ishape

    @property
    def odim(self) -> str:
        return self.oshape[0]

    def size(self, dim: str) -> int | None:
        return len(self.diff_dims) if dim == self.odim else None

    def grid_form(self) -> Steps:
        """`Repeat` onto `odim`, then `StackedDifference` (which keeps its dims in place,
        as a halo exchange needs); none for a Neumann boundary."""
        if self.boundary == "neumann":
            return Steps(None, _no_halo(self.name))
        return Steps(_steps(self.ishape, self.diff_dims, self.boundary, self.odim))

    def split(self, tile) -> NamedLinop:
        for d in tile:
            if d in self.diff_dims or d == self.odim:
                raise ValueError(_refusal(self, d))
        return split_arrays(self, tile, batch=self.tiling().batch)

    def apply(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        return jnp.stack([difference(x, a, self.boundary) for a in self.axes()])

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        y = as_inexact(y)
        parts = [difference_adjoint(y[g], a, self.boundary) for g, a in enumerate(self.axes())]
        return sum(parts[1:], parts[0])

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if inner is not None:
            return None
        return FiniteDifferenceNormal(self.ishape, self.diff_dims, self.boundary, self.normal_mode)


class FiniteDifferenceNormal(AbstractDifference, SameDims):
    r"""$D^H D = \sum_g D_g^H D_g$ of a `FiniteDifference` $D$, a (negative)
    Laplacian: $2x[n] - x[n - e_g] - x[n + e_g]$ summed over the differenced dims $g$,
    periodic or with the boundary rows of `second_difference`.

    Dims: `ioshape -> ioshape`; self-adjoint. With `normal_mode="fft"` (periodic only) it
    applies $\mathcal{F}^{-1} \operatorname{diag}(\lambda) \mathcal{F}$ over the dims
    instead (`eigenvalues`). Built by `FiniteDifference(...).N`; shown as
    `FiniteDifference.N`.
    """

    ioshape: Dims = dims_field()
    diff_dims: Dims = dims_field()
    boundary: str = eqx.field(static=True)
    normal_mode: str = eqx.field(static=True)

    def __init__(self, ioshape: Dims, diff_dims: Dims, boundary: str, normal_mode: str = "stencil"):
        """**Arguments:** `ioshape`, the dims of input and output; `diff_dims`, the
        differenced dims; `boundary` and `normal_mode`, as `FiniteDifference`'s."""
        self.ioshape, self.diff_dims = ioshape, diff_dims
        self.boundary, self.normal_mode = boundary, normal_mode

    @property
    def name(self) -> str:
        return "FiniteDifference.N"

    @property
    def field_shape(self) -> Dims:
        return self.ioshape

    def grid_form(self) -> Steps | None:
        """None (a shift-invariant stencil) when periodic, split as stencils; with a zero
        boundary the steps of $D$ then $D^H$; none for a Neumann boundary."""
        if self.boundary == "neumann":
            return Steps(None, _no_halo(self.name))
        if self.boundary == "zero":
            odim = next_unused("G", self.ioshape)
            steps = _steps(self.ioshape, self.diff_dims, self.boundary, odim)
            return Steps(Chain(*steps.flatten(), *steps.adjoint().flatten()))
        if self.normal_mode == "fft":
            return Steps(FiniteDifferenceNormal(self.ioshape, self.diff_dims, "periodic"))
        return None

    def eigenvalues(self, shape: tuple[int, ...]) -> np.ndarray:
        r"""$\lambda[k] = \sum_g |1 - e^{-2\pi i k_g / N_g}|^2 = \sum_g 4 \sin^2(\pi k_g /
        N_g)$ for an input of `shape` (periodic only), in `jnp.fft.fftn`'s frequency order
        (not centred): $D^H D = \mathcal{F}^{-1} \operatorname{diag}(\lambda) \mathcal{F}$.
        A float64 array broadcastable to `shape`, of size 1 along the other dims."""
        if self.boundary != "periodic":
            raise ValueError(
                f"`{self.name}.eigenvalues`: the Fourier transform diagonalises the normal "
                f"only with boundary='periodic'; got boundary={self.boundary!r}."
            )
        lam = np.zeros([1] * len(shape))
        for a in (a % len(shape) for a in self.axes()):
            w = 4 * np.sin(np.pi * np.arange(shape[a]) / shape[a]) ** 2
            lam = lam + w.reshape([-1 if b == a else 1 for b in range(len(shape))])
        return lam

    def apply(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        if self.normal_mode == "stencil":
            parts = [second_difference(x, a, self.boundary) for a in self.axes()]
            return sum(parts[1:], parts[0])
        axes = tuple(a % x.ndim for a in self.axes())
        xf = jnp.fft.fftn(x, axes=axes)
        out = jnp.fft.ifftn(jnp.asarray(self.eigenvalues(x.shape), xf.dtype) * xf, axes=axes)
        return out if jnp.iscomplexobj(x) else jnp.real(out)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.apply(y)

    def adjoint(self) -> NamedLinop:
        return self


class StackedDifference(AbstractDifference, SameDims):
    r"""$y_g = D_g x_g$: slice $g$ of the leading dim differenced along `diff_dims[g]`
    (a step of `FiniteDifference`'s grid form, `(odim, *ishape) -> (odim, *ishape)`:
    shift invariant along each differenced dim, as a halo exchange needs)."""

    ioshape: Dims = dims_field()
    diff_dims: Dims = dims_field()
    boundary: str = eqx.field(static=True)

    def __init__(self, ioshape: Dims, diff_dims: Dims, boundary: str):
        self.ioshape, self.diff_dims, self.boundary = ioshape, diff_dims, boundary

    @property
    def name(self) -> str:
        return "FiniteDifference[stacked]"

    @property
    def field_shape(self) -> Dims:
        return self.ioshape[1:]

    def apply(self, x: jax.Array) -> jax.Array:
        return jnp.stack([difference(x[g], a, self.boundary) for g, a in enumerate(self.axes())])

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        axes = enumerate(self.axes())
        return jnp.stack([difference_adjoint(y[g], a, self.boundary) for g, a in axes])


def check_args(name: str, shape: Dims, dims: Dims, boundary: str, mode: str) -> None:
    """Refuse an unknown boundary or normal mode, and differenced dims that are not
    distinct named dims of `shape`."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"`{name}(boundary=...)` must be one of {_BOUNDARIES}; got {boundary!r}.")
    if mode not in _NORMAL_MODES or (mode == "fft" and boundary != "periodic"):
        raise ValueError(
            f"`{name}(normal_mode=...)` must be one of {_NORMAL_MODES}, 'fft' with "
            f"boundary='periodic' only; got normal_mode={mode!r}, boundary={boundary!r}."
        )
    named = tuple(d for d in shape if not is_wildcard(d))
    bad = [d for d in dims if d not in named]
    if bad or not dims or len(set(dims)) < len(dims):
        raise ValueError(
            f"`{name}(dims=...)` must name distinct dims of ishape {fmt(shape)}, at least "
            f"one; got dims {fmt(dims)}{f' ({bad[0]!r} is not in ishape)' if bad else ''}."
        )


def _odim(odim: object) -> Dims:
    if not isinstance(odim, str) or len(as_dims(odim)) != 1:
        raise ValueError(f"`FiniteDifference(odim=...)` must be one dim name; got {odim!r}.")
    return as_dims(odim)


def _steps(shape: Dims, dims: Dims, boundary: str, odim: str) -> Chain:
    """$D$ as `Repeat` onto `odim`, then `StackedDifference`."""
    stacked = (odim, *shape)
    return Chain(
        Repeat({odim: len(dims)}, shape, stacked), StackedDifference(stacked, dims, boundary)
    )


def _no_halo(name: str) -> str:
    return (
        f"`{name}` with boundary='neumann' cannot be split across devices along a "
        f"differenced dim: its last difference is 0 whatever the next slab holds, which a "
        f"halo exchange cannot reproduce (use boundary='zero' or 'periodic', or split along "
        f"a dim it does not difference)"
    )


def _refusal(op: FiniteDifference, dim: str) -> str:
    if dim == op.odim:
        return (
            f"`{op.name}` cannot be split along its output dim {dim!r}: each of its entries "
            f"differences another dim of {fmt(op.diff_dims)}."
        )
    return (
        f"`{op.name}` cannot be split along dim {dim!r} into independent tiles: it "
        f"differences that dim (`Coupling.halo(1)`), so a tile needs its neighbour's "
        f"entries. Split it across devices with `create_batched_linop`, which exchanges "
        f"halos (boundary 'periodic' or 'zero')."
    )
