"""`BatchSpec` and the device mesh it describes.

A spec gives a tile size per batched dim and, optionally, a device matrix. The matrix is
fitted to the tile grid as in torchlinops ("fuzzy" broadcasting, aligned on the right):
an axis with more devices than tiles is truncated, an axis of size 1 repeats, and an axis
with fewer devices than tiles gives each device several tiles in turn. The fitted matrix
becomes a `jax.sharding.Mesh` whose axes are named after the batched dims.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from .._arrays import Device

if TYPE_CHECKING:
    from .._core import NamedLinop


@dataclasses.dataclass(frozen=True)
class ResolvedBatchSpec:
    """A [`BatchSpec`][] with every field filled in (`BatchSpec.resolve`): the tile sizes,
    the device of every tile (an object array of the tile grid's shape) and the device
    outputs are gathered on."""

    batch_sizes: Mapping[str, int]
    device_matrix: np.ndarray
    base_device: Device


@dataclasses.dataclass(frozen=True)
class BatchSpec:
    """How to batch an operator: `BatchSpec({"C": 1}, device_matrix=jax.devices())`.

    **Fields:**

    - `batch_sizes`: `{dim: tile size}`; the first dim is the outermost of the tile grid.
    - `device_matrix`: devices laid out like the tile grid (a list or nested lists or an
      array of `jax.Device`s), fitted to it by fuzzy broadcasting (see the module doc).
      None: the tiles run one after another on the current device, which bounds memory.
    - `base_device`: gather outputs: on this device when the operator is applied eagerly,
      replicated across the mesh inside `jit` (one compiled program cannot move data off
      its devices; `jax.device_put` the result). None keeps outputs sharded.
    """

    batch_sizes: Mapping[str, int]
    device_matrix: np.ndarray | Sequence | None = None
    base_device: Device | None = None

    def __post_init__(self):
        sizes = dict(self.batch_sizes)
        if not sizes:
            raise ValueError("`BatchSpec` needs at least one batched dim; got none.")
        for d, b in sizes.items():
            if not isinstance(d, str):
                raise TypeError(f"`BatchSpec`: dims are names (str); got {d!r}.")
            if not isinstance(b, (int, np.integer)) or isinstance(b, bool) or b <= 0:
                raise ValueError(
                    f"`BatchSpec`: the tile size of dim {d!r} must be a positive integer; "
                    f"got {b!r}."
                )
        object.__setattr__(self, "batch_sizes", types.MappingProxyType(sizes))
        if self.device_matrix is not None:
            matrix = device_matrix(self.device_matrix, "`BatchSpec(device_matrix=...)`")
            if matrix.ndim > len(sizes):
                raise ValueError(
                    f"`BatchSpec`: a device matrix of shape {matrix.shape} cannot broadcast "
                    f"to a tile grid over {len(sizes)} dim(s) {tuple(sizes)}."
                )
            object.__setattr__(self, "device_matrix", matrix)
        if self.base_device is not None and not isinstance(self.base_device, jax.Device):
            raise TypeError(
                f"`BatchSpec(base_device=...)` must be a jax.Device; got "
                f"{type(self.base_device).__name__}."
            )

    def resolve(self, linop: NamedLinop, default_device: Device | None = None) -> ResolvedBatchSpec:
        """This spec for `linop` with every field filled in: the device of every tile
        ([`broadcast_device_matrix`][]; without a device matrix every tile runs on the base
        device) and `base_device` (default `default_device`, else JAX's default device)."""
        if default_device is not None and not isinstance(default_device, jax.Device):
            raise TypeError(
                f"`BatchSpec.resolve(default_device=...)` must be a jax.Device; got "
                f"{type(default_device).__name__}."
            )
        base = self.base_device or default_device or jax.devices()[0]
        matrix = self.broadcast_device_matrix(linop)
        if self.device_matrix is None:
            matrix = np.full(matrix.shape, base, dtype=object)
        return ResolvedBatchSpec(self.batch_sizes, matrix, base)

    def broadcast_device_matrix(self, linop: NamedLinop) -> np.ndarray:
        r"""The device of every tile of `linop`: an object array of the tile grid's shape,
        $\lceil n_d / b_d \rceil$ per batched dim in the order of `batch_sizes`.

        The device matrix is fitted as [`create_batched_linop`][] places the tiles: an
        axis with more devices than tiles is truncated, one of size 1 repeats, and an axis
        with $m$ devices for $g > m$ tiles gives device $k$ the tiles $[k p, (k + 1) p)$,
        $p = \lceil g / m \rceil$ (contiguous runs; torchlinops deals them out in turn,
        `0, 1, ..., m - 1, 0, ...`). Without a device matrix every tile runs on the
        current default device. A batched dim whose size `linop` does not fix raises a
        ValueError (its tile count depends on the input).
        """
        grid = []
        for d, b in self.batch_sizes.items():
            n = linop.size(d)
            if n is None:
                raise ValueError(
                    f"`BatchSpec.broadcast_device_matrix`: {linop.name} does not fix the size "
                    f"of dim {d!r}, so its number of tiles depends on the input."
                )
            grid.append(-(-n // b))
        if self.device_matrix is None:
            return np.full(grid, jax.devices()[0], dtype=object)
        assert isinstance(self.device_matrix, np.ndarray)  # __post_init__ converts it
        matrix = fit_devices(self.device_matrix, grid)
        runs = [-(-g // m) for g, m in zip(grid, matrix.shape)]
        out = np.empty(grid, dtype=object)
        for index in np.ndindex(*grid):
            out[index] = matrix[tuple(i // r for i, r in zip(index, runs))]
        return out


def device_matrix(devices: object, what: str) -> np.ndarray:
    """`devices` as a numpy object array of distinct `jax.Device`s on one platform."""
    matrix = np.array(devices, dtype=object)  # a copy: the caller's array stays theirs
    if matrix.size == 0:
        raise ValueError(f"{what}: the device matrix is empty.")
    flat = list(matrix.flat)
    platforms = sorted({getattr(dev, "platform", "?") for dev in flat})
    if len(platforms) > 1:
        raise ValueError(f"{what}: devices of one platform expected; got {platforms}.")
    for dev in flat:
        if not isinstance(dev, jax.Device):
            raise TypeError(f"{what}: expected jax.Device entries; got {type(dev).__name__}.")
    if len(set(flat)) < len(flat):
        raise ValueError(f"{what}: every device may appear only once; got {flat}.")
    return matrix


def fit_devices(matrix: np.ndarray, grid: Sequence[int | None]) -> np.ndarray:
    """Fit a device matrix to a tile grid (`None`: a count known only from the input).

    Axes align on the right; missing leading axes have size 1. An axis longer than the
    grid's is truncated to it; other axes are kept (several tiles per device).
    """
    shape = (1,) * (len(grid) - matrix.ndim) + matrix.shape
    matrix = matrix.reshape(shape)
    index = tuple(slice(0, n if n is not None and n < m else m) for m, n in zip(shape, grid))
    return matrix[index]


def make_mesh(matrix: np.ndarray, names: Sequence[str]) -> Mesh:
    """A mesh of `matrix` with Auto axes named `names` (inputs are resharded as needed)."""
    return Mesh(matrix, tuple(names), axis_types=(AxisType.Auto,) * len(names))
