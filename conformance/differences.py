"""torchlinops 0.8.3 tests that jaxlinops fails on purpose, and tests not counted.

`DELIBERATE` maps a test id (relative to the suite's `tests/` folder; a key ending in
`::` or `[` covers every test below it) to the modes it applies to (`"jax"`, `"torch"`)
and the reason, which `docs/migration.md` explains with the idiomatic replacement. The
stage reports these as expected failures; one that passes fails the stage.

`OUT_OF_SCOPE` lists, in the same form, tests of torch itself: they are not run and not
counted. Tests that only run on a GPU are skipped by the suite itself (`-m "not gpu"`, and
its own `skipif`s) and are not counted either.
"""

from __future__ import annotations

BOTH = ("jax", "torch")

JAX = ("jax",)
TORCH = ("torch",)

FROZEN = (
    "operators are immutable pytrees: build a changed copy (`jl.rename`, `eqx.tree_at`) "
    "instead of assigning an attribute"
)
PRIVATE = (
    "a torchlinops private member (`_adjoint`, `_suffix`, `_update_suffix`, `_shape[...]`, "
    "`register_shape`) with no counterpart"
)
NO_IDENTITY_CACHE = (
    "no adjoint or normal cache: `A.H` is rebuilt on each access (`A.H == A.H`, not "
    "`A.H is A.H`); keep a reference, `AH = A.H`"
)
PARAMETER_CACHE = (
    "torchlinops caches NUFFT parameters in `functools.lru_cache`s keyed by tensor identity "
    "(`cache_info`, `__wrapped__`); jaxlinops computes them once per operator, so there is "
    "no cache to inspect: reuse the operator, or `jax.jit`"
)
UNNAMED_POINT_AXES = (
    'every point axis needs a name: `output_shape=("K",)` for points of shape [3, 5, D] '
    "is a ValueError (torchlinops folds the extra axes into `...` silently)"
)
EXACT_PSF = (
    "`toeplitz_psf` of a sampling NUFFT returns its exact kernel (torchlinops raises "
    "NotImplementedError)"
)
MODE_KWARG = (
    '`NUFFT(mode="sampling")` is kept (torchlinops 0.8.3 removed it in favour of '
    "`SamplingNUFFT`, which jaxlinops also has)"
)

