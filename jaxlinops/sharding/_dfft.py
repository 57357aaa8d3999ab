r"""Distributed FFT inside `jax.shard_map`: the slab and pencil methods, with `all_to_all`.

**Blocks** (the layout of [`halo_extend`][], so the two compose). A global axis of $N$
entries split over the $D$ devices of mesh axis `axis_name` is held in blocks of
$B = \lceil N/D \rceil$ entries: device $i$ holds the global entries $iB, \dots, iB+B-1$,
those past $N - 1$ being padding (the padded axis has $DB$ entries, the padding at its
end; with $N < D$ some devices hold padding only). An axis not split is held whole: $N$
entries, no padding.

**Transpose.** [`transpose_split`][] moves the split from one axis to another with one
`jax.lax.all_to_all`: each device keeps $1/D$ of its block and sends $(D-1)/D$ of it. The
axis that becomes whole loses its padding; the one that becomes split gets zero padding.

**FFT.** The DFT over several axes is a product of 1-D DFTs along each axis, in any order.
[`fft_split`][] transforms the axes held whole, then for each split axis transposes it
with a whole axis (already transformed, or not transformed at all) and transforms it. Each
axis is transformed only while whole and unpadded, by `jaxlinops.functional`'s
`centered_fftn` itself: its phase ramps act along one axis at a time, so the result is
`centered_fftn` of the gathered array (the inverse: its adjoint, `inverse=True`). The
output stays in the transposed layout (transposing back would cost a second exchange that
the next operator often does not need); the call returns which axis is split now.
A block split along two axes over two mesh axes (a *pencil*) takes two transposes, one per
mesh axis, each trading a split axis for a whole one.

Input padding entries may hold anything: they ride along in rows that the transposes
drop, and output padding entries are zero. So the transposes, and `fft_split` with
`norm="ortho"`, are exact adjoints of their reverse calls on the padded blocks, which the
dot test checks.

**Why not jaxDecomp.** jaxDecomp's pure-JAX backend (`jaxdecomp/_src/jax/fft.py`) does the
same `all_to_all` transposes, but as a jit-level operation with custom partitioning: it
takes a sharded global array whose spec must follow the mesh's axis order, transforms
3-D arrays only (plus one batch axis), over all three axes, uncentered, with tiled
exchanges that need sizes divisible by the mesh (no ragged slabs), and it imports a
compiled extension (`jaxdecomplib`) even for that backend. The sharding layer needs a
local-block function inside its own `shard_map`, any number of axes, a subset of them,
ragged sizes and the centered convention: the few lines below, with no dependency.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_size, as_sizes
from ..functional._fft import centered_fftn

_NORMS = ("ortho", "backward", "forward")


def transpose_split(
    x: jax.Array, split_axis: int, gather_axis: int, axis_name: str, sizes: Sequence[int]
) -> jax.Array:
    r"""The slab transpose: the block of `x` split along `split_axis` becomes split along
    `gather_axis`, over the mesh axis `axis_name` of $D$ devices.

    Called inside `jax.shard_map`. `sizes` is the global (unpadded) shape; only its
    entries at `split_axis` ($N_s$) and `gather_axis` ($N_g$) are used. `x` holds
    $\lceil N_s/D\rceil$ entries along `split_axis` (padding at the end, any values) and
    all $N_g$ along `gather_axis`; the result holds all $N_s$ along `split_axis` (the
    padding removed) and $\lceil N_g/D\rceil$ along `gather_axis` (padding zeros). Other
    axes pass through (they may be split over other mesh axes).
    `transpose_split(y, gather_axis, split_axis, axis_name, sizes)` is both its inverse on
    the valid entries and its adjoint on the padded blocks.
    """
    name = "transpose_split"
    x = as_array(x, f"`{name}(x=...)`")
    sizes = _sizes(name, x, sizes)
    split_axis, gather_axis = (
        _axis(name, "split_axis", x, split_axis),
        _axis(name, "gather_axis", x, gather_axis),
    )
    if split_axis == gather_axis:
        raise ValueError(
            f"`{name}`: `split_axis` and `gather_axis` must differ; both are {split_axis}."
        )
    devices = _devices(name, axis_name)
    _check_block(name, x, split_axis, sizes[split_axis], devices, axis_name)
    _check_block(name, x, gather_axis, sizes[gather_axis], 1, None)
    return _transpose(x, split_axis, gather_axis, axis_name, sizes, devices)


def fft_split(
    x: jax.Array,
    axes: Sequence[int],
    split: int | Sequence[int],
    axis_name: str | Sequence[str],
    sizes: Sequence[int],
    inverse: bool = False,
    centered: bool = True,
    norm: str = "ortho",
    out_split: int | Sequence[int] | None = None,
) -> tuple[jax.Array, int | tuple[int, ...]]:
    r"""The FFT over `axes` of a block split along `split`, left in the transposed layout.

    Called inside `jax.shard_map`. `x` is this device's block of a global array of shape
    `sizes` (unpadded), split along the axis `split` over the mesh axis `axis_name` (see
    the module docstring for the blocks), or, for a pencil, along the axes
    `split[k]` over the mesh axes `axis_name[k]`.
    Returns `(y, new_split)`: `y` is this device's block of
    $$\mathcal F_{\text{axes}}(x) = \texttt{centered\_fftn}(x)$$
    (`centered=False`: `jnp.fft.fftn`; `inverse=True`: the inverse transform,
    `ifftn`, the adjoint with `norm="ortho"`), split along `new_split[k]` over
    `axis_name[k]` (a plain int for a plain `split`), its padding zero.

    First the axes of `axes` held whole are transformed; then each split axis `split[k]`,
    in order, trades places with `out_split[k]` (one `transpose_split`) and, if in
    `axes`, is transformed. `out_split[k]` must be held whole at that moment, in `axes`
    or not (e.g. a coil axis: the grid then ends whole on every device). By default, it
    is the first axis of `axes` held whole at that moment (then every split axis must be
    in `axes`).
    Undo a call with `fft_split(y, axes, new_split[::-1], axis_name[::-1],
    inverse=not inverse, out_split=split[::-1])` (for a plain int, no reversal).
    Each transpose moves $(D_k-1)/D_k$ of the block once.
    """
    name = "fft_split"
    x = as_array(x, f"`{name}(x=...)`")
    sizes = _sizes(name, x, sizes)
    for option, value in (("inverse", inverse), ("centered", centered)):
        if not isinstance(value, bool):
            raise TypeError(f"`{name}({option}=...)` must be a bool; got {value!r}.")
    if norm not in _NORMS:
        raise ValueError(f"`{name}(norm=...)` must be one of {_NORMS}; got {norm!r}.")
    axes, splits, names, devices, targets = _plan(x, axes, split, axis_name, sizes, out_split)

    with jax.numpy_dtype_promotion("standard"):
        x = x.astype(jnp.result_type(x.dtype, jnp.complex64))
    x = _fft(x, [a for a in axes if a not in splits], inverse, centered, norm)
    for s, t, n, d in zip(splits, targets, names, devices, strict=True):
        x = _transpose(x, s, t, n, sizes, d)
        if s in axes:
            x = _fft(x, [s], inverse, centered, norm)
    return x, (targets if isinstance(split, Sequence) else targets[0])


def _transpose(
    x: jax.Array, split: int, gather: int, axis_name: str, sizes: tuple[int, ...], devices: int
) -> jax.Array:
    """`transpose_split` on checked arguments."""
    block = -(-sizes[gather] // devices)
    pads = [(0, 0)] * x.ndim
    pads[gather] = (0, block * devices - sizes[gather])
    x = jnp.pad(x, pads)
    if axis_name not in jax.typeof(x).mat.varying:  # all_to_all needs a varying operand
        x = jax.lax.pcast(x, (axis_name,), to="varying")
    x = jax.lax.all_to_all(x, axis_name, split_axis=gather, concat_axis=split, tiled=True)
    return jax.lax.slice_in_dim(x, 0, sizes[split], axis=split)


def _fft(x: jax.Array, axes: list[int], inverse: bool, centered: bool, norm: str) -> jax.Array:
    """The FFT of `x` over `axes` (all held whole), centered like `centered_fftn`."""
    if not axes:
        return x
    if not centered:
        return (jnp.fft.ifftn if inverse else jnp.fft.fftn)(x, axes=axes, norm=norm)
    last = list(range(x.ndim - len(axes), x.ndim))
    y = centered_fftn(jnp.moveaxis(x, axes, last), len(axes), inverse, norm)
    return jnp.moveaxis(y, last, axes)


def _plan(
    x: jax.Array,
    axes: object,
    split: object,
    axis_name: object,
    sizes: tuple[int, ...],
    out_split: object,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    """Check the layout arguments of `fft_split`; return its axes, split axes, mesh axis
    names, their device counts and the axis each split axis trades places with (given, or
    the first axis of `axes` held whole at that moment)."""
    name = "fft_split"
    axes = tuple(_axis(name, "axes", x, a) for a in _seq(axes))
    splits = tuple(_axis(name, "split", x, s) for s in _seq(split))
    names = tuple(str(n) for n in _seq(axis_name))
    if len(set(axes)) != len(axes) or len(set(splits)) != len(splits):
        raise ValueError(
            f"`{name}(axes=..., split=...)` must not repeat an axis; got {axes}, {splits}."
        )
    if len(names) != len(splits) or len(set(names)) != len(names):
        raise ValueError(
            f"`{name}(axis_name=...)` must give one distinct mesh axis per split axis "
            f"{splits}; got {axis_name!r}."
        )
    devices = tuple(_devices(name, n) for n in names)
    for a in dict.fromkeys(axes + splits):
        d, n = next(((d, n) for s, n, d in zip(splits, names, devices) if s == a), (1, None))
        _check_block(name, x, a, sizes[a], d, n)
    given = (
        None
        if out_split is None
        else tuple(_axis(name, "out_split", x, t) for t in _seq(out_split))
    )
    if given is not None and len(given) != len(splits):
        raise ValueError(
            f"`{name}(out_split=...)` must give one axis per split axis {splits}; got "
            f"{out_split!r}."
        )
    if given is None and not set(splits) <= set(axes):
        raise ValueError(
            f"`{name}(split=...)`: split axes {splits} not among `axes` {axes} need "
            f"`out_split=...` (where to move their split); without it, leave them out of "
            f"`split` (an axis split but not transformed needs no communication)."
        )
    split_of, targets = dict(zip(splits, names)), []  # axis -> the mesh axis splitting it
    for k, s in enumerate(splits):
        whole = [a for a in axes if a not in split_of]
        if given is None and not whole:
            raise ValueError(
                f"`{name}`: axes {axes} split along {splits} leave no whole axis to "
                f"transpose axis {s} with; pass `out_split=...` (an axis held whole, e.g. "
                f"a batch axis) or split fewer axes."
            )
        t = whole[0] if given is None else given[k]
        if t in split_of:
            raise ValueError(
                f"`{name}(out_split=...)`: axis {t} must be held whole when axis {s} is "
                f"transposed with it; it is split over {split_of[t]!r} then."
            )
        if t not in splits:  # held whole from the start
            _check_block(name, x, t, sizes[t], 1, None)
        split_of[t] = split_of.pop(s)
        targets.append(t)
    return axes, splits, names, devices, tuple(targets)


def _seq(value: object) -> tuple[object, ...]:
    """`value` as a tuple: one value alone, or a sequence (not a string)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(value)
    return (value,)


