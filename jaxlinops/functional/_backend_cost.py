r"""The NUFFT's cost model: which backend `"auto"` expects to be fastest for a plan.

Per platform and backend, the time of a forward plus an adjoint transform (a solver applies
both) is modelled as
$$t = a + b\, \frac{P L^D}{10^6} + c\, \frac{G \log_2 G}{10^6}
     + d\, \frac{G_{big}}{10^6}\ \mathrm{ms},$$
$P$ the points, $L^D$ the kernel's window ($L = \lceil w \rceil$ per axis), $G$ the padded
grid's cells, and $G_{big} = G$ when three padded grids exceed 32 MiB, else 0: a fixed
cost, the gridding, the FFT, and the page faults of temporaries that glibc maps afresh on
every call (it serves allocations above 32 MiB by `mmap`; XLA holds a program's
temporaries in one block, which the NUFFT's padded grids fill). The coefficients are fitted
by non-negative least squares on the relative error to a table measured by
`benchmarks/bench_nufft_backends.py` (complex64, defaults, points uniform at random;
stored in `benchmarks/results/`). On 2 cores of an AMD EPYC the JAX path is the faster in
2-D (up to 512^2) and at 3-D grids up to 64^3 (1.2x to 2x), jax-finufft (its own
allocations, and spreading on every core where XLA's scatter runs on one) at 96^3 and
128^3 (1.05x to 1.35x). With `MARGIN`, the model picks as measured on 38 of the 44 rows;
on the other 6 it keeps JAX where jax-finufft measured 0.87x to 0.95x of its time (near
ties) and once 0.74x (a row the other run measured at 0.95x).

Only backends measured on a platform are modelled there: the CPU's JAX path and
jax-finufft. Elsewhere (GPUs), `"auto"` is the JAX path (Pallas is opt-in, see
`_nufft._auto_backend`).
"""

from __future__ import annotations

import math

# platform -> backend -> (a, b, c, d) of the model above (ms): the fit to the two tables
# benchmarks/results/nufft-backends-cpu-2core-2026-11-29{,b}.json (44 rows; the fit and
# each row's pick in nufft-backends-fit-cpu-2core-2026-11-29.txt)
COSTS: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "cpu": {"jax": (0.6261, 4.2958, 0.7427, 13.4333), "finufft": (1.6956, 4.6784, 0.9869, 0.0)},
}
# another backend is chosen only when predicted this much faster: the JAX path does more
# (torchlinops' exact numbers, every operation without a fallback), so a near tie goes to it
MARGIN = 1.05
MMAP_THRESHOLD = 32 * 2**20  # bytes: glibc's largest (64-bit)


def features(padded: tuple[int, ...], width: float, points: int, itemsize: int) -> tuple:
    """`(P L^D, G log2 G, G_big) / 1e6` for `points` on the padded grid `padded` with data of
    `itemsize` bytes (complex)."""
    cells = math.prod(padded)
    big = cells if 3 * cells * itemsize > MMAP_THRESHOLD else 0
    window = math.ceil(width) ** len(padded)
    return points * window / 1e6, cells * math.log2(max(cells, 2)) / 1e6, big / 1e6


def predicted_ms(platform: str, backend: str, feats: tuple) -> float:
    """The modelled forward-plus-adjoint time of `backend` on `platform` (modelled there)."""
    fixed, *slopes = COSTS[platform][backend]
    return fixed + sum(c * f for c, f in zip(slopes, feats))


def cheapest(platform: str, default: str, other: str, feats: tuple) -> tuple[str, str]:
    """The backend of the two (modelled on `platform`) that `"auto"` picks, and why:
    `default` unless `other` is predicted at least `MARGIN` times faster."""
    mine, theirs = (predicted_ms(platform, b, feats) for b in (default, other))
    if mine >= MARGIN * theirs:
        return other, f"auto: predicted {mine / theirs:.2f}x faster than {default}"
    if theirs >= mine:
        return default, f"auto: predicted {theirs / mine:.2f}x faster than {other}"
    return default, f"auto: predicted within {MARGIN}x of {other}"
