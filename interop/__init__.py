"""The PyTorch bridge for jaxlinops: `import interop` (installed with the `torch` extra).

- `to_jax(t)` / `to_torch(x)`: tensors in and out through DLPack, zero-copy where the
  layout allows (see `interop._tensors` for the pitfalls handled and the aliasing rules).
- `torch_linop(A)`: a jaxlinops operator as a `torch.nn.Module` (`TorchLinop`) with
  autograd; its parameters are the operator's floating-point arrays.
- `torch_function(fn)`: a JAX function as a function of torch tensors, differentiable by
  torch autograd; `torch_solve(make_operator, y, *params, **cg_kwargs)`: a
  conjugate-gradient solve whose operator is built from torch tensors, differentiable
  w.r.t. `y` and those tensors (a jaxlinops reconstruction inside a torch model).
- `from_torchlinops(A)`: the jaxlinops operator equivalent to a torchlinops operator.

jaxlinops itself never imports torch.
"""

from ._function import (
    TorchFunction as TorchFunction,
    torch_function as torch_function,
    torch_solve as torch_solve,
)
from ._linop import TorchLinop as TorchLinop, torch_linop as torch_linop
from ._tensors import to_jax as to_jax, to_torch as to_torch
from ._torchlinops import from_torchlinops as from_torchlinops

__all__ = [
    "TorchLinop",
    "torch_linop",
    "TorchFunction",
    "torch_function",
    "torch_solve",
    "to_jax",
    "to_torch",
    "from_torchlinops",
]
