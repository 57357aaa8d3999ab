"""Operators as arguments and results of `jax.export`: every operator class registered for
pytree serialization in one place.

`jax.export.export(jax.jit(f))(A, y)` records the pytree structure of the arguments and
results (the `in_tree` and `out_tree` of the `Exported`); `Exported.serialize()` can write
a custom node only when its class is registered with
`jax.export.register_pytree_node_serialization`. Importing jaxlinops registers every
`equinox.Module` subclass defined in jaxlinops (operators, containers, adjoint wrappers,
plans and settings) and the solvers' result records; [`register_for_export`][] registers
user-defined classes.

An equinox Module's pytree auxdata holds its static fields (dims, sizes, strings, floats,
flags, ...). They are written as JSON, not pickle, so deserializing imports and runs
nothing: a small tagged encoding keeps tuples apart from lists and covers numpy scalars,
frozen dataclasses and enums registered here (e.g. a `BatchedLinop`'s `BatchDim`s),
meshes and devices (by device id: the receiving process needs the same devices).
Python functions (`SimpleLinop`'s `fn`) cannot be written: close over such an operator
instead of passing it as an argument, and its functions are traced into the exported
program.

Both sides need jax, jaxlinops (for these registrations; user classes need their own
registration) and flatbuffers (`pip install jaxlinops[export]`: jax serializes with it), but
the receiving side needs none of the code that built or ran the reconstruction.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
from typing import Any, TypeVar

import equinox as eqx
import jax
import numpy as np
from equinox._module._flatten import MISSING  # equinox's marker for "no wrapper fields"
from jax import export as jax_export
from jax.sharding import Mesh

# The subpackages that define operators, imported so that the walk below sees them all.
from . import _core, alg, functional, linops, sharding, testing  # noqa: F401

T = TypeVar("T", bound=type)

_PACKAGE = __name__.split(".")[0]
_FORMAT = 1  # bumped when the encoding changes incompatibly
# frozen dataclasses and enums that static fields may hold, by serialized name
_VALUE_CLASSES: dict[str, type] = {}
# pytree node classes registered with jax.export (by this module)
_NODES: set[type] = set()


def register_for_export(cls: T) -> T:
    """Register `cls` for `jax.export` serialization and return it (usable as a decorator).

    - an `equinox.Module` subclass (a user-defined operator): its pytree node, with its
      static fields written as JSON;
    - a frozen dataclass or an `enum.Enum` that a static field holds;
    - a `typing.NamedTuple` that an exported function returns.

    Classes defined in jaxlinops are registered when jaxlinops is imported; registering a
    class twice does nothing. The deserializing process must register the same classes
    (it looks them up by name: `jaxlinops.<qualname>` for jaxlinops' own classes,
    `<module>.<qualname>` for others).
    """
    if not isinstance(cls, type):
        raise TypeError(
            f"`jaxlinops.register_for_export(cls)`: expected a class, got "
            f"{type(cls).__name__} {cls!r}."
        )
    _register(cls)
    return cls


def _register(cls: type) -> None:
    name = _serialized_name(cls)
    if cls in _NODES:
        return
    if issubclass(cls, eqx.Module):
        jax_export.register_pytree_node_serialization(
            cls,
            serialized_name=name,
            serialize_auxdata=lambda aux: _serialize_auxdata(cls, aux),
            deserialize_auxdata=lambda data: _deserialize_auxdata(cls, data),
        )
        _NODES.add(cls)
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        jax_export.register_namedtuple_serialization(cls, serialized_name=name)
        _NODES.add(cls)
    elif issubclass(cls, enum.Enum) or (
        dataclasses.is_dataclass(cls) and getattr(cls, "__dataclass_params__").frozen
    ):
        _VALUE_CLASSES[name] = cls
    else:
        raise TypeError(
            f"`jaxlinops.register_for_export(cls)`: expected an equinox.Module subclass, a "
            f"NamedTuple, a frozen dataclass or an Enum, got class {cls.__qualname__}."
        )


def _serialized_name(cls: type) -> str:
    if cls.__module__.split(".")[0] == _PACKAGE:
        return f"{_PACKAGE}.{cls.__qualname__}"  # stable when a class moves between modules
    return f"{cls.__module__}.{cls.__qualname__}"


def _static_names(cls: type) -> tuple[str, ...]:
    """The static fields of an equinox Module, in the order of its pytree auxdata."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("static", False))


def _serialize_auxdata(cls: type, aux: tuple) -> bytes:
    wrapper, *values = aux
    names = _static_names(cls)
    if wrapper is not MISSING:
        raise TypeError(
            f"jaxlinops export: this {cls.__qualname__} carries extra attributes besides "
            "its fields (a wrapped function?); it cannot be serialized."
        )
    fields = {
        name: _encode(value, f"{cls.__qualname__}.{name}") for name, value in zip(names, values)
    }
    return json.dumps({"format": _FORMAT, "fields": fields}, allow_nan=True).encode()


