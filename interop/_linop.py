r"""`torch_linop(A)`: a jaxlinops operator as a `torch.nn.Module`, with autograd.

The module's parameters are the operator's floating-point arrays (coil maps, weights,
NUFFT points; not the scalars made from Python numbers), so a torch optimizer can train
them; the arrays it was built from are copied, not aliased. `forward` takes and returns
torch tensors and runs one jit-compiled JAX program per shape and dtype. The output is
on the input tensor's device, as with a torch module. An operator runs there too: its
parameters are copied to the input's device when they live elsewhere (a CPU tensor on a
GPU machine is computed on the CPU, a CUDA tensor on its GPU). A batched operator runs
on its mesh instead, the input replicated over it, and its output comes back. Gradients
return to the devices of the input and the parameters.

Gradients follow PyTorch's convention. For $y = A_p x$ and an output gradient $g$:

- with every parameter frozen (or autograd not recording them): the input gradient is
  $g_x = A^H g$, computed by applying the adjoint (no stored residuals), and that
  backward is again an application of $A$, so every order of derivative works;
- with parameters $p$ that require grad: the gradients of the input and the parameters
  come from `jax.vjp`. JAX's cotangent for complex values is the conjugate of PyTorch's,
  so the incoming gradient and the outgoing gradients are conjugated:
  $(g_x, g_p) = \overline{\mathrm{vjp}(\bar g)}$. The forward keeps the vjp's residuals
  for a backward that records no graph. One that does (`create_graph=True`: Hessian-vector
  products, unrolled optimisation) runs that formula as a JAX function of $(x, p, g)$
  whose own backward is its vjp, and so on: derivatives of every order are exact.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import torch
from jax.sharding import NamedSharding, PartitionSpec

from jaxlinops import NamedLinop

from ._tensors import conj_cotangent as _conj, to_jax, to_torch

_INPUT_DTYPES = (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
    torch.complex128,
)  # fmt: skip


class _OperatorSpec(eqx.Module):
    """Everything that rebuilds a `TorchLinop`'s operator besides its parameter values. A
    pytree: under `eqx.filter_jit` its non-array leaves are static, so each distinct spec
    compiles its own program.

    - `treedef`: the tree structure of the operator's floating-point arrays (the parameters).
    - `static`: the operator with those arrays taken out (`eqx.partition`).
    - `placement`: the sharding of each parameter array, in `treedef` order.
    - `transforms`: the views taken of the rebuilt operator, in order (`"H"` or `"N"`).
    """

    # jaxlib ships no type stubs, so pyright sees PyTreeDef as an unknown variable
    treedef: jax.tree_util.PyTreeDef  # pyright: ignore[reportInvalidTypeForm]
    static: NamedLinop
    placement: tuple[jax.sharding.Sharding, ...]
    transforms: tuple[str, ...]


def torch_linop(A: NamedLinop) -> TorchLinop:
    """`A` as a torch module: `torch_linop(A)(x)` for a torch tensor `x`; `.H` and `.N`
    share its parameters."""
    if not isinstance(A, NamedLinop):
        got = f"the class {A.__name__}" if isinstance(A, type) else type(A).__name__
        raise TypeError(f"`interop.torch_linop` expects a NamedLinop; got {got}.")
    arrays, static = eqx.partition(A, _is_parameter)
    leaves, treedef = jax.tree.flatten(arrays)
    params = torch.nn.ParameterList(torch.nn.Parameter(to_torch(a).clone()) for a in leaves)
    placement = tuple(a.sharding for a in leaves)
    return TorchLinop(params, _OperatorSpec(treedef, static, placement, ()), A.name)


def _is_parameter(leaf) -> bool:
    """A floating-point array of the operator, except one made from a Python number (JAX's
    weak type, as in `2.0 * A`): that stays a constant of the operator, so that, as torch's
    0-dim tensors do, it does not promote a 32-bit input to 64 bits."""
    return eqx.is_inexact_array(leaf) and not leaf.weak_type


class TorchLinop(torch.nn.Module):
    """A jaxlinops operator (after `transforms`, e.g. `.H`) applied to torch tensors.

    Build it with `interop.torch_linop`; `.H` and `.N` are views with the same
    parameters (the arrays of the operator it was built from). `spec` rebuilds the
    operator from them (`_OperatorSpec`)."""

    def __init__(self, params: torch.nn.ParameterList, spec: _OperatorSpec, name: str):
        super().__init__()
        self.params = params
        self._spec, self._name = spec, name

    def extra_repr(self) -> str:
        return self._name + "".join(f".{t}" for t in self._spec.transforms)

    @property
    def spec(self) -> _OperatorSpec:
        """What `_Apply` needs besides tensors to rebuild the operator."""
        return self._spec

    def linop(self) -> NamedLinop:
        """The jaxlinops operator with the current parameter values."""
        return _build(self.spec, _jax_params(self.spec, self.params))

    def _view(self, transform: str) -> TorchLinop:
        spec = dataclasses.replace(self._spec, transforms=(*self._spec.transforms, transform))
        return TorchLinop(self.params, spec, self._name)

    @property
    def H(self) -> TorchLinop:
        return self._view("H")

    @property
    def N(self) -> TorchLinop:
        return self._view("N")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """$A x$ for a torch tensor `x` (its dims `A.ishape`); a `TypeError` for a
        non-tensor or a floating-point dtype other than those of `_INPUT_DTYPES`, and
        `A`'s own `ValueError` for a wrong shape."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"`{self.extra_repr()}` expects a torch.Tensor; got {type(x).__name__}."
            )
        if (x.dtype.is_floating_point or x.dtype.is_complex) and x.dtype not in _INPUT_DTYPES:
            raise TypeError(
                f"`{self.extra_repr()}` expects a tensor of an integer, bool or "
                f"{', '.join(str(d).removeprefix('torch.') for d in _INPUT_DTYPES)} dtype; "
                f"got {x.dtype}."
            )
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.params):
            (y,) = _Jax.apply(self.spec, (), 1, x, *self.params)
            return y
        return _Apply.apply(self.spec, x, *self.params)


