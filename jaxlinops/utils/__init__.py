"""torchlinops' `utils` module: the helpers its documentation calls, on JAX arrays.

`is_adjoint` and `inner` (the dot-product test of an adjoint), the centered FFTs
`cfft`/`cfft2`/`cfftn` and their inverses, and the small batching helpers `ceildiv`,
`batch_iterator` (with a progress bar: `batch_tqdm`), `dict_product` and `default_to`;
the logging helpers `setup_console_logger` and `Indenter`/`INDENT` (indented printing).
torchlinops' device and memory helpers
(`MemReporter`, `memory_aware_to`, `get_device`, CuPy bridges, ...) manage torch devices
and buffers, which JAX handles itself: they are not provided.
"""

from __future__ import annotations

import itertools
import logging
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .. import _progress
from .._arrays import as_array
from ..functional._fft import centered_fftn
from ..testing import inner as _inner

__all__ = [
    "INDENT",
    "Indenter",
    "batch_iterator",
    "batch_tqdm",
    "ceildiv",
    "cfft",
    "cfft2",
    "cfftn",
    "cifft",
    "cifft2",
    "cifftn",
    "default_to",
    "default_to_dict",
    "dict_product",
    "end_pad_with_zeros",
    "from_pytorch",
    "inner",
    "is_adjoint",
    "setup_console_logger",
]


def from_pytorch(tensor: Any) -> np.ndarray:
    """An array as a numpy array on the host: torchlinops' `from_pytorch` (a torch tensor
    to numpy, or to CuPy on a GPU). Takes what `numpy.asarray` takes: a JAX array, a numpy
    array, a CPU torch tensor (detached first; jaxlinops never imports torch)."""
    detach = getattr(tensor, "detach", None)
    return np.asarray(tensor if detach is None else detach())


def is_adjoint(
    A: Callable, x: ArrayLike, y: ArrayLike, atol: float = 1e-5, rtol: float = 1e-8
) -> jax.Array:
    r"""The dot-product test: whether $\langle y, A x \rangle \approx \langle A^H y, x
    \rangle$ (`jnp.isclose` with `atol`, `rtol`), a boolean scalar array.

    torchlinops' defaults are kept; they suit double precision and values of order one.
    For a failing test's numbers use `jaxlinops.testing.assert_adjoint`.
    """
    return jnp.isclose(inner(y, A(x)), inner(A.H(y), x), rtol=rtol, atol=atol)


def inner(x: ArrayLike, y: ArrayLike) -> jax.Array:
    r"""The complex inner product $\langle x, y \rangle = \sum \bar x \, y$ over all
    entries."""
    return _inner(x, y)


def cfftn(x: ArrayLike, dim: int | Sequence[int] | None = None, norm: str = "ortho") -> jax.Array:
    """The centered FFT `fftshift(fftn(ifftshift(x)))` over the axes `dim` (None: all),
    with `jnp.fft`'s `norm` (default `"ortho"`)."""
    return _centered(x, dim, norm, inverse=False)


def cifftn(x: ArrayLike, dim: int | Sequence[int] | None = None, norm: str = "ortho") -> jax.Array:
    """The centered inverse FFT `fftshift(ifftn(ifftshift(x)))` over the axes `dim`
    (None: all); the inverse of [`cfftn`][] with the same `norm`."""
    return _centered(x, dim, norm, inverse=True)


def cfft(x: ArrayLike, norm: str = "ortho") -> jax.Array:
    """[`cfftn`][] over the last axis."""
    return cfftn(x, (-1,), norm)


def cifft(x: ArrayLike, norm: str = "ortho") -> jax.Array:
    """[`cifftn`][] over the last axis."""
    return cifftn(x, (-1,), norm)


def cfft2(x: ArrayLike, norm: str = "ortho") -> jax.Array:
    """[`cfftn`][] over the last two axes."""
    return cfftn(x, (-2, -1), norm)


def cifft2(x: ArrayLike, norm: str = "ortho") -> jax.Array:
    """[`cifftn`][] over the last two axes."""
    return cifftn(x, (-2, -1), norm)


def _centered(x: ArrayLike, dim: int | Sequence[int] | None, norm: str, inverse: bool):
    name = "cifftn" if inverse else "cfftn"
    x = as_array(x, f"`{name}(x=...)`")
    if dim is None:
        axes = tuple(range(x.ndim))
    else:
        given = (dim,) if isinstance(dim, int) else tuple(dim)
        if any(not -x.ndim <= a < x.ndim for a in given):
            raise ValueError(f"`{name}(dim=...)`: axes {given} out of range for {x.ndim} axes.")
        axes = tuple(a % x.ndim for a in given)
        if len(set(axes)) < len(axes):
            raise ValueError(f"`{name}(dim=...)`: repeated axes in {given}.")
    last = tuple(range(x.ndim - len(axes), x.ndim))
    moved = jnp.moveaxis(x, axes, last)
    return jnp.moveaxis(centered_fftn(moved, len(axes), inverse, norm), last, axes)


