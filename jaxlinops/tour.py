"""A runnable tour of jaxlinops: build, compose and apply named-dimension operators.

Run it with `python -m jaxlinops.tour` (`--seed N` picks other random data). It builds a
small multi-coil (SENSE) MRI forward model $A = M F S$ (coil maps as a `Dense`, a
centered 2-D `FFT`, a k-space sampling mask as a `Diagonal`), applies it and its adjoint,
compares with numpy, runs a dot test, forms the normal operator $A^H A$ and a regularised
version, and checks that `jax.jit` gives the eager results. Everything is complex64:
64-bit types are not needed.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from jax.typing import ArrayLike

import jaxlinops as jl

COILS, NX, NY = 4, 8, 8


def random_complex(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """complex64 entries with independent standard normal real and imaginary parts."""
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def coil_maps(rng: np.random.Generator) -> np.ndarray:
    """Random coil sensitivities of shape (C, Nx, Ny), normalised to unit root-sum-of-squares."""
    s = random_complex(rng, (COILS, NX, NY))
    return s / np.sqrt(np.sum(np.abs(s) ** 2, axis=0))


def sampling_mask(rng: np.random.Generator) -> np.ndarray:
    """A random 0/1 mask over (Kx, Ky) keeping about half of k-space (float32)."""
    return (rng.random((NX, NY)) < 0.5).astype(np.float32)


def forward_model(maps: np.ndarray, mask: np.ndarray) -> jl.NamedLinop:
    """$A = M F S$: image (Nx, Ny) -> masked multi-coil k-space (C, Kx, Ky)."""
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.FFT(2, batch_shape="C", centered=True)
    M = jl.Diagonal(mask, "C Kx Ky")
    return M @ F @ S


def numpy_forward(maps: np.ndarray, mask: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The same model written directly in numpy, as an independent check."""
    axes = (-2, -1)
    k = np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(maps * x, axes), norm="ortho"), axes)
    return mask * k


def indent(text: object) -> str:
    """`str(text)` with every line indented by four spaces."""
    return "\n".join("    " + line for line in str(text).splitlines())


def max_rel_diff(a: ArrayLike, b: ArrayLike) -> float:
    r"""$\max |a - b| / \max |b|$, computed in numpy (no extra compilation)."""
    a_np, b_np = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a_np - b_np)) / np.max(np.abs(b_np)))


def check(err: float, what: str, tol: float = 1e-5) -> None:
    """Raise if a single-precision comparison is off by more than `tol`."""
    if not err <= tol:
        raise AssertionError(f"{what}: relative difference {err:.1e} exceeds {tol:.0e}.")


def main(argv: list[str] | None = None) -> int:
    """Run the tour and print each step; returns 0 (any failed check raises)."""
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        prog="python -m jaxlinops.tour",
        description=__doc__,
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    apply = jax.jit(lambda op, v: op(v))  # linops are pytrees: jit takes them as arguments

    print(f"jaxlinops {jl.__version__} on jax {jax.__version__} ({jax.default_backend()})")
    maps, mask = coil_maps(rng), sampling_mask(rng)
    A = forward_model(maps, mask)
    print("\n1. Forward model A = M @ F @ S (a Chain, listed in execution order):")
    print(indent(A))
    print(f"   A.ishape = {A.ishape}, A.oshape = {A.oshape}, A.size('C') = {A.size('C')}")

    x = random_complex(rng, (NX, NY))
    y = random_complex(rng, (COILS, NX, NY))
    Ax, AHy = A(x), A.H(y)
    print("\n2. Apply A and its adjoint A.H (eagerly):")
    print(f"   A(x):   {x.shape} {x.dtype} -> {Ax.shape} {Ax.dtype}")
    print(f"   A.H(y): {y.shape} {y.dtype} -> {AHy.shape} {AHy.dtype}")
    err = max_rel_diff(Ax, numpy_forward(maps, mask, x))
    print(f"   A(x) vs the same model in numpy: max relative difference {err:.1e}")
    check(err, "A(x) vs numpy")

    jl.testing.assert_adjoint(A, x, y)
    lhs, rhs = np.vdot(y, Ax), np.vdot(AHy, x)
    print("\n3. Dot test <y, A x> = <A^H y, x>:")
    print(f"   {complex(lhs):.6f} vs {complex(rhs):.6f}: adjoint test passed")

    AN = A.N
    print("\n4. Normal operator A.N = A^H A (input dims renamed in its output, Nx -> Nx1):")
    print(indent(AN))
    err = max_rel_diff(apply(AN, x), apply(A.H, Ax))
    print(f"   A.N(x) vs A.H(A(x)): max relative difference {err:.1e}")
    check(err, "A.N(x) vs A.H(A(x))")

    lam = 0.1
    R = AN + lam * jl.Identity(AN.ishape, AN.oshape)
    print(f"\n5. Regularised normal R = A.N + {lam} * I (an Add):")
    print(indent(R))
    err = max_rel_diff(apply(R, x), apply(AN, x) + lam * x)
    print(f"   R(x) vs A.N(x) + {lam} x: max relative difference {err:.1e}")
    check(err, "R(x)")

    err = max(max_rel_diff(apply(A, x), Ax), max_rel_diff(apply(A.H, y), AHy))
    print("\n6. jax.jit(lambda op, v: op(v)) vs eager, for A and A.H:")
    print(f"   max relative difference {err:.1e}")
    check(err, "jit vs eager")
    print("\nDone: built, composed and applied operators; all checks passed.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
