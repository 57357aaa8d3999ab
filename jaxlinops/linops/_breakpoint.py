"""Debugging and test identities: `BreakpointLinop` (stops in a debugger) and `Sleep`
(waits), both working under `jax.jit` through host callbacks."""

from __future__ import annotations

import functools
import numbers
import time
from collections.abc import Callable

import equinox as eqx
import jax

from .._core import NamedLinop, SameDims, Tiling, check_same_rank, dims_field, identity_normal
from .._dims import Dims, DimsLike, as_dims


class BreakpointLinop(SameDims):
    r"""The identity $y = x$ on `ioshape` that stops in a debugger whenever it is applied
    (forward and adjoint), as torchlinops' `BreakpointLinop`: put it between two
    operators of a `Chain` to inspect the array passed between them.

    It works under `jax.jit`: it calls `jax.debug.breakpoint()`, which opens JAX's
    debugger when the compiled program reaches it, with `x` in scope (`p x` prints it,
    `c` continues). With `callback`, it calls `callback(x)` on the host instead (through
    `jax.debug.callback`), e.g. to log or check the values without stopping. Its adjoint
    is itself and its normal $I$ (which stops twice, once per side); a tile is the same
    operator.
    """

    ioshape: Dims = dims_field()
    callback: Callable | None = eqx.field(static=True)

    def __init__(self, ioshape: DimsLike = None, *, callback: Callable | None = None):
        """**Arguments:**

        - `ioshape`: the dims of input and output (default `"..."`: any array).
        - `callback`: a function `callback(x)` to run instead of stopping (keyword-only;
          pass a module-level function, as it is a static field).
        """
        self.ioshape = as_dims(ioshape, "...")
        self.callback = callback

    def __check_init__(self):
        if self.callback is not None and not callable(self.callback):
            raise TypeError(
                f"`BreakpointLinop(callback=...)` expects a function; got "
                f"{type(self.callback).__name__}."
            )

    def tiling(self) -> Tiling:
        return Tiling(batch=self.ioshape)

    def apply(self, x: jax.Array) -> jax.Array:
        if self.callback is None:
            jax.debug.breakpoint()  # the debugger shows this frame's `x`
        else:
            jax.debug.callback(self.callback, x)
        return x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.apply(y)

    def adjoint(self) -> NamedLinop:
        return self


class Sleep(NamedLinop):
    r"""The identity $y = x$ that waits `duration` seconds in its forward application, as
    torchlinops' `Sleep` test operator (it simulates a slow operator in benchmarks of
    batched or multi-device execution).

    The wait is a host callback (`jax.debug.callback` with `time.sleep`), so it also runs
    inside a jitted program, once `x` is ready. The adjoint application and the normal
    ($I$) do not wait, as in torchlinops. With an `oshape` other than `ioshape` it renames
    dims position-wise, like `Identity`. A tile is the same operator.
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    duration: float = eqx.field(static=True)

    def __init__(self, duration: float = 0.1, ioshape: DimsLike = ("...",), oshape=None):
        """**Arguments:**

        - `duration`: the wait in seconds (a non-negative number).
        - `ioshape`: the input dims (default `"..."`), and the output dims when `oshape`
          is None.
        - `oshape`: output dims, one per input dim (default: `ioshape`).
        """
        if not isinstance(duration, numbers.Real) or isinstance(duration, bool):
            raise TypeError(
                f"`Sleep(duration=...)` expects a number of seconds; got "
                f"{type(duration).__name__} {duration!r:.40}."
            )
        self.duration = float(duration)
        self.ishape = as_dims(ioshape, "...")
        self.oshape = self.ishape if oshape is None else as_dims(oshape)

    def __check_init__(self):
        if not self.duration >= 0:
            raise ValueError(
                f"`Sleep(duration=...)` expects a non-negative number of seconds; got "
                f"{self.duration}."
            )
        check_same_rank("Sleep", self.ishape, self.oshape)

    def tiling(self) -> Tiling:
        return Tiling(batch=tuple(d for d in self.ishape if d in self.oshape))

    def apply(self, x: jax.Array) -> jax.Array:
        jax.debug.callback(functools.partial(_sleep, self.duration), x)
        return x

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return y

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        return identity_normal(self) if inner is None else None


def _sleep(duration: float, x) -> None:
    """Wait `duration` seconds (`x`, the operator's input, is only waited for)."""
    del x
    time.sleep(duration)
