"""torchlinops' own documentation runs on jaxlinops with the import changed.

(a) Docstring examples, found at test time in the installed torchlinops package
(`doctest.DocTestFinder`), for the public names of `test_torchlinops_names` and the
modules' own docstrings; examples of private helpers (`_unsqueeze_last`,
`dynamic_slice`, ...) are not API and are not run. Each example runs twice: as
torchlinops ships it, and rewritten by `torch_as_jax.rewrite` (imports to jaxlinops,
`torch` to a jax.numpy shim drawing the same random numbers). The JAX run must print
what the docstring documents, up to array repr (`tensor(...)`/`Array(...)`,
`torch.Size([...])`/`(...)`) and float32 rounding.

(b) The README, read from the installed distribution's metadata: each `python` block
runs in both libraries, and every tensor it leaves in its namespace must match.

Docs pages and tutorials are not installed; `tests/torchlinops_examples/` holds scenario
tests for them. Failing cases are listed in `torchlinops_examples.KNOWN_GAPS`.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.metadata
import re
import types

import numpy as np
import pytest
import test_torchlinops_names as names
from torchlinops_examples import case, torch_as_jax

tl = pytest.importorskip("torchlinops")
torch = pytest.importorskip("torch")

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

_PUBLIC = {id(value): paths for paths, value in names.enumerate_torchlinops().values()}
_MODULES = {"torchlinops", "torchlinops.config", *names.TL_MODULES}


def _jax_value(value):
    """The jaxlinops counterpart of a torchlinops docstring global (`None`: drop it)."""
    if value is torch:
        return torch_as_jax
    if isinstance(value, types.ModuleType) and value.__name__.startswith("torchlinops"):
        return names._resolve(value.__name__)
    if id(value) in _PUBLIC:
        return names._resolve(_PUBLIC[id(value)][0])
    module = getattr(value, "__module__", None) or ""
    return None if module.startswith(("torch", "torchlinops")) else value


def jax_globs(globs: dict) -> dict:
    """A docstring's globals with torchlinops objects swapped for jaxlinops ones."""
    out = {}
    for name, value in globs.items():
        if name.startswith("__"):
            out[name] = value
            continue
        swapped = _jax_value(value)
        if swapped is not None:
            out[name] = swapped
    return out


def _public_docstring(test: doctest.DocTest) -> bool:
    owner = test.name.rsplit(".", 1)
    if test.name in _MODULES:
        return True
    module = importlib.import_module(test.globs["__name__"])
    obj = module
    for part in test.name.removeprefix(module.__name__ + ".").split("."):
        obj = getattr(obj, part, None)
    if obj is None or owner[-1].startswith("_") and owner[-1] != "__init__":
        return False
    parent = obj if not owner[-1] == "__init__" else getattr(module, owner[0].split(".")[-1])
    return id(parent) in _PUBLIC or id(getattr(parent, "__func__", parent)) in _PUBLIC


def docstring_tests() -> list[doctest.DocTest]:
    """The docstring examples of public torchlinops names, by name."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for module in names._walk(tl):
        for test in finder.find(module):
            if test.examples and test.name not in found and _public_docstring(test):
                found[test.name] = test
    return [found[k] for k in sorted(found)]


_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)(?:[-+]\d*\.?\d*(?:e[-+]?\d+)?j)?"


def _normal_form(text: str) -> tuple[list[str], list[str]]:
    """Printed output as (words, numbers), with torch/JAX repr details removed."""
    text = re.sub(r"torch\.Size\(\[(.*?)\]\)", r"(\1)", text, flags=re.S)
    text = re.sub(r",?\s*(dtype|device|grad_fn|requires_grad)=[\w.<>]+", "", text)
    text = re.sub(r"\b(tensor|Array|array)\(", "(", text)
    numbers = re.findall(_NUMBER, text)
    words = re.sub(_NUMBER, "#", text).replace("[", "(").replace("]", ")")
    return words.replace(",)", ")").split(), numbers


def _printed_resolution(number: str) -> float:
    """Half a unit in the last digit `number` prints (torch rounds to 4 decimals):
    `"0.0064"` -> 5e-5, `"1.2500e-03"` -> 5e-8; 0 for complex numbers and integers."""
    match = re.fullmatch(r"[-+]?\d*\.(\d*)(?:[eE]([-+]?\d+))?", number)
    if match is None:
        return 0.0
    return 0.5 * 10.0 ** (int(match.group(2) or 0) - len(match.group(1)))


def _same_numbers(want: list[str], got: list[str]) -> bool:
    """Same count, each within float32 rounding or the precision `want` is printed with."""
    if len(want) != len(got):
        return False
    w, g = np.array([complex(n) for n in want]), np.array([complex(n) for n in got])
    allowed = np.maximum(1e-6 + 1e-4 * np.abs(w), [_printed_resolution(n) for n in want])
    return bool(np.all(np.abs(w - g) <= allowed))


class SameOutput(doctest.OutputChecker):
    """Doctest's check, else the same words and numbers within float32 rounding."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        (wwords, wnums), (gwords, gnums) = _normal_form(want), _normal_form(got)
        return "".join(wwords) == "".join(gwords) and _same_numbers(wnums, gnums)


