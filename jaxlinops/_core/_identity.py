"""`Identity`, `ShapeSpec` (an identity that renames dims) and `Zero`."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp

from .._arrays import as_size, batch_shape_of, dim_sizes
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt
from ._coupling import Coupling, Tiling
from ._forms import Rename
from ._linop import NamedLinop, dims_field
from ._masks import split_arrays
from ._tiles import tile_length


def check_same_rank(name: str, ishape: Dims, oshape: Dims) -> None:
    """Raise a ValueError unless `ishape` and `oshape` map one to one (an identity)."""
    if len(ishape) != len(oshape) or (ELLIPSIS in ishape) != (ELLIPSIS in oshape):
        raise ValueError(
            f"`{name}` maps each input dim to one output dim; got ishape {fmt(ishape)} and "
            f"oshape {fmt(oshape)} of different lengths."
        )


class Identity(NamedLinop):
    r"""$y = x$. With an `oshape` different from `ishape` it renames dims position-wise.

    `sizes` fixes the sizes of some dims (`{"Nx": 64}`), checked on every input: the
    normal $A^H A = I$ of an operator with orthonormal columns (`Pad`) keeps the sizes
    that the operator checks.
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs", default=())

    def __init__(
        self,
        ishape: DimsLike = None,
        oshape: DimsLike = None,
        sizes: Mapping[str, int] | None = None,
    ):
        """**Arguments:**

        - `ishape`: input dims (default `"..."`).
        - `oshape`: output dims, same length as `ishape` (default: `ishape`).
        - `sizes`: sizes of some dims, checked on the input (default: none).
        """
        self.ishape = as_dims(ishape, "...")
        self.oshape = self.ishape if oshape is None else as_dims(oshape)
        self.sizes = tuple(
            (d, as_size(n, f"`Identity(sizes={{{d!r}: ...}})`")) for d, n in (sizes or {}).items()
        )

    def __check_init__(self):
        check_same_rank("Identity", self.ishape, self.oshape)

    @property
    def name(self) -> str:
        return "Identity" if self.ishape == self.oshape else "ShapeSpec"

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def grid_form(self) -> Rename:
        return Rename(self.ishape, self.oshape)

    def tiling(self) -> Tiling:
        return Tiling(batch=tuple(d for d in self.ishape if d in self.oshape))

    def split(self, tile) -> NamedLinop:
        """The tile as the tiling declares it (`split_arrays`), its sizes those of the
        tile."""
        out = split_arrays(Identity(self.ishape, self.oshape), tile, (), self.tiling().batch)
        if not self.sizes or not isinstance(out, Identity):
            return self if out == self else out
        sizes = {d: tile_length(tile, d, n) for d, n in self.sizes}
        return Identity(out.ishape, out.oshape, sizes)

    def apply(self, x: jax.Array) -> jax.Array:
        return x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return y

    def adjoint(self) -> NamedLinop:
        """$I^H = I$: `self` when it renames no dim (torchlinops' `I.H is I`)."""
        if self.ishape == self.oshape:
            return self
        return Identity(self.oshape, self.ishape, dict(self.sizes))

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if inner is None:
            sizes = {d: n for d, n in self.sizes if d in self.ishape}
            normal = Identity(self.ishape, sizes=sizes)
            return self if normal == self else normal
        return inner if self.ishape == self.oshape else None

    def __pow__(self, p) -> Identity:
        """$I^p = I$ (`self`), for an identity that renames no dim."""
        if self.ishape != self.oshape:
            raise ValueError(
                f"`{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)}) ** {p!r}`: only an "
                f"identity that renames no dim can be raised to a power."
            )
        return self


def ShapeSpec(ishape: DimsLike = ("...",), oshape: DimsLike = None) -> Identity:
    """An identity that renames dims: `ShapeSpec("NxNy", "KxKy")` maps (Nx, Ny) -> (Kx, Ky)
    (`oshape` defaults to `ishape`, `ishape` to `"..."`, as in torchlinops)."""
    return Identity(ishape, oshape)


class Zero(NamedLinop):
    r"""$y = 0$, an array laid out by `oshape`.

    Output dims that are not input dims take their sizes from `sizes`.
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")

    def __init__(
        self,
        ishape: DimsLike = None,
        oshape: DimsLike = None,
        sizes: Mapping[str, int] | None = None,
    ):
        """**Arguments:**

        - `ishape`: input dims (default `"..."`).
        - `oshape`: output dims (default: `ishape`).
        - `sizes`: sizes of dims that the input does not determine, e.g. `{"M": 5}`.
        """
        self.ishape = as_dims(ishape, "...")
        self.oshape = self.ishape if oshape is None else as_dims(oshape)
        if sizes is not None and not isinstance(sizes, Mapping):
            raise TypeError(f"`Zero(sizes=...)` expects a mapping {{dim: size}}; got {sizes!r}.")
        self.sizes = tuple(
            (d, as_size(n, f"`Zero(sizes={{{d!r}: ...}})`")) for d, n in (sizes or {}).items()
        )

    def __check_init__(self):
        if (ELLIPSIS in self.ishape) != (ELLIPSIS in self.oshape):
            raise ValueError(
                f"`Zero`: '...' must be in both ishape and oshape or in neither; got "
                f"{fmt(self.ishape)} -> {fmt(self.oshape)}."
            )
        missing = set(self.oshape) - set(self.ishape) - set(dict(self.sizes)) - {ELLIPSIS}
        missing |= set(self.ishape) - set(self.oshape) - set(dict(self.sizes)) - {ELLIPSIS}
        if missing:
            raise ValueError(
                f"`Zero({fmt(self.ishape)} -> {fmt(self.oshape)})` needs the sizes of dims "
                f"{sorted(missing)}, which its input or output does not determine: pass "
                f"`sizes={{...}}`."
            )

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def _zeros(self, x: jax.Array, src: Dims, dst: Dims) -> jax.Array:
        known = {**dict(self.sizes), **dim_sizes(src, x.shape)}
        shape = []
        for d in dst:
            shape.extend(batch_shape_of(src, x.shape) if d == ELLIPSIS else (known[d],))
        return jnp.zeros(tuple(shape), x.dtype)

    def coupling(self, dim: str) -> Coupling:
        """None: a tile of zeros is zeros of the tile's sizes."""
        return Coupling.NONE

    def split(self, tile) -> NamedLinop:
        sizes = {d: tile_length(tile, d, n) for d, n in self.sizes}
        out = Zero(self.ishape, self.oshape, sizes)
        return self if out == self else out

    def apply(self, x: jax.Array) -> jax.Array:
        return self._zeros(x, self.ishape, self.oshape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._zeros(y, self.oshape, self.ishape)

    def adjoint(self) -> NamedLinop:
        return Zero(self.oshape, self.ishape, dict(self.sizes))
