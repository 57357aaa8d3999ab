r"""JAX functions on torch tensors, differentiable by torch autograd: `torch_function(fn)`,
and `torch_solve`, a differentiable conjugate-gradient solve whose operator is built from
torch tensors.

Tensors cross through DLPack (`to_jax`, `to_torch`): the inputs, the outputs and the
gradients share their buffers with the JAX arrays where the layout allows. Other arguments
(Python numbers, strings, None) are static: each distinct value compiles its own program,
and so does each new shape or dtype; calls that repeat them reuse it. A JAX function is
cached under the function object itself: define it once, not inside the training loop.

Gradients follow PyTorch's convention. For outputs $z = f(a)$ and output gradients $g$,
the forward runs `jax.vjp` of $f$ w.r.t. the inputs that require grad and keeps its
residuals; the backward returns $\overline{\mathrm{vjp}(\bar g)}$ (JAX's cotangent of a
complex value is the conjugate of torch's gradient; on a real value both agree). A
backward that records a graph (`create_graph=True`) runs that formula as a JAX function
of $(a, g)$ through `torch_function` again, so derivatives of every order exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import torch

import jaxlinops as jl

from ._tensors import conj_cotangent as _conj, to_jax, to_torch

_STATIC = (type(None), bool, int, float, complex, str)


class _Slot:
    """Marks where a tensor goes in a call's arguments."""

    def __repr__(self) -> str:
        return "<tensor>"


_TENSOR = _Slot()


def torch_function(fn: Callable) -> TorchFunction:
    """`fn`, a JAX function of arrays (returning an array or a pytree of arrays: a tuple,
    a `NamedTuple`, ...), as a function of torch tensors, differentiable by torch
    autograd w.r.t. every tensor argument that requires grad.

    ```
    f = interop.torch_function(lambda w, x: jnp.sum(w * x**2))
    f(w, x).backward()  # w.grad, x.grad
    ```

    Each argument is a torch tensor (given to `fn` as a JAX array) or a Python number,
    string or None (given as is, static). Integer and bool outputs carry no gradient."""
    if not callable(fn):
        raise TypeError(f"`interop.torch_function` expects a callable; got {_kind(fn)}.")
    return TorchFunction(fn)


