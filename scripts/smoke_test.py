"""Smoke test of an installed jaxlinops (scripts/check_dist.sh runs it in a fresh virtual
environment that holds only the built wheel, its dependencies from the package index, and
torch). Run it from outside the source tree with `python -I scripts/smoke_test.py`: `-I`
keeps the script's directory, the current directory and PYTHONPATH off `sys.path`, so the
imports below must come from the installed wheel, which the first check confirms.

Checks, each against an independent reference computed here with numpy:
1. the install: `jaxlinops` and `interop` import from site-packages,
   `jaxlinops.__version__` equals the installed metadata's version, and the console script
   `jaxlinops-recon` runs (`--help`: the runtime dependencies suffice to start it);
2. a NUFFT, forward and adjoint, against the exact non-uniform DFT;
3. a split: `create_batched_linop` running coil tiles on 2 (simulated) CPU devices;
4. the PyTorch bridge: `interop.torch_linop` applied to a torch tensor, with a gradient.
"""

import os

# Two simulated CPU devices for the split; XLA reads this when jax starts its backends.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
).strip()

import importlib.metadata
import subprocess
import sysconfig
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl

# complex64 arithmetic; the NUFFT at (oversamp, width) = (2, 6) is accurate to ~1e-5
TOL = 1e-4
rng = np.random.default_rng(0)


def rel_err(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def check(name: str, err: float) -> None:
    if not err <= TOL:
        raise SystemExit(f"smoke test: {name}: relative error {err:.2e} > {TOL:.0e}")
    print(f"smoke test: {name}: relative error {err:.1e}")


def complex_normal(*shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def check_install() -> None:
    import interop

    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for module in (jl, interop):
        where = Path(module.__file__).resolve()
        if site not in where.parents:
            raise SystemExit(f"smoke test: {module.__name__} imported from {where}, not {site}")
    installed = importlib.metadata.version("jaxlinops")
    if jl.__version__ != installed:
        raise SystemExit(
            f"smoke test: jaxlinops.__version__ is {jl.__version__}, the installed "
            f"metadata says {installed}"
        )
    print(f"smoke test: jaxlinops {installed} from {site}; jax {jax.__version__}")
    # the console script the wheel declares, next to this interpreter
    script = Path(sysconfig.get_paths()["scripts"]) / "jaxlinops-recon"
    usage = subprocess.run([script, "--help"], capture_output=True, text=True, check=False)
    if usage.returncode != 0 or "usage: jaxlinops-recon" not in usage.stdout:
        raise SystemExit(f"smoke test: {script} --help failed: {usage.stderr[-2000:]}")
    print(f"smoke test: {script.name} --help runs")


def check_nufft() -> None:
    grid = (8, 6)
    locs = rng.uniform(-4, 4, (20, 2))
    # exact DFT [points, pixels]: exp(-2 pi i sum_d p_d (n_d - N_d // 2) / N_d) / sqrt(N)
    axes = np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij")
    phase = sum(np.outer(locs[:, d], axes[d].ravel()) / n for d, n in enumerate(grid))
    dft = np.exp(-2j * np.pi * phase) / np.sqrt(np.prod(grid))
    A = jl.NUFFT(jnp.asarray(locs, jnp.float32), grid, "K", oversamp=2.0, width=6.0)
    x, y = complex_normal(*grid), complex_normal(20)
    check("NUFFT forward vs exact DFT", rel_err(A(jnp.asarray(x)), dft @ x.ravel()))
    adjoint = A.H(jnp.asarray(y))
    check("NUFFT adjoint vs exact DFT", rel_err(adjoint, (dft.conj().T @ y).reshape(grid)))


def check_split() -> None:
    devices = jax.devices("cpu")
    if len(devices) < 2:
        raise SystemExit(f"smoke test: 2 CPU devices expected, got {devices}")
    weight = complex_normal(4, 5, 3)  # one 5x3 matrix per coil C
    A = jl.Dense(jnp.asarray(weight), "C M N", "N", "C M")
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=devices[:2]))
    x = complex_normal(3)
    out = jax.jit(lambda B, x: B(x))(B, jnp.asarray(x))
    if len(out.sharding.device_set) != 2:
        raise SystemExit(f"smoke test: the split ran on {out.sharding.device_set}, not 2 devices")
    check("split over 2 devices vs numpy", rel_err(out, np.einsum("cmn,n->cm", weight, x)))


def check_interop() -> None:
    import torch

    import interop

    weight = complex_normal(5, 3)
    T = interop.torch_linop(jl.Dense(jnp.asarray(weight), "M N", "N", "M"))
    x0 = complex_normal(3)
    x = torch.from_numpy(x0).requires_grad_(True)
    out = T(x)
    check("interop.torch_linop vs numpy", rel_err(out.detach().numpy(), weight @ x0))
    # d/dx of sum |W x|^2 / 2 is W^H W x (torch's conjugate Wirtinger convention)
    (out.abs() ** 2 / 2).sum().backward()
    grad = weight.conj().T @ (weight @ x0)
    check("interop.torch_linop gradient vs numpy", rel_err(x.grad, grad))
    print(f"smoke test: torch {torch.__version__}")


if __name__ == "__main__":
    check_install()
    check_nufft()
    check_split()
    check_interop()
    print("smoke test: passed")
