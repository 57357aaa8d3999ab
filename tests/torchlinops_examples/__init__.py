"""Conformance against torchlinops 0.8.3: shared helpers and the one list of known gaps.

`KNOWN_GAPS` maps a case id to the reason it fails today. The conformance tests
(`tests/test_torchlinops_names.py`, `tests/test_torchlinops_docs.py` and the scenario
tests in this directory) mark those cases `xfail(strict=True)`: the suite stays green,
and a case that starts to pass fails until its entry is removed here.

Case ids: `names:<torchlinops path>` (signature binding), `ops:<case>` (both libraries on
the same input), `doctest:<docstring example>`, `readme:<block number>`,
`page:<docs page or tutorial>::<section>`.
"""

from __future__ import annotations

import pytest

KNOWN_GAPS: dict[str, str] = {
    "names:align": "missing",
    "names:BatchSpec": "missing at torchlinops.linops.BatchSpec",
    "names:clamp": "missing",
    "names:clear_nufft_parameter_caches": "missing",
    "names:coalesce": "missing",
    "names:config.log_device_transfers": "value False, torchlinops True",
    "names:conjugate_gradients": "missing at torchlinops.conjugate_gradients",
    "names:create_batched_linop": "missing at torchlinops.linops.create_batched_linop",
    "names:DeviceSpec": "missing",
    "names:Diagonal.from_weight": "missing",
    "names:fftshift_locs": "missing",
    "names:ifftshift_locs": "missing",
    "names:INDENT": "missing",
    "names:iscompatible": "missing",
    "names:isequal": "missing",
    "names:linops.split": "missing names: ResolvedBatchSpec",
    "names:max_shape": "missing",
    "names:NamedDimension": "missing at torchlinops.NamedDimension",
    "names:NamedLinop": "differs: `shape` (position 0) missing; `name` (position 1) missing; `stream` (position 2) missing",  # noqa: E501
    "names:NUFFTBase": "missing",
    "names:polynomial_preconditioner": "missing at torchlinops.polynomial_preconditioner",
    "names:power_method": "missing at torchlinops.power_method",
    "names:psf_sizing": "missing",
    "names:rescale_locs": "missing",
    "names:resolve_wildcards": "missing",
    "names:ResolvedBatchSpec": "missing",
    "names:scale_int": "missing",
    "names:ShapeSpec": "differs: `ishape` required (optional in torchlinops); `oshape` required (optional in torchlinops)",  # noqa: E501
    "names:singular_value_decomposition": "missing at torchlinops.singular_value_decomposition",
    "names:split_linop": "missing at torchlinops.linops.split_linop",
    "names:standardize_shapes": "missing",
    "names:testing": "missing names: BaseNamedLinopTests",
    "names:toeplitz_psf": "missing",
    "names:utils.batch_tqdm": "missing",
    "names:utils.Indenter": "missing",
    "names:utils.setup_console_logger": "missing",
    "doctest:alg.svd.singular_value_decomposition": "solvers: svd returns (U, S, V) and takes torchlinops' arguments (H1)",  # noqa: E501
    "doctest:linops.nufft.nufft.NUFFT.prep_locs": "leaf ops: `NUFFT.prep_locs` missing (H2b)",
    "doctest:linops.nufft.utils.clamp": "leaf ops: `linops.nufft.clamp` missing (H2b)",
    "doctest:nameddim._matching.align": "layout: nameddim helpers missing (H3)",
    "doctest:nameddim._matching.iscompatible": "layout: nameddim helpers missing (H3)",
    "doctest:nameddim._matching.isequal": "layout: nameddim helpers missing (H3)",
    "doctest:nameddim._matching.max_shape": "layout: nameddim helpers missing (H3)",
    "doctest:nameddim._matching.resolve_wildcards": "layout: nameddim helpers missing (H3)",
    "page:tutorials/basics::cg": "solvers: CG returns a CGResult, not x (H1)",
    "ops:SumReduce": "leaf ops: SumReduce.H needs axes_lengths (H2b)",
}


def gap_marks(case_id: str) -> list[pytest.MarkDecorator]:
    """`[xfail(strict=True)]` for a known gap, else no marks."""
    reason = KNOWN_GAPS.get(case_id)
    return [] if reason is None else [pytest.mark.xfail(reason=reason, strict=True)]


def case(case_id: str, *values):
    """A `pytest.param` with id `case_id`, marked xfail when it is a known gap."""
    return pytest.param(*values, id=case_id, marks=gap_marks(case_id))
