"""`Adjoint`: the conjugate transpose of an operator that has no specialised adjoint."""

from __future__ import annotations

import jax

from .._dims import Dims
from ._coupling import Coupling
from ._forms import GridForm, OffGrid
from ._linop import NamedLinop


class Adjoint(NamedLinop):
    r"""$A^H$ for a wrapped operator $A$: `oshape -> ishape` of $A$.

    `Adjoint(A).H` returns `A` itself, so `A.H.H == A`.
    """

    linop: NamedLinop

    def __init__(self, linop: NamedLinop):
        self.linop = linop

    @property
    def ishape(self) -> Dims:
        return self.linop.oshape

    @property
    def oshape(self) -> Dims:
        return self.linop.ishape

    @property
    def name(self) -> str:
        return f"{self.linop.name}.H"

    def coupling(self, dim: str) -> Coupling:
        return self.linop.coupling(dim)

    def grid_form(self) -> GridForm | None:
        """The adjoint of the operator's form (a reader at off-grid points has none: its
        adjoint is split by other means)."""
        form = self.linop.grid_form()
        return None if form is None or isinstance(form, OffGrid) else form.adjoint()

    def split(self, tile) -> NamedLinop:
        return Adjoint(self.linop.split(tile))

    def apply(self, x: jax.Array) -> jax.Array:
        return self.linop.apply_adjoint(x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.linop.apply(y)

    def adjoint(self) -> NamedLinop:
        return self.linop

    def size(self, dim: str) -> int | None:
        return self.linop.size(dim)


def wrapped_adjoint(op: NamedLinop) -> NamedLinop:
    """The adjoint of `op` as a wrapper that leaves its arrays untouched (stacked tiles):
    `Adjoint(op)`, or the operator inside where `op` is such a wrapper."""
    return op.linop if isinstance(op, Adjoint) else Adjoint(op)
