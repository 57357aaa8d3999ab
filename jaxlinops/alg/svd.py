"""torchlinops' module path `torchlinops.alg.svd`: a re-export of
`jaxlinops.alg.singular_value_decomposition`."""

from ._power import (
    SVDResult as SVDResult,
    singular_value_decomposition as singular_value_decomposition,
)

__all__ = ["singular_value_decomposition"]
