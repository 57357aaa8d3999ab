"""torchlinops' `fold` and `unfold`: the block kernels under their other names.

`unfold(x, block_size, stride)` is [`array_to_blocks`][] and
`fold(x, im_size, block_size, stride)` is [`blocks_to_array`][] (its adjoint), with
torchlinops' argument names; torchlinops' `output` buffer is accepted and, as JAX arrays
are immutable, not filled (a warning says so).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
from jax.typing import ArrayLike

from ._blocks import from_blocks, ignored_out, to_blocks

_ARGS = ("x", "block_size")


def unfold(
    x: jax.Array,
    block_size: Sequence[int],
    stride: Sequence[int] | None = None,
    mask: ArrayLike | None = None,
    output: object = None,
) -> jax.Array:
    r"""Extract blocks from the last `D = len(block_size)` axes of `x`:
    `[B..., *im] -> [B..., *nblocks, *block_size]` (`[B..., *nblocks, nnz(mask)]` with a
    boolean `mask` of shape `block_size`), $y[b, k, p] = x[b, k \cdot s + p]$.

    The same kernel as [`array_to_blocks`][]. `output`: torchlinops' output buffer, not
    filled (JAX arrays are immutable): passing one warns; use the returned array.
    """
    ignored_out("unfold", "output", output)
    return to_blocks("unfold", x, block_size, stride, mask, _ARGS)


def fold(
    x: jax.Array,
    im_size: Sequence[int],
    block_size: Sequence[int],
    stride: Sequence[int] | None,
    mask: ArrayLike | None = None,
    output: object = None,
) -> jax.Array:
    r"""Sum blocks `[B..., *nblocks, *block_size]` (or `[B..., *nblocks, nnz(mask)]`) back
    into an array `[B..., *im_size]`, the adjoint of [`unfold`][]: overlapping blocks add
    up. `stride` is required, as in torchlinops (None: all ones).

    The same kernel as [`blocks_to_array`][]; `output` as for [`unfold`][].
    """
    ignored_out("fold", "output", output)
    return from_blocks("fold", x, im_size, block_size, stride, mask, _ARGS)
