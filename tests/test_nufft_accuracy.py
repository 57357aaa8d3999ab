"""`settings_for_eps`: the chosen plan meets the requested error against an exact DFT
(forward and adjoint, 1D/2D/3D, complex128 and complex64), the choice is the cheapest in the
measured table (hand-derived expectations), its constant is the benchmark's table, and bad
requests raise errors naming the argument."""

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_nufft import dft_matrix, random_locs, rel_err

import jaxlinops as jl
from jaxlinops.functional._accuracy import ERRORS, FIRST_WIDTH, settings_for_eps

F = jl.functional
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "nufft-accuracy-cpu-2core-2026-11-25.md"
CASES = {"1d": ((16,), 100), "2d": ((16, 16), 200), "3d": ((8, 8, 8), 150)}


def nufft_errors(grid, npoints, oversamp, width, dtype, seed):
    """The relative l2 errors of forward and adjoint against the exact DFT; the DFT uses the
    points and data as rounded to `dtype`, so only the computation's error counts."""
    real = np.float32 if dtype == np.complex64 else np.float64
    locs = random_locs(seed, grid, npoints, real)
    rng = np.random.default_rng(seed + 100)
    x = (rng.standard_normal(grid) + 1j * rng.standard_normal(grid)).astype(dtype)
    y = (rng.standard_normal(npoints) + 1j * rng.standard_normal(npoints)).astype(dtype)
    plan = F.nufft_plan(locs, grid, oversamp, width, backend="jax")
    E = dft_matrix(locs, grid)
    forward = rel_err(F.nufft(x, plan), E @ x.ravel().astype(complex))
    adjoint = rel_err(F.nufft_adjoint(y, plan), E.conj().T @ y.astype(complex))
    return forward, adjoint


@pytest.mark.parametrize(
    "eps, dtype",
    [(1e-2, np.complex128), (1e-3, np.complex128), (1e-4, np.complex128),
     (1e-6, np.complex128), (1e-4, np.complex64)],
    ids=["1e-2", "1e-3", "1e-4", "1e-6", "1e-4-c64"],
)  # fmt: skip
@pytest.mark.parametrize("case", sorted(CASES))
def test_chosen_plan_meets_eps(case, eps, dtype):
    grid, npoints = CASES[case]
    settings = settings_for_eps("NUFFT", eps, grid, dtype)
    for seed in (0, 1):
        forward, adjoint = nufft_errors(grid, npoints, *settings, dtype, seed)
        assert forward <= eps and adjoint <= eps, (settings, seed, forward, adjoint)


def test_single_precision_floor_is_met():
    """On 1D N = 200 complex64 rounding dominates: the smallest eps complex64 is allowed
    (2 (3e-14 + 1.3 * 2^-24 * 200) = 3.1e-5) is met; anything below is refused."""
    settings = settings_for_eps("NUFFT", 3.1e-5, (200,), np.complex64)
    for seed in (0, 1):
        assert max(nufft_errors((200,), 400, *settings, np.complex64, seed)) <= 3.1e-5
    with pytest.raises(ValueError, match=r"complex64 .* smallest supported eps is 3.1e-05"):
        settings_for_eps("NUFFT", 3e-5, (200,), np.complex64)


def test_tiny_grid_gets_a_width_that_fits_and_meets_eps():
    """At N = 4 only oversamp 2 pads to a grid (8) wide enough for the width eps 1e-4
    needs (6); the 1D rule would otherwise pick (1.25, 8)."""
    assert settings_for_eps("NUFFT", 1e-4, (4,), np.complex128) == (2.0, 6.0)
    assert max(nufft_errors((4,), 50, 2.0, 6.0, np.complex128, 0)) <= 1e-4


# Derived by hand from the table (margin 2, floor 3e-14, cost w^D + 4 os^D, ties to the
# smaller os), e.g. 2D 1e-2 needs a tabulated error <= 5e-3: (1.25, 5) 2.12e-3 costs 31.25,
# (1.5, 4) 2.75e-3 costs 25, (2, 4) 7.83e-4 costs 32.
EXPECTED = {
    ((16,), 1e-1, "complex128"): (1.25, 3.0),  # 3 + 5 < 3 + 6 (1.5, 3) < 3 + 8 (2, 3)
    ((16, 16), 1e-2, "complex128"): (1.5, 4.0),
    ((8, 8, 8), 1e-2, "complex128"): (1.5, 4.0),  # 64 + 13.5 < 125 + 7.8 (1.25, 5), 96 (2, 4)
    ((16, 16), 1e-3, "complex128"): (1.5, 5.0),  # 4.16e-4; (2, 5) 41, (1.25, 6) 42.25
    ((200,), 1e-4, "complex128"): (1.25, 8.0),  # 2.43e-5: 8 + 5 ties (1.5, 7) 7 + 6
    ((8, 8, 8), 1e-4, "complex128"): (2.0, 6.0),  # 8.42e-6: 216 + 32 < 343 + 13.5 (1.5, 7)
    ((200,), 1e-6, "complex128"): (1.5, 9.0),  # 2.42e-7: 9 + 6 < 11 + 5 (1.25), 8 + 8 (2)
    ((16, 16), 1e-6, "complex128"): (2.0, 8.0),  # 64 + 16 < 81 + 9 (1.5, 9)
    ((8, 8, 8), 1e-6, "complex128"): (2.0, 8.0),
    # complex64 on N = 1024 adds 2 * 1.3 * 2^-24 * 1024 = 1.59e-4, leaving 7.1e-5 for the
    # table: (1.25, 7) at 1.02e-4 no longer qualifies, (1.5, 6) at 6.01e-5 does (6 + 6 = 12)
    ((1024,), 3e-4, "complex128"): (1.25, 7.0),  # 7 + 5 ties (1.5, 6) 6 + 6
    ((1024,), 3e-4, "complex64"): (1.5, 6.0),
    ((16, 16), 1e-10, "complex128"): (2.0, 12.0),  # 1.13e-11; (1.5, 14) 3.2e-11 costs 205
}