def _deserialize_auxdata(cls: type, data: bytes) -> tuple:
    payload = json.loads(data.decode())
    if payload.get("format") != _FORMAT:
        raise ValueError(
            f"jaxlinops export: {cls.__qualname__} was serialized in format "
            f"{payload.get('format')!r}; this jaxlinops reads format {_FORMAT}."
        )
    fields, names = payload["fields"], _static_names(cls)
    if tuple(fields) != names:
        raise ValueError(
            f"jaxlinops export: {cls.__qualname__} was serialized with the static fields "
            f"{tuple(fields)}, this jaxlinops has {names}: export and load with the same "
            "jaxlinops version."
        )
    return (MISSING, *(_decode(fields[name]) for name in names))


def _encode(value: Any, where: str) -> Any:
    """`value` as JSON data: tuples as arrays, anything else JSON lacks as a tagged object
    `{"!tag": ...}`."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) is tuple:
        return [_encode(v, where) for v in value]
    if value is MISSING:
        return {"!missing": None}
    if isinstance(value, jax.Device):
        return {"!device": [value.platform, value.id]}
    if isinstance(value, np.generic):
        return {"!numpy": [value.dtype.str, value.item()]}
    if isinstance(value, enum.Enum) and _registered(type(value), where):
        return {"!enum": [_serialized_name(type(value)), value.name]}
    if dataclasses.is_dataclass(value) and _registered(type(value), where):
        fields = {f.name: _encode(getattr(value, f.name), where) for f in dataclasses.fields(value)}
        return {"!dataclass": [_serialized_name(type(value)), fields]}
    if isinstance(value, Mesh):
        return {
            "!mesh": {
                "shape": list(value.devices.shape),
                "axis_names": list(value.axis_names),
                "axis_types": [t.name for t in value.axis_types],
                "devices": [_encode(d, where) for d in value.devices.flat],
            }
        }
    raise TypeError(
        f"jaxlinops export: cannot serialize the static field `{where}`, a "
        f"{type(value).__qualname__} ({value!r}). "
        + (
            "A Python function cannot be serialized: close over this operator in the "
            "exported function instead of passing it as an argument or returning it."
            if callable(value)
            else "Static fields may hold None, bool, int, float, str, tuples, numpy "
            "scalars, meshes, devices, and frozen dataclasses and enums registered with "
            "`jaxlinops.register_for_export`."
        )
    )


def _registered(cls: type, where: str) -> bool:
    if _VALUE_CLASSES.get(_serialized_name(cls)) is not cls:
        raise TypeError(
            f"jaxlinops export: the static field `{where}` holds a {cls.__qualname__}, which "
            "is not registered: call `jaxlinops.register_for_export` on its class first."
        )
    return True


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return tuple(_decode(v) for v in data)
    if not isinstance(data, dict):
        return data
    ((tag, body),) = data.items()
    if tag == "!missing":
        return MISSING
    if tag == "!numpy":
        dtype, item = body
        return np.dtype(dtype).type(item)
    if tag == "!enum":
        return _value_class(body[0])[body[1]]
    if tag == "!dataclass":
        name, fields = body
        return _value_class(name)(**{k: _decode(v) for k, v in fields.items()})
    if tag == "!mesh":
        from jax.sharding import AxisType

        devices = np.array([_decode(d) for d in body["devices"]], dtype=object)
        return Mesh(
            devices.reshape(body["shape"]),
            tuple(body["axis_names"]),
            axis_types=tuple(AxisType[t] for t in body["axis_types"]),
        )
    if tag == "!device":
        return _device(*body)
    raise ValueError(f"jaxlinops export: unknown tag {tag!r} in serialized static fields.")


def _value_class(name: str) -> Any:
    if name not in _VALUE_CLASSES:
        raise ValueError(
            f"jaxlinops export: the serialized operator holds a {name}, which is not "
            "registered in this process: call `jaxlinops.register_for_export` on its class "
            "before deserializing."
        )
    return _VALUE_CLASSES[name]


def _device(platform: str, device_id: int) -> Any:
    for device in jax.devices(platform):
        if device.id == device_id:
            return device
    raise ValueError(
        f"jaxlinops export: the serialized operator names {platform} device {device_id}, "
        f"which this process lacks (it has {jax.devices(platform)})."
    )


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _register_package() -> None:
    """Register jaxlinops' own Modules, the result NamedTuples of `jaxlinops.alg`, and
    every frozen dataclass and enum defined in jaxlinops (any may sit in a static field):
    found by walking the package's modules, so a new one needs no entry here."""
    modules = [c for c in _subclasses(eqx.Module) if _serialized_name(c).startswith(_PACKAGE)]
    results = [
        v
        for v in vars(alg).values()
        if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, "_fields")
    ]
    values = [
        v
        for name, module in list(sys.modules.items())
        if name.split(".")[0] == _PACKAGE
        for v in vars(module).values()
        if isinstance(v, type) and v.__module__ == name and _is_value_class(v)
    ]
    for cls in dict.fromkeys([*modules, *results, *values]):
        register_for_export(cls)


def _is_value_class(cls: type) -> bool:
    """A frozen dataclass (not a Module) or an enum: a value a static field may hold."""
    if issubclass(cls, eqx.Module):
        return False
    frozen = dataclasses.is_dataclass(cls) and getattr(cls, "__dataclass_params__").frozen
    return frozen or issubclass(cls, enum.Enum)


_register_package()
