"""The bad-input catalogue: each area of the library lists inputs it must refuse clearly.

Every module here defines `CASES`, a list of `Raises` (the call must raise `exc` from
jaxlinops or interop code, with a message matching `match`) and `NaNOrError` (under jit,
where Python checks cannot run: the result holds NaN, or the call raises a runtime error
whose message matches `match`). `tests/test_bad_inputs.py` runs them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Raises:
    """`call()` raises `exc` from jaxlinops or interop, its message matching `match`."""

    name: str
    call: Callable[[], object]
    exc: type[BaseException]
    match: str


@dataclasses.dataclass(frozen=True)
class NaNOrError:
    """`call()` (typically jitted) returns arrays holding NaN, or raises an error whose
    message matches `match` (e.g. `equinox.error_if`'s runtime error)."""

    name: str
    call: Callable[[], object]
    match: str
