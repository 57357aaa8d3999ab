"""`BatchDim`: how one dim is split, the one record of both executors (a `BatchedLinop`'s
tiles, a `GridSplitLinop`'s blocks of a dim applied entry by entry)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class BatchDim:
    r"""A dim split into tiles: its `size` (None: fixed by the input), `tile` entries per
    tile, and the mesh `axis` the tiles lie along (None: a loop on each device) with its
    number of `devices`. The last tiles are zero-padded."""

    size: int | None
    tile: int
    axis: str | None = None
    devices: int = 1

    def count(self, size: int) -> int:
        r"""Tiles along a dim of `size` entries: $\lceil n / b \rceil$, rounded up to a
        multiple of the number of devices (the extra tiles are all padding)."""
        per_device = -(-size // (self.tile * self.devices))
        return per_device * self.devices

    @property
    def tiles(self) -> int:
        """The tile count along the dim (of a known size)."""
        assert self.size is not None, "a dim of known size"
        return self.count(self.size)

    @staticmethod
    def blocks(size: int, count: int, axis: str | None = None) -> BatchDim:
        r"""A dim of `size` entries in `count` blocks of $\lceil n / \text{count} \rceil$
        entries: one per device along the mesh `axis`, or in a loop (None)."""
        return BatchDim(size, -(-size // count), axis, count if axis is not None else 1)
