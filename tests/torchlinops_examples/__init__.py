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

KNOWN_GAPS: dict[str, str] = {}


def gap_marks(case_id: str) -> list[pytest.MarkDecorator]:
    """`[xfail(strict=True)]` for a known gap, else no marks."""
    reason = KNOWN_GAPS.get(case_id)
    return [] if reason is None else [pytest.mark.xfail(reason=reason, strict=True)]


def case(case_id: str, *values):
    """A `pytest.param` with id `case_id`, marked xfail when it is a known gap."""
    return pytest.param(*values, id=case_id, marks=gap_marks(case_id))