def ceildiv(dividend: int, divisor: int) -> int:
    """$\\lceil a / b \\rceil$ in integers."""
    return -(-dividend // divisor)


def batch_iterator(total: int, batch_size: int) -> Iterator[tuple[int, int]]:
    """`(start, end)` pairs covering `range(total)` in steps of `batch_size` (the last
    may be shorter): `list(batch_iterator(5, 2)) == [(0, 2), (2, 4), (4, 5)]`."""
    if total <= 0 or batch_size <= 0:
        raise ValueError(
            f"`batch_iterator`: total and batch_size must be positive; got total={total}, "
            f"batch_size={batch_size}."
        )
    return itertools.pairwise([*range(0, total, batch_size), total])


def dict_product(input_dict: Mapping[str, Iterable]) -> list[dict]:
    """Every combination of the values: `dict_product({"a": [1, 2], "b": [3]}) ==
    [{"a": 1, "b": 3}, {"a": 2, "b": 3}]`."""
    keys = tuple(input_dict)
    return [dict(zip(keys, combo)) for combo in itertools.product(*input_dict.values())]


def default_to_dict(*dicts: Mapping | None) -> dict:
    """The dicts merged left to right (later entries win), skipping None."""
    out: dict = {}
    for d in dicts:
        if d is not None and not isinstance(d, Mapping):
            raise TypeError(f"`default_to_dict`: expected dicts or None; got {type(d).__name__}.")
        out.update(d or {})
    return out


def end_pad_with_zeros(t: ArrayLike, dim: int, pad_length: int) -> jax.Array:
    """`t` with `pad_length` zeros appended along axis `dim`."""
    t = as_array(t, "`end_pad_with_zeros(t=...)`")
    widths = [(0, 0)] * t.ndim
    widths[dim] = (0, pad_length)
    return jnp.pad(t, widths)


_T = TypeVar("_T")


def default_to(*vals: _T, typecast: bool = False) -> _T | None:
    """The last of `vals` that is not None (the first is the most default), converted to
    the type of the first with `typecast`; None if all are None or none given."""
    for val in reversed(vals):
        if val is not None:
            convert: Any = type(vals[0])  # a constructor taking `val` (e.g. `float`)
            return convert(val) if typecast else val
    return None


def batch_tqdm(total: int, batch_size: int, **tqdm_kwargs) -> Iterator[tuple[int, int]]:
    """[`batch_iterator`][] with a progress bar of `ceildiv(total, batch_size)` steps
    (tqdm, when a bar shows: see `jaxlinops.config.progress`); `tqdm_kwargs` go to tqdm."""
    batches = batch_iterator(total, batch_size)
    desc = tqdm_kwargs.pop("desc", "batches")
    return _progress.iterate(batches, desc, None, tqdm_kwargs, ceildiv(total, batch_size))


def setup_console_logger(
    logger: logging.Logger | None = None,
    log_level: int = logging.INFO,
    fmt: str = "%(asctime)s | %(name)s | %(levelname)s | %(message)s",
    handler_cls: type[logging.Handler] = logging.StreamHandler,
) -> logging.Logger:
    """Send `logger`'s records (default: the root logger) at `log_level` and above to a
    `handler_cls` handler formatted by `fmt`: an existing handler of that class gets the
    format, else one is added. `setup_console_logger(logging.getLogger("jaxlinops"))`
    shows jaxlinops' log (e.g. the split plans of `create_batched_linop`)."""
    logger = logging.getLogger() if logger is None else logger
    logger.setLevel(log_level)
    formatter = logging.Formatter(fmt)
    handler = next((h for h in logger.handlers if isinstance(h, handler_cls)), None)
    if handler is None:
        handler = handler_cls()
        logger.addHandler(handler)
    handler.setFormatter(formatter)
    return logger


class Indenter:
    """Indented printing that nests with `with`: each `with indenter:` adds a level
    (four spaces), starting from `start_level` (-1: the first `with` prints flush left).

    ```python
    with Indenter() as ind:
        ind.print("plan")  # not indented
        with ind:
            ind.print("step")  # indented one level
    ```
    """

    def __init__(self, start_level: int = -1):
        self.level = start_level

    def indent(self, text: str) -> str:
        """`text` with every line indented by `level` levels (none below 1)."""
        return textwrap.indent(text, "    " * max(self.level, 0))

    def print(self, text: str) -> None:
        print(self.indent(text))

    def __enter__(self) -> Indenter:
        self.level += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self.level -= 1


INDENT = Indenter(start_level=0)
"""A shared `Indenter` for nested printing across functions."""
