"""`import interop.torchlinops as torchlinops`: jaxlinops with torchlinops' torch API.

For a torch script written against torchlinops: change the import and keep the torch
tensors. Every name of jaxlinops is here under the same name and module path
(`interop.torchlinops.linops.nufft.toeplitz`, `interop.torchlinops.testing`, ...), facing
torch: constructors take torch tensors (zero-copy through DLPack), operators are
`torch.nn.Module`s that take and return torch tensors with torch autograd through the
JAX kernels, and `@`, `+`, `.H`, `.N`, `split`, `create_batched_linop` return
torch-facing operators. The computation is jaxlinops'. See `_facade` for the rules.

```python
import interop.torchlinops as torchlinops

A = torchlinops.Dense(torch.randn(3, 4), ("M", "N"), ("N",), ("M",))
A(torch.randn(4))          # a torch tensor
A.H @ A                    # a torch-facing operator
```
"""

from __future__ import annotations

from typing import Any

import jaxlinops as _jaxlinops

from ._facade import TorchNamedLinop as TorchNamedLinop, facade as _facade, install as _install

_install()

__all__ = list(_jaxlinops.__all__)  # pyright: ignore[reportUnsupportedDunderAll]


def __getattr__(name: str) -> Any:
    """jaxlinops' `name`, facing torch."""
    return _facade(getattr(_jaxlinops, name))