def _axis(name: str, arg: str, x: jax.Array, axis: object) -> int:
    """`axis` as a non-negative axis of `x`, checked."""
    axis = as_size(axis, f"`{name}({arg}=...)`", None)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(
            f"`{name}({arg}=...)` must be an axis of the block (ndim {x.ndim}); got {axis}."
        )
    return axis % x.ndim


def _sizes(name: str, x: jax.Array, sizes: object) -> tuple[int, ...]:
    sizes = as_sizes(sizes, f"`{name}(sizes=...)`", 1)
    if len(sizes) != x.ndim:
        raise ValueError(
            f"`{name}(sizes=...)` must give the global size of each of the block's "
            f"{x.ndim} axes; got {sizes}."
        )
    return sizes


def _devices(name: str, axis_name: object) -> int:
    """The number of devices along the mesh axis `axis_name` of the enclosing shard_map."""
    try:
        return jax.lax.axis_size(axis_name)
    except NameError as e:
        raise ValueError(
            f"`{name}` must be called inside `jax.shard_map` over a mesh with the axis "
            f"`axis_name`; got axis_name={axis_name!r}, which is not bound here."
        ) from e


def _check_block(
    name: str, x: jax.Array, axis: int, size: int, devices: int, axis_name: str | None
) -> None:
    """Check that `x` holds the block of `size` over `devices` along `axis`."""
    block = -(-size // devices)
    if x.shape[axis] != block:
        how = f"split over {devices} devices of {axis_name!r}" if axis_name else "held whole"
        raise ValueError(
            f"`{name}`: axis {axis} of global size {size}, {how}, must have {block} "
            f"entries in the block; got shape {tuple(x.shape)}."
        )