def _mesh(spec: _OperatorSpec) -> NamedSharding | None:
    """The sharding of a batched operator's first array, placed on its mesh (the
    operator runs there, one device or several), else None."""
    where = spec.placement[0] if spec.placement else None
    return where if isinstance(where, NamedSharding) else None


def _jax_params(spec: _OperatorSpec, params, x: jax.Array | None = None) -> list[jax.Array]:
    """The parameters as JAX arrays: on the device of the input `x` (copied there when
    they are elsewhere), or, for a batched operator or without `x`, where the operator's
    arrays were (e.g. sharded over its mesh)."""
    if x is None:
        return [_put(to_jax(p), where) for p, where in zip(params, spec.placement)]
    if _mesh(spec) is not None:
        return [_on_mesh(p, where) for p, where in zip(params, spec.placement)]
    return [_put(to_jax(p), x.sharding) for p in params]


def _jax_input(spec: _OperatorSpec, t: torch.Tensor) -> jax.Array:
    """A torch input as a JAX array, on the tensor's device, or replicated over the mesh
    of a batched operator, whose program then shards it."""
    mesh = _mesh(spec)
    return to_jax(t) if mesh is None else _on_mesh(t, NamedSharding(mesh.mesh, PartitionSpec()))


def _on_mesh(t: torch.Tensor, where: jax.sharding.Sharding) -> jax.Array:
    """A tensor placed for a batched operator's program; a CUDA tensor is copied into a
    buffer of JAX's own. Given torch's CUDA buffer directly, the program on a one-GPU mesh
    failed on its second call ('Failed to set memcpy D2D node params:
    CUDA_ERROR_INVALID_VALUE'; H200, jax 0.11.2, torch 2.11), after a first call on a
    buffer of JAX's."""
    x = to_jax(t)
    if t.is_cuda:
        return jax.device_put(x, where, may_alias=False)
    return _put(x, where)


def _put(x: jax.Array, where) -> jax.Array:
    """`x` placed as `where` says; `device_put` only when it is not already (a call that
    moves nothing still costs about 0.1 ms)."""
    return x if x.sharding == where else jax.device_put(x, where)


def _build(spec: _OperatorSpec, leaves) -> NamedLinop:
    op = eqx.combine(jax.tree.unflatten(spec.treedef, leaves), spec.static)
    for t in spec.transforms:
        op = op.H if t == "H" else op.N
    return op


@eqx.filter_jit
def _apply_rebuilt(spec: _OperatorSpec, leaves, x):
    """$A x$, `A` rebuilt from `spec` and the parameter arrays `leaves`."""
    return _build(spec, leaves)(x)


@eqx.filter_jit
def _apply_adjoint_rebuilt(spec: _OperatorSpec, leaves, g):
    """$A^H g$, `A` rebuilt from `spec` and the parameter arrays `leaves`."""
    return _build(spec, leaves).H(g)


