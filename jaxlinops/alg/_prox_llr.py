r"""`NuclearNormBlocks`: locally low rank (LLR) regularisation, the nuclear norms of the
(pixels x frames) matrices of non-overlapping blocks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..functional import array_to_blocks, blocks_to_array
from ..linops import ArrayToBlocks
from ._prox import as_inexact, as_real, check_nonnegative, real_dtype
from ._prox_base import AbstractProx

_MSG_OVERLAP = """\
`NuclearNormBlocks(blocks=...)` needs non-overlapping blocks (stride >= block size on every
axis); got block size {block} and stride {stride}. With overlapping blocks the block
extraction B is not orthogonal (B^H B counts the blocks covering each pixel), and the prox of
sum_b ||B_b x||_* has no closed form: thresholding each block and averaging the overlaps is
an approximation, not the prox. Use stride = block size (and, as sigpy's LLR does, a random
shift of the image per iteration to avoid block artefacts), or split the term with ADMM.
"""


class NuclearNormBlocks(AbstractProx):
    r"""$g(x) = \lambda \sum_b \|M_b(x)\|_*$: locally low rank regularisation.

    $M_b(x)$ is block $b$ of $x$ (as [`jaxlinops.ArrayToBlocks`][] extracts it from the
    last $D$ axes) as a matrix: its pixels (rows) by its frames (columns: the entries of
    `frame_axes`, e.g. time or contrasts); $\|\cdot\|_*$ is the nuclear norm, the sum of
    singular values. Axes of `x` that are neither image nor frame axes index independent
    matrices.

    $\mathrm{prox}_{t g}(v) = v + B^H(\mathrm{SVT}_{t\lambda}(B v) - B v)$: singular value
    soft thresholding $U \max(\Sigma - t\lambda, 0) V^H$ of each block (one batched
    `jnp.linalg.svd`), put back in place; pixels that no block covers are unchanged.
    **Exact because the blocks do not overlap** (stride >= block size: $B^H B$ is the
    projection onto the covered pixels); overlapping blocks are refused (no closed form).

    Gradients are those of `jnp.linalg.svd`: finite for blocks whose singular values are
    distinct (generic data) or all below the threshold (e.g. zero blocks, which map to
    zero); NaN for a block with repeated singular values above it.
    """

    lamda: jax.Array
    block_size: tuple[int, ...] = eqx.field(static=True)
    stride: tuple[int, ...] = eqx.field(static=True)
    mask: tuple[bool, ...] | None = eqx.field(static=True)
    grid_size: tuple[int, ...] | None = eqx.field(static=True)
    frame_axes: tuple[int, ...] | None = eqx.field(static=True)

    def __init__(
        self,
        lamda: ArrayLike,
        blocks: ArrayToBlocks | Sequence[int],
        frame_axes: int | Sequence[int] | None = None,
    ):
        """**Arguments:**

        - `lamda`: $\\lambda \\ge 0$, a scalar.
        - `blocks`: an `ArrayToBlocks` with stride >= block size (its grid size, block
          size, stride and mask are used; the input's last axes must match its grid), or
          the block sizes (stride = block size; incomplete blocks at the ends are left
          out, as `ArrayToBlocks` does).
        - `frame_axes`: the axes of the input that form the columns (they must precede
          the image axes; negative numbers count from the end). Default: every axis before
          the image axes.
        """
        self.lamda = check_nonnegative(lamda, "`NuclearNormBlocks(lamda=...)`")
        if self.lamda.ndim != 0:
            raise ValueError(
                f"`NuclearNormBlocks(lamda=...)` expects a scalar; got shape {self.lamda.shape}."
            )
        if isinstance(blocks, ArrayToBlocks):
            self.block_size, self.stride = blocks.block_size, blocks.stride
            self.mask, self.grid_size = blocks.mask, blocks.grid_size
        else:
            self.block_size = _sizes(blocks)
            self.stride, self.mask, self.grid_size = self.block_size, None, None
        if any(s < b for s, b in zip(self.stride, self.block_size)):
            raise ValueError(_MSG_OVERLAP.format(block=self.block_size, stride=self.stride))
        if frame_axes is None or isinstance(frame_axes, (int, np.integer)):
            self.frame_axes = None if frame_axes is None else (int(frame_axes),)
        else:
            self.frame_axes = tuple(int(a) for a in frame_axes)

    def _layout(self, x: jax.Array) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The image size and the frame axes (non-negative) for input `x`."""
        d = len(self.block_size)
        lead = x.ndim - d
        where = f"`NuclearNormBlocks` on an input of shape {x.shape}"
        if lead < 0 or (self.grid_size is not None and x.shape[lead:] != self.grid_size):
            grid = self.grid_size or f"{d} image axes"
            raise ValueError(f"{where}: expected the last axes to be the image, {grid}.")
        frames = tuple(range(lead)) if self.frame_axes is None else self.frame_axes
        if any(not -x.ndim <= a < lead for a in frames):
            raise ValueError(f"{where}: `frame_axes={frames}` must lie before the image axes.")
        return tuple(x.shape[lead:]), tuple(sorted({a % x.ndim for a in frames}))

    def _blocks(self, x: jax.Array) -> tuple[jax.Array, tuple[int, ...]]:
        """The blocks of `x` as matrices `(..., pixels, frames)` and their shape before
        the reshape (frame axes moved last)."""
        mask = None if self.mask is None else np.reshape(self.mask, self.block_size)
        grid, frames = self._layout(x)
        y = array_to_blocks(x, self.block_size, self.stride, mask)
        y = jnp.moveaxis(y, frames, range(y.ndim - len(frames), y.ndim))
        entries = len(self.block_size) if self.mask is None else 1
        rows = y.ndim - len(frames) - entries  # the first axis of the block entries
        pixels, columns = y.shape[rows : y.ndim - len(frames)], y.shape[y.ndim - len(frames) :]
        return y.reshape(y.shape[:rows] + (math.prod(pixels), math.prod(columns))), y.shape

    def _unblock(self, m: jax.Array, shape: tuple[int, ...], x: jax.Array) -> jax.Array:
        mask = None if self.mask is None else np.reshape(self.mask, self.block_size)
        grid, frames = self._layout(x)
        y = jnp.moveaxis(m.reshape(shape), range(len(shape) - len(frames), len(shape)), frames)
        return blocks_to_array(y, grid, self.block_size, self.stride, mask)

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        v = as_inexact(v)
        m, shape = self._blocks(v)
        tau = as_real(step, v) * as_real(self.lamda, v)
        change = _svt(m, tau) - m
        return v + self._unblock(change, shape, v).astype(v.dtype)

    def value(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        m, _ = self._blocks(x)
        s = _in_chunks(lambda c: jnp.linalg.svd(c, compute_uv=False), m)
        return as_real(self.lamda, x) * jnp.sum(s).astype(real_dtype(x))


# On a CPU, jaxlib splits the SVD of a large batch of matrices over XLA's intra-op thread
# pool and waits for the parts; inside a program split across simulated CPU devices every
# thread of the pool may be running a device's program, and the parts never run (a hang,
# seen with 2 and 8 devices on 2 cores). Batches of at most _CHUNK matrices, one after
# another, stay below the size jaxlib splits (8 x 8 blocks: 39 at most).
_CHUNK = 32


def _in_chunks(fn, m: jax.Array) -> jax.Array:
    """`fn` of the matrices `m` `(..., p, f)`, on a CPU `_CHUNK` matrices at a time (see
    above; `fn` maps `(k, p, f)` to arrays with a leading `k`); zero matrices fill the last
    chunk."""
    n = math.prod(m.shape[:-2])
    if n <= _CHUNK or jax.default_backend() != "cpu":
        return fn(m)
    flat = m.reshape(n, *m.shape[-2:])
    chunks = jnp.pad(flat, ((0, -n % _CHUNK), (0, 0), (0, 0))).reshape(-1, _CHUNK, *flat.shape[1:])
    out = jax.lax.map(fn, chunks)
    return out.reshape(-1, *out.shape[2:])[:n].reshape(*m.shape[:-2], *out.shape[2:])


def _svt(m: jax.Array, tau: jax.Array) -> jax.Array:
    """`_svt_batch` of `m`, in chunks when `tau` is one number (see `_in_chunks`)."""
    if jnp.ndim(tau):
        return _svt_batch(m, tau)
    return _in_chunks(lambda c: _svt_batch(c, tau), m)


def _svt_batch(m: jax.Array, tau: jax.Array) -> jax.Array:
    r"""$U \max(\Sigma - \tau, 0) V^H$ of each matrix of `m`. A block whose Frobenius norm
    is at most $\tau$ (so every singular value is) maps to 0 with a zero gradient: its SVD
    is taken of a stand-in with distinct singular values (a zero block's SVD has NaN
    derivatives)."""
    p, f = m.shape[-2:]
    dead = jnp.sum(jnp.real(m * jnp.conj(m)), axis=(-2, -1), keepdims=True) <= tau**2
    standin = jnp.eye(p, f, dtype=m.dtype) * jnp.arange(1, f + 1).astype(m.dtype)[None, :]
    u, s, vh = jnp.linalg.svd(jnp.where(dead, jnp.broadcast_to(standin, m.shape), m), False)
    s = jnp.maximum(s - tau, 0).astype(m.dtype)
    return jnp.where(dead, 0, (u * s[..., None, :]) @ vh)


def _sizes(blocks: object) -> tuple[int, ...]:
    if not isinstance(blocks, Sequence) or not all(
        isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b > 0 for b in blocks
    ):
        raise TypeError(
            f"`NuclearNormBlocks(blocks=...)` expects an ArrayToBlocks or a sequence of "
            f"positive block sizes; got {blocks!r:.60}."
        )
    return tuple(int(b) for b in blocks)
