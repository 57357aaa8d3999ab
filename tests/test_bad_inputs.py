"""The bad-input catalogue (`tests/bad_inputs/`): every entry gets a clear jaxlinops error,
raised from jaxlinops (not from inside JAX), or under jit an error or NaN."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import bad_inputs
import jax
import numpy as np
import pytest
from bad_inputs import NaNOrError, Raises

CASES = [
    case
    for info in pkgutil.iter_modules(bad_inputs.__path__)
    for case in importlib.import_module(f"bad_inputs.{info.name}").CASES
]
RAISES = [c for c in CASES if isinstance(c, Raises)]
UNDER_JIT = [c for c in CASES if isinstance(c, NaNOrError)]
ROOT = Path(__file__).resolve().parents[1]
OUR_PACKAGES = (ROOT / "jaxlinops", ROOT / "interop")


def test_the_catalogue_is_large_and_its_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) >= 100, len(names)
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)


@pytest.mark.parametrize("case", RAISES, ids=lambda c: c.name)
def test_bad_input_raises_a_clear_error_from_jaxlinops(case: Raises):
    with pytest.raises(case.exc, match=case.match) as info:
        case.call()
    origin = Path(info.traceback[-1].path)
    ours = any(origin.resolve().is_relative_to(package) for package in OUR_PACKAGES)
    assert ours, f"raised from {origin}, not jaxlinops"


@pytest.mark.parametrize("case", UNDER_JIT, ids=lambda c: c.name)
def test_bad_input_under_jit_gives_an_error_or_nan(case: NaNOrError):
    try:
        out = jax.block_until_ready(case.call())
    except Exception as e:  # a runtime check (equinox.error_if) fired
        assert re.search(case.match, str(e)), str(e)
        return
    leaves = [np.asarray(x) for x in jax.tree.leaves(out)]
    assert any(np.isnan(x).any() for x in leaves if x.dtype.kind in "fc"), (
        "a plausible number instead of an error or NaN"
    )
