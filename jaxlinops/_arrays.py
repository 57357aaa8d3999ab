"""Array helpers shared by all operators: conversion, dtype promotion, input checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import ArrayLike, DTypeLike

from ._dims import ELLIPSIS, Dims, fmt

# `jax.Device` for annotations: jaxlib ships no type stubs, so pyright cannot see the class
Device: TypeAlias = jax.Device  # pyright: ignore[reportInvalidTypeForm]


def promote(*arrays: ArrayLike) -> tuple[jax.Array, ...]:
    """Cast arrays to their common dtype under JAX's standard promotion rules.

    Operators that mix dtypes (a real weight applied to complex data) promote explicitly
    through this function, so code also runs under `jax_numpy_dtype_promotion="strict"`.
    """
    with jax.numpy_dtype_promotion("standard"):
        dtype = jnp.result_type(*arrays)
    return tuple(jnp.asarray(a).astype(dtype) for a in arrays)


def promote_inexact(name: str, *arrays: ArrayLike) -> tuple[jax.Array, ...]:
    """`promote`, refusing a common dtype that is an integer or bool.

    For operators that multiply and add (`Diagonal`, `Dense`, `Convolution`, overlap-add):
    in integers these overflow silently (an int8 product wraps around), and in bool a sum
    becomes a logical or. An integer weight applied to floating-point data is fine (the
    common dtype is floating point); an integer weight applied to integer data raises a
    TypeError naming the operator `name` and the dtypes.
    """
    out = promote(*arrays)
    if out and not jnp.issubdtype(out[0].dtype, jnp.inexact):
        got = ", ".join(str(jnp.asarray(a).dtype) for a in arrays)
        raise TypeError(
            f"`{name}` would compute in {out[0].dtype} (from dtypes {got}), where products "
            f"and sums overflow silently; cast the input to a floating-point dtype, e.g. "
            f"`x.astype(jnp.float32)`."
        )
    return out


def as_inexact(w: jax.Array) -> jax.Array:
    """`w` unchanged if floating point or complex; an integer or bool array cast to
    floating point (at least float32), so that products of weights (a Gram matrix,
    $|w|^2$, `w ** p`) cannot overflow."""
    if jnp.issubdtype(w.dtype, jnp.inexact):
        return w
    with jax.numpy_dtype_promotion("standard"):
        return w.astype(jnp.promote_types(w.dtype, jnp.float32))


_WIDE = tuple(np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128))


def _is_64bit(dtype: DTypeLike) -> bool:
    return np.dtype(dtype) in _WIDE


def as_device(device: object, what: str) -> Device:
    """`device` as a `jax.Device`: a `jax.Device`; anything with one as its `.device` (a
    `DeviceSpec`, an array); or a device string, `"cpu"`, `"gpu"`, `"tpu"` (JAX's first
    device of that platform) or `"<platform>:<n>"` (its `n`-th), torch's `"cuda"` naming
    JAX's `"gpu"`. A platform JAX does not have is a ValueError; `what` names the argument.
    """
    if isinstance(device, Device):
        return device
    if isinstance(getattr(device, "device", None), Device):
        return device.device  # pyright: ignore[reportAttributeAccessIssue]
    if not isinstance(device, str):
        raise TypeError(
            f"{what} expects a jax.Device, a DeviceSpec or a device string such as 'cpu' or "
            f"'gpu:0'; got {type(device).__name__} {device!r}."
        )
    platform, _, number = device.partition(":")
    platform = {"cuda": "gpu"}.get(platform, platform)
    if not number.isdigit() and number:
        raise ValueError(f"{what}: a device string is '<platform>:<n>'; got {device!r}.")
    try:
        found = jax.devices(platform)
    except RuntimeError as error:
        raise ValueError(f"{what}: JAX has no {platform!r} device for {device!r}.") from error
    index = int(number or 0)
    if index >= len(found):
        raise ValueError(f"{what}: JAX has {len(found)} {platform!r} device(s); got {device!r}.")
    return found[index]


def as_array(value: object, what: str) -> jax.Array:
    """Convert `value` to a JAX array, refusing a silent 64-bit -> 32-bit downcast of an
    array (a Python list of numbers, which declares no type, gets JAX's default types).

    `what` names the argument in error messages, e.g. "`Dense(weight=...)`".
    """
    if isinstance(value, jax.Array):
        return value
    if type(value).__module__.startswith("torch"):
        raise TypeError(
            f"{what} got a torch.Tensor; convert it with `interop.to_jax(t)` or wrap the "
            f"operator with `interop.torch_linop(A)`."
        )
    if isinstance(value, (bool, int, float, complex)):
        return jnp.asarray(value)
    try:
        arr = np.asarray(value)
    except Exception as e:  # pragma: no cover - numpy's own message is appended
        raise TypeError(f"{what} expects an array, got {type(value).__name__}.") from e
    if arr.dtype.kind not in "biufc":
        raise TypeError(
            f"{what} expects a numeric array, got {type(value).__name__} {value!r:.40} "
            f"(dtype {arr.dtype})."
        )
    if isinstance(value, (list, tuple)):  # Python numbers: JAX's default types, as jnp.asarray
        return jnp.asarray(value)
    # jax registers its flags at run time, so pyright cannot see `jax_enable_x64`
    if _is_64bit(arr.dtype) and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise ValueError(
            f"{what} got a {arr.dtype} array but 64-bit types are disabled in JAX, so it "
            f"would be silently downcast. Enable them with "
            f"`jax.config.update('jax_enable_x64', True)` or cast to 32 bits explicitly."
        )
    return jax.device_put(arr)  # jnp.asarray would compile a copy per shape (jax 0.10)


@jax.jit
def _all_finite(x: jax.Array) -> jax.Array:
    return jnp.all(jnp.isfinite(x))


def has_nonfinite(x: jax.Array) -> bool:
    """Whether a concrete array holds NaN or Inf (False for tracers, whose values are not
    known): one compiled reduction per shape."""
    if isinstance(x, Tracer):
        return False
    with jax.ensure_compile_time_eval():  # concrete even inside an outer jit
        return not bool(_all_finite(x))


_COMPUTABLE = tuple(
    np.dtype(t)
    for t in (jnp.bfloat16, np.float16, np.float32, np.float64, np.complex64, np.complex128)
)


def check_dtype(what: str, x: jax.Array) -> None:
    """Raise a TypeError naming `what` when `x` has a dtype the operators cannot compute
    in: bool, integers and the IEEE floating-point and complex types are accepted (float8
    and other narrow formats are not, as JAX cannot promote them)."""
    dtype = np.dtype(x.dtype)
    if dtype.kind in "biu" or dtype in _COMPUTABLE:
        return
    names = ", ".join(str(t) for t in _COMPUTABLE)
    raise TypeError(f"{what} got an array of dtype {dtype}; expected bool, an integer or {names}.")


def right_align(w: jax.Array, ndim: int) -> jax.Array:
    """Reshape `w` to `ndim` axes by adding leading singleton axes (numpy broadcasting)."""
    return w.reshape((1,) * (ndim - w.ndim) + w.shape)


def check_rank(name: str, shape: Dims, x: jax.Array, role: str = "input") -> None:
    """Raise if `x.ndim` cannot be laid out by `shape`."""
    core = len(shape) - (ELLIPSIS in shape)
    ok = x.ndim >= core if ELLIPSIS in shape else x.ndim == core
    if not ok:
        expected = f"at least {core}" if ELLIPSIS in shape else f"exactly {core}"
        raise ValueError(
            f"`{name}` received incompatible {role} of shape {tuple(x.shape)}: expected dims "
            f"{fmt(shape)} ({expected} axes)."
        )


def dim_sizes(shape: Dims, x_shape: tuple[int, ...]) -> dict[str, int]:
    """Map each concrete dim of `shape` to its size in an array of shape `x_shape`."""
    if ELLIPSIS not in shape:
        return dict(zip(shape, x_shape))
    i = shape.index(ELLIPSIS)
    tail = shape[i + 1 :]
    sizes = dict(zip(shape[:i], x_shape[:i]))
    sizes.update(zip(tail, x_shape[len(x_shape) - len(tail) :]))
    return sizes


def batch_shape_of(shape: Dims, x_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The sizes of the axes that `"..."` absorbs in an array of shape `x_shape`."""
    if ELLIPSIS not in shape:
        return ()
    i = shape.index(ELLIPSIS)
    return tuple(x_shape[i : len(x_shape) - (len(shape) - i - 1)])


def as_sizes(values: object, what: str, minimum: int | None = 0) -> tuple[int, ...]:
    """Convert a sequence of sizes to Python ints, refusing what would be truncated.

    Accepts Python and numpy integers and integral floats (`8.0`); refuses `8.7` with a
    ValueError, and a traced value, a bool or a non-number with a TypeError; the message
    names `what` (e.g. "`Pad(im_size=...)`") and the value received. Every size must be
    at least `minimum` (None: any integer, e.g. for an axis index).
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{what} expects a sequence of integer sizes; got {values!r}.")
    return tuple(as_size(v, what, minimum) for v in values)


def as_size(value: object, what: str, minimum: int | None = 0) -> int:
    """One size as a Python int; see `as_sizes`."""
    if isinstance(value, Tracer):
        raise TypeError(
            f"{what} needs concrete sizes known at trace time; got a traced value. Pass a "
            f"Python or numpy integer (sizes are static: they fix array shapes)."
        )
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating, np.ndarray, jax.Array)
    ):
        raise TypeError(f"{what} expects integer sizes; got {value!r} ({type(value).__name__}).")
    if np.ndim(value) != 0:
        raise TypeError(f"{what} expects integer sizes; got an array of shape {np.shape(value)}.")
    number = value.item() if isinstance(value, (np.generic, np.ndarray, jax.Array)) else value
    if isinstance(number, bool):
        raise TypeError(f"{what} expects integer sizes; got the boolean array {value!r}.")
    if isinstance(number, float) and not number.is_integer():
        raise ValueError(f"{what} expects integer sizes; got {value!r}, which is not integral.")
    if isinstance(number, complex):
        raise TypeError(f"{what} expects integer sizes; got the complex number {value!r}.")
    if minimum is not None and int(number) < minimum:
        raise ValueError(f"{what} expects sizes of at least {minimum}; got {value!r}.")
    return int(number)


def vary_alike(*arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The arrays, each typed as varying over every mesh axis that any of them varies over
    inside `jax.shard_map` (unchanged outside one): what custom calls and kernels whose
    outputs do not carry that type (jax-finufft's, `pallas_call`'s) need, so that their
    results and derivatives agree in type with the arrays around them."""
    axes = frozenset().union(*(_varying(a) for a in arrays))

    def vary(a: jax.Array) -> jax.Array:
        missing = tuple(sorted(axes - _varying(a)))
        return jax.lax.pcast(a, missing, to="varying") if missing else a

    return tuple(vary(a) for a in arrays)


def _varying(a: jax.Array) -> frozenset:
    """The mesh axes `a` varies over inside `jax.shard_map` (none outside)."""
    return jax.typeof(a).mat.varying
