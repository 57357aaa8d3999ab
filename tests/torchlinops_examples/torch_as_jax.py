"""The `torch` that a torchlinops example sees when it is run against jaxlinops.

`rewrite` turns `import torch` into `import torchlinops_examples.torch_as_jax as torch`
(and `torchlinops` into `jaxlinops`), so the example's array creation lands here: each
function returns a JAX array. Random arrays are drawn from torch's generator when torch
is installed, so the torch run and the JAX run of an example see the same numbers and
their printed values can be compared; the arithmetic is jax.numpy's. Only array creation
and elementwise math are provided: an example that reaches for another torch API fails,
which is the point.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

try:
    import torch as _torch
except ImportError:  # pragma: no cover - the conformance tests need torch
    _torch = None

float32, float64 = jnp.float32, jnp.float64
complex64, complex128 = jnp.complex64, jnp.complex128
int64, int32, bool = jnp.int64, jnp.int32, jnp.bool_  # noqa: A001 - torch's names
float, cfloat, long = jnp.float32, jnp.complex64, jnp.int64  # noqa: A001
pi = np.pi
Tensor = jnp.ndarray


def _shape(size) -> tuple[int, ...]:
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


# Without torch (the Python 3.12 CI stage) the draws come from numpy: the examples then
# run on jaxlinops alone, with nothing to compare against.
_rng = np.random.default_rng(0)


def _from_torch(name: str, *size, dtype=jnp.float32, **kwargs):
    """A torch random draw (same generator state as the torch run), as a JAX array."""
    if _torch is None:
        return _from_numpy(name, _shape(size), jnp.dtype(dtype))
    tdtype = getattr(_torch, jnp.dtype(dtype).name)  # a scalar type or a dtype (`x.dtype`)
    return jnp.asarray(getattr(_torch, name)(*_shape(size), dtype=tdtype, **kwargs).numpy())


def _from_numpy(name: str, shape: tuple[int, ...], dtype: np.dtype) -> jax.Array:
    """torch's `randn`/`rand` distributions drawn with numpy (complex: real and imaginary
    parts of variance 1/2 each, as torch)."""
    draw = _rng.standard_normal if name == "randn" else _rng.random
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return jnp.asarray((draw(shape) + 1j * draw(shape)) / np.sqrt(2), dtype)
    return jnp.asarray(draw(shape), dtype)


def manual_seed(seed: int):
    """Seed torch's generator (numpy's without torch), which the draws come from."""
    global _rng
    if _torch is None:
        _rng = np.random.default_rng(seed)
        return None
    return _torch.manual_seed(seed)


def randn(*size, dtype=jnp.float32, **_device):
    return _from_torch("randn", *size, dtype=dtype)


def rand(*size, dtype=jnp.float32, **_device):
    return _from_torch("rand", *size, dtype=dtype)


def randperm(n, **_device):
    if _torch is None:
        return jnp.asarray(_rng.permutation(n))
    return jnp.asarray(_torch.randperm(n).numpy())


def randint(low, high, size, **_device):
    if _torch is None:
        return jnp.asarray(_rng.integers(low, high, tuple(size)))
    return jnp.asarray(_torch.randint(low, high, tuple(size)).numpy())


def randn_like(x):
    return randn(*x.shape, dtype=x.dtype)


def tensor(data, dtype=None, **_device):
    """`torch.tensor`: Python floats become float32 and ints int64, as in torch."""
    array = np.asarray(data)
    if dtype is None and array.dtype == np.float64:
        dtype = jnp.float32
    if dtype is None and array.dtype == np.complex128:
        dtype = jnp.complex64
    return jnp.asarray(array, dtype=dtype)


def _creation(fn):
    def create(*size, dtype=jnp.float32, **_device):
        return fn(_shape(size), dtype=dtype)

    return create


zeros, ones, empty = _creation(jnp.zeros), _creation(jnp.ones), _creation(jnp.zeros)


def arange(*args, dtype=None, **_device):
    return jnp.arange(*args, dtype=dtype)


def linspace(start, stop, steps, dtype=jnp.float32, **_device):
    return jnp.linspace(start, stop, steps, dtype=dtype)


def zeros_like(x, dtype=None):
    return jnp.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None):
    return jnp.ones_like(x, dtype=dtype)


empty_like = zeros_like


def complex(real, imag):  # noqa: A001 - torch's name
    return jax_complex(real, imag)


def jax_complex(real, imag):
    return real + 1j * imag


def meshgrid(*arrays, indexing="ij"):
    return jnp.meshgrid(*arrays, indexing=indexing)


def norm(x, *args, **kwargs):
    return jnp.linalg.norm(x.ravel() if not args and not kwargs else x, *args, **kwargs)


def allclose(a, b, rtol=1e-5, atol=1e-8):
    return bool(jnp.allclose(a, b, rtol=rtol, atol=atol))


def max(x, *args, **kwargs):  # noqa: A001 - torch's name
    return jnp.max(x, *args, **kwargs)


abs, exp, sqrt, sin, cos, log, mean, conj, stack, round = (  # noqa: A001
    jnp.abs,
    jnp.exp,
    jnp.sqrt,
    jnp.sin,
    jnp.cos,
    jnp.log,
    jnp.mean,
    jnp.conj,
    jnp.stack,
    jnp.round,
)


class linalg:  # noqa: N801 - the `torch.linalg` namespace
    vector_norm = staticmethod(norm)
    norm = staticmethod(norm)


class Size(tuple):
    """`torch.Size`: a tuple."""


# Source rewrites, in order: import lines first, then what remains of the torch names.
REWRITES = (
    (r"^(\s*)import torch as (\w+)\s*$", r"\1import torchlinops_examples.torch_as_jax as \2"),
    (r"^(\s*)import torch\s*$", r"\1import torchlinops_examples.torch_as_jax as torch"),
    (r"^(\s*)from torch import ", r"\1from torchlinops_examples.torch_as_jax import "),
    (r"\btorchlinops\b", "jaxlinops"),
)


def rewrite(source: str) -> str:
    """`source` with its torch and torchlinops imports pointed at this shim and jaxlinops."""
    for pattern, replacement in REWRITES:
        source = re.sub(pattern, replacement, source, flags=re.MULTILINE)
    return source