class TorchFunction:
    """A JAX function called on torch tensors (see `torch_function`)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.name = f"interop.torch_function({getattr(fn, '__name__', 'fn')})"

    def __repr__(self) -> str:
        return f"TorchFunction({self.fn!r})"

    def __call__(self, *args):
        return _call(self.fn, args, self.name, [f"argument {i}" for i in range(len(args))])


def torch_solve(make_operator: Callable, y: torch.Tensor, *params, **cg_kwargs):
    r"""The solution $x$ of $A x = y$, $A$ = `make_operator(*params)`, by
    `jl.alg.conjugate_gradients(A, y, **cg_kwargs)`, as a torch tensor that torch autograd
    differentiates w.r.t. `y` and every tensor of `params` that requires grad.

    - `make_operator(*params)`: builds a Hermitian positive definite jaxlinops operator
      (e.g. `A.N + lam * I`) from the `params`, given as JAX arrays (the tensors) or as
      they are (Python numbers, strings, None: static). Define it once, outside the
      training loop: each new function object compiles anew.
    - `y`: the right-hand side, a floating-point or complex tensor shaped like `A.ishape`.
    - `cg_kwargs`: `conjugate_gradients`' keyword arguments (`max_num_iters`, `gtol`,
      `adjoint`, `return_info`, ...). By default the gradient is implicit (one more CG
      solve, memory independent of the iteration count); `adjoint=jl.alg.UnrolledAdjoint()`
      differentiates the iterations. Tensors given here (`x0`, a traced `gtol`) are
      constants: they must not require grad.

    With `return_info=True` the result is a `CGResult` of tensors (`x`, `num_iters`, ...).

    CG-SENSE with learnable coil maps:

    ```
    def sense_normal(maps, lam):  # maps: (C, Nx, Ny); A^H A + lam I on (Nx, Ny)
        A = jl.FFT(2, batch_shape="C", centered=True) @ jl.Dense(
            maps, "C Nx Ny", "Nx Ny", "C Nx Ny"
        )
        return A.N + lam * jl.Identity("Nx Ny", A.N.oshape)

    x = interop.torch_solve(sense_normal, y, maps, lam, max_num_iters=50, gtol=1e-6)
    loss = (x - target).abs().square().sum()
    loss.backward()  # maps.grad, lam.grad and y.grad
    ```
    """
    name = "interop.torch_solve"
    if not callable(make_operator):
        raise TypeError(f"`{name}`: `make_operator` must be callable; got {_kind(make_operator)}.")
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"`{name}`: `y` must be a torch.Tensor; got {_kind(y)}.")
    if not (y.dtype.is_floating_point or y.dtype.is_complex):
        raise TypeError(f"`{name}`: `y` must be a floating-point or complex tensor; got {y.dtype}.")
    kwargs = {key: _constant(value, name, key) for key, value in cg_kwargs.items()}
    labels = ["y", *(f"params[{i}]" for i in range(len(params)))]
    return _call(_Solve(make_operator, kwargs), (y, *params), name, labels)


class _Solve(eqx.Module):
    """$(y, p) \\mapsto$ `conjugate_gradients(make_operator(*p), y, **kwargs)`. A pytree:
    under `eqx.filter_jit`, `make_operator` and the non-array options are static, arrays
    among the options dynamic."""

    make_operator: Callable
    kwargs: dict[str, Any]

    def __call__(self, y, *params):
        return jl.alg.conjugate_gradients(self.make_operator(*params), y, **self.kwargs)


def _constant(value, name: str, key: str):
    """A keyword argument of the solve: a torch tensor becomes a JAX array (a constant:
    refused if it requires grad), anything else is passed as is."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.requires_grad:
        raise ValueError(
            f"`{name}`: `{key}` is a constant of the solve and gets no gradient; got a "
            f"tensor that requires grad. Pass it detached (`{key}.detach()`)."
        )
    return to_jax(value)


def _kind(value) -> str:
    return f"the class {value.__name__}" if isinstance(value, type) else type(value).__name__


# --- the call ------------------------------------------------------------------------


def _call(fn: Callable, args: tuple, name: str, labels: list[str]):
    """`fn` on `args`, its tensors given as JAX arrays, its result as torch tensors:
    through `_Function` (differentiable) where grad is enabled and a tensor requires it."""
    for arg, label in zip(args, labels):
        if not isinstance(arg, (torch.Tensor, *_STATIC)):
            raise TypeError(
                f"`{name}`: {label} must be a torch.Tensor (or a Python number, string or "
                f"None, static); got {_kind(arg)}."
            )
    tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
    template = tuple(_TENSOR if isinstance(a, torch.Tensor) else a for a in args)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        box: list = []  # `_Function.forward` puts the outputs' tree structure here
        outputs = _Function.apply(fn, template, name, box, *tensors)
        return jax.tree.unflatten(box[0], outputs)
    out = _run(fn, template, name, tuple(to_jax(t) for t in tensors))
    return jax.tree.map(to_torch, out)


def _fill(fn: Callable, template: tuple, name: str, arrays) -> Any:
    """`fn` on `template`'s arguments, the tensor slots filled with `arrays` in order; a
    `TypeError` (naming the function `name`) for an output that is not a pytree of
    arrays."""
    it = iter(arrays)
    out = fn(*(next(it) if a is _TENSOR else a for a in template))
    for leaf in jax.tree.leaves(out):
        if not isinstance(leaf, jax.Array):
            raise TypeError(
                f"`{name}`: the function must return a JAX array or a pytree of arrays; "
                f"got {_kind(leaf)} among its outputs."
            )
    return out


@eqx.filter_jit
def _run(fn, template, name, arrays):
    return _fill(fn, template, name, arrays)


def _vjp(fn, template, name, wanted: tuple[bool, ...], arrays):
    """`jax.vjp` of `fn` w.r.t. the `arrays` that `wanted` marks (the others constant)."""

    def partial(diff):
        it = iter(diff)
        return _fill(fn, template, name, [next(it) if w else a for a, w in zip(arrays, wanted)])

    return jax.vjp(partial, [a for a, w in zip(arrays, wanted) if w])


