"""The package's layering stays true: no import cycle, and no module imports a higher layer
(`docs/architecture.md` draws the layers). Every import counts, including those inside
functions."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Lowest first. A module may import its own layer and those below it.
LAYERS = [
    (
        "dims",
        ["jaxlinops._dims", "jaxlinops._default_dims", "jaxlinops.config", "jaxlinops.nameddim"],
    ),
    (
        "arrays",
        [
            "jaxlinops._arrays",
            "jaxlinops._pattern",
            "jaxlinops._progress",
            "jaxlinops._reverse_mode",
        ],
    ),
    ("functional kernels", ["jaxlinops.functional"]),
    ("core: base class and algebra", ["jaxlinops._core"]),
    ("operators", ["jaxlinops.linops"]),
    ("sharding and solvers", ["jaxlinops.sharding", "jaxlinops.alg"]),
    ("MRI estimation and raw data", ["jaxlinops.mri", "jaxlinops.io"]),
    # torchlinops' module paths that re-export across layers (`linops.split` holds
    # `BatchSpec` and `create_batched_linop`) are aliases at the package level
    ("package and applications", ["jaxlinops", "jaxlinops.linops.split"]),
    ("PyTorch bridge", ["interop"]),
]


# Upward imports made when a function is called (never at import), for torchlinops' API,
# with the reason; they are not edges of the import graph.
CALL_TIME_IMPORTS = {
    ("jaxlinops.config", "jaxlinops._core"): "config.inner_not_relevant tests for an Identity",
    ("jaxlinops.linops", "jaxlinops.linops.split"): (
        "torchlinops.linops exports BatchSpec, ResolvedBatchSpec and create_batched_linop "
        "(loaded on first access, by the module's __getattr__)"
    ),
}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path) -> set[str]:
    """The jaxlinops and interop modules `path` imports (relative imports resolved; a name
    imported from a package counts as its submodule when one exists)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                found.add(sub if sub in MODULES else target)
    ours = {m for m in found if m.split(".")[0] in ("jaxlinops", "interop")} - {name}
    return {m for m in ours if (name, m) not in CALL_TIME_IMPORTS}


FILES = sorted([*ROOT.joinpath("jaxlinops").rglob("*.py"), *ROOT.joinpath("interop").rglob("*.py")])
MODULES = {module_name(p) for p in FILES}
GRAPH = {module_name(p): imports(p) for p in FILES}


def layer_of(module: str) -> int:
    """The layer of the longest matching prefix."""
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    assert rank is not None, f"{module} is in no layer: add it to LAYERS"
    return rank


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_upward_import(module):
    upward = sorted(m for m in GRAPH[module] if layer_of(m) > layer_of(module))
    names = [f"{m} ({LAYERS[layer_of(m)][0]})" for m in upward]
    assert not upward, f"{module} ({LAYERS[layer_of(module)][0]}) imports upward: {names}"


def test_no_import_cycle():
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(GRAPH.get(m, ())):
            if state.get(n) == 1:
                cycle = path[path.index(n) :] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)


def test_the_walk_sees_the_core():
    # a guard for the test itself: the graph has the edges it must have
    assert "jaxlinops._core._linop" in GRAPH["jaxlinops._core._chain"]
    assert "jaxlinops._core" in GRAPH["jaxlinops.linops._dense"]
    core = {m for m in MODULES if m.startswith("jaxlinops._core.")}
    assert GRAPH["jaxlinops._core._linop"] & core == {
        "jaxlinops._core._coupling",
        "jaxlinops._core._forms",
    }


def test_the_architecture_page_quotes_the_call_time_imports():
    page = ROOT.joinpath("docs", "architecture.md").read_text()
    quoted = set(re.findall(r"`(jaxlinops[\w.]*)` → `(jaxlinops[\w.]*)`", page))
    assert quoted == set(CALL_TIME_IMPORTS), "docs/architecture.md: the call-time imports"
