r"""The NUFFT's measured accuracy, and the cheapest `(oversamp, width)` for a requested error.

**The measurement** (`benchmarks/nufft_accuracy.py`, output in
`benchmarks/results/nufft-accuracy-cpu-2core-2026-11-25.md`): the relative l2 error of
`nufft` and `nufft_adjoint` against an exact non-uniform DFT in float64, in complex128 with
float64 points (so that it measures the method, not rounding), points uniform at random in
$[-N/2, N/2)$, random complex data, on 1D $N = 64$ (256 points) and $N = 200$ (400 points),
2D $32^2$ (1024 points) and 3D $16^3$ (1024 points), seeds 0, 1, 2. `ERRORS` holds, per
oversampling factor and integer width, the worst over the seeds, forward and adjoint, and the
four cases. The error grows with the dimension about as $\sqrt{D}$ (at oversamp 1.25,
width 4: 5.0e-3 in 1D, 7.4e-3 in 2D, 9.3e-3 in 3D), so the worst is the 3D one almost
everywhere; it is measured for $D \le 3$ only, and [`settings_for_eps`][] refuses more.

**Floors.** The kernel's window weights are polynomials fitted to the exact Bessel function
(`_nufft_gridding`), so in double precision the error falls to about 3e-14 (oversamp 2,
width 15: double precision's own rounding) and 1e-11 at oversamp 1.5; at oversamp 1.25
the apodization's range (below) stops it near 2e-9. `KERNEL_FLOOR` is the smallest error
measured; the table is read as `max(ERRORS, KERNEL_FLOOR)`. In single precision the points
are rounded in padded-grid units $[0, N_{pad})$, which adds an error of about
`ROUNDING` $\cdot u \cdot |N|$ ($u$ the unit roundoff, $|N| = \sqrt{\sum_d N_d^2}$):
measured 5.9e-8 to 7.5e-8 times $|N|$ in complex64 on 1D 64, 200, 1024 and 2D 64² (the
benchmark), 2D 128² and 3D 16³, 32³ (a separate run; $u$ = 6.0e-8), so complex64 floors
at about 4e-6 on $N = 64$ and 6e-5 on $N = 1024$, never 1e-6. (At oversamp 1.25 and
widths above 9, the apodization's range, about $e^{0.48 w}$ from the centre to the edge
of the image, amplifies single-precision rounding further, up to 8.8e-5 at width 15 on
$N = 64$; the cost rule below never picks oversamp 1.25 above width 9: (1.5, 8) is
cheaper and more accurate than (1.25, 10), (1.5, 9) than (1.25, 11) and wider.)

**Safety margin.** A setting qualifies for `eps` when `MARGIN` times its predicted error,
`max(ERRORS, KERNEL_FLOOR) + ROUNDING * u * |N|`, is at most `eps`. The margin of 2 covers
other grid sizes, point sets and seeds (the seeds and cases of the measurement differ by up
to 1.3x at a given width; between two widths the error falls by 3x to 8x, so the margin
costs at most one width step). On the tests' grids (16, 16², 8³; 6 seeds) the chosen plans
reach at most 0.38 eps.

**Cost rule.** Among the qualifying settings, the cheapest by
$\rho w^D + \mathrm{FFT\_WEIGHT} \cdot \mathrm{os}^D$ per image pixel, $\rho$ the number of
points per pixel (1 when it is not given): spreading costs $w^D$ kernel terms per
point, the FFT about `FFT_WEIGHT` = 4 kernel terms per padded-grid point (measured 2 to 6
on this 2-core CPU, complex64, 2D 256² and 3D 64³). Ties go to the smaller oversampling
factor (less memory). Consequence: oversamp 1.25 for the coarse errors (1e-1 in every
dimension, down to 1e-4 in 1D), 1.5 width 4 at 1e-2 and width 5 at 1e-3 in 2D and 3D, 2 for
the finer ones in 2D and 3D (width 6 at 1e-4, 8 at 1e-6). Measured at eps 1e-2 (complex64,
one point per pixel, forward / adjoint, a shared 2-core CPU): 2D 256² 1.7 / 1.5 ms at the
chosen (1.5, 4) against 2.3 / 8.5 ms at (1.25, 5) and 1.7 / 2.1 ms at (2, 4); 3D 64³
17 / 21 ms against 30 / 45 ms and 40 / 46 ms. At 0.125 points per pixel (3D 64³ with
32,768 points and 128³ with 262,144, glibc huge pages), where (1.25, 5) is the other
candidate at eps 1e-2, the two tie within 10 %: 5.9 / 6.7 against 6.4 / 6.9 ms, and
57 / 87 against 58 / 79 ms; a larger 3-D weight would buy nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax.numpy as jnp
from jax.typing import DTypeLike

from .._arrays import as_sizes
from ._kernels import as_number

FIRST_WIDTH = 2  # the smallest integer width with a real beta at every tabulated oversamp
# oversamp -> the measured relative error (see above) at widths FIRST_WIDTH, ..., 16
ERRORS: dict[float, tuple[float, ...]] = {
    1.25: (2.34e-01, 4.21e-02, 9.33e-03, 2.12e-03, 4.40e-04, 1.02e-04, 2.43e-05, 6.97e-06,
           1.68e-06, 4.04e-07, 1.07e-07, 2.86e-08, 7.25e-09, 2.25e-09, 3.52e-09),
    1.5: (1.44e-01, 1.86e-02, 2.75e-03, 4.16e-04, 6.01e-05, 8.86e-06, 1.36e-06, 2.42e-07,
           4.22e-08, 6.17e-09, 1.00e-09, 1.82e-10, 3.20e-11, 1.42e-11, 1.31e-11),
    2.0: (7.81e-02, 7.63e-03, 7.83e-04, 8.33e-05, 8.42e-06, 8.07e-07, 8.39e-08, 8.66e-09,
           1.04e-09, 1.21e-10, 1.13e-11, 1.09e-12, 1.41e-13, 2.97e-14, 2.90e-14),
}  # fmt: skip
KERNEL_FLOOR = 3e-14  # double precision: the smallest error measured (oversamp 2, width 15)
ROUNDING = 1.3  # single-precision point rounding: error <= ROUNDING * u * |N| (measured 1.26)
MARGIN = 2.0
FFT_WEIGHT = 4.0
MAX_NDIM = 3
DTYPES = ("float32", "float64", "complex64", "complex128")


def settings_for_eps(
    name: str,
    eps: object,
    grid_size: Sequence[int],
    dtype: DTypeLike,
    points: int | None = None,
) -> tuple[float, float]:
    r"""The cheapest `(oversamp, width)` whose predicted relative error, times `MARGIN`, is
    at most `eps` (see the module docstring for the table, the margin and the cost rule).

    **Arguments:**

    - `name`: the caller, named in the errors (e.g. `"NUFFT"`).
    - `eps`: the requested relative l2 error, a real number in $(0, 1)$.
    - `grid_size`: the image sizes $N$ (1 to 3 of them): their number $D$ weighs the cost,
      their size the single-precision floor; a width must fit the padded grid.
    - `dtype`: the dtype the NUFFT computes in (float32 or complex64: single precision;
      float64 or complex128: double).
    - `points`: the number of points, which weighs the gridding against the FFT in the
      cost (None: as many as pixels).

    **Errors:** a TypeError for an `eps` that is not a real number or a `dtype` that is not
    a dtype; a ValueError for an `eps` outside $(0, 1)$, more than 3 dimensions, another
    dtype, or an `eps` below the smallest this dtype and grid can deliver (the message gives
    that smallest `eps`).
    """
    eps = as_number(name, "eps", eps, 0.0)
    if not 0 < eps < 1:
        raise ValueError(f"`{name}`: eps must be in (0, 1); got eps={eps!r}.")
    grid = as_sizes(grid_size, f"`{name}(grid_size=...)`", 1)
    if not 1 <= len(grid) <= MAX_NDIM:
        raise ValueError(
            f"`{name}`: eps is measured for 1 to {MAX_NDIM} dimensions; got grid_size {grid}. "
            f"Pass oversamp and width instead."
        )
    dtype = _checked_dtype(name, dtype)
    rounding = rounding_error(grid, dtype)
    fits = [
        (oversamp, width, MARGIN * (max(err, KERNEL_FLOOR) + rounding))
        for oversamp, errors in ERRORS.items()
        for width, err in enumerate(errors, FIRST_WIDTH)
        if all(width <= int(oversamp * n) for n in grid)
    ]
    density = 1.0 if points is None else points / math.prod(grid)
    qualifying = [(density * width ** len(grid) + FFT_WEIGHT * os_ ** len(grid), os_, width)
                  for os_, width, err in fits if err <= eps]  # fmt: skip
    if not qualifying:
        smallest = _round_up(min(err for _, _, err in fits))
        raise ValueError(
            f"`{name}`: eps={eps:g} is below what {dtype} delivers on grid_size {grid}: "
            f"the smallest supported eps is {smallest:g}"
            + (" (complex128 goes lower)." if jnp.finfo(dtype).bits == 32 else ".")
        )
    _, oversamp, width = min(qualifying)
    return oversamp, float(width)


def rounding_error(grid_size: Sequence[int], dtype: DTypeLike) -> float:
    """The error that rounding the points in padded-grid units adds in `dtype`,
    `ROUNDING * u * |N|` (see the module docstring)."""
    return ROUNDING * float(jnp.finfo(dtype).eps) / 2 * math.hypot(*grid_size)


def predicted_error(
    oversamp: float, width: float, grid_size: Sequence[int], dtype: DTypeLike
) -> float:
    """The error bound a NUFFT with `(oversamp, width)` states on `grid_size` in `dtype`:
    `MARGIN` times the tabulated error plus the rounding of the points, as
    [`settings_for_eps`][] predicts it (a setting qualifies for an `eps` at least this)."""
    return MARGIN * (tabulated_error(oversamp, width) + rounding_error(grid_size, dtype))


def tabulated_error(oversamp: float, width: float) -> float:
    """The measured error (`ERRORS`, at least `KERNEL_FLOOR`) of the tabulated setting
    nearest below `(oversamp, width)`, which is at most as accurate: the tolerance that
    asks another NUFFT (finufft) for the accuracy of this one. 0.25 below the table."""
    below = [os_ for os_ in ERRORS if os_ <= oversamp]
    index = math.floor(width) - FIRST_WIDTH
    if not below or index < 0:
        return 0.25
    errors = ERRORS[max(below)]
    return max(errors[min(index, len(errors) - 1)], KERNEL_FLOOR)


def _checked_dtype(name: str, dtype: DTypeLike | None) -> jnp.dtype:
    """`dtype` as a numpy dtype, one of `DTYPES`."""
    try:
        dt = None if dtype is None else jnp.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None:
        raise TypeError(f"`{name}`: dtype must be a dtype; got {dtype!r}.")
    if dt.name not in DTYPES:
        raise ValueError(f"`{name}`: eps is measured for the dtypes {DTYPES}; got dtype {dt}.")
    return dt


def _round_up(x: float) -> float:
    """`x` rounded up to two significant digits."""
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step) * step
