"""torchlinops' layout in jaxlinops: functional aliases, nameddim, utils, config, batching."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxlinops as jl
import jaxlinops.functional as F
from jaxlinops import config, utils
from jaxlinops.nameddim import ND, NamedDimCollection

from . import Raises

X = jnp.ones((4, 4))
LOCS = np.zeros((3, 2))
DENSE = jl.Dense(jnp.ones((4, 3)), "C N", "C N", "C")
SPEC = jl.BatchSpec({"C": 1})


def rename_two_ways():
    NamedDimCollection(s=("A", "A")).s = ("B", "C")


CASES = [
    Raises("layout-mask2idx-int", lambda: F.mask2idx(np.ones(3, int)), TypeError, r"mask2idx"),
    Raises(
        "layout-index-deterministic-type",
        lambda: F.index(X, (jnp.zeros(2, int),), deterministic_backward=1),
        TypeError,
        r"`index\(deterministic_backward=...\)` must be a bool",
    ),
    Raises(
        "layout-fold-block-float",
        lambda: F.fold(jnp.ones((3, 2)), (4,), (2.5,), (1,)),
        ValueError,
        r"`fold\(block_size=...\)` expects integer sizes",
    ),
    Raises(
        "layout-unfold-too-few-axes",
        lambda: F.unfold(jnp.ones(4), (2, 2)),
        ValueError,
        r"`unfold`: a 2D block needs",
    ),
    Raises(
        "layout-nufft-plan-and-width",
        lambda: F.nufft(X, F.nufft_plan(LOCS, (4, 4)), width=3.0),
        ValueError,
        r"`nufft`: a plan fixes",
    ),
    Raises(
        "layout-nufft-adjoint-no-grid",
        lambda: F.nufft_adjoint(jnp.ones(3), LOCS),
        TypeError,
        r"`nufft_adjoint`: `grid_size` is needed",
    ),
    Raises("layout-nd-negative-i", lambda: ND("A", -1), ValueError, r"NamedDimension\(i=...\)"),
    Raises("layout-nd-add-str", lambda: ND("A") + "B", TypeError, r"NamedDimension add"),
    Raises("layout-collection-two-names", rename_two_ways, ValueError, r"renamed to both"),
    Raises("layout-cfftn-axis", lambda: utils.cfftn(X, (2,)), ValueError, r"`cfftn\(dim=...\)`"),
    Raises("layout-config-key", lambda: config.using(nope=1), ValueError, r"Invalid config key"),
    Raises(
        "layout-config-type",
        lambda: config.using(shape_inference=1),
        TypeError,
        r"`config.using\(shape_inference=...\)` expects a bool",
    ),
    Raises(
        "layout-batched-option",
        lambda: jl.create_batched_linop(DENSE, SPEC, stream=1),
        TypeError,
        r"`create_batched_linop`: unknown options \['stream'\]",
    ),
    Raises(
        "layout-batched-default-device",
        lambda: jl.create_batched_linop(DENSE, SPEC, default_device="cuda"),
        TypeError,
        r"`create_batched_linop\(default_device=...\)` must be a jax.Device",
    ),
    Raises(
        "layout-broadcast-unsized",
        lambda: jl.BatchSpec({"C": 1}).broadcast_device_matrix(jl.Identity("C")),
        ValueError,
        r"broadcast_device_matrix`: .* does not fix the size of dim 'C'",
    ),
    Raises(
        "layout-mask2idx-traced",
        lambda: jax.jit(F.mask2idx)(np.ones(2, bool)),
        TypeError,
        r"`mask2idx\(mask=...\)`: the mask must be concrete",
    ),
]
