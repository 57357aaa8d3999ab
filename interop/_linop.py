r"""`torch_linop(A)`: a jaxlinops operator as a `torch.nn.Module`, with autograd.

The module's parameters are the operator's floating-point arrays (coil maps, weights,
NUFFT points), so a torch optimizer can train them; the arrays it was built from are
copied, not aliased. `forward` takes and returns torch tensors and runs one jit-compiled
JAX program per shape and dtype. The input is moved to the device of the operator's
arrays (replicated over the mesh of a batched operator) and the output comes back from
there; gradients return to the devices of the input and the parameters.

Gradients follow PyTorch's convention. For $y = A x$ and an output gradient $g$:

- input: $g_x = A^H g$, computed by applying the adjoint (no stored residuals); the
  backward is itself an autograd function, so double backward works for the input;
- parameters $p$ with `requires_grad`: through `jax.vjp`. JAX's cotangent for complex
  values is the conjugate of PyTorch's, so the incoming gradient and the outgoing
  parameter gradients are conjugated: $g_p = \overline{\mathrm{vjp}(\bar g)}$.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import torch
from jax.sharding import NamedSharding, PartitionSpec

from jaxlinops import NamedLinop

from ._tensors import to_jax, to_torch


def torch_linop(A: NamedLinop) -> TorchLinop:
    """`A` as a torch module: `torch_linop(A)(x)` for a torch tensor `x`; `.H` and `.N`
    share its parameters."""
    if not isinstance(A, NamedLinop):
        raise TypeError(f"`interop.torch_linop` expects a NamedLinop; got {type(A).__name__}.")
    arrays, static = eqx.partition(A, eqx.is_inexact_array)
    leaves, treedef = jax.tree.flatten(arrays)
    params = torch.nn.ParameterList(torch.nn.Parameter(to_torch(a).clone()) for a in leaves)
    placement = tuple(a.sharding for a in leaves)
    return TorchLinop(params, (treedef, static, placement), (), A.name)


class TorchLinop(torch.nn.Module):
    """A jaxlinops operator (after `transforms`, e.g. `.H`) applied to torch tensors.

    Build it with `interop.torch_linop`; `.H` and `.N` are views with the same
    parameters (the arrays of the operator it was built from). `structure` holds the
    operator's tree, its other parts, and where each array lives (its sharding)."""

    def __init__(self, params, structure, transforms: tuple[str, ...], name: str):
        super().__init__()
        self.params = params
        self._structure, self._transforms, self._name = structure, transforms, name

    def extra_repr(self) -> str:
        return self._name + "".join(f".{t}" for t in self._transforms)

    @property
    def spec(self) -> tuple:
        """What `_Apply` needs besides tensors: the structure and the transforms."""
        return self._structure, self._transforms

    def linop(self) -> NamedLinop:
        """The jaxlinops operator with the current parameter values."""
        return _build(self.spec, _jax_params(self.spec, self.params))

    def _view(self, transform: str) -> TorchLinop:
        return TorchLinop(self.params, self._structure, (*self._transforms, transform), self._name)

    @property
    def H(self) -> TorchLinop:
        return self._view("H")

    @property
    def N(self) -> TorchLinop:
        return self._view("N")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"`{self.extra_repr()}` expects a torch.Tensor; got {type(x).__name__}."
            )
        return _Apply.apply(self.spec, _tracked(self.params), x, *self.params)


def _tracked(params) -> bool:
    """Whether autograd records parameter gradients: then the forward keeps the vjp's
    residuals. Not under `no_grad` or `inference_mode`, nor with every parameter frozen."""
    return torch.is_grad_enabled() and any(p.requires_grad for p in params)


def _jax_params(spec, params) -> list[jax.Array]:
    """The parameters as JAX arrays, placed where the operator's arrays were (e.g. sharded
    over a batched operator's mesh)."""
    placement = spec[0][2]
    return [_put(to_jax(p), where) for p, where in zip(params, placement)]


def _jax_input(spec, t: torch.Tensor) -> jax.Array:
    """A torch input as a JAX array where the operator's arrays are (copied there if
    needed): on their device, or replicated over the mesh of a batched operator, whose
    program then shards it."""
    x = to_jax(t)
    placement = spec[0][2]
    if not placement:
        return x
    where = placement[0]
    if isinstance(where, NamedSharding) and len(where.device_set) > 1:
        where = NamedSharding(where.mesh, PartitionSpec())
    return _put(x, where)


def _put(x: jax.Array, where) -> jax.Array:
    """`x` placed as `where` says; `device_put` only when it is not already (a call that
    moves nothing still costs about 0.1 ms)."""
    return x if x.sharding == where else jax.device_put(x, where)


def _build(spec, leaves) -> NamedLinop:
    (treedef, static, _), transforms = spec
    op = eqx.combine(jax.tree.unflatten(treedef, leaves), static)
    for t in transforms:
        op = op.H if t == "H" else op.N
    return op


def _conj(a):
    return jnp.conj(a) if jnp.iscomplexobj(a) else a


@eqx.filter_jit
def _apply(spec, leaves, x):
    return _build(spec, leaves)(x)


@eqx.filter_jit
def _apply_adjoint(spec, leaves, g):
    return _build(spec, leaves).H(g)


@eqx.filter_jit
def _forward_vjp(spec, leaves, x):
    return jax.vjp(lambda p, v: _build(spec, p)(v), leaves, x)


@eqx.filter_jit
def _backward_vjp(vjp, g):
    grads, gx = vjp(_conj(g))
    return [_conj(p) for p in grads], _conj(gx)


class _Apply(torch.autograd.Function):
    """$y = A x$; backward: $A^H g$ for the input, the conjugated vjp for parameters
    (when `track`, see `_tracked`)."""

    @staticmethod
    def forward(ctx, spec, track, x, *params):
        leaves = _jax_params(spec, params)
        if track:
            y, ctx.vjp = _forward_vjp(spec, leaves, _jax_input(spec, x))
        else:
            y, ctx.vjp = _apply(spec, leaves, _jax_input(spec, x)), None
        ctx.spec, ctx.dtype, ctx.device = spec, x.dtype, x.device
        ctx.save_for_backward(*params)
        return to_torch(y)

    @staticmethod
    def backward(ctx, g):
        params = ctx.saved_tensors
        if ctx.vjp is None or not any(ctx.needs_input_grad[3:]):
            gx = None
            if ctx.needs_input_grad[2]:
                gx = _Adjoint.apply(ctx.spec, ctx.dtype, g, *params).to(ctx.device)
            return (None, None, gx, *([None] * len(params)))
        grads, gx = _backward_vjp(ctx.vjp, _jax_input(ctx.spec, g))
        grads = (to_torch(a).to(p.device) for a, p in zip(grads, params))
        return (None, None, to_torch(gx).to(ctx.device), *grads)


class _Adjoint(torch.autograd.Function):
    """$A^H g$ (the input gradient, real part for a real input of dtype `dtype`), itself
    differentiable: its backward is $A$."""

    @staticmethod
    def forward(ctx, spec, dtype, g, *params):
        ctx.spec = spec
        ctx.save_for_backward(*params)
        out = to_torch(_apply_adjoint(spec, _jax_params(spec, params), _jax_input(spec, g)))
        if out.is_complex() and not dtype.is_complex:
            out = out.real.contiguous()
        return out.to(dtype)

    @staticmethod
    def backward(ctx, h):
        params = ctx.saved_tensors
        applied = _Apply.apply(ctx.spec, _tracked(params), h, *params)
        return (None, None, applied, *([None] * len(params)))
