r"""`TilingStrategy`: torchlinops' declarative tiling, with explicit tile edges and a device
per tile and role.

A strategy cuts an operator $A$ along named dims at given edges (ragged tiles are fine)
into tiles $A_t = Q_t A P_t^T$ (`jaxlinops.split`) and gives each tile three devices
(`DeviceRole`): where its input lives (IN), where it runs (COMPUTE) and where its output
goes (OUT). `apply` runs **split** (tiles, their arrays put on their COMPUTE device),
**wrap** (`ToDevice` transfers IN $\to$ COMPUTE and COMPUTE $\to$ OUT where they differ)
and **schedule** (`Concat` along a tiled input or output dim, `Add` over a tiled internal
dim), so the result is an ordinary operator that behaves like $A$, whose tiles run one
after another, each on its device: torchlinops' sequential schedule. XLA orders the
transfers itself, so torchlinops' CUDA streams have no counterpart. To run the tiles of
one grid at once across a device mesh (one `shard_map`), batch with
`create_batched_linop(A, BatchSpec(...))`, which needs equal tiles (one device per tile
run).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from typing import Literal, overload

import equinox as eqx
import jax
import numpy as np

from .._arrays import Device
from .._core import Add, Chain, NamedLinop, split
from .._dims import fmt
from ..linops import Concat, ToDevice
from ..linops._device import resolve_device

_OPTIONS = frozenset({"threaded", "num_workers", "accumulate"})


def _placeable(device: object, what: str) -> object:
    """`device` as a `jax.Device`; a well-formed device this machine lacks (`"cuda:1"`, a
    torch device) is kept as given, as torchlinops keeps it: a plan may place tiles on it,
    and `split` refuses it with `resolve_device`'s error."""
    try:
        return resolve_device(device, what)
    except (TypeError, ValueError):
        named = isinstance(device, str) and re.fullmatch(r"[a-z]+(:\d+)?", device)
        if named or (hasattr(device, "type") and hasattr(device, "index")):
            return device
        raise


class DeviceRole(enum.IntEnum):
    """The role a device plays for one tile: the last index of `TilingStrategy.tiles`."""

    IN = 0
    """Where the tile's input lives."""
    COMPUTE = 1
    """Where the tile runs (its arrays live there)."""
    OUT = 2
    """Where the tile's output goes."""


ALL_DEVICE_ROLES = tuple(DeviceRole)


