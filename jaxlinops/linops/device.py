"""The module path `torchlinops.linops.device` of torchlinops:
`from jaxlinops.linops.device import DeviceSpec, ToDevice`."""

from . import DeviceSpec as DeviceSpec, ToDevice as ToDevice

__all__ = ["DeviceSpec", "ToDevice"]