class _Apply(torch.autograd.Function):
    """$y = A x$ with every parameter frozen; backward: $A^H g$ (`_Adjoint`)."""

    @staticmethod
    def forward(ctx, spec, x, *params):
        ctx.spec, ctx.dtype, ctx.device, ctx.shape = spec, x.dtype, x.device, x.shape
        ctx.save_for_backward(*params)
        v = _jax_input(spec, x)
        return to_torch(_apply_rebuilt(spec, _jax_params(spec, params, v), v)).to(x.device)

    @staticmethod
    def backward(ctx, g):
        """$A^H g$, broadcast to the input's shape where the adjoint returns a size-1 axis
        that broadcasts (`SumReduce.H` without `axes_lengths`): the gradient of a sum is
        the same for each summed entry."""
        gx = _Adjoint.apply(ctx.spec, ctx.dtype, g, *ctx.saved_tensors).to(ctx.device)
        return (None, gx.expand(ctx.shape), *([None] * len(ctx.saved_tensors)))


class _Adjoint(torch.autograd.Function):
    """$A^H g$ with every parameter frozen (the input gradient, real part for a real input
    of dtype `dtype`), itself differentiable: its backward is $A$."""

    @staticmethod
    def forward(ctx, spec, dtype, g, *params):
        ctx.spec = spec
        ctx.save_for_backward(*params)
        v = _jax_input(spec, g)
        out = to_torch(_apply_adjoint_rebuilt(spec, _jax_params(spec, params, v), v)).to(g.device)
        if out.is_complex() and not dtype.is_complex:
            out = out.real.contiguous()
        return out.to(dtype)

    @staticmethod
    def backward(ctx, h):
        params = ctx.saved_tensors
        return (None, None, _Apply.apply(ctx.spec, h, *params), *([None] * len(params)))


def _function(spec, orders: tuple):
    r"""The JAX function that `_Jax` runs, `(args, params) -> outputs`. With no `orders`
    it is $((x), p) \mapsto (A_p x)$. Each entry of `orders` takes the backward of the
    function before it, in PyTorch's convention: its args are the previous args followed
    by cotangents $g$ of the previous outputs, and it returns
    $\overline{\mathrm{vjp}(\bar g)}$ for the previous inputs (args, then params) that
    the entry marks `True`."""
    if not orders:
        return lambda args, params: (_build(spec, params)(*args),)
    previous, wanted = _function(spec, orders[:-1]), orders[-1]

    def backward(args, params):
        n = len(wanted) - len(params)
        _, vjp = jax.vjp(previous, args[:n], params)
        grads_args, grads_params = vjp(tuple(_conj(g) for g in args[n:]))
        grads = (*grads_args, *grads_params)
        return tuple(_conj(g) for g, w in zip(grads, wanted) if w)

    return backward


@eqx.filter_jit
def _run(spec, orders, args, params):
    return _function(spec, orders)(args, params)


@eqx.filter_jit
def _forward_vjp(spec, x, params):
    return jax.vjp(lambda v, p: _build(spec, p)(v), x, params)


@eqx.filter_jit
def _backward_vjp(vjp, g, wanted):
    gx, grads = vjp(_conj(g))
    return tuple(_conj(a) for a, w in zip((gx, *grads), wanted) if w)


class _Jax(torch.autograd.Function):
    """The outputs of `_function(spec, orders)` for torch tensors `(*args, *params)`
    (`n` args); differentiable to any order, since its backward is `_Jax` with one more
    order. A first backward that records no graph uses the residuals that the forward
    kept instead (`jax.vjp`), without computing $A x$ again."""

    @staticmethod
    def forward(ctx, spec, orders, n, *tensors):
        args = tuple(_jax_input(spec, t) for t in tensors[:n])
        params = tuple(_jax_params(spec, tensors[n:], args[0]))
        if orders:
            outputs, ctx.vjp = _run(spec, orders, args, params), None
        else:  # the first forward: one input, x
            (x,) = args
            y, ctx.vjp = _forward_vjp(spec, x, params)
            outputs = (y,)
        ctx.spec, ctx.orders, ctx.n = spec, orders, n
        ctx.save_for_backward(*tensors)
        return tuple(to_torch(a).to(tensors[0].device) for a in outputs)

    @staticmethod
    def backward(ctx, *grads):
        tensors, n, wanted = ctx.saved_tensors, ctx.n, ctx.needs_input_grad[3:]
        if ctx.vjp is not None and not torch.is_grad_enabled():
            g = _jax_input(ctx.spec, grads[0])
            out = iter(to_torch(a) for a in _backward_vjp(ctx.vjp, g, wanted))
        else:  # recorded (`create_graph`), or the backward of a backward: one more order
            orders = (*ctx.orders, wanted)
            args = (*tensors[:n], *grads)
            out = iter(_Jax.apply(ctx.spec, orders, len(args), *args, *tensors[n:]))
        return (None, None, None, *(next(out).to(t.device) if w else None
                                    for t, w in zip(tensors, wanted)))  # fmt: skip
