"""What `interop.torch_linop` costs per call on top of the JAX program it runs.

    python benchmarks/bench_interop.py [--quick]

On a Cartesian SENSE forward (8 coils, `Diagonal(mask) @ FFT @ Dense(maps)`) at several
sizes, in the same run:

- `jax`: the operator applied to a JAX array by `jax.jit` (no interop);
- `torch_linop`: `interop.torch_linop(A)` on a torch tensor under `torch.inference_mode()`;
- `torch_linop, autograd`: the same with the coil maps trainable and autograd recording,
  so the forward also keeps the vjp's residuals for the parameter gradients;
- `torchlinops`: the same operator in torchlinops (where installed), the PyTorch peer.

It prints the medians (harness.time_impl: warm-up, fresh inputs, IQR), the interop
overhead (`torch_linop` minus `jax`) and torchlinops' time over `torch_linop`'s.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
import torch
from cases import Peers, cartesian_sense
from harness import QUICK, Budget, Impl, jax_impl, time_impl, torch_impl

import interop


def recording(module) -> Impl:
    """`module(x)` with autograd on: the output carries a graph to the parameters."""
    fresh = torch.from_numpy
    return Impl(module, lambda a: fresh(np.ascontiguousarray(a)), lambda y: y.detach().numpy())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="one size, few runs")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else Budget()
    print(f"jax {jax.__version__}, torch {torch.__version__}, {jax.devices()[0].platform}")
    print("| size | jax ms | torch_linop ms | overhead ms | autograd ms | torchlinops ms "
          "| × torchlinops |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    peers = Peers.load({"torchlinops"}, gpu=False)
    for n in (32,) if args.quick else (32, 64, 128, 256):
        rng = np.random.default_rng(n)
        ops = cartesian_sense(rng, peers, 8, n)
        module = interop.torch_linop(ops["jaxlinops"])
        impls = {
            "jax": jax_impl(lambda op, x: op(x), ops["jaxlinops"]),
            "torch_linop": torch_impl(module, torch.device("cpu")),
            "autograd": recording(module),
        }
        if "torchlinops" in ops:
            impls["torchlinops"] = torch_impl(ops["torchlinops"], peers.torch_device)
        ms = {k: time_impl(v, rng, (n, n), np.complex64, budget)["median_ms"]
              for k, v in impls.items()}  # fmt: skip
        peer = ms.get("torchlinops")
        cells = [f"8 x {n}²", *(f"{ms[k]:.3f}" for k in ("jax", "torch_linop")),
                 f"{ms['torch_linop'] - ms['jax']:.3f}", f"{ms['autograd']:.3f}",
                 "—" if peer is None else f"{peer:.3f}",
                 "—" if peer is None else f"{peer / ms['torch_linop']:.2f}"]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
