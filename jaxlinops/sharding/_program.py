r"""The one program of an operator run on a mesh, shared by the two executors
(`BatchedLinop`: tiles of dims applied entry by entry; `GridSplitLinop`: stages on slabs of
coupled dims).

An application is: the input committed to the mesh's devices (`onto_mesh`), its split
axes zero-padded to whole blocks (`pad_to`), one `jax.shard_map` of the executor's
per-device body over its arrays and the input (`on_mesh`, specs from `partition_spec`),
the output's padded axes cut back (`cut_to`); the whole compiled once per operator
structure and input shape (`apply_compiled`), inlined inside a caller's `jit`. An executor
provides `mesh` and `_program(x)`, the steps above but the first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.core import Tracer
from jax.sharding import Mesh, NamedSharding, PartitionSpec

MeshAxes = str | tuple[str, ...] | None


class Executor(Protocol):
    """What `apply_compiled` runs: an operator with a mesh (None: a loop on one device)
    and its program on an input already on the mesh."""

    @property
    def mesh(self) -> Mesh | None: ...

    def _program(self, x: jax.Array) -> jax.Array: ...


def apply_compiled(op: Executor, x: jax.Array) -> jax.Array:
    """`op`'s program on `x`, compiled once per operator structure and input shape (eager
    calls do not re-trace the `shard_map` body; inside a caller's `jit` it is inlined)."""
    return _compiled(op, onto_mesh(x, op.mesh))


@eqx.filter_jit
def _compiled(op: Executor, x: jax.Array) -> jax.Array:
    return op._program(x)


def onto_mesh(x, mesh: Mesh | None):
    """A concrete input committed to other devices (by `device_put` or a DLPack import),
    replicated onto the mesh: one compiled program cannot mix device sets. (Inside a
    caller's `jit` the inputs are that program's.)"""
    if mesh is None or not isinstance(x, jax.Array) or isinstance(x, Tracer):
        return x
    if not x.committed or x.sharding.device_set == set(mesh.devices.flat):
        return x
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec()))


def pad_to(x: jax.Array, lengths: Mapping[int, int]) -> jax.Array:
    """`x` zero-padded at the end of each axis `a` of `lengths` to `lengths[a]` entries
    (whole blocks)."""
    widths = [(0, max(lengths.get(a, n) - n, 0)) for a, n in enumerate(x.shape)]
    return jnp.pad(x, widths) if any(w for _, w in widths) else x


def cut_to(y: jax.Array, lengths: Mapping[int, int]) -> jax.Array:
    """`y` cut to its first `lengths[a]` entries along each axis `a` of `lengths`."""
    for a, n in lengths.items():
        y = jax.lax.slice_in_dim(y, 0, n, axis=a)
    return y


def partition_spec(ndim: int, axes: Mapping[int, MeshAxes]) -> PartitionSpec:
    """An array of `ndim` axes split along each axis `a` of `axes` over the mesh axes
    `axes[a]` (one name, several together, or None: whole)."""
    entries = [axes.get(a) for a in range(ndim)]
    return PartitionSpec(
        *(e[0] if isinstance(e, tuple) and len(e) == 1 else e or None for e in entries)
    )


def on_mesh(
    body: Callable[[Any, jax.Array], jax.Array],
    mesh: Mesh,
    module: Any,
    module_specs: Callable[[Any], Any],
    x: jax.Array,
    x_spec: PartitionSpec,
    y_spec: PartitionSpec,
) -> jax.Array:
    """`body(module, block)` on each device's block of `x` in one `jax.shard_map` over
    `mesh`: `module`'s arrays split as `module_specs(arrays)` says (a pytree of
    `PartitionSpec`s), its static part shared, the input and output as `x_spec` and
    `y_spec`."""
    arrays, static = eqx.partition(module, eqx.is_array)
    run = jax.shard_map(
        lambda a, v: body(eqx.combine(a, static), v),
        mesh=mesh,
        in_specs=(module_specs(arrays), x_spec),
        out_specs=y_spec,
    )
    return run(arrays, x)
