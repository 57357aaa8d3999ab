"""The documentation runs and renders: every Python block of the README and of docs/ (after
snippet expansion) executes, every formula converts to MathML, and lists are written so
that MkDocs' Markdown (Python-Markdown) renders them as lists. `tests/test_site.py` builds
the site and loads it in a browser.

A block that cannot run here is fenced as ```console, ```bash or ```text, or is preceded by
`<!-- docs-test: skip REASON -->`. A Python block that only includes a section of a package
module (`--8<-- "jaxlinops/demo.py:recon"`) is run by importing that module, whose own
tests run the code."""

import importlib
import importlib.util
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
INCLUDE = re.compile(
    r'^(?P<indent>[ \t]*)--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"$', re.M
)
SECTION_MARK = re.compile(r"--8<-- \[(start|end):([\w-]+)\]")
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M
)
SKIP = re.compile(r"<!-- docs-test: skip (?P<reason>\S.*?) -->\s*$")
PYTHON = ("python", "py", "python3")
MODULE_INCLUDE = re.compile(r'--8<-- "(?P<path>(?:jaxlinops|interop)/[\w/]+\.py):(?P<section>\w+)"')


def section(path: str, name: str | None) -> str:
    """A file, or the lines between its `--8<-- [start:name]` and `[end:name]` markers, as
    pymdownx.snippets includes them (marker lines dropped)."""
    lines = (ROOT / path).read_text().splitlines()
    if name is not None:
        starts = [i for i, line in enumerate(lines) if f"--8<-- [start:{name}]" in line]
        ends = [i for i, line in enumerate(lines) if f"--8<-- [end:{name}]" in line]
        assert starts and ends, f"{path} has no snippet section {name!r}"
        lines = lines[starts[0] + 1 : ends[0]]
    return "\n".join(line for line in lines if not SECTION_MARK.search(line))


def expand(text: str) -> str:
    """`text` with its snippet includes replaced by what they include, recursively."""

    def include(match: re.Match) -> str:
        body = expand(section(match["path"], match["section"]))
        return "\n".join(match["indent"] + line for line in body.splitlines())

    return INCLUDE.sub(include, text)


def page_text(page: str) -> str:
    return expand((ROOT / page).read_text())


def python_blocks(page: str) -> list[tuple[int, str, str | None]]:
    """(line, code, skip reason or None) of each Python block of `page`, in order. A block
    that includes a package module's section is replaced by an import of that module."""
    raw = (ROOT / page).read_text()
    module_includes = {m["path"] for m in MODULE_INCLUDE.finditer(raw)}
    text = expand(raw)
    blocks = []
    for match in FENCE.finditer(text):
        lang = match["lang"].lower()
        assert lang != "pycon", f"{page}: write ```python blocks, not ```pycon"
        if lang not in PYTHON:
            continue
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        code = "\n".join(row.removeprefix(match["indent"]) for row in match["body"].splitlines())
        sources = [p for p in module_includes if code.strip() and code in (ROOT / p).read_text()]
        if sources:  # an excerpt of a module: importing the module runs it
            module = sources[0].removesuffix(".py").replace("/", ".")
            code = f"import importlib\nimportlib.import_module({module!r})\n"
        blocks.append((line, code, skip["reason"] if skip else None))
    return blocks


def needed_modules(code: str) -> list[str]:
    return [m for m in ("torch", "torchlinops") if re.search(rf"^import {m}\b", code, re.M)]


