"""torchlinops' module path `torchlinops.alg.pcg`, so that `from jaxlinops.alg.pcg import
conjugate_gradients` works: a re-export of `jaxlinops.alg.conjugate_gradients`."""

from ._cg import CGResult as CGResult, conjugate_gradients as conjugate_gradients

__all__ = ["conjugate_gradients"]