def _pull(vjp, treedef, cotangents) -> list[jax.Array]:
    r"""$\overline{\mathrm{vjp}(\bar g)}$ for output gradients `cotangents` in torch's
    convention, one per output leaf: an array, or a `ShapeDtypeStruct` for an integer or
    bool output (whose cotangent is `float0`)."""
    leaves = [
        np.zeros(g.shape, jax.dtypes.float0) if isinstance(g, jax.ShapeDtypeStruct) else _conj(g)
        for g in cotangents
    ]
    (grads,) = vjp(jax.tree.unflatten(treedef, leaves))
    return [_conj(g) for g in grads]


def _cotangents(outputs: tuple, grads) -> list:
    """One cotangent per output leaf for `_pull`: the next of `grads` for an inexact leaf
    (None in `outputs`), the leaf's `ShapeDtypeStruct` for the others."""
    it = iter(grads)
    return [next(it) if o is None else o for o in outputs]


_forward_vjp = eqx.filter_jit(_vjp)
_backward_vjp = eqx.filter_jit(_pull)


def _inexact(x: jax.Array) -> bool:
    return jnp.issubdtype(x.dtype, jnp.inexact)


class _Backward(eqx.Module):
    """The backward of `fn` as a JAX function of (inputs, output gradients), for a
    backward that records a graph: `n` inputs, then one gradient per inexact output
    leaf; `outputs` holds each output leaf's `ShapeDtypeStruct` where it is not inexact,
    else None."""

    fn: Callable
    template: tuple
    name: str
    wanted: tuple[bool, ...]
    treedef: Any
    outputs: tuple
    n: int

    def __call__(self, *args):
        arrays, grads = args[: self.n], args[self.n :]
        _, vjp = _vjp(self.fn, self.template, self.name, self.wanted, arrays)
        return tuple(_pull(vjp, self.treedef, _cotangents(self.outputs, grads)))


class _Function(torch.autograd.Function):
    """The output leaves of `fn` on `template`'s arguments, its tensor slots filled with
    `tensors`; the structure of the output goes into `box`. `name` names the function in
    error messages."""

    @staticmethod
    def forward(ctx, fn, template, name, box, *tensors):
        wanted = tuple(ctx.needs_input_grad[4:])
        arrays = tuple(to_jax(t) for t in tensors)
        out, ctx.vjp = _forward_vjp(fn, template, name, wanted, arrays)
        leaves, treedef = jax.tree.flatten(out)
        box.append(treedef)
        ctx.outputs = tuple(
            None if _inexact(a) else jax.ShapeDtypeStruct(a.shape, a.dtype) for a in leaves
        )
        ctx.fn, ctx.template, ctx.name = fn, template, name
        ctx.wanted, ctx.treedef = wanted, treedef
        ctx.save_for_backward(*tensors)
        result = tuple(to_torch(a) for a in leaves)
        ctx.mark_non_differentiable(*(t for t, o in zip(result, ctx.outputs) if o is not None))
        return result

    @staticmethod
    def backward(ctx, *grads):
        tensors = ctx.saved_tensors
        grads = [g for g, o in zip(grads, ctx.outputs) if o is None]
        if torch.is_grad_enabled():  # `create_graph`: the backward, differentiable
            backward = _Backward(ctx.fn, ctx.template, ctx.name, ctx.wanted, ctx.treedef,
                                 ctx.outputs, len(tensors))  # fmt: skip
            labels = [f"argument {i}" for i in range(len(tensors) + len(grads))]
            out = iter(_call(backward, (*tensors, *grads), f"{ctx.name} backward", labels))
        else:
            cotangents = _cotangents(ctx.outputs, [to_jax(g) for g in grads])
            out = iter(to_torch(a) for a in _backward_vjp(ctx.vjp, ctx.treedef, cotangents))
        return (None, None, None, None, *(next(out).to(t.device) if w else None
                                    for t, w in zip(tensors, ctx.wanted)))  # fmt: skip