_RAN: set[tuple[str, ...]] = set()  # block sequences already run (README's, in docs pages)


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, capsys):
    """Every Python block of the page runs, in order, in one namespace (as a reader would
    run them). Blocks that import torch or torchlinops run where those are installed. A
    sequence of blocks already run by an earlier page (the README's sections that docs
    pages include) is not run again."""
    namespace: dict = {"__name__": f"docs_{Path(page).stem}"}
    done: tuple[str, ...] = ()
    for line, code, skip in python_blocks(page):
        if skip:
            continue
        needs = needed_modules(code)
        if any(importlib.util.find_spec(m) is None for m in needs):
            continue
        done += (code,)
        if done in _RAN:
            continue
        for module in needs:  # torchlinops warns about deprecated torch APIs on import
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                importlib.import_module(module)
        try:
            exec(compile(code, f"{page}, block at line {line}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{page}: the Python block at line {line} fails") from error
        _RAN.add(done)
    capsys.readouterr()


def test_readme_example_prints_the_tree_and_solves(capsys):
    """The README's example prints its operator tree, and the solver block converges."""
    namespace: dict = {}
    blocks = [code for _, code, skip in python_blocks("README.md") if not needed_modules(code)]
    for code in blocks[:2]:  # the example, then the solvers
        exec(compile(code, "README.md", "exec"), namespace)
    assert "Chain((Nx, Ny) -> (C, Kx, Ky))" in capsys.readouterr().out
    assert namespace["k"].shape == (4, 8, 8)
    assert bool(namespace["result"].converged) and int(namespace["result"].num_iters) > 0


def test_every_page_has_its_code_tested():
    """Each page's Python blocks are found (the fence pattern does not miss them): a count
    of ```python lines in the expanded text equals the blocks returned."""
    for page in PAGES:
        text = page_text(page)
        fences = len(re.findall(r"^ *```(?:python|py|python3)\b", text, re.M))
        assert fences == len(python_blocks(page)), page


def test_skip_marker_needs_a_reason():
    for page in PAGES:
        for match in re.finditer(r"<!-- docs-test: skip\b.*?-->", page_text(page)):
            assert SKIP.search(match[0]), f"{page}: {match[0]} gives no reason"


@pytest.mark.parametrize("page", PAGES)
def test_nested_lists_are_indented_by_four(page):
    """Python-Markdown nests a list only under 4 spaces (GitHub takes 2): an item indented
    by 1 to 3 spaces is silently flattened into its parent list."""
    text = FENCE.sub("", page_text(page))
    bad = re.findall(r"^ {1,3}(?:[-*+]|\d+\.) .*$", text, re.M)
    assert not bad, f"{page}: indent nested list items by 4 spaces: {bad[:3]}"


# --- rendering with the site's Markdown extensions (the `docs` extra) -----------------


def render_page(page: str) -> str:
    """The page's HTML as MkDocs renders its Markdown (mkdocs.yml's extensions), before
    the MathML hook."""
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx")
    md = markdown.Markdown(
        extensions=[
            "admonition", "pymdownx.arithmatex", "pymdownx.highlight", "pymdownx.superfences",
            "pymdownx.snippets", "tables",
        ],
        extension_configs={
            "pymdownx.arithmatex": {"generic": True},
            "pymdownx.snippets": {"base_path": [str(ROOT)], "check_paths": True},
        },
    )  # fmt: skip
    return md.convert((ROOT / page).read_text())


def mathml_hook():
    pytest.importorskip("latex2mathml")
    spec = importlib.util.spec_from_file_location("docs_mathml", ROOT / "docs/hooks/mathml.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_formula_converts_to_mathml():
    """Each `$...$` and `$$...$$` of the pages becomes MathML, with no LaTeX left over."""
    hook = mathml_hook()
    formulas = 0
    for page in PAGES[1:]:  # the README's formulas are in the docs pages that include it
        html = render_page(page)
        formulas += html.count('class="arithmatex"')
        rendered = hook.render(html, page)
        assert 'class="arithmatex"' not in rendered and "\\(" not in rendered, page
    assert formulas > 50  # the pages hold about 70


def test_mathml_hook_refuses_what_it_cannot_convert():
    hook = mathml_hook()
    assert "<msup>" in hook.to_mathml("(2N)^2")
    with pytest.raises(ValueError, match=r"unconverted in \$\\notacommand x\$"):
        hook.to_mathml(r"\notacommand x")


@pytest.mark.parametrize("page", PAGES)
def test_lists_do_not_run_into_their_paragraph(page):
    """Python-Markdown needs a blank line between a paragraph and a list: without one, the
    items are rendered as text of the paragraph (`<p>... - item`)."""
    for paragraph in re.findall(r"<p>(.*?)</p>", render_page(page), re.S):
        bad = re.search(r"\n\s*(?:[-*+]|\d+\.) .*", paragraph)
        assert not bad, f"{page}: a list inside a paragraph (add a blank line): {bad[0]!r}"


def test_the_sharding_page_runs_on_one_device():
    """The sharding page's examples run as printed in a fresh process that starts with one
    CPU device (a laptop): the page's first block simulates the devices they need."""
    code = "\n".join(code for _, code, skip in python_blocks("docs/sharding.md") if not skip)
    check = "import jax\nassert len(jax.devices()) == 8, jax.devices()\n"
    env = {k: v for k, v in os.environ.items() if k != "JAXLINOPS_TEST_CPU_DEVICES"}
    env["XLA_FLAGS"] = " ".join(
        f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f
    )
    run = subprocess.run(
        [sys.executable, "-c", code + "\n" + check],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.parametrize("page", PAGES)
def test_tables_fit_the_page(page):
    """No table of the page (included results too) has more than 9 columns: wider ones
    hide columns off-screen on the site."""
    rules = [
        line for line in page_text(page).splitlines() if re.match(r"^\|( *:?-+:? *\|)+$", line)
    ]
    wide = [line.count("|") - 1 for line in rules if line.count("|") - 1 > 9]
    assert not wide, f"{page}: tables of {wide} columns (at most 9)"
