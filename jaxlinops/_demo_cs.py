r"""The demo's regularised reconstructions (`python -m jaxlinops.demo --reg ...`): the data
and the forward model of CG-SENSE, split by coils across the same devices, with a prior,

$$\min_x \tfrac12 \|A x - \sqrt{w}\, y\|^2 + g(x) .$$

- `l1-wavelet`: $g(x) = \lambda \|W x\|_1$, $W$ the orthogonal Daubechies-4 wavelet
  transform (`jl.Wavelet`), by FISTA (`jl.alg.fista`). $W$ is orthogonal, so the prox is
  exact and cheap, $W^H \mathrm{soft}_{t\lambda}(W v)$: each iteration is one $A$, one
  $A^H$ and two wavelet transforms, with no inner solve.
- `tv`: anisotropic total variation $g(x) = \lambda \|D x\|_1$, $D$ the periodic forward
  differences along both axes (`jl.FiniteDifference`), by ADMM (`jl.alg.admm`) on the
  split $z = D x$. $D$ is not orthogonal, so $\|D x\|_1$ has no closed-form prox (FISTA
  cannot take it); ADMM needs only the soft threshold, and solves its $x$-update
  $(A^H A + \rho D^H D)\, x = A^H \sqrt{w} y + \rho D^H (z - u)$ with 5 warm-started CG
  iterations on the operators' own normals: the coil-split Toeplitz normal of CG-SENSE
  plus $D$'s Laplacian stencil. PDHG (`jl.alg.pdhg`) solves the same problem with no inner
  solve, but its gradient-like steps on this ill-conditioned $A$ need hundreds of
  iterations to get where 20 of ADMM get.
- `llr`: locally low rank. LLR proper needs a frame dim (time frames, contrasts, echoes):
  each block of pixels × frames is a matrix, low rank because the frames share a few
  signal evolutions, and `jl.alg.NuclearNormBlocks` thresholds its singular values. The
  demo has one image of one contrast, so it takes the spatial form: each 8 × 8 block
  $X_b$ of the image is an 8 × 8 matrix, $g(x) = \lambda \sum_b \|X_b\|_*$. A uniform
  block, and one cut by an edge along a grid axis, is rank 1, a corner rank 2, while noise
  and streaks spread over all 8 singular values. The blocks do not overlap, so the prox
  (singular value thresholding of each block) is exact, and FISTA solves it as it does
  ℓ1-wavelet. The block grid is fixed (FISTA needs one $g$; sigpy's LLR shifts it at
  random every iteration to hide block edges).

$\lambda$ follows the data: `fraction` times the largest magnitude of $A^H \sqrt{w} y$ in
the regulariser's domain (its wavelet coefficients, its differences, the largest singular
value of its blocks), so that scaling $y$ scales $\lambda$ and the solution alike. The
default fractions (`LAMDA`) were tuned on the default problem (`ρ = 0.05` for ADMM, with
$\|A\| = 1$ by the demo's normalisation); each beats CG-SENSE's error there and on the
tests' small problem.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

import jaxlinops as jl

from ._arrays import Device

# the regularisers of `--reg`, with their default λ fraction and iterations (ADMM's
# iterations each run ADMM_CG_ITERS CG iterations)
LAMDA = {"l1-wavelet": 1e-3, "tv": 5e-3, "llr": 2.5e-3}
ITERS = {"l1-wavelet": 50, "tv": 20, "llr": 50}
NAMES = {"l1-wavelet": "ℓ1-wavelet", "tv": "TV", "llr": "LLR"}
SOLVERS = {"l1-wavelet": "FISTA", "tv": "ADMM", "llr": "FISTA"}
RHO, ADMM_CG_ITERS = 0.05, 5
BLOCK = 8  # LLR's blocks are BLOCK × BLOCK pixels
# jaxlib's CPU SVD splits a batch whose cost exceeds 2e5 flops (10 m n min(m, n) per
# matrix: 39 blocks of 8 × 8) over XLA's intra-op thread pool and waits for the parts; when
# every thread of the pool runs a simulated device's program, the parts never run and the
# solve hangs. Chunks of CHUNK blocks, one after another, stay below the split.
CHUNK = 32


@jl.register_for_export
class PatchNuclearNorm(jl.alg.AbstractProx):
    r"""$g(x) = \lambda \sum_b \|X_b\|_*$ for a 2-D image $x$: $X_b$ its `size` × `size`
    block $b$ as a matrix (non-overlapping blocks tiling the image), $\|\cdot\|_*$ the
    nuclear norm. The prox thresholds each block's singular values by $t\lambda$ (exact:
    the blocks do not overlap), `jl.alg.NuclearNormBlocks` on chunks of `CHUNK` blocks."""

    blocks: jl.alg.NuclearNormBlocks
    size: int = eqx.field(static=True)

    def __init__(self, lamda: ArrayLike, size: int = BLOCK):
        # input (CHUNK, size, size): one block per entry of axis 0, its rows as the frames
        self.blocks = jl.alg.NuclearNormBlocks(lamda, (size,), frame_axes=1)
        self.size = size

    def _chunks(self, x: jax.Array) -> jax.Array:
        """`(chunks, CHUNK, size, size)`: the blocks, zero blocks appended to fill the last
        chunk (a zero block thresholds to zero and has norm zero)."""
        b = self.size
        rows, cols = x.shape[0] // b, x.shape[1] // b
        patches = x.reshape(rows, b, cols, b).transpose(0, 2, 1, 3).reshape(-1, b, b)
        pad = -patches.shape[0] % CHUNK
        return jnp.pad(patches, ((0, pad), (0, 0), (0, 0))).reshape(-1, CHUNK, b, b)

    def _image(self, chunks: jax.Array, shape: tuple[int, ...]) -> jax.Array:
        b = self.size
        rows, cols = shape[0] // b, shape[1] // b
        patches = chunks.reshape(-1, b, b)[: rows * cols]
        return patches.reshape(rows, cols, b, b).transpose(0, 2, 1, 3).reshape(shape)

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        out = jax.lax.map(lambda c: self.blocks.prox(c, step), self._chunks(v))
        return self._image(out, v.shape)

    def value(self, x: jax.Array) -> jax.Array:
        return jnp.sum(jax.lax.map(self.blocks.value, self._chunks(x)))


class Regularised(NamedTuple):
    """A regularised reconstruction (numpy arrays on process 0)."""

    label: str  # "TV, ADMM", ...
    solver: str  # "ADMM", ...
    image: np.ndarray
    objective: np.ndarray  # F(x_k), k = 0 (x_0 = 0) to the last iteration
    lamda: float
    iterations: str  # "50 iterations", "20 × 5 CG iterations"
    compile_time: float  # seconds, the jitted solve
    solve_time: float


def solver(reg: str, b: np.ndarray, fraction: float, iters: int) -> tuple[Callable, float]:
    """The solve, `(A, y) -> FISTAResult | ADMMResult`, for regulariser `reg` with λ =
    `fraction` × the scale of the adjoint image `b` in its domain; and that λ."""
    image = np.asarray(b)
    if reg == "l1-wavelet":
        W = jl.Wavelet("Nx Ny", wavelet="db4")
        lamda = fraction * float(np.abs(W(image)).max())
        g = jl.alg.L1(lamda, W)
        return lambda A, y: jl.alg.fista(A, y, g, None, iters, return_info=True), lamda
    if reg == "tv":
        D = jl.FiniteDifference("Nx Ny")
        lamda = fraction * float(np.abs(D(image)).max())
        g = jl.alg.L1(lamda)

        def run(A, y):
            return jl.alg.admm(
                A, y, g, D, rho=RHO, max_num_iters=iters, max_cg_iters=ADMM_CG_ITERS,
                return_info=True,
            )  # fmt: skip

        return run, lamda
    assert reg == "llr", reg
    n = BLOCK
    patches = image.reshape(image.shape[0] // n, n, -1, n).transpose(0, 2, 1, 3)
    lamda = fraction * float(np.linalg.svd(patches, compute_uv=False).max())
    g = PatchNuclearNorm(lamda)
    return lambda A, y: jl.alg.fista(A, y, g, None, iters, return_info=True), lamda


def regularise(
    A: jl.NamedLinop,
    data: np.ndarray,
    b: np.ndarray,
    devices: Sequence[Device],
    args: argparse.Namespace,
    say: Callable[..., None],
) -> Regularised:
    """Solve `args.reg`'s problem with `A` split by coils over `devices` (as `reconstruct`
    splits $A^H A$), timing compilation and solve apart."""
    A = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=devices))
    reg = args.reg
    label = f"{NAMES[reg]}, {SOLVERS[reg]}"
    iters = args.reg_iters or ITERS[reg]
    run, lamda = solver(reg, b, LAMDA[reg] if args.lamda is None else args.lamda, iters)
    start = time.perf_counter()
    compiled = jax.jit(run).lower(A, data).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(compiled(A, data))
    solve_time = time.perf_counter() - start
    objective = np.asarray(result.objective.addressable_data(0), np.float64)
    if reg == "tv":  # ADMM records F after each iteration: prepend F(x_0) = ||y||^2 / 2
        objective = np.concatenate([[0.5 * np.linalg.norm(data) ** 2], objective])
    iterations = (
        f"{iters} × {ADMM_CG_ITERS} CG iterations" if reg == "tv" else f"{iters} iterations"
    )
    say(f"Regularised, {label} ({iterations}, λ = {lamda:.3g}): compile "
        f"{compile_time:.2f} s, solve {solve_time:.3f} s")  # fmt: skip
    image = np.asarray(result.x.addressable_data(0))
    return Regularised(
        label, SOLVERS[reg], image, objective, lamda, iterations, compile_time, solve_time
    )