class TilingStrategy:
    """How to cut an operator into tiles and where each tile's data lives and runs.

    `TilingStrategy({"N": [0, 3, 8]}, [jax.devices()[0]]).place_all(jax.devices()[0])`
    cuts dim `N` into `[0, 3)` and `[3, 8)`, everything on one device.

    **Attributes:**

    - `axes`: the tiled dims, in the order of `bounds` (the tile grid's axes).
    - `bounds`: `{dim: edges}`, the tile edges along each dim (as given).
    - `devices`: the `jax.Device`s tiles may use.
    - `shape`: the tile grid, `len(edges) - 1` tiles per dim.
    - `tiles`: integer array of shape `shape + (3,)`: `tiles[index + (role,)]` is the
      index in `devices` of the tile's device for that `DeviceRole` (all 0 at first).
      The placement methods set it and return the strategy, so they chain.
    """

    def __init__(self, bounds: Mapping[str, Sequence[int]], devices: Sequence[object]):
        """**Arguments:**

        - `bounds`: `{dim: edges}`, at least two integer edges per dim; they must
          partition the dim (strictly increasing from 0 to its size), which `split`
          checks against the operator.
        - `devices`: `jax.Device`s or device strings (`"cpu"`, `"gpu:1"`, torch's
          `"cuda:1"`), distinct. A device JAX does not have here may be named, as in
          torchlinops, to plan placements; `split` (and `apply`) then refuse it.
        """
        if not isinstance(bounds, Mapping) or not bounds:
            raise ValueError(
                f"`TilingStrategy(bounds=...)` expects {{dim: edges}}; got {bounds!r}."
            )
        for d, edges in bounds.items():
            ok = isinstance(edges, Sequence) and len(edges) >= 2
            if not isinstance(d, str) or not ok or not all(_is_int(e) for e in edges):
                raise ValueError(
                    f"`TilingStrategy(bounds=...)`: each dim (a str) needs a list of at least "
                    f"two integer edges; got {d!r}: {edges!r}."
                )
        self.axes = list(bounds)
        self.bounds = bounds
        self.devices = [_placeable(dev, "`TilingStrategy(devices=...)`") for dev in devices]
        if not self.devices or len(set(self.devices)) < len(self.devices):
            raise ValueError(
                f"`TilingStrategy(devices=...)` expects distinct devices, at least one; got "
                f"{self.devices}."
            )
        self.shape = tuple(len(edges) - 1 for edges in bounds.values())
        self.tiles = np.zeros(self.shape + (len(DeviceRole),), dtype=int)

    def __repr__(self) -> str:
        return f"TilingStrategy(bounds={dict(self.bounds)}, devices={self.devices})"

    def _d(self, device: object) -> int:
        """The index of `device` in `devices`."""
        device = _placeable(device, "`TilingStrategy`: a device")
        if device not in self.devices:
            raise ValueError(
                f"`TilingStrategy`: device {device} is not one of its devices {self.devices}."
            )
        return self.devices.index(device)

    # ------------------------------------------------------------------ placement
    def place_all(self, dev: object, roles: Sequence[DeviceRole] = ALL_DEVICE_ROLES):
        """Every tile on `dev` for each of `roles` (default: all three)."""
        for r in roles:
            self.tiles[..., r] = self._d(dev)
        return self

    def distribute_across_devices(self, axis: str, roles: Sequence[DeviceRole] = ALL_DEVICE_ROLES):
        """Tile $i$ along `axis` on device $i \\bmod$ `len(devices)` (round robin), for each
        of `roles`; the other axes do not change a tile's device."""
        if axis not in self.axes:
            raise ValueError(
                f"`TilingStrategy.distribute_across_devices`: axis {axis!r} is not tiled; "
                f"the tiled axes are {self.axes}."
            )
        ax = self.axes.index(axis)
        index = np.arange(self.shape[ax]) % len(self.devices)
        index = index.reshape([n if a == ax else 1 for a, n in enumerate(self.shape)])
        for r in roles:
            self.tiles[..., r] = index
        return self

    def copy_role(self, src: DeviceRole, dst: DeviceRole):
        """Each tile's device for role `dst` set to its device for `src` (e.g. outputs
        return to where the inputs came from: `copy_role(DeviceRole.IN, DeviceRole.OUT)`)."""
        self.tiles[..., dst] = self.tiles[..., src]
        return self

    # ------------------------------------------------------------------ queries
    def device_of(self, tile_index: Sequence[int], role: DeviceRole) -> Device:
        """The device of the tile at `tile_index` for `role`."""
        return self.devices[self.tiles[tuple(tile_index) + (role,)]]

    def tiles_on(self, dev: object, role: DeviceRole | None = None) -> dict:
        """`{role: [tile index, ...]}`: the tiles that use `dev` in `role` (None: each
        role)."""
        d = self._d(dev)
        roles = ALL_DEVICE_ROLES if role is None else (DeviceRole(role),)
        return {r: _indices(self.tiles[..., r] == d) for r in roles}

    def transfers(self, src: DeviceRole = DeviceRole.IN, dst: DeviceRole = DeviceRole.COMPUTE):
        """`[(tile index, from device, to device), ...]`: the tiles whose data moves
        between roles `src` and `dst` (their devices differ)."""
        a, b = self.tiles[..., src], self.tiles[..., dst]
        return [(t, self.devices[a[t]], self.devices[b[t]]) for t in _indices(a != b)]

    # ------------------------------------------------------------------ pipeline
    @overload
    def split(
        self, linop: NamedLinop, mmap: object = None, return_mmap: Literal[False] = False
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    @overload
    def split(
        self, linop: NamedLinop, mmap: object, return_mmap: Literal[True]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]: ...

    def split(self, linop: NamedLinop, mmap: object = None, return_mmap: bool = False):
        """The tiles of `linop` and their transfers: three object arrays of shape `shape`.

        - the tiles $A_t$, their arrays put on their COMPUTE device;
        - `ToDevice(IN, COMPUTE)` on each tile's `ishape`, or None where those agree;
        - `ToDevice(COMPUTE, OUT)` on each tile's `oshape`, or None where those agree.

        The bounds must partition each tiled dim of `linop` (a ValueError otherwise, also
        for a dim whose size `linop` does not fix). `mmap`: torchlinops' memory map of
        shared torch storage; JAX arrays are immutable and shared as they are, so it is
        not used, and returned (as given) as a fourth item when `return_mmap`.
        """
        tiles = self._tiles(linop)
        return (*tiles, mmap) if return_mmap else tiles

    def _tiles(self, linop: NamedLinop) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`split`'s three arrays."""
        self._check_bounds(linop)
        shape = self.shape
        tiles, pre, post = (np.empty(shape, dtype=object) for _ in range(3))
        for index in np.ndindex(*shape):
            slices = {d: slice(e[i], e[i + 1]) for (d, e), i in zip(self.bounds.items(), index)}
            src, run, dst = (
                resolve_device(self.device_of(index, r), "`TilingStrategy.split`")
                for r in ALL_DEVICE_ROLES
            )
            tile = _put(split(linop, slices), run)
            tiles[index] = tile
            pre[index] = ToDevice(src, run, tile.ishape) if src != run else None
            post[index] = ToDevice(run, dst, tile.oshape) if run != dst else None
        return tiles, pre, post

    def wrap(self, linops: np.ndarray, pre: np.ndarray, post: np.ndarray) -> np.ndarray:
        """Each tile between its transfers: `Chain(pre, tile, post)` without the Nones
        (the tile itself where there are none)."""
        if not linops.shape == pre.shape == post.shape:
            raise ValueError(
                f"`TilingStrategy.wrap`: linops, pre and post must have the same shape; got "
                f"{linops.shape}, {pre.shape} and {post.shape}."
            )
        out = np.empty(linops.shape, dtype=object)
        for index in np.ndindex(*linops.shape):
            ops = [a.item(index) for a in (pre, linops, post) if a.item(index) is not None]
            out[index] = Chain(*ops) if len(ops) > 1 else ops[0]
        return out

    def schedule(self, linops: np.ndarray, **options: object) -> NamedLinop:
        """One operator from the grid of tiles, joining the last axis first: along a dim
        that the tiles take as input or give as output, `Concat` (input split, outputs
        stacked, or both); along a dim in neither (an internal dim), `Add`.

        `options`: torchlinops' `threaded`, `num_workers`, `accumulate`, passed on to
        `Concat` and `Add`, which accept and ignore them (XLA schedules the tiles)."""
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise TypeError(
                f"`TilingStrategy.schedule`: unknown options {unknown}; the accepted (and "
                f"ignored) torchlinops options are {sorted(_OPTIONS)}."
            )
        if linops.shape != self.shape:
            raise ValueError(
                f"`TilingStrategy.schedule`: expected a grid of tiles of shape {self.shape}; "
                f"got {linops.shape}."
            )
        for dim in reversed(self.axes):
            joined = np.empty(linops.shape[:-1], dtype=object)
            for index in np.ndindex(*joined.shape):
                joined[index] = _join(linops[index].tolist(), dim, options)
            linops = joined
        return linops.item()

    def apply(self, linop: NamedLinop, **options: object) -> NamedLinop:
        """`schedule(wrap(*split(linop)), **options)`: `linop`, tiled as planned."""
        return self.schedule(self.wrap(*self.split(linop)), **options)

    def _check_bounds(self, linop: NamedLinop) -> None:
        """Raise a ValueError unless the edges of each dim run strictly increasing from 0
        to the size of that dim in `linop`."""
        if not isinstance(linop, NamedLinop):
            raise TypeError(
                f"`TilingStrategy.split` expects a NamedLinop; got {type(linop).__name__}."
            )
        for d, edges in self.bounds.items():
            n = linop.size(d)
            where = (
                f"`TilingStrategy.split`: {linop.name} ({fmt(linop.ishape)} -> {fmt(linop.oshape)})"
            )
            if n is None:
                raise ValueError(
                    f"{where} does not fix the size of dim {d!r}, so the bounds {list(edges)} "
                    f"cannot be checked against it."
                )
            rising = all(a < b for a, b in zip(edges, edges[1:]))
            if edges[0] != 0 or edges[-1] != n or not rising:
                raise ValueError(
                    f"{where}: invalid bounds {list(edges)} for dim {d!r}: the edges must be "
                    f"monotonic (strictly increasing) from 0 to its size {n}."
                )


def create_batched_linop_v2(
    linop: NamedLinop, strategies: Sequence[TilingStrategy], mmap: object = None, **options
) -> NamedLinop:
    """`linop` tiled by each strategy in turn: the first cuts `linop`, the rest cut each of
    its tiles (each strategy's bounds checked against the tiles it cuts), and each level
    is wrapped and scheduled as `TilingStrategy.apply`. No strategies: `linop` itself.

    `mmap` (torchlinops' memory map of torch storage) is not used; `options` as
    `TilingStrategy.schedule`.
    """
    strategies = list(strategies)
    if not all(isinstance(s, TilingStrategy) for s in strategies):
        raise TypeError(
            f"`create_batched_linop_v2` expects a list of TilingStrategy; got "
            f"{[type(s).__name__ for s in strategies]}."
        )
    if not strategies:
        return linop
    first, rest = strategies[0], strategies[1:]
    tiles, pre, post = first.split(linop)
    for index in np.ndindex(*tiles.shape):
        tiles[index] = create_batched_linop_v2(tiles.item(index), rest, mmap, **options)
    return first.schedule(first.wrap(tiles, pre, post), **options)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _indices(mask: np.ndarray) -> list[tuple[int, ...]]:
    """The indices where `mask` is true, as tuples of Python ints, in row-major order."""
    return [tuple(int(i) for i in t) for t in zip(*np.nonzero(mask))]


def _put(op: NamedLinop, device: Device) -> NamedLinop:
    """`op` with its arrays on `device`."""
    arrays, static = eqx.partition(op, eqx.is_array)
    return eqx.combine(jax.device_put(arrays, device), static)


def _join(row: list[NamedLinop], dim: str, options: Mapping[str, object]) -> NamedLinop:
    """The tiles of one row of the grid along `dim`, joined (see `schedule`)."""
    first = row[0]
    idim = dim if dim in first.ishape else None
    odim = dim if dim in first.oshape else None
    if idim is None and odim is None:
        return Add(*row, **options)  # pyright: ignore[reportArgumentType]
    return Concat(*row, idim=idim, odim=odim, **options)  # pyright: ignore[reportArgumentType]
