"""Global settings of jaxlinops: set them (`jaxlinops.config.progress = False`) or change
them for a block with `with jaxlinops.config.using(progress=False): ...`.

jaxlinops' own settings:

- `nufft_backend` (default `"auto"`): the backend of a `NUFFT` (and `nufft_plan`) built
  without one: `"auto"`, `"jax"`, `"pallas"` or `"finufft"` (see
  `jaxlinops.functional.nufft_plan`); `"auto"` picks `"jax"` or, on a CPU where
  jax-finufft is installed, `"finufft"` where a cost model predicts it faster (Pallas is
  opt-in).
- `log_device_transfers` (default False): when True, building a batched operator logs its
  plan (which tiles each device holds, the collectives it uses) and each compiled
  application logs the bytes it moves, on the `"jaxlinops"` logger at INFO level.
  (torchlinops' default is True, where it logs CUDA transfers.)
- `progress` (default None): progress bars of the solvers (and other long loops): True
  shows them, False hides them, None shows them when the output is a terminal or a
  notebook.

torchlinops' settings, accepted so that its code runs; none changes a result here:

- `reduce_identity_in_normal` (default True): torchlinops drops an `Identity` inner
  operator from `A.normal(inner)`. jaxlinops always absorbs it ($A^H I A = A^H A$), so
  False only changes how torchlinops prints the normal, never its value.
- `shape_inference` (default False): torchlinops resolves `...`/`()` wildcards between the
  operators of a `Chain` or `Add` only when True. jaxlinops always does, and raises on
  shapes that do not match either way.
- `cache_adjoint_normal` (default True), `cache_nufft_parameters` (default False): caches
  of torchlinops' mutable operators. jaxlinops operators are immutable pytrees; `A.H` and
  `A.N` are built on access, and a NUFFT's plan is computed once when it is built.
- `log_cuda_events` (default False): torchlinops' CUDA event log; JAX schedules device
  work itself, so there is nothing to log.
"""

from __future__ import annotations

import sys

nufft_backend: str = "auto"
log_device_transfers: bool = False
progress: bool | None = None
reduce_identity_in_normal: bool = True
shape_inference: bool = False
cache_adjoint_normal: bool = True
cache_nufft_parameters: bool = False
log_cuda_events: bool = False

_BOOLS = (
    "log_device_transfers",
    "reduce_identity_in_normal",
    "shape_inference",
    "cache_adjoint_normal",
    "cache_nufft_parameters",
    "log_cuda_events",
)
VALID_KEYS = frozenset(_BOOLS + ("nufft_backend", "progress"))


class ConfigContext:
    """Settings changed for the duration of a `with` block (see [`using`][]); the names
    and values are checked when it is made."""

    VALID_KEYS = VALID_KEYS

    def __init__(self, **settings: object):
        for key, value in settings.items():
            _check(key, value)
        self._changes = settings
        self._saved: list[dict[str, object]] = []

    def __enter__(self) -> ConfigContext:
        module = sys.modules[__name__]
        self._saved.append({key: getattr(module, key) for key in self._changes})
        for key, value in self._changes.items():
            setattr(module, key, value)
        return self

    def __exit__(self, *exc: object) -> None:
        for key, value in self._saved.pop().items():
            setattr(sys.modules[__name__], key, value)


def using(**settings: object) -> ConfigContext:
    """Change settings for the duration of a `with` block, then restore them (also when
    the block raises): `with config.using(progress=False, nufft_backend="jax"): ...`.

    An unknown name raises a ValueError listing the valid ones; a value of the wrong type
    (not a bool for the flags, not a str for `nufft_backend`, not a bool or None for
    `progress`) a TypeError.
    """
    return ConfigContext(**settings)


def inner_not_relevant(inner: object) -> bool:
    """torchlinops' test of whether `A.normal(inner)` may ignore `inner`: None, or an
    `Identity` while `reduce_identity_in_normal` is set."""
    from ._core import Identity  # at call time: config sits below the core (tests/test_layers.py)

    return inner is None or (isinstance(inner, Identity) and reduce_identity_in_normal)


def _check(key: str, value: object) -> None:
    if key not in VALID_KEYS:
        raise ValueError(
            f"`config.using`: Invalid config key {key!r}; valid settings: {sorted(VALID_KEYS)}."
        )
    if key == "nufft_backend":
        ok = isinstance(value, str)
    elif key == "progress":
        ok = value is None or isinstance(value, bool)
    else:
        ok = isinstance(value, bool)
    if not ok:
        expected = {"nufft_backend": "a str", "progress": "a bool or None"}.get(key, "a bool")
        raise TypeError(
            f"`config.using({key}=...)` expects {expected}; got {type(value).__name__} {value!r}."
        )
