"""torchlinops 0.8.3 tests that jaxlinops fails on purpose, and tests not counted.

`DELIBERATE` maps a test id (relative to the suite's `tests/` folder; a key ending in
`::` or `[` covers every test below it) to the modes it applies to (`"jax"`, `"torch"`)
and the reason, which `docs/migration.md` explains with the idiomatic replacement. The
stage reports these as expected failures; one that passes fails the stage.

`OUT_OF_SCOPE` lists tests of torch itself or of hardware this stage does not have:
they are not run and not counted.
"""

from __future__ import annotations

BOTH = ("jax", "torch")

JAX = ("jax",)

ABSTRACT = (
    "`NamedLinop` is an abstract base (equinox's abstract/final pattern): build a concrete "
    "operator, e.g. `jl.ShapeSpec(ishape, oshape)` for a shape-only identity"
)
FROZEN = (
    "operators are immutable pytrees: build a changed copy (`jl.rename`, `eqx.tree_at`) "
    "instead of assigning an attribute"
)
PRIVATE = "a torchlinops private member (adjoint cache, name suffix) with no counterpart"
NO_SUCH_DEVICE = (
    "a device JAX does not have (`cuda:0` on a CPU machine) is refused when the strategy "
    "is built; torch records it and fails only at the transfer"
)

DELIBERATE: dict[str, tuple[tuple[str, ...], str]] = {
    # test_namedlinop.py
    "test_namedlinop.py::test_namedlinop_adjoint": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_split": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_normal": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_chain_normal_split": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_custom_name": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_matrix_vector_mul": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_check_input_shape_valid": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_check_input_shape_incompatible": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_namedlinop_check_input_shape_ellipses": (BOTH, ABSTRACT),
    "test_namedlinop.py::test_linop_function_backward_broadcast": (
        JAX,
        "JAX arrays have no `.backward()`: differentiate with `jax.grad` / `jax.vjp` "
        "(torch mode keeps torch autograd)",
    ),
    "test_namedlinop.py::test_shallow_copy_resets_adjoint_and_shares_params": (BOTH, PRIVATE),
    "test_namedlinop.py::test_double_adjoint_suffix_logic": (BOTH, PRIVATE),
    "test_namedlinop.py::test_namedlinop_check_input_shape_inplace_rename_recomputes": (
        BOTH,
        FROZEN,
    ),
    # test_namedlinop_coverage.py
    "test_namedlinop_coverage.py::test_shape_setter": (BOTH, FROZEN),
    "test_namedlinop_coverage.py::test_sub_shape_mismatch": (
        BOTH,
        "`A - B` with different shapes raises a ValueError naming both shapes, as every "
        "other shape error, not an AssertionError",
    ),
    # test_tiling_strategy.py, test_device_coverage.py
    "test_tiling_strategy.py::TestPlacementAPI::test_distribute_across_devices_1d": (
        BOTH,
        NO_SUCH_DEVICE,
    ),
    "test_tiling_strategy.py::TestPlacementAPI::test_distribute_across_devices_2d_axis0": (
        BOTH,
        NO_SUCH_DEVICE,
    ),
    "test_tiling_strategy.py::TestPlacementAPI::test_distribute_across_devices_2d_axis1": (
        BOTH,
        NO_SUCH_DEVICE,
    ),
    "test_tiling_strategy.py::TestPlacementAPI::test_copy_role": (BOTH, NO_SUCH_DEVICE),
    "test_tiling_strategy.py::TestPlacementAPI::test_fluent_api_chaining": (BOTH, NO_SUCH_DEVICE),
    "test_tiling_strategy.py::TestQueryAPI::test_device_of_multi_device": (BOTH, NO_SUCH_DEVICE),
    "test_tiling_strategy.py::TestQueryAPI::test_tiles_on_multi_device": (BOTH, NO_SUCH_DEVICE),
    "test_tiling_strategy.py::TestQueryAPI::test_tiles_on_empty": (BOTH, NO_SUCH_DEVICE),
    "test_tiling_strategy.py::TestQueryAPI::test_transfers_with_different_roles": (
        BOTH,
        NO_SUCH_DEVICE,
    ),
    "test_device_coverage.py::test_todevice_wrong_input_device_raises": (
        BOTH,
        "calls torch's private `ToDevice._fn` on a tensor; `ToDevice(i, o)(x)` puts `x` on "
        "its output device, so no input can be on the wrong device",
    ),
}

OUT_OF_SCOPE: dict[str, str] = {}