DELIBERATE: dict[str, tuple[tuple[str, ...], str]] = {
    # the NUFFT family
    "test_nufft_cache_config.py::test_no_caching_by_default": (BOTH, PARAMETER_CACHE),
    "test_nufft_cache_config.py::test_optin_populates_caches_and_exit_clears": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft_cache_config.py::test_optin_scope_releases_retained_input_tensors": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft_cache_config.py::test_optin_clears_on_exception": (BOTH, PARAMETER_CACHE),
    "test_nufft_cache_config.py::test_turning_flag_off_in_nested_context_clears_at_outer_exit": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft_cache_config.py::test_clear_walks_subclasses_and_new_cached_staticmethods": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft_cache_config.py::test_clear_nufft_parameter_caches_clears_all_families": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft.py::test_locs_cache_shared_by_object_identity": (BOTH, PARAMETER_CACHE),
    "test_nufft.py::test_apod_cache_keyed_by_geometry": (BOTH, PARAMETER_CACHE),
    "test_nufft.py::test_skip_prep_locs_bypasses_cache": (BOTH, PARAMETER_CACHE),
    "test_nufft.py::test_results_independent_of_cache_state": (BOTH, PARAMETER_CACHE),
    "test_nufft.py::test_caches_bypassed_when_flag_off": (BOTH, PARAMETER_CACHE),
    "test_nufft.py::test_toeplitz_psf_skip_prep_locs_matches_normal_nufft": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_sampling_nufft.py::test_sampling_locs_cache_shared_by_object_identity": (
        BOTH,
        PARAMETER_CACHE,
    ),
    "test_nufft.py::test_nufft_class_identity": (BOTH, UNNAMED_POINT_AXES),
    "test_nufft.py::test_options_override_defaults": (BOTH, UNNAMED_POINT_AXES),
    "test_sampling_nufft.py::test_toeplitz_psf_raises_for_sampling_nufft": (BOTH, EXACT_PSF),
    "test_fast_sampling_nufft.py::test_toeplitz_psf_raises_for_fast_sampling_nufft": (
        BOTH,
        EXACT_PSF,
    ),
    "test_nufft.py::test_nufft_mode_kwarg_rejected": (BOTH, MODE_KWARG),
    "test_sampling_nufft.py::test_nufft_class_split_rejects_mode": (BOTH, MODE_KWARG),
    "test_fast_sampling_nufft.py::test_chain_contains_no_centered_fft": (
        BOTH,
        "a NUFFT is one operator, not an indexable Chain: `A.decompose()` gives its steps",
    ),
    "test_sampling.py::test_sampling_register_shape": (BOTH, PRIVATE),
    "test_sampling.py::test_sampling_from_mask": (
        JAX,
        "the test writes into an array in place (`mask[2, 3] = True`); JAX arrays are "
        "immutable: `mask = mask.at[2, 3].set(True)`",
    ),
    "test_advanced.py::test_sense_mri": (
        BOTH,
        "an input must have every axis of `ishape`: a `Diagonal` over `(C, Nx, Ny, Nz)` does "
        "not broadcast an image `(Nx, Ny, Nz)` over coils; apply it to `x[None]`, or write "
        'SENSE as `Dense(maps, "C Nx Ny Nz", "Nx Ny Nz", "C Nx Ny Nz")`',
    ),
    # test_namedlinop.py
    "test_namedlinop.py::test_namedlinop_matrix_vector_mul": (
        BOTH,
        "every operator checks its input, `NamedLinop(NS(ishape, oshape))` too: a 0-d array "
        "is not laid out by `(A, B)` (torchlinops' base class applies no check)",
    ),
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
    # torch mode: torch-facing operators are `TorchNamedLinop` modules
    "test_sampling_nufft.py::test_nufft_class_split_identity": (
        TORCH,
        "the type of a torch-facing operator is `TorchNamedLinop`; `isinstance(A, NUFFT)` "
        "holds, `type(A) is NUFFT` does not",
    ),
    # containers
    "test_accumulate.py::test_create_batched_linop_options_propagate_to_containers": (
        BOTH,
        "a batched operator runs its tiles in one compiled program (`BatchedLinop`), not a "
        "tree of `Add`/`Concat`/`Stack` containers holding the scheduling options",
    ),
    "test_add.py::TestAddValidation::test_must_have_same_oshape": (
        BOTH,
        "`Dense` checks its weight dims when it is built: a weight dim in neither ishape nor "
        "oshape is a ValueError from `Dense`, before the `Add`",
    ),
    "test_caching.py::": (BOTH, NO_IDENTITY_CACHE),
    "test_chain.py::test_chain_size_conflicting_raises": (
        BOTH,
        "monkey-patches `C[0].size` on an operator (immutable)",
    ),
    "test_diagonal.py::test_diagonal_shape_renaming": (BOTH, FROZEN),
    "test_shape_inference.py::test_chain_inference_mri_forward_model": (
        BOTH,
        "Chain shape inference writes the resolved shapes into the children in place; "
        "jaxlinops' Chain holds its own resolved copies (`C.linops`)",
    ),
    "test_concat.py::test_partition_slices_step_raises": (
        BOTH,
        "`partition_slices` supports strided slices (torchlinops raises NotImplementedError)",
    ),
    "test_concat.py::test_concat_split": (
        BOTH,
        "a tile inside one block is a one-block Concat (the same values), not the block "
        "itself: tiles of a split keep one structure, which sharding stacks",
    ),
    "test_convolution.py::TestFFTConvolutionBehavior::test_fourier_kernel_caching": (
        BOTH,
        "no kernel cache on the operator (a mutable dict; `fk1 is fk2`): "
        "`A.fourier_kernel(grid)` is pure, and under `jit` computed once",
    ),
    "test_convolution.py::TestFFTConvolutionBehavior::test_fourier_kernel_different_grid_sizes": (
        BOTH,
        "no kernel cache on the operator: `A.fourier_kernel(grid)` is pure",
    ),
    # test_device_coverage.py
    "test_device_coverage.py::test_todevice_wrong_input_device_raises": (
        BOTH,
        "calls torch's private `ToDevice._fn` on a tensor; `ToDevice(i, o)(x)` puts `x` on "
        "its output device, so no input can be on the wrong device",
    ),
}

# Failures that an open issue will fix (not deliberate): reported as expected failures with
# the issue, so that the stage stays green until the fix lands and then asks for the entry
# to go.
KNOWN_GAPS: dict[str, tuple[tuple[str, ...], str]] = {}

OUT_OF_SCOPE: dict[str, tuple[tuple[str, ...], str]] = {
    "*::test_backprop": (
        JAX,
        "`BaseNamedLinopTests.test_backprop` runs torch autograd through the operator; "
        "jaxlinops' base class checks `jax.linear_transpose` instead",
    ),
    "*::test_input_mutation": (
        JAX,
        "`BaseNamedLinopTests.test_input_mutation` checks that a torch tensor is not written "
        "in place; JAX arrays cannot be",
    ),
}
