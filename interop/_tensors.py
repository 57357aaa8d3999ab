"""Zero-copy tensor exchange between PyTorch and JAX through DLPack.

Both directions share the buffer when the layout allows it (contiguous, transposed or
row-sliced tensors; every float, complex, bool and integer dtype of both libraries). The
pitfalls are handled explicitly:

- a tensor that requires grad is detached (use `interop.torch_linop` to differentiate
  through an operator);
- lazy conjugate or negative bits are resolved (a copy);
- non-compact strides (column slices, `t[:, ::2]`, `t.real`, expanded stride-0 tensors)
  cannot be shared: the tensor is copied with `.contiguous()`;
- a buffer that is not 64-byte aligned (e.g. `t[1:]` of a 1-D tensor) is copied by JAX;
- 64-bit tensors (float64, complex128, int64, uint64) need `jax_enable_x64`: without it
  they are refused, never silently downcast;
- dtypes only one library has (torch's complex32, quantized and sub-byte dtypes; JAX's
  int4 or PRNG keys) and sparse or nested tensors are refused (a `TypeError`), never
  reinterpreted;
- a CUDA tensor on a device other than the current one is exported under that device;
- a JAX array spread over several devices has no single buffer: `to_torch` gathers it
  onto its first device (a copy); arrays spanning processes are refused.

Aliasing: a shared buffer is visible from both sides. Writing into the torch tensor in
place (`t += 1`, `t.copy_(...)`) changes the JAX array too, although JAX arrays are meant
to be immutable: treat tensors returned by `to_torch` as read-only, or `.clone()` them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import torch
from jax.core import Tracer

_WIDE = (torch.float64, torch.complex128, torch.int64, torch.uint64)
# the dtypes that DLPack carries between the two libraries, by their common name
_SHARED = frozenset(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64 "
    "complex64 complex128 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "float8_e8m0fnu".split()
)


def to_jax(t: torch.Tensor) -> jax.Array:
    """The torch tensor `t` as a JAX array, sharing its buffer where possible.

    A `TypeError` for what is not a dense tensor of a dtype JAX shares (see `_SHARED`;
    64-bit dtypes need `jax_enable_x64`), a `ValueError` for a tensor on a device JAX
    cannot read."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"`interop.to_jax` expects a torch.Tensor; got {type(t).__name__}.")
    if t.layout != torch.strided or t.is_nested:
        layout = "nested" if t.is_nested else t.layout
        raise TypeError(
            f"`interop.to_jax` expects a dense (strided) tensor; got a {layout} tensor. "
            f"Convert it with `.to_dense()` (or `.to_padded_tensor()`) first."
        )
    if _name(t.dtype) not in _SHARED:
        raise TypeError(
            f"`interop.to_jax`: {t.dtype} has no JAX counterpart; supported: "
            f"{', '.join(sorted(_SHARED))}."
        )
    # jax registers its flags at run time, so pyright cannot see `jax_enable_x64`
    if t.dtype in _WIDE and not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
        raise TypeError(
            f"`interop.to_jax`: a {t.dtype} tensor needs 64-bit JAX types; call "
            f'`jax.config.update("jax_enable_x64", True)` first, or convert the tensor '
            f"to a 32-bit dtype yourself."
        )
    t = t.detach().resolve_conj().resolve_neg()
    if not _compact(t):
        t = t.contiguous()
    try:
        if t.device.type == "cuda" and t.device.index != torch.cuda.current_device():
            with torch.cuda.device(t.device):
                return jnp.from_dlpack(t)
        return jnp.from_dlpack(t)
    except (RuntimeError, ValueError, BufferError) as error:
        raise ValueError(
            f"`interop.to_jax`: JAX cannot import a {t.dtype} tensor on {t.device} "
            f"(JAX devices: {jax.devices()}): {error}"
        ) from error


def to_torch(x: jax.Array) -> torch.Tensor:
    """The JAX array `x` as a torch tensor sharing its buffer (a gathered copy for an
    array on several devices).

    A `TypeError` for what is not a concrete JAX array of a dtype torch shares (see
    `_SHARED`), a `ValueError` for an array spread over several processes."""
    if not isinstance(x, jax.Array):
        raise TypeError(f"`interop.to_torch` expects a jax.Array; got {type(x).__name__}.")
    if isinstance(x, Tracer):
        raise TypeError(
            "`interop.to_torch` got a traced value: it converts concrete arrays, outside "
            "`jax.jit` and other transformations."
        )
    if str(x.dtype) not in _SHARED:
        raise TypeError(
            f"`interop.to_torch`: dtype {x.dtype} has no torch counterpart; supported: "
            f"{', '.join(sorted(_SHARED))}."
        )
    if len(x.sharding.device_set) > 1:
        if not x.is_fully_addressable:
            raise ValueError(
                "`interop.to_torch`: the array spans processes; gather it first, e.g. with "
                "`jax.experimental.multihost_utils.process_allgather`."
            )
        x = jax.device_put(x, x.addressable_shards[0].device)
    return torch.from_dlpack(x)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _compact(t: torch.Tensor) -> bool:
    """Whether the strides describe a permutation of a dense buffer (what DLPack import
    accepts): sorted by stride, each axis steps over all the smaller ones exactly."""
    expected = 1
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def conj_cotangent(a):
    """A cotangent between torch's convention and JAX's (each the other's conjugate for a
    complex array; real ones are the same)."""
    return jnp.conj(a) if jnp.iscomplexobj(a) else a
