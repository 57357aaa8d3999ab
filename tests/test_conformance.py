"""The conformance stage's translation and torch shim (conformance/): the translation
touches imports only, and the shim's functions are torch's own on JAX arrays."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "conformance"))

import run  # noqa: E402
import torch_jax  # noqa: E402

SOURCE = """import torch
import torch.nn as nn
from torch.testing import assert_close
import torchlinops.config as config
from torchlinops import Dense
from torchlinops.nameddim._shapes import N2K
x = torch.randn(3)
assert torch.allclose(Dense(w, "M N", "N", "M")(x), y)  # torchlinops.Dense
"""


def test_jax_mode_translates_imports_only():
    out = run.translate(SOURCE, "jax").splitlines()
    assert out[:6] == [
        "import torch_jax as torch",
        "import torch_jax.nn as nn",
        "from torch_jax.testing import assert_close",
        "import jaxlinops.config as config",
        "from jaxlinops import Dense",
        "from jaxlinops.nameddim import N2K",
    ]
    assert out[6:] == [line.replace("torchlinops", "jaxlinops") for line in SOURCE.splitlines()[6:]]
    assert run.translate(SOURCE, "torchlinops") == SOURCE


def test_shim_draws_torchs_numbers_and_applies_torchs_rules():
    import jax

    torch.manual_seed(3)
    want = torch.randn(4, dtype=torch.complex64).numpy()
    torch_jax.manual_seed(3)
    got = torch_jax.randn(4, dtype=torch_jax.complex64)
    assert isinstance(got, jax.Array) and got.dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(got), want)
    a = torch_jax.ones(3, dtype=torch_jax.float32)
    assert torch_jax.allclose(a, a + 1e-9)
    with pytest.raises(RuntimeError):  # torch refuses to compare different dtypes
        torch_jax.allclose(a, torch_jax.ones(3, dtype=torch_jax.float64))
    assert torch_jax.device("cpu") == jax.devices("cpu")[0]
