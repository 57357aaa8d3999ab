r"""The demo's regularised reconstructions (`python -m jaxlinops.demo --reg ...`): the data
and the forward model of CG-SENSE, split by coils across the same devices, with a prior,
$\min_x \tfrac12 \|A x - \sqrt{w}\, y\|^2 + g(x)$, solved as `jaxlinops-recon --reg`
solves it (`jaxlinops.recon._regularise` says why each solver and how $\lambda$ is
chosen), timed and with its objective history for the figure.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np

import jaxlinops as jl

from ._arrays import Device
from .recon._regularise import (
    ADMM_CG_ITERS,
    ITERS,
    LAMDA,
    NAMES,
    SOLVERS,
    objective_history,
    prior,
    solve,
)


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
    g, G, lamda = prior(reg, b, LAMDA[reg] if args.lamda is None else args.lamda)
    start = time.perf_counter()
    compiled = solve.lower(A, data, g, G, reg, iters).compile()
    compile_time = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(compiled(A, data, g, G, reg, iters))
    solve_time = time.perf_counter() - start
    objective = objective_history(reg, result.objective.addressable_data(0), data)
    iterations = (
        f"{iters} × {ADMM_CG_ITERS} CG iterations" if reg == "tv" else f"{iters} iterations"
    )
    say(f"Regularised, {label} ({iterations}, λ = {lamda:.3g}): compile "
        f"{compile_time:.2f} s, solve {solve_time:.3f} s")  # fmt: skip
    image = np.asarray(result.x.addressable_data(0))
    return Regularised(
        label, SOLVERS[reg], image, objective, lamda, iterations, compile_time, solve_time
    )
