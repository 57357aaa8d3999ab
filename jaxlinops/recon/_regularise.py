r"""The regularised reconstructions of `jaxlinops-recon --reg` and the demo's `--reg`: the
SENSE model $A$ (split across devices or not) with a prior,

$$\min_x \tfrac12 \|A x - y_w\|^2 + g(x) .$$

- `l1-wavelet`: $g(x) = \lambda \|W x\|_1$, $W$ the orthogonal Daubechies-4 wavelet
  transform over the image dims (`jl.Wavelet`), by FISTA (`jl.alg.fista`). $W$ is
  orthogonal, so the prox is exact and cheap, $W^H \mathrm{soft}_{t\lambda}(W v)$: each
  iteration is one $A$, one $A^H$ and two wavelet transforms, with no inner solve.
- `tv`: anisotropic total variation $g(x) = \lambda \|D x\|_1$, $D$ the periodic forward
  differences along the image dims (`jl.FiniteDifference`), by ADMM (`jl.alg.admm`) on the
  split $z = D x$. $D$ is not orthogonal, so $\|D x\|_1$ has no closed-form prox (FISTA
  cannot take it); ADMM needs only the soft threshold, and solves its $x$-update
  $(A^H A + \rho D^H D)\, x = A^H y_w + \rho D^H (z - u)$ with 5 warm-started CG
  iterations on the operators' own normals: the (split) Toeplitz normal of CG-SENSE plus
  $D$'s Laplacian stencil. PDHG (`jl.alg.pdhg`) solves the same problem with no inner
  solve, but its gradient-like steps on this ill-conditioned $A$ need hundreds of
  iterations to get where 20 of ADMM get.
- `llr`: locally low rank. LLR proper needs a frame dim (time frames, contrasts, echoes):
  each block of pixels × frames is a matrix, low rank because the frames share a few
  signal evolutions, and `jl.alg.NuclearNormBlocks` thresholds its singular values. A
  single image takes the spatial form: each $8^d$ block $X_b$ of a $d$-dimensional image
  is an $8 \times 8^{d-1}$ matrix, $g(x) = \lambda \sum_b \|X_b\|_*$. A uniform block, and
  one cut by an edge along a grid axis, is rank 1, a corner rank 2, while noise and
  streaks spread over all the singular values. The blocks do not overlap, so the prox
  (singular value thresholding of each block) is exact, and FISTA solves it as it does
  ℓ1-wavelet. The block grid is fixed (FISTA needs one $g$; sigpy's LLR shifts it at
  random every iteration to hide block edges); pixels beyond the last whole block are not
  regularised.

$\lambda$ follows the data: a `fraction` of the largest magnitude of $A^H y_w$ in the
regulariser's domain (its wavelet coefficients, its differences, the largest singular
value of its blocks), so that scaling $y$ scales $\lambda$ and the solution alike. The
default fractions (`LAMDA`) were tuned on the demo's default problem (`ρ = 0.05` for ADMM,
with $\|A\| = 1$ by the demo's normalisation).
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .. import alg, linops
from ._model import GRID

# the regularisers, with their default λ fraction and iterations (ADMM's iterations each
# run ADMM_CG_ITERS CG iterations)
LAMDA = {"l1-wavelet": 1e-3, "tv": 5e-3, "llr": 2.5e-3}
ITERS = {"l1-wavelet": 50, "tv": 20, "llr": 50}
NAMES = {"l1-wavelet": "ℓ1-wavelet", "tv": "TV", "llr": "LLR"}
SOLVERS = {"l1-wavelet": "FISTA", "tv": "ADMM", "llr": "FISTA"}
RHO, ADMM_CG_ITERS = 0.05, 5
BLOCK = 8  # LLR's blocks are BLOCK pixels along each image dim
# jaxlib's CPU SVD splits a batch whose cost exceeds 2e5 flops (10 m n min(m, n) per
# matrix: 39 blocks of 8 × 8) over XLA's intra-op thread pool and waits for the parts; when
# every thread of the pool runs a simulated device's program, the parts never run and the
# solve hangs. Chunks of CHUNK blocks, one after another, stay below the split.
CHUNK = 32


class PatchNuclearNorm(alg.AbstractProx):
    r"""$g(x) = \lambda \sum_b \|X_b\|_*$ for a $d$-dimensional image $x$: $X_b$ its block
    $b$ of `size` pixels per dim as a `size` × `size`$^{d-1}$ matrix (non-overlapping
    blocks from the origin; pixels beyond the last whole block belong to none and are
    left as they are), $\|\cdot\|_*$ the nuclear norm. The prox thresholds each block's
    singular values by $t\lambda$ (exact: the blocks do not overlap),
    `jl.alg.NuclearNormBlocks` on chunks of `CHUNK` blocks."""

    blocks: alg.NuclearNormBlocks
    size: int = eqx.field(static=True)

    def __init__(self, lamda: ArrayLike, size: int = BLOCK, ndim: int = 2):
        if ndim < 1 or size < 1:
            raise ValueError(
                f"PatchNuclearNorm: needs ndim >= 1 and size >= 1; got {ndim} and {size}."
            )
        # input (CHUNK, size, size**(ndim-1)): one block per entry of axis 0, its first
        # image axis as the frames
        self.blocks = alg.NuclearNormBlocks(lamda, (size ** (ndim - 1),), frame_axes=1)
        self.size = size

    def _covered(self, shape: tuple[int, ...]) -> tuple[slice, ...]:
        """The region the whole blocks cover, from the origin."""
        return tuple(slice(0, n - n % self.size) for n in shape)

    def _chunks(self, x: jax.Array) -> jax.Array:
        """`(chunks, CHUNK, size, size**(d-1))`: the blocks of the covered region, zero
        blocks appended to fill the last chunk (a zero block thresholds to zero and has
        norm zero)."""
        b, x = self.size, x[self._covered(x.shape)]
        split = [s for n in x.shape for s in (n // b, b)]
        d = x.ndim
        order = [*range(0, 2 * d, 2), *range(1, 2 * d, 2)]  # block indices, then pixels
        patches = x.reshape(split).transpose(order).reshape(-1, b, b ** (d - 1))
        pad = -patches.shape[0] % CHUNK
        patches = jnp.pad(patches, ((0, pad), (0, 0), (0, 0)))
        return patches.reshape(-1, CHUNK, b, b ** (d - 1))

    def _image(self, chunks: jax.Array, x: jax.Array) -> jax.Array:
        """`x` with its covered region replaced by the blocks of `chunks`."""
        b, region = self.size, self._covered(x.shape)
        counts = [(s.stop or 0) // b for s in region]
        d = x.ndim
        patches = chunks.reshape(-1, *(b,) * d)[: math.prod(counts)]
        order = [i for k in range(d) for i in (k, d + k)]
        covered = patches.reshape(*counts, *(b,) * d).transpose(order)
        return jnp.asarray(x).at[region].set(covered.reshape([c * b for c in counts]))

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        out = jax.lax.map(lambda c: self.blocks.prox(c, step), self._chunks(v))
        return self._image(out, v)

    def value(self, x: jax.Array) -> jax.Array:
        return jnp.sum(jax.lax.map(self.blocks.value, self._chunks(x)))


def prior(reg: str, b: np.ndarray, fraction: float) -> tuple[alg.AbstractProx, Any, float]:
    """The prior `reg` on images laid out as `GRID[:b.ndim]`: its prox $g$, the operator
    $G$ inside it (`FiniteDifference` for ADMM's split, else None) and its weight λ =
    `fraction` × the scale of the adjoint image `b` in its domain."""
    image, dims = np.asarray(b), GRID[: np.ndim(b)]
    if reg == "l1-wavelet":
        W = linops.Wavelet(dims, wavelet="db4")
        lamda = fraction * float(np.abs(W(image)).max())
        return alg.L1(lamda, W), None, lamda
    if reg == "tv":
        D = linops.FiniteDifference(dims)
        lamda = fraction * float(np.abs(D(image)).max())
        return alg.L1(lamda), D, lamda
    if reg != "llr":
        raise ValueError(f"unknown regulariser {reg!r}; expected one of {tuple(LAMDA)}.")
    chunks = PatchNuclearNorm(1.0, BLOCK, image.ndim)._chunks(jnp.asarray(image))
    lamda = fraction * float(np.linalg.svd(np.asarray(chunks), compute_uv=False).max())
    return PatchNuclearNorm(lamda, BLOCK, image.ndim), None, lamda


@eqx.filter_jit
def solve(A, y, g: alg.AbstractProx, G, reg: str, iters: int):
    """`prior`'s problem solved from 0 by its solver (`SOLVERS`), `iters` iterations: a
    `FISTAResult` or `ADMMResult`. One compiled program per model layout, prior and
    iteration count: λ is an array inside `g`, so slices and weights share it."""
    if SOLVERS[reg] == "ADMM":
        return alg.admm(
            A, y, g, G, rho=RHO, max_num_iters=iters, max_cg_iters=ADMM_CG_ITERS,
            return_info=True,
        )  # fmt: skip
    return alg.fista(A, y, g, None, iters, return_info=True)


def objective_history(reg: str, objective: ArrayLike, y: np.ndarray) -> np.ndarray:
    """$F(x_k)$ for $k = 0, \\dots, K$ from $x_0 = 0$: FISTA records $F(x_0)$ first,
    ADMM records after each iteration, so $F(0) = \\|y\\|^2 / 2$ is prepended (every
    prior here is 0 at 0)."""
    objective = np.asarray(objective, np.float64)
    if SOLVERS[reg] != "ADMM":
        return objective
    return np.concatenate([[0.5 * float(np.linalg.norm(y)) ** 2], objective])
