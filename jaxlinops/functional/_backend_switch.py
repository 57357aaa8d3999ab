r"""A linear map with two implementations: a fast one that only runs where it was built (a
custom call without compatibility guarantees, such as jax-finufft's), and a portable one in
plain JAX that stands in for it wherever the fast one cannot go.

`switched(x, params, this, other)` computes $A x$ (`x` `[B..., I...]`, `params` a pytree of
arrays on which $A$ depends nonlinearly) by `this.fast`, except:

- in a program lowered for `jax.export` (decided when the program is lowered, so the same
  traced function runs the fast map under `jit` and exports the portable one);
- in derivatives with respect to `params` (primal and tangent both by the portable map, so
  that they agree with each other);
- under `vmap` over `params`;

where `this.portable` runs, with one line on the `jaxlinops` logger (INFO). Derivatives
with respect to `x` use the map itself: it is linear, and its transpose is
$A^T c = \overline{A^H \bar c}$, the adjoint `other` between conjugations.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from .._arrays import vary_alike

logger = logging.getLogger("jaxlinops")


@dataclasses.dataclass(frozen=True)
class Pair:
    """A linear map `x -> A(x, params)` as a `fast` and a `portable` callable with the same
    results up to their approximation errors; `name` names it in the log lines."""

    fast: Callable
    portable: Callable
    name: str


switch_p = Primitive("jaxlinops_backend_switch")


def switched(x: jax.Array, params, this: Pair, other: Pair) -> jax.Array:
    """`this` applied to `x` (see the module docstring); `other` is its adjoint."""
    leaves, treedef = jax.tree.flatten(params)
    out = switch_p.bind(x, *leaves, treedef=treedef, this=this, other=other)
    # the primitive's result does not carry the `shard_map` type of its inputs
    return vary_alike(out, x, *leaves)[0]


@functools.lru_cache(maxsize=256)
def _run(fn: Callable, treedef) -> Callable:
    """`fn` on flattened parameters; one function per `(fn, treedef)`, so that the
    abstract evaluation's `eval_shape` finds its trace in JAX's cache."""
    return lambda x, *leaves: fn(x, jax.tree.unflatten(treedef, leaves))


def _impl(x, *leaves, treedef, this: Pair, other: Pair):
    return _run(this.fast, treedef)(x, *leaves)


def _abstract(x, *leaves, treedef, this: Pair, other: Pair):
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (x, *leaves)]
    out = jax.eval_shape(_run(this.portable, treedef), *specs)
    return ShapedArray(out.shape, out.dtype)


def _lower(ctx, *args, treedef, this: Pair, other: Pair):
    portable = ctx.module_context.lowering_parameters.for_export
    if portable:
        logger.info("%s: the JAX path in a program lowered for jax.export", this.name)
    fn = _run(this.portable if portable else this.fast, treedef)
    return mlir.lower_fun(fn, multiple_results=False)(ctx, *args)


def _jvp(primals, tangents, *, treedef, this: Pair, other: Pair):
    x, *leaves = primals
    tx, *tleaves = tangents
    if all(type(t) is ad.Zero for t in tleaves):
        out = switch_p.bind(x, *leaves, treedef=treedef, this=this, other=other)
        tangent = ad.instantiate_zeros(tx)
        return out, switch_p.bind(tangent, *leaves, treedef=treedef, this=this, other=other)
    logger.info("%s: the JAX path for derivatives with respect to its points", this.name)
    tangents = tuple(ad.instantiate_zeros(t) for t in tangents)
    return jax.jvp(_run(this.portable, treedef), tuple(primals), tangents)


def _transpose(ct, x, *leaves, treedef, this: Pair, other: Pair):
    if any(ad.is_undefined_primal(a) for a in leaves):
        raise ValueError(f"{this.name}: transposed with respect to its parameters (nonlinear)")
    nones = [None] * len(leaves)
    if type(ct) is ad.Zero:
        return [None, *nones]
    adjoint = switch_p.bind(jnp.conj(ct), *leaves, treedef=treedef, this=other, other=this)
    dtype = x.aval.dtype
    ct_x = jnp.conj(adjoint) if jnp.issubdtype(dtype, jnp.complexfloating) else adjoint.real
    return [ct_x.astype(dtype), *nones]


def _batch(args, dims, *, treedef, this: Pair, other: Pair):
    x, *leaves = args
    if dims[0] is not None and all(d is None for d in dims[1:]):
        x = jnp.moveaxis(x, dims[0], 0)  # a leading batch axis of the data
        return switch_p.bind(x, *leaves, treedef=treedef, this=this, other=other), 0
    logger.info("%s: the JAX path under vmap over its points", this.name)
    return jax.vmap(_run(this.portable, treedef), in_axes=tuple(dims))(*args), 0


switch_p.def_impl(_impl)
switch_p.def_abstract_eval(_abstract)
mlir.register_lowering(switch_p, _lower)
ad.primitive_jvps[switch_p] = _jvp
ad.primitive_transposes[switch_p] = _transpose
batching.primitive_batchers[switch_p] = _batch
