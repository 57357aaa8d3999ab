"""The torch-facing mirror of jaxlinops: every name, with torch tensors in and out.

`facade(obj)` turns a jaxlinops object into its torch-facing counterpart:

- an operator class becomes a class of the same name whose constructor takes torch
  tensors (converted by `to_jax_side`, zero-copy through DLPack) and returns a
  `TorchNamedLinop`; `isinstance(A, Dense)` holds for a torch-facing `Dense`;
- an operator becomes a `TorchNamedLinop`: a `torch.nn.Module` whose forward is the
  operator on torch tensors with torch autograd (`interop.torch_linop`), and whose other
  attributes (`H`, `N`, `ishape`, `split`, `weight`, ...) are the operator's, converted;
- a function takes torch tensors and returns them (`functional.nufft`, `utils.cfftn`,
  `create_batched_linop`, ...); a module is mirrored the same way (`_Mirror`);
- a JAX array becomes a torch tensor; other values (shapes, dims, specs) pass unchanged.

jaxlinops' modules without arrays (`config`, `nameddim`) are mirrored as they are: their
settings are jaxlinops' own.
"""

from __future__ import annotations

import enum
import functools
import importlib
import importlib.abc
import importlib.util
import sys
import types
import weakref
from typing import Any

import jax
import numpy as np
import torch
from jax.core import Tracer

import jaxlinops
from jaxlinops import NamedLinop

from .._linop import torch_linop
from .._tensors import to_jax, to_torch

PREFIX = "interop.torchlinops"
_AS_THEY_ARE = ("jaxlinops.config", "jaxlinops.nameddim")
_NAMES = "bool int8 int16 int32 int64 uint8 float16 float32 float64 complex64 complex128"
_DTYPES = {getattr(torch, n): np.dtype(n) for n in _NAMES.split()}


