"""`Scalar`: multiplication by one number."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_inexact, promote_inexact
from .._dims import Dims, DimsLike, as_dims
from ._chain import Chain
from ._coupling import Tiling
from ._linop import NamedLinop, dims_field


# --8<-- [start:scalar]
class Scalar(NamedLinop):
    r"""$y = c\,x$ for a scalar $c$ (real or complex), mapping `ioshape -> ioshape`.

    Built by `c * A`, `A * c` and `-A`. Adjoint: $\bar c$; normal: $|c|^2$.
    """

    weight: jax.Array
    ioshape: Dims = dims_field()

    def __init__(self, weight, ioshape: DimsLike = None):
        """**Arguments:**

        - `weight`: a Python number or 0-d array $c$.
        - `ioshape`: the dims of input and output (default `"..."`: any array).
        """
        self.weight = as_array(weight, "`Scalar(weight=...)`")
        self.ioshape = as_dims(ioshape, "...")

    def __check_init__(self):
        if self.weight.ndim != 0:
            raise ValueError(
                f"`Scalar(weight=...)` expects a 0-d weight; got shape "
                f"{tuple(self.weight.shape)}. Use `Diagonal` for an array of weights."
            )

    @property
    def ishape(self) -> Dims:
        return self.ioshape

    @property
    def oshape(self) -> Dims:
        return self.ioshape

    def tiling(self) -> Tiling:
        return Tiling(batch=self.ioshape)

    def split_weight(self, ibatch: Sequence[slice], obatch: Sequence[slice], /, weight):
        """torchlinops' weight of a tile: the same $c$ for every tile, which slices input
        and output alike (`ibatch`, `obatch`: one slice per dim of `ishape`, `oshape`).
        Different slices raise an AssertionError, as torchlinops' diagonal operators do."""
        if list(ibatch) != list(obatch):
            raise AssertionError(
                f"`{self.name}.split_weight`: a diagonal operator must be split identically "
                f"in input and output; got ibatch {list(ibatch)} and obatch {list(obatch)}."
            )
        return weight

    def apply(self, x: jax.Array) -> jax.Array:
        w, x = promote_inexact("Scalar", self.weight, x)
        return w * x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        w, y = promote_inexact("Scalar", jnp.conj(self.weight), y)
        return w * y

    def adjoint(self) -> NamedLinop:
        return Scalar(jnp.conj(self.weight), self.ioshape)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """$|c|^2\\,\\mathrm{inner}$."""
        square = Scalar(jnp.abs(as_inexact(self.weight)) ** 2, self.ioshape)
        if inner is None:
            return square
        return Chain(*inner.flatten(), Scalar(square.weight, inner.oshape))


# --8<-- [end:scalar]
