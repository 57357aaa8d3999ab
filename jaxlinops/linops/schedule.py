"""The module path `torchlinops.linops.schedule` of torchlinops:
`from jaxlinops.linops.schedule import parallel_execute`."""

from .._core import parallel_execute as parallel_execute

__all__ = ["parallel_execute"]
