"""Progress bars: tqdm when it is installed (`pip install jaxlinops[progress]`), for the
solvers, the benchmarks and long plan builds.

Whether a bar shows: the `progress` argument when it is True or False; else the global
`jaxlinops.config.progress` when it is True or False; else (None, the default) only in a
terminal (stderr is a tty) or a Jupyter/IPython kernel. Without tqdm no bar shows, and
nothing fails.

Two ways to drive a bar:

- from Python: `bar(total, desc, progress, tqdm_kwargs)` (a context manager: a tqdm bar
  or a do-nothing stand-in) or `iterate(iterable, desc, progress, ...)`;
- from compiled code: a `Tracker` (static, so it can sit in a jitted function's static
  arguments) reports each loop iteration with `jax.debug.callback`, so that the bar moves
  while a `lax.while_loop` runs inside `jax.jit`. The callback has no outputs: it leaves
  compilation, `vmap` (the callback then runs once per batch entry; the bar shows the
  furthest) and differentiation (callbacks carry no tangents) unchanged.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import threading
from collections.abc import Iterable, Iterator, Sized
from functools import partial
from typing import Any

import equinox as eqx
import jax
import numpy as np

from . import config


def tqdm_class() -> type | None:
    """`tqdm.auto.tqdm` (a notebook widget under Jupyter, text elsewhere) where ipywidgets
    is installed, plain text `tqdm.tqdm` where it is not (`tqdm.auto` would warn "IProgress
    not found" in a notebook), or None when tqdm is not installed."""
    try:
        import tqdm
    except ImportError:
        return None
    try:
        importlib.import_module("ipywidgets")  # optional: not a declared dependency
    except ImportError:
        return tqdm.tqdm
    from tqdm.auto import tqdm as auto

    return auto


def _interactive() -> bool:
    """Whether a person is likely watching: stderr is a terminal, or we run in a Jupyter
    or IPython kernel (whose stderr is no terminal, but shows bars)."""
    isatty = getattr(sys.stderr, "isatty", None)
    if isatty is not None and isatty():
        return True
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def enabled(progress: bool | None) -> bool:
    """Whether to show a bar: `progress` if given, else `jaxlinops.config.progress` if
    set, else only in a terminal or notebook; never without tqdm."""
    if progress is None:
        progress = getattr(config, "progress", None)
    if progress is None:
        progress = _interactive()
    return bool(progress) and tqdm_class() is not None


def _kwargs(desc: str, tqdm_kwargs: dict | None) -> dict:
    """tqdm's keyword arguments: ours (`desc`, `leave=False`), then the caller's."""
    return {"desc": desc, "leave": False, **(tqdm_kwargs or {})}


class _NoBar:
    """What `bar` gives when no bar shows: tqdm's methods, doing nothing."""

    n = 0

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, *args: object, **kwargs: object) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def bar(
    total: int | None, desc: str, progress: bool | None = None, tqdm_kwargs: dict | None = None
) -> Any:
    """A tqdm bar of `total` steps (use it as a context manager, or `close()` it), or a
    stand-in that does nothing when no bar shows (see `enabled`)."""
    return _open(total, _kwargs(desc, tqdm_kwargs)) if enabled(progress) else _NoBar()


def _open(total: int | None, kwargs: dict) -> Any:
    """A tqdm bar, or the stand-in where tqdm is not installed."""
    cls = tqdm_class()
    return _NoBar() if cls is None else cls(total=total, **kwargs)


def iterate(
    iterable: Iterable,
    desc: str,
    progress: bool | None = None,
    tqdm_kwargs: dict | None = None,
    total: int | None = None,
) -> Iterator:
    """`iterable`, with a bar that advances per item when one shows (see `enabled`)."""
    if total is None and isinstance(iterable, Sized):
        total = len(iterable)
    with bar(total, desc, progress, tqdm_kwargs) as b:
        for item in iterable:
            yield item
            b.update(1)


# bars of compiled loops, by (tracker, call site); used from the callbacks' host thread
_OPEN: dict[tuple, Any] = {}
_LOCK = threading.Lock()
_SITES = itertools.count()


class Tracker(eqx.Module):
    """A bar for a loop in compiled code, reported through `jax.debug.callback`.

    Static and hashable (a jitted function's cache hits for equal trackers): `total`
    steps, the bar's `desc`, and tqdm's keyword arguments as sorted items. Inside the
    traced function, `site()` numbers the call site once per trace; `step(site, k, **values)`
    inside the loop body moves the bar to step `k` (creating it at the first step of a
    run), and `finish(site, k)` after the loop closes it (its data dependence on the loop's
    result orders it after the last step).
    """

    total: int = eqx.field(static=True)
    desc: str = eqx.field(static=True)
    options: tuple = eqx.field(static=True)

    @staticmethod
    def create(total: int, desc: str, tqdm_kwargs: dict | None) -> Tracker:
        kwargs = _kwargs(desc, tqdm_kwargs)
        try:
            options = tuple(sorted(kwargs.items()))
            hash(options)
        except TypeError as error:
            raise TypeError(
                f"`tqdm_kwargs` must hold hashable values (they are compiled in); got "
                f"{tqdm_kwargs!r:.80}."
            ) from error
        return Tracker(total, desc, options)

    @staticmethod
    def site() -> int:
        return next(_SITES)

    def step(self, site: int, k: jax.Array, **values: jax.Array) -> None:
        jax.debug.callback(partial(_host_step, self, site), k, values)

    def finish(self, site: int, k: jax.Array) -> None:
        jax.debug.callback(partial(_host_finish, self, site), k)


def _host_step(tracker: Tracker, site: int, k: jax.Array, values: dict) -> None:
    key, n = (tracker, site), int(k)
    with _LOCK:
        b = _OPEN.get(key)
        if b is None:
            b = _OPEN[key] = _open(tracker.total, dict(tracker.options))
        if n > b.n:
            b.update(n - b.n)
        if values:
            b.set_postfix({name: float(np.max(v)) for name, v in values.items()})


def _host_finish(tracker: Tracker, site: int, k: jax.Array) -> None:
    del k  # only orders this callback after the loop
    with _LOCK:
        b = _OPEN.pop((tracker, site), None)
    if b is not None:
        b.close()
