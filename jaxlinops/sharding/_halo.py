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

Each halo comes from one neighbour, so `width` is at most $B$, and with `periodic=True`
(where the first device's halo is the last valid entries of device $U - 1$) at most
$n_{U-1}$. Each call moves $w$ entries per face in each direction (two
`collective-permute`s of $w \times$ the face).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_size


def halo_extend(
    x: jax.Array, axis: int, width: int, axis_name: str, size: int, periodic: bool
) -> jax.Array:
    r"""This device's block extended by `width` entries from each neighbour along `axis`.

    Called inside `jax.shard_map` on a block of $B = \lceil$`size`$/D\rceil$ entries along
    `axis` (see the module docstring for the layout); returns $B + 2w$ entries along
    `axis`: the previous device's last `width` valid entries, this block's valid entries,
    the next device's first `width` entries, then zeros for a ragged block. With
    `periodic`, the first and last devices wrap around the global size `size`; otherwise
    they get zeros. Split along two axes (a pencil), call it once per axis: the second
    call extends the already extended block, so the corners come along. `width=0`
    returns `x` unchanged. Other axes of `x` pass through.
    """
    axis, lay = _layout("halo_extend", x, axis, width, axis_name, size, periodic, 0)
    if lay.width == 0:
        return x
    w, b, n = lay.width, lay.block, lay.last
    index = jax.lax.axis_index(axis_name)
    x = _valid(_varying(x, axis_name), axis, lay, index)
    tail = _slice(x, axis, b - w, b)
    if lay.ragged_wrap:
        tail = _on_last(index, lay, tail, _slice(x, axis, n - w, n))
    before = _shift(tail, axis_name, lay.ring(1))
    after = _shift(_slice(x, axis, 0, w), axis_name, lay.ring(-1))
    out = jnp.concatenate([before, x, after], axis)
    if lay.ragged_wrap:
        ragged = jnp.concatenate([before, _slice(x, axis, 0, n), after], axis)
        out = _on_last(index, lay, out, _pad(ragged, axis, 0, b - n))
    return out


def halo_reduce(
    y: jax.Array, axis: int, width: int, axis_name: str, size: int, periodic: bool
) -> jax.Array:
    r"""The adjoint of [`halo_extend`][]: an extended block back to a block, the halo parts
    added into the neighbours' blocks.

    `y` is this device's extended block ($B + 2w$ entries along `axis`, laid out as
    `halo_extend` returns them); the result has $B$ entries along `axis`:
    $$r_i = y_i[w : w + n_i] + (\text{the first } w \text{ entries of } y_{i+1}
    \text{ at the end of the valid part}) + (\text{the } w \text{ entries of } y_{i-1}
    \text{ after its valid part, at the start}),$$
    with zeros in the padding entries. Summed over devices,
    $\langle \mathrm{extend}(x), y\rangle = \langle x, \mathrm{reduce}(y)\rangle$. For a
    pencil, reduce the axes in the reverse order of the extensions.
    """
    axis, lay = _layout("halo_reduce", y, axis, width, axis_name, size, periodic, 2)
    if lay.width == 0:
        return y
    w, b, n = lay.width, lay.block, lay.last
    index = jax.lax.axis_index(axis_name)
    y = _varying(y, axis_name)
    after = _slice(y, axis, w + b, 2 * w + b)
    if lay.ragged_wrap:
        after = _on_last(index, lay, after, _slice(y, axis, w + n, 2 * w + n))
    from_prev = _shift(after, axis_name, lay.ring(1))
    from_next = _shift(_slice(y, axis, 0, w), axis_name, lay.ring(-1))
    at_end = _pad(from_next, axis, b - w, 0)
    if lay.ragged_wrap:
        at_end = _on_last(index, lay, at_end, _pad(from_next, axis, n - w, b - n))
    out = _slice(y, axis, w, w + b) + _pad(from_prev, axis, 0, b - w) + at_end
    return _valid(out, axis, lay, index)


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

    @property
    def ragged_wrap(self) -> bool:
        """Whether the last used block is ragged and wraps around to the first."""
        return self.periodic and self.last < self.block

    @property
    def limit(self) -> int:
        """The widest halo one neighbour can give: a block, or with `periodic` the last
        block's valid entries (the first device's halo wraps around to them)."""
        return self.last if self.periodic else self.block

    def describe(self) -> str:
        return (
            f"{self.size} entries over {self.devices} devices: blocks of {self.block}, the "
            f"last with {self.last}"
        )

    def ring(self, step: int) -> list[tuple[int, int]]:
        """The `ppermute` pairs sending each used device's data `step` (+1 or -1) devices
        on, around the used devices when periodic."""
        pairs = [(i, i + step) for i in range(self.used) if 0 <= i + step < self.used]
        if self.periodic:
            pairs.append((0, self.used - 1) if step < 0 else (self.used - 1, 0))
        return pairs


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
    if width > lay.limit:
        source = "the last block's valid entries (periodic)" if periodic else "a block"
        raise ValueError(
            f"`{name}(width=...)` must be at most {lay.limit}, the size of {source}: each "
            f"halo comes from one neighbour ({lay.describe()} valid entries); got {width}. "
            f"Split over fewer devices or use a smaller width."
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


def _on_last(index: jax.Array, lay: _Layout, other: jax.Array, last: jax.Array) -> jax.Array:
    """`last` on the last used device, `other` on the others."""
    return jnp.where(index == lay.used - 1, last, other)


def _shift(x: jax.Array, axis_name: str, pairs: list[tuple[int, int]]) -> jax.Array:
    """`jax.lax.ppermute` of `x` by `pairs`; devices that receive nothing get zeros."""
    return jax.lax.ppermute(x, axis_name, pairs) if pairs else jnp.zeros_like(x)


def _slice(x: jax.Array, axis: int, start: int, stop: int) -> jax.Array:
    return jax.lax.slice_in_dim(x, start, stop, axis=axis)


def _pad(x: jax.Array, axis: int, before: int, after: int) -> jax.Array:
    pads = [(0, 0)] * x.ndim
    pads[axis] = (before, after)
    return jnp.pad(x, pads)
