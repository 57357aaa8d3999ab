"""`interop.torchlinops.testing.BaseNamedLinopTests`: torchlinops' test class for an
operator, on torch tensors.

A subclass's fixture `linop_input_output` returns a torch-facing operator and torch
tensors. jaxlinops' checks (adjoint, normal, levels of both, linear transpose, split,
sizes, the torchlinops functions) run on the jaxlinops operator with the tensors as JAX
arrays; two checks run on the torch side, as torchlinops has them:

- `test_backprop`: torch autograd through the operator. For $y = A x$ and an output
  gradient $g$, `y.backward(g)` leaves $A^H g$ in `x.grad` (a size-1 axis of $A^H g$
  broadcast to the input's size);
- `test_input_mutation`: applying $A$, $A^H$, $A^H A$ leaves the input tensors unchanged.
"""

from __future__ import annotations

import functools

import torch

from jaxlinops import testing

from .._tensors import to_jax


def _on_jax(check):
    @functools.wraps(check)
    def test(self, linop_input_output):
        A, x, y = linop_input_output
        return check(self, (A.linop, to_jax(x), to_jax(y)))

    return test


class BaseNamedLinopTests(testing.BaseNamedLinopTests):
    """torchlinops' `BaseNamedLinopTests` for torch-facing operators (see the module
    docstring); `equality_check` and `isclose_kwargs` as in jaxlinops'."""

    def test_backprop(self, linop_input_output):
        A, x, y = linop_input_output
        x = x.detach().clone().requires_grad_(True)
        g = torch.randn_like(y)
        A(x).backward(g)
        assert x.grad is not None
        tolerances = {"rtol": 1e-4, "atol": 1e-5, **self._tolerances()}
        # a size-1 axis of the adjoint broadcasts (`SumReduce.H`), as torchlinops compares
        torch.testing.assert_close(x.grad, A.H(g).expand_as(x.grad), **tolerances)

    def test_input_mutation(self, linop_input_output):
        A, x, y = linop_input_output
        for op, v in ((A, x), (A.H, y), (A.N, x)):
            before = v.clone()
            op(v)
            assert torch.equal(v, before), f"{op!r} wrote into its input"


for _name in dir(testing.BaseNamedLinopTests):
    if _name.startswith("test_"):
        setattr(BaseNamedLinopTests, _name, _on_jax(getattr(testing.BaseNamedLinopTests, _name)))
