"""Running one docs-page scenario on both libraries and comparing what it returns.

A scenario is a function `(L, T) -> dict`: `L` is `torchlinops` or `jaxlinops`, `T` its
array namespace (`torch`, or the `torch_as_jax` shim drawing the same random numbers).
`run_scenario` runs it on jaxlinops, then (where torchlinops is installed) on
torchlinops from the same seed, and compares the two dicts key by key through numpy:
arrays at float32 tolerance (rtol 1e-4, atol 1e-5: the shim's data are float32 and the
two libraries sum in different orders), dims by their names, other values by `==`. A
value wrapped in `Close(value, rtol)` is compared by relative norm instead: for results
of two different approximations (NUFFT kernels) or of iterative solvers.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass

import numpy as np

import jaxlinops
from torchlinops_examples import torch_as_jax

try:
    with warnings.catch_warnings():  # torch's own deprecation warnings on import
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch
        import torchlinops
except ImportError:  # the jaxlinops half still runs
    torch = torchlinops = None


@dataclass(frozen=True)
class Close:
    """`value`, to be compared by `‖got - expected‖ <= rtol ‖expected‖`."""

    value: object
    rtol: float


def sub(L, name: str):
    """`L`'s submodule `name` (`sub(L, "nameddim")`), as `from L.name import ...` sees it."""
    return importlib.import_module(f"{L.__name__}.{name}")


def is_jax(L) -> bool:
    """True for the jaxlinops run (for the replacement idioms of deliberate differences)."""
    return L is jaxlinops


def plain(value):
    """Numbers as numpy arrays, dims as their names, containers element by element."""
    if isinstance(value, Close):
        return Close(plain(value.value), value.rtol)
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if hasattr(value, "__array__") and not isinstance(value, (tuple, list)):
        return np.asarray(value)
    if isinstance(value, (tuple, list)):
        return tuple(plain(v) for v in value)
    if isinstance(value, (bool, int, float, complex)):
        return value
    return str(value)


def assert_same(got, expected, key: str) -> None:
    """`got` (jaxlinops) matches `expected` (torchlinops), as the module docstring says."""
    if isinstance(expected, Close):
        g, e = np.asarray(got.value), np.asarray(expected.value)
        assert g.shape == e.shape, (key, g.shape, e.shape)
        err = np.linalg.norm(g - e) / np.linalg.norm(e)
        assert err <= expected.rtol, f"{key}: relative error {err:.2e} > {expected.rtol}"
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), (key, got, expected)
        for g, e in zip(got, expected, strict=True):
            assert_same(g, e, key)
    elif isinstance(expected, np.ndarray):
        assert np.shape(got) == expected.shape, (key, np.shape(got), expected.shape)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5, err_msg=key)
    else:
        assert got == expected, (key, got, expected)


def run_scenario(scenario) -> None:
    """Run `scenario` on jaxlinops and, where installed, on torchlinops; compare."""
    torch_as_jax.manual_seed(0)
    got = {k: plain(v) for k, v in scenario(jaxlinops, torch_as_jax).items()}
    if torchlinops is None:
        return
    torch.manual_seed(0)
    expected = {k: plain(v) for k, v in scenario(torchlinops, torch).items()}
    assert got.keys() == expected.keys()
    for key in expected:
        assert_same(got[key], expected[key], key)