def run_doctest(test: doctest.DocTest, globs: dict, rewrite) -> list[str]:
    """Run `test`'s examples (sources passed through `rewrite`) and return the failures."""
    examples = [
        doctest.Example(rewrite(e.source), e.want, e.exc_msg, e.lineno, e.indent, e.options)
        for e in test.examples
    ]
    copy = doctest.DocTest(examples, dict(globs), test.name, test.filename, test.lineno, "")
    report: list[str] = []
    runner = doctest.DocTestRunner(checker=SameOutput(), optionflags=FLAGS)
    torch.manual_seed(0)
    runner.run(copy, out=report.append, clear_globs=True)
    return report


DOCTESTS = docstring_tests()


@pytest.mark.parametrize(
    "test",
    [case("doctest:" + t.name.removeprefix("torchlinops."), t) for t in DOCTESTS],
)
def test_docstring_example(test: doctest.DocTest):
    """The example runs on jaxlinops (import changed) and prints what torchlinops prints.

    Examples use `torch` without importing it (as their module does), so both runs get
    it. An example that fails in torchlinops itself is skipped, with its failure.
    """
    torch_failures = run_doctest(test, {**test.globs, "torch": torch}, lambda source: source)
    if torch_failures:
        pytest.skip("fails in torchlinops itself: " + torch_failures[0][-300:])
    jax_failures = run_doctest(
        test, {**jax_globs(test.globs), "torch": torch_as_jax}, torch_as_jax.rewrite
    )
    assert not jax_failures, "".join(jax_failures)[-3000:]


def test_docstring_examples_found():
    """The finder sees the documented examples (not an empty, always-green list)."""
    found = {t.name for t in DOCTESTS}
    assert {
        "torchlinops",
        "torchlinops.linops.dense.Dense.__init__",
        "torchlinops.alg.svd.singular_value_decomposition",
        "torchlinops.config.using",
    } <= found
    assert not any("dynamic_slice" in n or "_unsqueeze_last" in n for n in found)
    assert sum(len(t.examples) for t in DOCTESTS) > 80


def readme_blocks() -> list[str]:
    """The `python` code blocks of the installed torch-named-linops README."""
    metadata = importlib.metadata.metadata("torch-named-linops")
    text = metadata["Description"] or metadata.get_payload()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def run_script(source: str) -> dict:
    """Execute `source` in a fresh namespace (torch seeded) and return the namespace."""
    namespace: dict = {"__name__": "__torchlinops_example__"}
    torch.manual_seed(0)
    exec(compile(source, "<example>", "exec"), namespace)  # noqa: S102 - the example
    return namespace


def assert_same_arrays(torch_ns: dict, jax_ns: dict) -> None:
    """Every tensor the torch run left behind exists in the JAX run with the same values."""
    compared = 0
    for name, value in torch_ns.items():
        if isinstance(value, torch.Tensor) and not name.startswith("_"):
            expected = value.detach().numpy()
            got = np.asarray(jax_ns[name])
            assert got.shape == expected.shape, (name, got.shape, expected.shape)
            tol = 1e-4 if expected.dtype in (np.float32, np.complex64) else 1e-10
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=name)
            compared += 1
    assert compared, "the example left no tensor to compare"


README = readme_blocks()


@pytest.mark.parametrize("block", [case(f"readme:{i}", source) for i, source in enumerate(README)])
def test_readme_block(block: str):
    """A README block runs on jaxlinops (import changed) with torchlinops' results."""
    assert_same_arrays(run_script(block), run_script(torch_as_jax.rewrite(block)))


def test_readme_found():
    assert len(README) >= 2 and "Dense" in README[0]


def test_output_checker_reads_printed_precision():
    """torch prints 4 decimals: a value within half its last digit matches, others do not."""
    check = SameOutput().check_output
    assert check("tensor(0.0064)\n", "Array(0.00637436, dtype=float32)\n", FLAGS)
    assert not check("tensor(0.0064)\n", "Array(0.00631, dtype=float32)\n", FLAGS)
    assert not check("tensor([1.5000, 2.0000])\n", "Array([1.5, 2.001], dtype=float32)\n", FLAGS)
    assert not check("tensor(3)\n", "Array(4, dtype=int32)\n", FLAGS)
