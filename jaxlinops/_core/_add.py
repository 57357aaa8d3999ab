"""`Add`: the sum of operators with the same input and output dims."""

from __future__ import annotations

import equinox as eqx
import jax

from .._dims import Dims
from ._containers import (
    Container,
    Scheduled,
    as_linops,
    block_apply,
    call_adjoint,
    consistent_size,
)
from ._linop import NamedLinop, adjoint_label, check_label
from ._schedule import check_schedule
from ._unify import most_specific, unify


class Add(Container, Scheduled):
    r"""$(A_1 + \dots + A_n) x$; every $A_i$ maps `ishape -> oshape`."""

    linops: tuple[NamedLinop, ...]
    threaded: bool = eqx.field(static=True)
    num_workers: int | None = eqx.field(static=True)
    accumulate: bool = eqx.field(static=True)

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
        - `threaded`, `num_workers`, `accumulate`: torchlinops' scheduling options, kept
          as fields; the addends are summed by `parallel_execute` (`accumulate`: in
          batches of `num_workers`, to bound memory outside `jit`; `threaded` changes
          nothing, see there).
        - `name`: a display name, shown by `repr` and in errors.
        - `stream`: torchlinops' CUDA stream; accepted and ignored (JAX orders device
          work itself).
        """
        self.label = check_label("Add", name)
        self.linops = unify("Add", as_linops("Add", linops))
        self.num_workers = check_schedule("Add", threaded, num_workers, accumulate)
        self.threaded, self.accumulate = threaded, accumulate

    @property
    def ishape(self) -> Dims:
        return most_specific(self.linops).ishape

    @property
    def oshape(self) -> Dims:
        return most_specific(self.linops).oshape

    def apply(self, x: jax.Array) -> jax.Array:
        return block_apply(self, x, [op.__call__ for op in self.linops])

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return block_apply(self, y, [lambda v, op=op: call_adjoint(op, v) for op in self.linops])

    def adjoint(self) -> NamedLinop:
        return Add(
            *(op.adjoint() for op in self.linops),
            threaded=self.threaded,
            num_workers=self.num_workers,
            accumulate=self.accumulate,
            name=adjoint_label(self.label),
        )

    def size(self, dim: str) -> int | None:
        return consistent_size("Add", self.linops, dim)
