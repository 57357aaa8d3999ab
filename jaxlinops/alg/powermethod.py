"""torchlinops' module path `torchlinops.alg.powermethod`: a re-export of
`jaxlinops.alg.power_method`."""

from ._power import PowerMethodResult as PowerMethodResult, power_method as power_method

__all__ = ["power_method"]
