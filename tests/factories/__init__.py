"""Operator factories for the contract tests; importing this package registers them all."""

from . import (
    blocks,  # noqa: F401
    compat,  # noqa: F401
    conv_simple,  # noqa: F401
    core,  # noqa: F401
    fft_pad,  # noqa: F401
    finite_difference,  # noqa: F401
    interp,  # noqa: F401
    nufft,  # noqa: F401
    sampling_einops,  # noqa: F401
    sharding,  # noqa: F401
    wavelet,  # noqa: F401
)
