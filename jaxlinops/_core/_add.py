"""`Add`: the sum of operators with the same input and output dims."""

from __future__ import annotations

import jax

from .._dims import Dims
from ._containers import Container, add_all, as_linops, call_adjoint, consistent_size
from ._linop import NamedLinop, adjoint_label, check_label
from ._unify import most_specific, unify


class Add(Container):
    r"""$(A_1 + \dots + A_n) x$; every $A_i$ maps `ishape -> oshape`."""

    linops: tuple[NamedLinop, ...]

    def __init__(
        self,
        *linops: NamedLinop,
        threaded: bool = True,
        num_workers: int | None = None,
        accumulate: bool = False,
        name: str | None = None,
        stream=None,
    ):
        """**Arguments:**

        - `linops`: the addends, all mapping the same `ishape -> oshape` (wildcards are
          resolved against the most specific one).
        - `name`: a display name, shown by `repr` and in errors.

        torchlinops' scheduling options are accepted and ignored, since they cannot change
        the sum: `threaded` and `num_workers` (a thread per addend; XLA schedules a jitted
        sum itself), `accumulate` (summing in batches to save memory) and `stream` (a
        CUDA stream).
        """
        self.label = check_label("Add", name)
        self.linops = unify("Add", as_linops("Add", linops))

    @property
    def ishape(self) -> Dims:
        return most_specific(self.linops).ishape

    @property
    def oshape(self) -> Dims:
        return most_specific(self.linops).oshape

    def apply(self, x: jax.Array) -> jax.Array:
        return add_all([op(x) for op in self.linops])

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return add_all([call_adjoint(op, y) for op in self.linops])

    def adjoint(self) -> NamedLinop:
        return Add(*(op.adjoint() for op in self.linops), name=adjoint_label(self.label))

    def size(self, dim: str) -> int | None:
        return consistent_size("Add", self.linops, dim)