def to_jax_side(value: Any) -> Any:
    """Torch tensors, dtypes and devices (in lists, tuples, dicts) as JAX's; torch-facing
    operators as their jaxlinops operators."""
    if isinstance(value, torch.Tensor):
        return to_jax(value)
    if isinstance(value, TorchNamedLinop):
        return value.linop
    if isinstance(value, _Facing):
        return value.target
    if isinstance(value, _CALLBACKS):  # a torch function jaxlinops calls back: reduce_fn
        return _callback(value)
    if isinstance(value, torch.dtype):
        return _DTYPES.get(value, value)
    if isinstance(value, torch.device):
        return _jax_device(value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.vectorize(to_jax_side, otypes=[object])(value)
    if type(value) in (list, tuple):
        return type(value)([to_jax_side(v) for v in value])
    if type(value) is dict:
        return {k: to_jax_side(v) for k, v in value.items()}
    return value


# An object faces torch through one wrapper while that wrapper lives (a shared child stays
# shared, `I.H is I` for an identity, a fluent method returns its own plan): id(object) ->
# a weak reference to its wrapper, which holds the object, so that an id in this table is
# not reused while its entry lives.
_FACES: dict[int, weakref.ref] = {}


def _face(target: Any) -> Any:
    """The torch-facing wrapper of an operator (`TorchNamedLinop`) or of another object
    whose class takes operators and devices (`_Facing`), the same one every time."""
    key = id(target)
    ref = _FACES.get(key)
    face = None if ref is None else ref()
    if face is None:
        face = TorchNamedLinop(target) if isinstance(target, NamedLinop) else _Facing(target)

        def forget(dead: weakref.ref) -> None:
            if _FACES.get(key) is dead:
                del _FACES[key]

        _FACES[key] = weakref.ref(face, forget)
    return face


def to_torch_side(value: Any) -> Any:
    """JAX arrays (in lists, tuples, dicts) as torch tensors, operators and splitting
    plans as their torch-facing wrappers (`_face`)."""
    if isinstance(value, jax.Array):
        return to_torch(value)
    if isinstance(value, NamedLinop) or _faces(type(value)):
        return _face(value)
    if isinstance(value, jax.Device):  # pyright: ignore[reportArgumentType]
        device: Any = value
        return torch.device("cpu" if device.platform == "cpu" else f"cuda:{device.id}")
    if isinstance(value, np.ndarray) and value.dtype == object:  # operators by tile
        return np.vectorize(to_torch_side, otypes=[object])(value)
    if type(value) in (list, tuple):
        return type(value)([to_torch_side(v) for v in value])
    if type(value) is dict:
        return {k: to_torch_side(v) for k, v in value.items()}
    return value


_CALLBACKS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _callback(fn: Any) -> Any:
    """A torch-side function as jaxlinops calls it: JAX arrays in, JAX arrays out. Inside
    a JAX trace (every torch-facing operator runs compiled) it runs on the host through
    `jax.pure_callback` (`_on_host`)."""

    @functools.wraps(fn)
    def on_arrays(*args, **kwargs):
        if any(isinstance(v, Tracer) for v in jax.tree.leaves((args, kwargs))):
            return _on_host(fn, args, kwargs)
        return to_jax_side(fn(*to_torch_side(args), **to_torch_side(kwargs)))

    return on_arrays


def _on_host(fn: Any, args: tuple, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` for a torch function `fn` called from a JAX trace: a
    `jax.pure_callback` that hands it the arrays as CPU tensors. The shapes and dtypes of
    its results are those of one call on zeros of the arrays' shapes and dtypes, at trace
    time. Batched (`vmap`), it is called once per element."""
    leaves, tree = jax.tree.flatten((args, kwargs))
    at = [i for i, v in enumerate(leaves) if isinstance(v, jax.Array)]

    def call(*arrays):
        given = list(leaves)
        for i, a in zip(at, arrays):
            given[i] = torch.from_numpy(np.array(a))
        a, k = jax.tree.unflatten(tree, given)
        out = fn(*a, **k)
        return jax.tree.map(lambda t: t.detach().cpu().resolve_conj().numpy(), out)

    zeros = [np.zeros(leaves[i].shape, leaves[i].dtype) for i in at]
    result = jax.tree.map(lambda r: jax.ShapeDtypeStruct(r.shape, r.dtype), call(*zeros))
    return jax.pure_callback(call, result, *(leaves[i] for i in at), vmap_method="sequential")


def _jax_device(device: torch.device) -> Any:
    """JAX's CPU for torch's, JAX's GPU `n` for `cuda:n`; a device JAX lacks stays torch's
    (jaxlinops then names it in its error)."""
    platform = "cpu" if device.type == "cpu" else "gpu"
    try:
        return jax.devices(platform)[device.index or 0]
    except (RuntimeError, IndexError):
        return device


def facade(obj: Any) -> Any:
    """The torch-facing counterpart of a jaxlinops object (see the module docstring)."""
    if isinstance(obj, NamedLinop):
        return to_torch_side(obj)
    if isinstance(obj, type) and issubclass(obj, NamedLinop):
        return _facing_class(obj)
    if obj is jaxlinops.testing.BaseNamedLinopTests:
        from ._testing import BaseNamedLinopTests

        return BaseNamedLinopTests
    if isinstance(obj, types.ModuleType):
        if obj.__name__ != "jaxlinops" and not obj.__name__.startswith("jaxlinops."):
            return obj  # numpy, jax, ...: not mirrored
        return importlib.import_module(PREFIX + obj.__name__.removeprefix("jaxlinops"))
    if isinstance(obj, type) and _faces(obj):
        return _facing_class(obj)
    if isinstance(obj, type):
        return obj
    if callable(obj):
        return _function(obj)
    return to_torch_side(obj)


def _function(fn: Any) -> Any:
    @functools.wraps(fn)
    def on_tensors(*args, **kwargs):
        return to_torch_side(fn(*to_jax_side(args), **to_jax_side(kwargs)))

    return on_tensors


# jaxlinops' classes whose objects take or hold operators and devices: splitting plans
_FACING = ("jaxlinops.sharding", "jaxlinops.linops._device")


def _faces(cls: type) -> bool:
    """Whether objects of `cls` face torch through a `_Facing`: a class of `_FACING`
    (not an enum, an exception or a record of results)."""
    plain = not issubclass(cls, (enum.Enum, BaseException, tuple))
    return cls.__module__.startswith(_FACING) and plain


class _Facing:
    """A jaxlinops object (a `TilingStrategy`, a `BatchSpec`) facing torch: its methods
    take and return torch tensors and torch-facing operators; `target` is the object."""

    def __init__(self, target: Any):
        object.__setattr__(self, "target", target)

    def __getattr__(self, name: str) -> Any:
        return facade(getattr(self.target, name))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.target, name, to_jax_side(value))

    def __repr__(self) -> str:
        return repr(self.target)

    def __eq__(self, other: object) -> bool:
        return self.target == to_jax_side(other)

    __hash__ = None  # type: ignore[assignment]


class _FacingClass(type):
    """The metaclass of the torch-facing classes: calling one builds the jaxlinops object
    from converted arguments (an operator comes back as a `TorchNamedLinop`, another
    object as a `_Facing`); `isinstance` looks through both; class attributes (static
    methods) are the jaxlinops class's."""

    target_class: type

    def __call__(cls, *args, **kwargs) -> Any:
        target = cls.target_class(*to_jax_side(args), **to_jax_side(kwargs))
        return _face(target)

    def __instancecheck__(cls, obj: Any) -> bool:
        if isinstance(obj, (TorchNamedLinop, _Facing)):
            return isinstance(to_jax_side(obj), cls.target_class)
        return False

    def __getattr__(cls, name: str) -> Any:
        return facade(getattr(cls.target_class, name))


_CLASSES: dict[type, type] = {}  # jaxlinops class -> its torch-facing class, made once


def _facing_class(target_class: type) -> type:
    if target_class not in _CLASSES:
        namespace = {"target_class": target_class, "__doc__": target_class.__doc__}
        _CLASSES[target_class] = _FacingClass(
            target_class.__name__, (), {**namespace, "__module__": PREFIX}
        )
    return _CLASSES[target_class]


class TorchNamedLinop(torch.nn.Module):
    """A jaxlinops operator as a torch module: `A(x)` on a torch tensor with torch
    autograd; `@`, `+`, `-`, `*`, `.H`, `.N`, `split`, `len`, indexing and every other
    attribute of the operator, returning torch tensors and torch-facing operators.

    `linop` is the jaxlinops operator. Its arrays become the module's parameters on the
    first call (copies, as `interop.torch_linop` makes them), frozen as torchlinops
    freezes its operators' arrays (`requires_grad=False`); `A.module.requires_grad_()`
    trains them."""

    linop: NamedLinop

    def __init__(self, linop: NamedLinop):
        super().__init__()
        self.linop = linop

    def forward(self, x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return to_torch_side(self.linop(to_jax_side(x)))
        if "module" not in self._modules:
            self.module = torch_linop(self.linop).requires_grad_(False)
        return self.module(x)

    def to(self, *args: Any, memory_aware: bool = False, **kwargs: Any) -> Any:
        """torch's `Module.to`, with torchlinops' `memory_aware` accepted (no effect)."""
        del memory_aware
        return super().to(*args, **kwargs)

    def split(first: Any, *rest: Any) -> Any:  # noqa: N805 - torchlinops' static method
        """`A.split(tile)`, and torchlinops' static forms `A.split(A, tile)` and
        `type(A).split(A, tile)`."""
        return to_torch_side(to_jax_side(first).split(*to_jax_side(rest)))

    def adj_split(first: Any, *rest: Any) -> Any:  # noqa: N805 - as `split`
        """The adjoint's tile, in the forms of `split`."""
        return to_torch_side(to_jax_side(first).adj_split(*to_jax_side(rest)))

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # parameters and submodules
        except AttributeError:
            if name == "linop" or "linop" not in self.__dict__:
                raise
        return facade(getattr(self.linop, name))

    def __repr__(self) -> str:
        return repr(self.linop)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TorchNamedLinop) and self.linop == other.linop

    __hash__ = torch.nn.Module.__hash__

    def __len__(self) -> int:
        return len(self.linop)  # pyright: ignore[reportArgumentType]

    def __getitem__(self, key: Any) -> Any:
        return to_torch_side(self.linop[key])  # pyright: ignore[reportIndexIssue]

    def __iter__(self):
        return iter(to_torch_side(list(self.linop)))  # pyright: ignore[reportArgumentType]

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, torch.Tensor):
            return self(other)
        return to_torch_side(self.linop @ to_jax_side(other))

    def __rmatmul__(self, other: Any) -> Any:
        return to_torch_side(to_jax_side(other) @ self.linop)

    def __add__(self, other: Any) -> Any:
        return to_torch_side(self.linop + to_jax_side(other))

    def __radd__(self, other: Any) -> Any:
        return to_torch_side(to_jax_side(other) + self.linop)

    def __sub__(self, other: Any) -> Any:
        return to_torch_side(self.linop - to_jax_side(other))

    def __rsub__(self, other: Any) -> Any:
        return to_torch_side(to_jax_side(other) - self.linop)

    def __mul__(self, other: Any) -> Any:
        return to_torch_side(self.linop * to_jax_side(other))

    def __rmul__(self, other: Any) -> Any:
        return to_torch_side(to_jax_side(other) * self.linop)

    def __truediv__(self, other: Any) -> Any:
        return to_torch_side(self.linop / to_jax_side(other))

    def __neg__(self) -> Any:
        return to_torch_side(-self.linop)

    def __pow__(self, other: Any) -> Any:
        return to_torch_side(self.linop**other)  # pyright: ignore[reportOperatorIssue]


class _Mirror(types.ModuleType):
    """`interop.torchlinops.<path>`: the module `jaxlinops.<path>` with torch-facing
    attributes (or its own, for the modules without arrays, whose settings it also
    sets)."""

    def __init__(self, name: str, target: types.ModuleType):
        super().__init__(name, target.__doc__)
        object.__setattr__(self, "_target", target)
        if hasattr(target, "__path__"):
            self.__path__ = []
        if hasattr(target, "__all__"):
            self.__all__ = list(target.__all__)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        return value if self._target.__name__.startswith(_AS_THEY_ARE) else facade(value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") or not hasattr(self._target, name):
            object.__setattr__(self, name, value)
        else:
            setattr(self._target, name, value)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `interop.torchlinops.<path>` as the `_Mirror` of `jaxlinops.<path>`."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith(PREFIX + "."):
            return None
        source = "jaxlinops" + fullname.removeprefix(PREFIX)
        if importlib.util.find_spec(source) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> types.ModuleType:
        source = importlib.import_module("jaxlinops" + spec.name.removeprefix(PREFIX))
        return _Mirror(spec.name, source)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: a mirror's attributes come from its jaxlinops module."""


def install() -> None:
    """Put the finder of `interop.torchlinops.<path>` on `sys.meta_path` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
