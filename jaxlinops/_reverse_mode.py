"""The error for forward-mode differentiation through the Pallas kernels.

The Pallas spreading and interpolation kernels are `jax.custom_vjp`s: reverse mode
(`jax.grad`, `jax.vjp`) works, and JAX refuses forward mode (`jax.jvp`, `jax.jacfwd`)
with a `TypeError` that names no operator. Where an operator or a NUFFT function is
applied under forward mode, that refusal is raised again naming the backend and the way
out. When forward mode is applied to a function that `jax.jit`s the operator inside it,
JAX raises its own error before any jaxlinops code runs.
"""

from __future__ import annotations

import jax


def forward_mode_error(where: str, tree: object, error: TypeError) -> TypeError | None:
    """A TypeError naming the Pallas backend for `where` when `error` is JAX's refusal of
    forward mode through a `custom_vjp` and `tree` (an operator or a NUFFT plan) holds a
    plan on that backend; None otherwise (the caller re-raises `error`)."""
    if "forward-mode autodiff" not in str(error):
        return None

    def pallas(node: object) -> bool:
        return getattr(node, "backend", None) == "pallas"

    if not any(pallas(node) for node in jax.tree.leaves(tree, is_leaf=pallas)):
        return None
    return TypeError(
        f"{where}: forward-mode differentiation (jax.jvp, jax.jacfwd) reaches a NUFFT with "
        f"backend='pallas', whose kernels have reverse-mode derivatives only (jax.grad, "
        f"jax.vjp); build the NUFFT with backend='jax' (the default) for forward mode."
    )
