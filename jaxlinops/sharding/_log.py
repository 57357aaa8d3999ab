"""Logging of batched plans (`jaxlinops.config.log_device_transfers`)."""

from __future__ import annotations

import logging
import math

import jax

from .. import config
from .._dims import fmt

logger = logging.getLogger("jaxlinops")


def log_plan(op, counts: list[int]) -> None:
    """Log where the tiles of a new `BatchedLinop` live and how outputs are reassembled."""
    if not config.log_device_transfers:
        return
    batch = dict(op.batch)
    grid = dict(zip(op.stacked, counts))
    lines = [f"{op.name}: {fmt(op.ishape)} -> {fmt(op.oshape)}"]
    for d, bd in batch.items():
        count = grid.get(d, "set by the input")
        how = "concatenated (sharded out_specs)" if d in op.oshape else "summed"
        if bd.axis is None:
            where = "one after another on the current device"
        else:
            where = f"over mesh axis {bd.axis!r} ({bd.devices} devices)"
        lines.append(f"  dim {d!r}: tiles of {bd.tile}, {count} tiles {where}; {how}")
    if op.mesh is not None:
        for index, device in enumerate(op.mesh.devices.flat):
            pos = dict(zip(op.mesh.axis_names, _unravel(index, op.mesh.devices.shape)))
            blocks = {
                d: _block(pos[bd.axis], grid.get(d), bd.devices)
                for d, bd in batch.items()
                if bd.axis is not None
            }
            lines.append(f"  {device}: tiles {blocks}")
        arrays = jax.tree.leaves(op.tiles)
        total = sum(a.size * a.dtype.itemsize for a in arrays if hasattr(a, "dtype"))
        lines.append(f"  operator arrays: {total} bytes in all, sharded along the grid axes")
    logger.info("\n".join(lines))


def log_application(op, x: jax.Array, y: jax.Array) -> None:
    """Log the data one application moves (once per trace of a compiled program): the
    per-device input and output blocks and the all-reduce of summed dims (a ring
    all-reduce over $k$ devices sends and receives $2 (k - 1) / k$ of the block)."""
    if not config.log_device_transfers or op.mesh is None:
        return
    batch = dict(op.batch)
    summed = [bd.axis for d, bd in batch.items() if d not in op.oshape]
    split_in = math.prod(bd.devices for d, bd in batch.items() if d in op.ishape)
    split_out = math.prod(bd.devices for d, bd in batch.items() if d in op.oshape)
    reduce_over = math.prod(bd.devices for d, bd in batch.items() if d not in op.oshape)
    in_block = math.prod(x.shape) * x.dtype.itemsize // split_in
    out_block = math.prod(y.shape) * y.dtype.itemsize // split_out
    lines = [
        f"{op.name} applied to {tuple(x.shape)} {x.dtype}: input {in_block} bytes per "
        f"device ({split_in}-way split of the batched input dims, else replicated), output "
        f"{tuple(y.shape)} {y.dtype}, {out_block} bytes per device"
    ]
    if summed and reduce_over > 1:
        moved = 2 * (reduce_over - 1) * out_block // reduce_over
        lines.append(
            f"  psum over mesh axes {summed} ({reduce_over} devices): about {moved} bytes "
            f"sent and received per device"
        )
    else:
        lines.append("  no collectives: outputs stay sharded")
    logger.info("\n".join(lines))


def _unravel(index: int, shape) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(index % n)
        index //= n
    return tuple(reversed(out))


def _block(position: int, count: int | None, devices: int) -> str:
    if count is None:
        return f"block {position} of {devices}"
    per = count // devices
    return f"{position * per}..{(position + 1) * per - 1}"
