r"""Halo exchange along one split axis of a block, inside `jax.shard_map`.

**Blocks.** A global dim of size $N$ split over the $D$ devices of mesh axis `axis_name`
is held in blocks of $B = \lceil N / D \rceil$ entries: device $i$ holds the global
entries $iB, \dots, iB + n_i - 1$ with $n_i = \min(\max(N - iB, 0), B)$ valid entries,
followed by $B - n_i$ padding entries (zeros). Only the first $U = \lceil N / B \rceil$
devices hold entries; with a ragged size the last of them holds $n_{U-1} < B$, and the
devices after it (e.g. $N = 10$ on 8 devices: $B = 2$, devices 5-7) hold none.

**Extended blocks.** `halo_extend` turns the block of device $i$ into $B + 2w$ entries:
$$e_i[j] = x[(iB - w + j) \bmod N] \quad (0 \le j < n_i + 2w),$$
the $w$ entries before the block, its valid entries and the $w$ entries after it; the
remaining $B - n_i$ entries (a ragged last block) are zero, and an empty block extends to
zeros. With `periodic=False`, $x$ is zero outside $[0, N)$ instead of wrapping around.
A local operator of radius $w$ applied to $e_i$ gives the valid outputs of device $i$ at
positions $w, \dots, w + n_i - 1$; the padding entries of $x$ are never read.
`halo_reduce` is its adjoint: it adds the halo parts of an extended block into the
neighbours' blocks (what spreading onto an extended block needs).

**Hops.** A halo wider than a block takes its entries from as many devices as it needs:
the $k$-th hop brings device $i$ entries of device $i - k$ (for the halo before) and of
device $i + k$ (after), around the $U$ used devices with `periodic`. Walking away from
device $i$, each device passes on $m_d$ entries: its valid ones with `periodic`
($m_{U-1} = n_{U-1}$), its whole block otherwise (past the end they are zeros). The halo
before is, for $k = 1, 2, \dots$ until $w$ entries are collected, the last
$\min(m_{i-k}, w - \sum_{l<k} m_{i-l})$ entries of device $i - k$; the halo after
likewise the first entries of device $i + k$. Without `periodic` the hops stop at the
ends (zeros beyond), so any $w$ is allowed (at most $U - 1$ hops); with `periodic` a halo
wraps around the dim as often as it needs (a hop may reach device $i$ itself).
A halo takes $\lceil w / B \rceil$ hops, one more where a periodic halo passes a ragged
last block.

**Costs.** Each hop is one `collective-permute` per direction, between the pairs of
devices that have entries to move, of chunks as long as the longest piece of that hop
(at most $B$ entries) times the face (the other axes). With even blocks or without
`periodic` the hops move $\min(B, w - (k-1)B)$ entries: exactly $w \times$ the face per
direction in all, the one-hop halo $w \le B$ included (never a whole block for a narrower
halo). A periodic halo passing a ragged last block moves at most $B - n_{U-1}$ entries
more per direction (25 entries over 8 devices, $w = 4$: a hop of 4 between all pairs,
then one of 3 between one pair). Where the cuts and places of a hop agree on all devices
they are static slices; with a periodic ragged block they are indexed by device.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_size


def halo_extend(
    x: jax.Array, axis: int, width: int, axis_name: str, size: int, periodic: bool
) -> jax.Array:
    r"""This device's block extended by `width` entries from each side along `axis`.

    Called inside `jax.shard_map` on a block of $B = \lceil$`size`$/D\rceil$ entries along
    `axis` (see the module docstring for the layout); returns $B + 2w$ entries along
    `axis`: the `width` valid entries before the block (from the previous devices), this
    block's valid entries, the `width` entries after it (from the next devices), then zeros
    for a ragged block. With `periodic`, the halos wrap around the global size `size` (as
    often as `width` needs); otherwise they are zero past the ends. A
    halo wider than a neighbour's block comes from several neighbours, one hop each.
    Split along two axes (a pencil), call it once per axis: the second call extends the
    already extended block, so the corners come along. `width=0` returns `x` unchanged.
    Other axes of `x` pass through.
    """
    axis, lay = _layout("halo_extend", x, axis, width, axis_name, size, periodic, 0)
    if lay.width == 0:
        return x
    index = jax.lax.axis_index(axis_name)
    x = _valid(_varying(x, axis_name), axis, lay, index)
    hops = lay.hops()
    low, high = _margins(hops, lay.block)
    source = _pad(x, axis, low, high)
    out = _pad(x, axis, lay.width, lay.width)
    for hop in hops:
        chunk = _cut(source, axis, hop.length, low + _pick(hop.start, index))
        sent = jax.lax.ppermute(_mask(chunk, axis, hop, index), axis_name, hop.pairs)
        out = _add_at(out, axis, sent, _pick(hop.at, index))
    return out


def halo_reduce(
    y: jax.Array, axis: int, width: int, axis_name: str, size: int, periodic: bool
) -> jax.Array:
    r"""The adjoint of [`halo_extend`][]: an extended block back to a block, the halo parts
    added into the blocks they came from.

    `y` is this device's extended block ($B + 2w$ entries along `axis`, laid out as
    `halo_extend` returns them); the result has $B$ entries along `axis`:
    $$r_i = y_i[w : w + n_i] + \sum_{j \ne i} (\text{the entries of } y_j
    \text{ that } e_j \text{ took from device } i),$$
    each added where it came from, with zeros in the padding entries. Summed over devices,
    $\langle \mathrm{extend}(x), y\rangle = \langle x, \mathrm{reduce}(y)\rangle$. The
    same hops as `halo_extend`, each in the reverse direction. For a pencil, reduce the
    axes in the reverse order of the extensions.
    """
    axis, lay = _layout("halo_reduce", y, axis, width, axis_name, size, periodic, 2)
    if lay.width == 0:
        return y
    index = jax.lax.axis_index(axis_name)
    y = _varying(y, axis_name)
    hops = lay.hops()
    low, high = _margins(hops, lay.block)
    out = _pad(_slice(y, axis, lay.width, lay.width + lay.block), axis, low, high)
    for hop in hops:
        back = [(r, s) for s, r in hop.pairs]
        chunk = jax.lax.ppermute(_cut(y, axis, hop.length, _pick(hop.at, index)), axis_name, back)
        out = _add_at(out, axis, _mask(chunk, axis, hop, index), low + _pick(hop.start, index))
    return _valid(_slice(out, axis, low, low + lay.block), axis, lay, index)


@dataclasses.dataclass(frozen=True)
class _Hop:
    """One `ppermute` of `halo_extend`: each sender `s` of `pairs` (`(s, r)`) cuts
    `length` entries of its block from `start[s]`, of which the `count[s]` from
    `offset[s]` on are halo entries (the others are sent as zeros), and receiver `r` adds
    them into its extended block from `at[r]`. Tables: one value per device (devices
    that send or receive nothing hold another device's value)."""

    length: int
    pairs: tuple[tuple[int, int], ...]
    start: tuple[int, ...]
    offset: tuple[int, ...]
    count: tuple[int, ...]
    at: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class _Layout:
    """The static split of one dim: `size` entries over `devices` blocks of `block`, of
    which the first `used` hold entries, the last of them `last` (<= `block`)."""

    size: int
    devices: int
    width: int
    periodic: bool

    @property
    def block(self) -> int:
        return -(-self.size // self.devices)

    @property
    def used(self) -> int:
        return -(-self.size // self.block)

    @property
    def last(self) -> int:
        return self.size - (self.used - 1) * self.block

    def passes(self, device: int) -> int:
        """The entries a halo takes from a used device it passes through: its valid ones
        when periodic, else its whole block (zeros past the end)."""
        return self.last if self.periodic and device == self.used - 1 else self.block

    def hops(self) -> tuple[_Hop, ...]:
        """The hops bringing the halos before (`k` = 1, 2, ...), then those after."""
        return self._hops(before=True) + self._hops(before=False)

    def _hops(self, before: bool) -> tuple[_Hop, ...]:
        moves: dict[int, list[tuple[int, int, int, int, int]]] = {}
        for r in range(self.used):
            rest, k = self.width, 1
            while rest > 0:
                s = r - k if before else r + k
                if not (self.periodic or 0 <= s < self.used):
                    break
                s %= self.used
                n = self.passes(s)
                c = min(n, rest)
                # (sender, receiver, first halo entry in the sender's block, count, where
                # the receiver's extended block takes it)
                first, at = (
                    (n - c, rest - c) if before else (0, 2 * self.width + self.passes(r) - rest)
                )
                moves.setdefault(k, []).append((s, r, first, c, at))
                rest, k = rest - c, k + 1
        return tuple(self._hop(m) for _, m in sorted(moves.items()))

    def _hop(self, moves: list[tuple[int, int, int, int, int]]) -> _Hop:
        """A hop's tables from its moves: chunks as long as the longest move, each placed
        inside the receiver's extended block (its halo entries shifted within it)."""
        length = max(c for _, _, _, c, _ in moves)
        span = self.block + 2 * self.width
        start, offset, count, at = {}, {}, {}, {}
        for s, r, first, c, where in moves:
            at[r] = min(where, span - length)
            offset[s] = where - at[r]
            start[s] = first - offset[s]
            count[s] = c
        tables = [self._table(t) for t in (start, offset, count, at)]
        return _Hop(length, tuple((s, r) for s, r, *_ in moves), *tables)

    def _table(self, values: dict[int, int]) -> tuple[int, ...]:
        """`{device: value}` as one value per device, the missing ones filled with the
        first value (so a table whose devices agree stays constant)."""
        fill = next(iter(values.values()))
        return tuple(values.get(d, fill) for d in range(self.devices))


def _layout(
    name: str,
    x: object,
    axis: object,
    width: object,
    axis_name: object,
    size: object,
    periodic: object,
    halos: int,
) -> tuple[int, _Layout]:
    """Check the arguments of `name`; return the axis (non-negative) and the layout.
    `halos` is the number of halos the block along `axis` already has (0 or 2)."""
    x = as_array(x, f"`{name}(x=...)`")
    axis = as_size(axis, f"`{name}(axis=...)`", None)
    width = as_size(width, f"`{name}(width=...)`", 0)
    size = as_size(size, f"`{name}(size=...)`", 1)
    if not isinstance(periodic, bool):
        raise TypeError(f"`{name}(periodic=...)` must be a bool; got {periodic!r}.")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(
            f"`{name}(axis=...)` must be an axis of the block (ndim {x.ndim}); got {axis}."
        )
    axis %= x.ndim
    try:
        devices = jax.lax.axis_size(axis_name)
    except NameError as e:
        raise ValueError(
            f"`{name}` must be called inside `jax.shard_map` over a mesh with the axis "
            f"`axis_name`; got axis_name={axis_name!r}, which is not bound here."
        ) from e
    lay = _Layout(size, devices, width, periodic)
    expected = lay.block + halos * width
    if x.shape[axis] != expected:
        raise ValueError(
            f"`{name}`: size {size} split over {devices} devices gives blocks of "
            f"{lay.block} entries{f' plus 2 halos of {width}' if halos else ''}, so the "
            f"block must have {expected} entries along axis {axis}; got shape "
            f"{tuple(x.shape)}."
        )
    return axis, lay


def _varying(x: jax.Array, axis_name: str) -> jax.Array:
    """`x` typed as varying over `axis_name` (what `ppermute` needs)."""
    if axis_name in jax.typeof(x).mat.varying:
        return x
    return jax.lax.pcast(x, (axis_name,), to="varying")


def _valid(x: jax.Array, axis: int, lay: _Layout, index: jax.Array) -> jax.Array:
    """`x` with its padding entries along `axis` (those past the block's valid ones) zero."""
    if lay.size == lay.block * lay.devices:
        return x
    count = jnp.clip(lay.size - index * lay.block, 0, lay.block)
    return jnp.where(jax.lax.broadcasted_iota(jnp.int32, x.shape, axis) < count, x, 0)


def _pick(table: tuple[int, ...], index: jax.Array) -> int | jax.Array:
    """This device's value of `table`: a Python int where all devices share it (a static
    slice), else looked up by the device's `index`."""
    if len(set(table)) == 1:
        return table[0]
    return jnp.asarray(table, jnp.int32)[index]


def _margins(hops: tuple[_Hop, ...], block: int) -> tuple[int, int]:
    """The zeros to pad a block with, before and after, for every cut of `hops` to lie
    inside it (a cut's entries past its halo entries may stick out: they are sent as
    zeros)."""
    low = max(0, *(-min(h.start) for h in hops))
    high = max(0, *(max(h.start) + h.length - block for h in hops))
    return low, high


def _mask(chunk: jax.Array, axis: int, hop: _Hop, index: jax.Array) -> jax.Array:
    """`chunk` with its entries along `axis` outside this device's halo entries zero."""
    offset, count = _pick(hop.offset, index), _pick(hop.count, index)
    if isinstance(offset, int) and isinstance(count, int) and (offset, count) == (0, hop.length):
        return chunk
    pos = jax.lax.broadcasted_iota(jnp.int32, chunk.shape, axis)
    return jnp.where((pos >= offset) & (pos < offset + count), chunk, 0)


def _cut(x: jax.Array, axis: int, length: int, start: int | jax.Array) -> jax.Array:
    return jax.lax.dynamic_slice_in_dim(x, start, length, axis)


def _add_at(out: jax.Array, axis: int, chunk: jax.Array, at: int | jax.Array) -> jax.Array:
    """`out` with `chunk` added into its entries from `at` on along `axis`."""
    window = _cut(out, axis, chunk.shape[axis], at) + chunk
    return jax.lax.dynamic_update_slice_in_dim(out, window, at, axis)


def _slice(x: jax.Array, axis: int, start: int, stop: int) -> jax.Array:
    return jax.lax.slice_in_dim(x, start, stop, axis=axis)


def _pad(x: jax.Array, axis: int, before: int, after: int) -> jax.Array:
    if before == after == 0:
        return x
    pads = [(0, 0)] * x.ndim
    pads[axis] = (before, after)
    return jnp.pad(x, pads)
