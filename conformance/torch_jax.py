"""The `torch` that torchlinops' tests import in JAX mode: torch, with JAX arrays for tensors.

Every torch function is torch's own, called through a thin wrapper: JAX arrays in its
arguments become tensors (copies), tensors in its result become JAX arrays, torch dtypes
become numpy dtypes. So `torch.randn(3, dtype=torch.complex64)` draws torch's numbers
and hands them over as a JAX array, `torch.allclose(a, b)` applies torch's own rule to
two JAX arrays, and a test's own bookkeeping on arrays (`x.clone()`, `x.to(dtype)`,
`x.size(0)`, `x.numpy()`) behaves as on a tensor: `install_tensor_methods` gives JAX
arrays the tensor methods they lack, each again torch's own, on a copy. jaxlinops itself
only ever sees JAX arrays.

`torch.device("cpu")` is JAX's CPU device (`"cuda:N"` the N-th GPU where JAX has one).
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import torch as _torch

_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
_DTYPES: dict[Any, np.dtype] = {getattr(_torch, n): np.dtype(n) for n in _NAMES}
_DTYPES.update({_torch.complex64: np.dtype("complex64"), _torch.complex128: np.dtype("complex128")})
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}


def to_torch(value: Any) -> Any:
    """JAX arrays (anywhere in lists, tuples, dicts) as tensors, numpy dtypes as torch's."""
    if isinstance(value, jax.Array):
        return _torch.from_numpy(np.array(value))
    if isinstance(value, np.dtype) and value in _TORCH_DTYPES:
        return _TORCH_DTYPES[value]
    if isinstance(value, jax.Device):  # pyright: ignore[reportArgumentType]
        device: Any = value
        return _torch.device("cpu" if device.platform == "cpu" else f"cuda:{device.id}")
    if type(value) in (list, tuple):
        return type(value)([to_torch(v) for v in value])
    if type(value) is dict:
        return {k: to_torch(v) for k, v in value.items()}
    return value


def to_jax(value: Any) -> Any:
    """Tensors (anywhere in lists, tuples, dicts) as JAX arrays, torch dtypes as numpy's."""
    if isinstance(value, _torch.Tensor):
        return jnp.asarray(value.detach().cpu().resolve_conj().resolve_neg().numpy())
    if isinstance(value, _torch.dtype):
        return _DTYPES.get(value, value)
    if type(value) in (list, tuple):
        return type(value)([to_jax(v) for v in value])
    if type(value) is dict:
        return {k: to_jax(v) for k, v in value.items()}
    return value


def _wrap(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        return to_jax(fn(*to_torch(args), **to_torch(kwargs)))

    return call


def device(spec: Any = "cpu", index: int | None = None) -> Any:
    """`torch.device` as a JAX device: JAX's CPU, or its GPU number N for `"cuda:N"`."""
    name = str(spec) if index is None else f"{spec}:{index}"
    kind, _, number = name.partition(":")
    if kind == "cpu":
        return jax.devices("cpu")[0]
    try:
        return jax.devices("gpu")[int(number or 0)]
    except RuntimeError:  # no GPU in JAX: torch's own device, which jaxlinops refuses
        return _torch.device(name)


class _Proxy(types.ModuleType):
    """A torch module whose functions take and return JAX arrays."""

    def __init__(self, name: str, module: types.ModuleType):
        super().__init__(name)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._module, name)
        if attr is _torch.Tensor:
            return jax.Array
        if attr is _torch.device:
            return device
        if isinstance(attr, _torch.dtype):
            return _DTYPES.get(attr, attr)
        if isinstance(attr, types.ModuleType):
            return _proxy(f"{self.__name__}.{name}", attr)
        if isinstance(attr, type) or not callable(attr):
            return attr
        return _wrap(attr)


def _proxy(name: str, module: types.ModuleType) -> _Proxy:
    if name not in sys.modules:
        sys.modules[name] = _Proxy(name, module)
    return sys.modules[name]  # type: ignore[return-value]


class _Size(int):
    """An array's `size`: JAX's element count, and torch's `size(dim)` when called."""

    shape: tuple[int, ...]

    def __call__(self, dim: int | None = None) -> Any:
        return _torch.Size(self.shape) if dim is None else self.shape[dim]


def _size(x: jax.Array) -> _Size:
    size = _Size(int(np.prod(x.shape)))
    size.shape = tuple(x.shape)
    return size


def _tensor_method(x: jax.Array, name: str) -> Any:
    method = getattr(to_torch(x), name)
    if not callable(method):
        return to_jax(method)
    return _wrap(method)


def install_tensor_methods() -> None:
    """JAX arrays answer the tensor methods they lack (`clone`, `to`, `numpy`, `size(d)`,
    `abs`, ...) with torch's, on a copy: the bookkeeping of a torch test, no more.
    `data_ptr()` is the array's own buffer address."""
    array_type = type(jnp.zeros(()))
    array_type.size = property(_size)  # type: ignore[attr-defined]
    # the array's own buffer (torch's method would see a copy)
    array_type.data_ptr = lambda x: x.unsafe_buffer_pointer()  # type: ignore[attr-defined]
    array_type.__getattr__ = _tensor_method  # type: ignore[attr-defined]


_TOP = _Proxy(__name__, _torch)


def __getattr__(name: str) -> Any:
    """Module attributes not defined here: torch's, through the proxy."""
    return getattr(_TOP, name)


# `import torch.nn as nn`, `from torch.cuda import ...` (translated) find these modules.
for _sub in ("nn", "cuda", "testing", "fft", "linalg", "profiler"):
    globals()[_sub] = _proxy(f"{__name__}.{_sub}", getattr(_torch, _sub))