@pytest.mark.parametrize("key", sorted(EXPECTED, key=str), ids=str)
def test_choice_is_the_hand_derived_cheapest(key):
    grid, eps, dtype = key
    assert settings_for_eps("NUFFT", eps, grid, dtype) == EXPECTED[key]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_choice_qualifies_and_is_the_narrowest_at_its_oversamp(ndim, dtype):
    """At every eps where a setting starts to qualify (and just below): the predicted error
    of the choice (twice max(table, 3e-14) plus complex64's rounding 2 * 1.3 * 2^-24 * |N|)
    meets eps and that of the next narrower width at the same oversamp does not (a plan one
    step too cheap fails the first check, one too expensive the second); oversamp 1.25 is
    never chosen above width 9, past which single precision loses accuracy there (the
    module docstring)."""
    grid = (64,) * ndim
    rounding = 2 * 1.3 * 2.0**-24 * math.hypot(*grid) if dtype == "complex64" else 0.0

    def predicted(oversamp, width):
        return 2 * max(ERRORS[oversamp][width - FIRST_WIDTH], 3e-14) + rounding

    thresholds = {predicted(o, w) for o in ERRORS for w in range(FIRST_WIDTH, 17)}
    ladder = sorted({t * f for t in thresholds for f in (1 - 1e-6, 1 + 1e-6)})
    for eps in [e for e in ladder if 1e-6 < e < 1]:
        try:
            oversamp, width = settings_for_eps("NUFFT", eps, grid, dtype)
        except ValueError:
            assert dtype == "complex64" and eps < 1e-4
            continue
        assert predicted(oversamp, int(width)) <= eps
        if width > FIRST_WIDTH:
            assert predicted(oversamp, int(width) - 1) > eps
        assert oversamp != 1.25 or width <= 9


def test_table_is_the_benchmark_result():
    """`ERRORS` is the "worst c128" column of the saved benchmark run."""
    rows = re.findall(r"^\| ([\d.]+) \| (\d+) \|.*\*\*([\d.e+-]+)\*\*", RESULTS.read_text(), re.M)
    measured = {(float(o), int(w)): float(e) for o, w, e in rows}
    table = {(o, w): e for o, errs in ERRORS.items() for w, e in enumerate(errs, FIRST_WIDTH)}
    assert measured == table


def test_benchmark_quick_runs():
    command = [sys.executable, str(ROOT / "benchmarks" / "nufft_accuracy.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| os | w | 1D 64 | 2D 16² | worst c128 |" in done.stdout


@pytest.mark.parametrize(
    "eps, grid, dtype, exc, match",
    [
        ("1e-3", (8,), "complex128", TypeError, r"NUFFT.*eps must be a real number"),
        (True, (8,), "complex128", TypeError, r"NUFFT.*eps must be a real number"),
        (np.ones(1), (8,), "complex128", TypeError, r"NUFFT.*eps must be a real number"),
        (0.0, (8,), "complex128", ValueError, r"NUFFT.*eps must be in \(0, 1\); got eps=0.0"),
        (1.0, (8,), "complex128", ValueError, r"NUFFT.*eps must be in \(0, 1\); got eps=1.0"),
        (-1e-3, (8,), "complex128", ValueError, r"NUFFT.*eps must be a finite number"),
        (math.nan, (8,), "complex128", ValueError, r"NUFFT.*eps must be a finite number"),
        (1e-14, (8,), "complex128", ValueError,
         r"NUFFT.*eps=1e-14 is below what complex128 .*smallest supported eps is 6.3e-14"),
        (1e-6, (8, 8), "complex64", ValueError,
         r"NUFFT.*eps=1e-06 is below what complex64 .*smallest supported eps is 1.8e-06"),
        (1e-2, (8,), "bfloat16", ValueError, r"NUFFT.*dtypes .* got dtype bfloat16"),
        (1e-2, (8,), "int32", ValueError, r"NUFFT.*dtypes .* got dtype int32"),
        (1e-2, (8,), None, TypeError, r"NUFFT.*dtype must be a dtype; got None"),
        (1e-2, (8,), "cplx", TypeError, r"NUFFT.*dtype must be a dtype; got 'cplx'"),
        (1e-2, (8,) * 4, "complex128", ValueError, r"NUFFT.*1 to 3 dimensions"),
        (1e-2, (8.5,), "complex128", ValueError, r"NUFFT\(grid_size=...\).*not integral"),
        (1e-2, (0,), "complex128", ValueError, r"NUFFT\(grid_size=...\).*at least 1"),
    ],
)  # fmt: skip
def test_bad_requests_raise(eps, grid, dtype, exc, match):
    with pytest.raises(exc, match=match):
        settings_for_eps("NUFFT", eps, grid, dtype)
