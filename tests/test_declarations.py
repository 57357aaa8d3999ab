"""The sharding layer dispatches on what operators declare (`coupling`, `tiling`,
`grid_form`), never on their class: no module of `jaxlinops.sharding` tests whether an
operator is an instance of an operator class (other than the base class and the
sharding layer's own executors), nor whether a class overrides a method. A new operator
then becomes splittable by declaring, without an edit of `sharding/`."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

import jaxlinops as jl
from jaxlinops._core import NamedLinop

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARDING = sorted(ROOT.joinpath("jaxlinops", "sharding").rglob("*.py"))


def module_of(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def class_checks(source: str, namespace: dict) -> list[str]:
    """What `source` tests of an operator's class: `isinstance`/`issubclass` against an
    operator class not of the sharding layer, and `type(x).attr` (an override check).
    Names resolve in `namespace`, or through an assignment in `source` (a local tuple)."""
    tree = ast.parse(source)
    assigned = {
        node.targets[0].id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }

    def classes(node: ast.expr) -> list[object]:
        if isinstance(node, ast.Tuple):
            return [c for e in node.elts for c in classes(e)]
        if isinstance(node, ast.Name) and node.id not in namespace and node.id in assigned:
            return classes(assigned[node.id])
        return [eval(compile(ast.Expression(node), "<check>", "eval"), namespace)]

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "isinstance",
            "issubclass",
        ):
            for c in classes(node.args[1]):
                is_op = isinstance(c, type) and issubclass(c, NamedLinop) and c is not NamedLinop
                if is_op and not c.__module__.startswith("jaxlinops.sharding"):
                    found.append(f"line {node.lineno}: {node.func.id}(..., {c.__name__})")  # type: ignore[union-attr]
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "type"
            and node.attr not in ("__name__", "__qualname__")  # (an error message's)
        ):
            found.append(f"line {node.lineno}: type(...).{node.attr}")
    return found


@pytest.mark.parametrize("path", SHARDING, ids=lambda p: p.name)
def test_sharding_names_no_operator_class(path):
    module = importlib.import_module(module_of(path))
    found = class_checks(path.read_text(), vars(module))
    assert not found, f"{module_of(path)} dispatches on operator classes: {found}"


def test_the_check_sees_a_class_test():
    # a guard for the test itself: the checks the layer had before it read declarations
    namespace = {"FFT": jl.FFT, "Adjoint": jl.Adjoint, "NamedLinop": NamedLinop}
    source = """
def stage(leaf):
    if isinstance(leaf, Adjoint) and isinstance(leaf.linop, FFT):
        return 1
    kinds = (FFT,)
    if isinstance(leaf, kinds) or isinstance(leaf, NamedLinop):
        return 2
    print(type(leaf).__name__)
    return type(leaf).split is not NamedLinop.split
"""
    found = class_checks(source, namespace)
    assert [f.split(": ")[1] for f in found] == [
        "isinstance(..., Adjoint)",
        "isinstance(..., FFT)",
        "isinstance(..., FFT)",
        "type(...).split",
    ]
