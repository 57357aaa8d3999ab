"""Centered zero padding and cropping of the trailing axes of an array."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from .._arrays import as_array, as_sizes

_ARGS = {"image size": "im_size", "padded size": "pad_im_size", "crop size": "crop_im_size"}


def pad_widths(im_size: Sequence[int], pad_im_size: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """The `(before, after)` zero padding per axis that centers `im_size` in `pad_im_size`.

    The center sample `i // 2` of each image axis lands on the center sample `p // 2` of
    the padded axis, which is torchlinops' rule: with total padding $t = p - i$, even
    $t$ pads `(t/2, t/2)`; odd $t$ pads `(t//2 + 1, t//2)` for odd $i$ and
    `(t//2, t//2 + 1)` for even $i$. Example: `pad_widths((10,), (21,)) == ((5, 6),)`.
    """
    return _widths(*check_sizes("pad_widths", im_size, pad_im_size))


def pad_to_size(grid_size: Sequence[int], padded_size: Sequence[int]) -> list[int]:
    """The centered padding of `grid_size` to `padded_size` as a flat list in
    `torch.nn.functional.pad`'s order: last axis first, `[before_last, after_last,
    before_second_last, ...]` (torchlinops' `pad_to_size`).

    The widths are those of [`pad_widths`][]: `pad_to_size((10, 10), (21, 21)) ==
    [5, 6, 5, 6]`.
    """
    grid = as_sizes(grid_size, "`pad_to_size(grid_size=...)`")
    padded = as_sizes(padded_size, "`pad_to_size(padded_size=...)`")
    if len(grid) != len(padded):
        raise ValueError(
            f"`pad_to_size`: cannot pad from size {grid} to size {padded}: they need the same "
            f"number of axes."
        )
    return [w for pair in reversed(_widths(grid, padded)) for w in pair]


def pad_to_scale(grid_size: Sequence[int], scale_factor: float) -> list[int]:
    """[`pad_to_size`][] to `int(n * scale_factor)` along each axis of size `n`:
    `pad_to_scale((10, 10), 2.0) == [5, 5, 5, 5]`."""
    return pad_to_size(grid_size, [int(n * scale_factor) for n in grid_size])


def crop_slice_from_pad(pad: Sequence[int]) -> list[slice]:
    """The slices, first axis first, that undo a padding list in
    `torch.nn.functional.pad`'s order (as [`pad_to_size`][] returns):
    `crop_slice_from_pad([0, 0, 5, 5]) == [slice(5, -5), slice(0, None)]`."""
    widths = as_sizes(pad, "`crop_slice_from_pad(pad=...)`")
    if len(widths) % 2:
        raise ValueError(
            f"`crop_slice_from_pad`: expects (before, after) pairs, an even number of widths; "
            f"got {list(widths)}."
        )
    pairs = zip(widths[0::2], widths[1::2])
    return [slice(before, -after if after else None) for before, after in pairs][::-1]


def center_pad(x: jax.Array, im_size: Sequence[int], pad_im_size: Sequence[int]) -> jax.Array:
    """Zero-pad the last `len(im_size)` axes of `x` from `im_size` to `pad_im_size`, centered.

    Leading axes are batch axes. The inverse (and adjoint) is [`center_crop`][].
    """
    x = as_array(x, "`center_pad(x=...)`")
    im_size, pad_im_size = check_sizes("center_pad", im_size, pad_im_size)
    _check_trailing("center_pad", x, im_size)
    widths = _widths(im_size, pad_im_size)
    return jnp.pad(x, ((0, 0),) * (x.ndim - len(widths)) + widths)


def center_crop(x: jax.Array, im_size: Sequence[int], crop_im_size: Sequence[int]) -> jax.Array:
    """Keep the centered `crop_im_size` block of the last `len(im_size)` axes of `x`.

    The adjoint of [`center_pad`][]: `center_crop(center_pad(x, i, p), p, i) == x`.
    """
    x = as_array(x, "`center_crop(x=...)`")
    labels = ("crop size", "image size")
    crop_im_size, im_size = check_sizes("center_crop", crop_im_size, im_size, labels)
    _check_trailing("center_crop", x, im_size)
    widths = _widths(crop_im_size, im_size)
    index = tuple(slice(before, before + n) for (before, _), n in zip(widths, crop_im_size))
    return x[(Ellipsis, *index)]


def _widths(small: tuple[int, ...], big: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((b // 2 - s // 2, b - s - (b // 2 - s // 2)) for s, b in zip(small, big))


def check_sizes(
    name: str,
    small: Sequence[int],
    big: Sequence[int],
    labels: tuple[str, str] = ("image size", "padded size"),
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validate a (small, big) pair of sizes as Python ints; errors name `name` and the
    argument (`im_size`, `pad_im_size` or `crop_im_size`, after `labels`).

    Non-integral (`7.9`) or negative sizes raise a ValueError, traced or non-numeric ones
    a TypeError (see `jaxlinops._arrays.as_sizes`)."""
    small = as_sizes(small, f"`{name}({_ARGS[labels[0]]}=...)`")
    big = as_sizes(big, f"`{name}({_ARGS[labels[1]]}=...)`")
    if len(small) != len(big):
        raise ValueError(
            f"`{name}`: the {labels[0]} and {labels[1]} need the same number of axes; got "
            f"{labels[0]} {small} and {labels[1]} {big}."
        )
    if any(b < s for s, b in zip(small, big)):
        raise ValueError(
            f"`{name}`: each {labels[1]} must be at least the {labels[0]}; got {labels[0]} "
            f"{small} and {labels[1]} {big}."
        )
    return small, big


def _check_trailing(name: str, x: jax.Array, size: tuple[int, ...]) -> None:
    if x.ndim < len(size) or tuple(x.shape[x.ndim - len(size) :]) != size:
        raise ValueError(
            f"`{name}`: expected the last {len(size)} axes of the input to have sizes "
            f"{size}; got an array of shape {tuple(x.shape)}."
        )
