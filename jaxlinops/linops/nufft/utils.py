"""The module path `torchlinops.linops.nufft.utils` of torchlinops:
`from jaxlinops.linops.nufft.utils import fftshift_locs, ifftshift_locs`."""

from .._nufft_utils import (
    clamp as clamp,
    fftshift_locs as fftshift_locs,
    ifftshift_locs as ifftshift_locs,
    scale_int as scale_int,
)

__all__ = ["clamp", "fftshift_locs", "ifftshift_locs", "scale_int"]
