"""Every public torchlinops 0.8.3 name exists in jaxlinops and binds a torchlinops call.

Which names are public (the enumeration rule):

1. The modules users import from: `torchlinops`, `torchlinops.linops`, `torchlinops.alg`,
   `torchlinops.functional`, `torchlinops.nameddim`, `torchlinops.utils`.
2. A name is public in such a module M when a submodule S of M (any depth, test and
   script packages skipped) lists it in `__all__` (or, for the few submodules without
   `__all__`, defines it as a class or function) and M re-exports that very object.
   This is what `from torchlinops.M import *` chains give users, without the helpers
   (`torch`, `copy`, `logger`, ...) that leak through star imports of modules without
   `__all__`.
3. `torchlinops.config`: the classes and functions it defines and the flags that
   `config.using(...)` accepts (`ConfigContext.VALID_KEYS`).
4. Module aliases that the documentation and users type (`MODULE_ALIASES`): the torch
   module must exist in jaxlinops at the same path and expose the public names of (2).
5. Alternate constructors (the classmethods of public classes) and the methods the
   documentation calls on classes (`DOC_METHODS`).

One object reachable from several modules (`torchlinops.Dense` is
`torchlinops.linops.Dense`) is one row; it must exist at every one of those paths in
jaxlinops.

How a torchlinops signature binds (`inspect.signature`; a class whose `__init__` only
forwards `*args, **kwargs` is read from the first base class with a real `__init__`):
each positional torchlinops parameter has a jaxlinops parameter of the same name at the
same position that also takes it by keyword; `*args` stays `*args` at the same position;
each keyword-only parameter exists by name; a parameter optional in torchlinops is
optional in jaxlinops. jaxlinops' own parameters are keyword-only or come after every
torchlinops positional parameter, and are optional. torchlinops' `**options` is a note,
not a failure (jaxlinops names its options). Parameters that only mean something for
torch (`TORCH_ONLY`) must be accepted; the table says they are ignored.

Where jaxlinops deliberately differs, `DELIBERATE` says why (one entry per row). The
migration guide's table (docs/migration.md, between the markers) is generated from these
rows; `test_migration_table_is_current` checks it, and `python scripts/migration_table.py`
rewrites it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from torchlinops_examples import case

import jaxlinops

tl = pytest.importorskip("torchlinops")

TL_MODULES = (
    "torchlinops",
    "torchlinops.linops",
    "torchlinops.alg",
    "torchlinops.functional",
    "torchlinops.nameddim",
    "torchlinops.utils",
)

# Submodules users import by path (README, docs pages, tutorials, docstrings) and the
# solver module aliases (`alg.pcg`, ...) that torchlinops' star imports expose.
MODULE_ALIASES = (
    "torchlinops.config",
    "torchlinops.testing",
    "torchlinops.alg.pcg",
    "torchlinops.alg.poly",
    "torchlinops.alg.powermethod",
    "torchlinops.alg.svd",
    "torchlinops.linops.chain",
    "torchlinops.linops.split",
    "torchlinops.linops.nufft",
)

# Methods the documentation calls on a class (besides every classmethod).
DOC_METHODS = {
    "NamedLinop": ("split", "adj_split", "fn", "adj_fn", "normal_fn"),
    "NUFFT": ("prep_locs",),
    "BatchSpec": ("broadcast_device_matrix",),
}

# Parameters that only mean something for torch: accepted and ignored by jaxlinops.
# torch-only parameters that jaxlinops accepts and ignores (others that sound torch-only
# have a meaning here: `tqdm_kwargs` go to tqdm, `disable_tracking` runs every CG
# iteration, `default_device`/`base_device`/`device` name `jax.Device`s, and
# `deterministic_backward` warns where a GPU scatter-add may vary)
TORCH_ONLY = frozenset({"threaded", "num_workers", "out", "_mmap", "stream"})

# torchlinops row name -> why jaxlinops deliberately differs (printed by the guide).
DELIBERATE: dict[str, str] = {
    "utils.MemReporter": "torch memory accounting; JAX arrays report `nbytes`, use "
    "`jax.live_arrays()`",
    "utils.ModuleMemoryMap": "torch module storage map; operators are pytrees "
    "(`jax.tree.leaves(A)`)",
    "utils.cdata": "torch storage pointer; JAX arrays have no shared storage views",
    "utils.same_storage": "torch storage aliasing; JAX arrays are immutable",
    "utils.tensor_memory_span": "torch storage span; JAX arrays are immutable",
    "utils.memory_aware_to": "torch device copy keeping views; use `jax.device_put(A, d)`",
    "utils.memory_aware_deepcopy": "torch deepcopy keeping views; operators are immutable "
    "pytrees, no copy is needed",
    "utils.device_ordinal": "torch device index; use `jax.Device.id`",
    "utils.get_device": "torch device of a tensor; use `x.devices()`",
    "utils.resolve_device": "torch device strings; use `jax.devices()`",
    "utils.to_pytorch": "CuPy/torch bridge; see `interop` (DLPack)",
    "utils.fake_triton": "triton stand-in; jaxlinops uses XLA or Pallas kernels",
    "utils.fake_tl": "triton stand-in; jaxlinops uses XLA or Pallas kernels",
    "parallel_execute": "CUDA-stream scheduling; XLA schedules a jitted program",
    "ToDevice": "torch streams and events; jaxlinops' `ToDevice` moves with "
    "`jax.device_put` and takes the devices only",
    "standardize_shapes": "sets the operators' shapes in place; jaxlinops operators are "
    "immutable: relabel a copy with `jl.rename(A, {old: new})`",
    "config.log_device_transfers": "default False: jaxlinops logs each batched plan and the "
    "bytes every compiled application moves, which floods a log by default; "
    "`config.using(log_device_transfers=True)` turns it on",
}


# Rows whose jaxlinops signature is read from another object, and why. A torchlinops-style
# subclass of `NamedLinop` (static `fn`/`adj_fn`) gets `FunctionLinop` as its base from
# `NamedLinop`'s metaclass, so its `super().__init__(shape, name, stream)` binds that
# `__init__`; `NamedLinop`'s own `__init__` is equinox's, generated per operator class.
def _torch_style_base() -> type:
    class Probe(jaxlinops.NamedLinop):
        @staticmethod
        def fn(linop, x, /):
            return x

        @staticmethod
        def adj_fn(linop, x, /):
            return x

    return Probe.__mro__[1]


SIGNATURE_OF = {"NamedLinop": _torch_style_base}


@dataclass(frozen=True)
class Row:
    """One public torchlinops object: its paths, both signatures and the verdict."""

    name: str  # first path, without the `torchlinops.` prefix
    paths: tuple[str, ...]  # every torchlinops path that reaches it
    kind: str  # class / function / method / module / flag / constant
    torch_sig: str
    jax_sig: str
    status: str
    ok: bool


def _walk(package: types.ModuleType):
    """`package` and its submodules at any depth, skipping tests and scripts."""
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if re.search(r"\.(tests|scripts)(\.|$)|\.bench_|\.benchmark$", info.name):
            continue
        yield importlib.import_module(info.name)


def _own_names(module: types.ModuleType) -> list[str]:
    """`__all__`, or the public classes and functions `module` defines itself."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    ]


def public_names(module_name: str) -> dict[str, object]:
    """Rule 2 of the module docstring: name -> object for a public torchlinops module."""
    module = importlib.import_module(module_name)
    names = {}
    for sub in _walk(module):
        for name in _own_names(sub):
            value = getattr(sub, name, None)
            if value is not None and getattr(module, name, None) is value:
                names[name] = value
    return names


def _config_names() -> dict[str, object]:
    """Rule 3: what `torchlinops.config` defines, and the flags `using` accepts."""
    config = tl.config
    names = {
        name: value
        for name, value in vars(config).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == config.__name__
    }
    names.update({flag: getattr(config, flag) for flag in sorted(config.ConfigContext.VALID_KEYS)})
    return names


def enumerate_torchlinops() -> dict[int, tuple[list[str], object]]:
    """id(object) -> (its torchlinops paths, the object), in a stable order."""
    found: dict[int, tuple[list[str], object]] = {}

    def add(path: str, value: object) -> None:
        key = id(value) if not isinstance(value, (bool, int, str)) else hash(path)
        found.setdefault(key, ([], value))[0].append(path)

    for module_name in TL_MODULES:
        for name, value in sorted(public_names(module_name).items()):
            add(f"{module_name}.{name}", value)
    for name, value in _config_names().items():
        add(f"torchlinops.config.{name}", value)
    for path in MODULE_ALIASES:
        add(path, importlib.import_module(path))
    for path, value in list((p[0], v) for p, v in found.values()):
        if inspect.isclass(value):
            methods = [
                n
                for n, m in vars(value).items()
                if isinstance(m, classmethod) and not n.startswith("_")
            ] + list(DOC_METHODS.get(value.__name__, ()))
            for method in methods:
                add(f"{path}.{method}", getattr(value, method))
    return found


def _resolve(path: str):
    """The jaxlinops object at torchlinops path `path` (`None` when missing)."""
    parts = path.replace("torchlinops", "jaxlinops", 1).split(".")
    value = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        if hasattr(value, part):
            value = getattr(value, part)
            continue
        try:
            value = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return None
    return value


def signature(obj) -> inspect.Signature | None:
    """`inspect.signature`, following `*args, **kwargs` that are forwarded to a constructor.

    A class whose `__init__` is `(*args, **kwargs)` reads the first base class with a real
    `__init__`; a classmethod constructor `from_x(cls, x, *args, **kwargs)` that forwards
    to `cls(...)` takes `x` and then the class's parameters after the first.
    """
    if inspect.ismethod(obj) and inspect.isclass(obj.__self__):
        sig = inspect.signature(obj)
        params = list(sig.parameters.values())
        var = [p for p in params if p.kind is p.VAR_POSITIONAL]
        if var and params[-1].kind is inspect.Parameter.VAR_KEYWORD:
            init = list(signature(obj.__self__).parameters.values())[1:]
            head = params[: params.index(var[0])]
            keyword = [p for p in params if p.kind is p.KEYWORD_ONLY]
            keyword = [p for p in keyword if p.name not in {q.name for q in init}]
            init = [p for p in init if p.kind is not p.VAR_KEYWORD]
            tail = [p for p in init if p.kind is p.KEYWORD_ONLY]
            init = [p for p in init if p.kind is not p.KEYWORD_ONLY]
            return sig.replace(parameters=head + init + keyword + tail)
    if inspect.isclass(obj):
        for klass in obj.__mro__:
            init = vars(klass).get("__init__")
            new = vars(klass).get("__new__")
            if init is None and inspect.isfunction(getattr(new, "__func__", None)):
                sig = inspect.signature(new.__func__)  # a Python `__new__` (a str subclass)
                return sig.replace(parameters=list(sig.parameters.values())[1:])
            if init is None:
                continue
            sig = inspect.signature(init)
            kinds = [p.kind for p in sig.parameters.values()][1:]
            if kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
                params = list(sig.parameters.values())[1:]
                return sig.replace(parameters=params)
        return None
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _show_default(value) -> str:
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


def show(sig: inspect.Signature | None) -> str:
    """A signature without annotations, for the table."""
    if sig is None:
        return "–"
    out = []
    star_done = False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star_done:
            out.append("*")
        if p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            star_done = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.default is not p.empty:
            text += "=" + _show_default(p.default)
        out.append(text)
    return "(" + ", ".join(out) + ")"


POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def binding_problems(torch_sig: inspect.Signature, jax_sig: inspect.Signature) -> list[str]:
    """Why a torchlinops call would not bind the same way in jaxlinops (empty: it does)."""
    tparams = list(torch_sig.parameters.values())
    jparams = list(jax_sig.parameters.values())
    jby_name = {p.name: p for p in jparams}
    problems = []
    n_positional = 0
    for i, p in enumerate(tparams):
        if p.kind in POSITIONAL or p.kind is p.VAR_POSITIONAL:
            n_positional = i + 1
            q = jparams[i] if i < len(jparams) else None
            if i == 0 and q is not None and q.name == "self":  # `Class.method(A, ...)`
                q = q.replace(name=p.name)
            if (
                q is None
                or q.name != p.name
                or (q.kind is p.VAR_POSITIONAL) != (p.kind is p.VAR_POSITIONAL)
            ):
                where = "missing" if p.name not in jby_name else "at another position"
                problems.append(f"`{p.name}` (position {i}) {where}")
                continue
            if p.kind is p.POSITIONAL_OR_KEYWORD and q.kind is not q.POSITIONAL_OR_KEYWORD:
                problems.append(f"`{p.name}` not accepted by keyword")
        elif p.kind is p.KEYWORD_ONLY:
            q = jby_name.get(p.name)
            if q is None or q.kind not in (q.KEYWORD_ONLY, q.POSITIONAL_OR_KEYWORD):
                problems.append(f"keyword `{p.name}` missing")
                continue
        else:  # **options: jaxlinops names its options instead
            continue
        if (
            p.default is not p.empty
            and q.default is q.empty
            and q.kind
            not in (
                q.VAR_POSITIONAL,
                q.VAR_KEYWORD,
            )
        ):
            problems.append(f"`{p.name}` required (optional in torchlinops)")
    torch_names = {p.name for p in tparams}
    for j, q in enumerate(jparams):
        if (
            q.name in torch_names
            or (j == 0 and q.name == "self")
            or q.kind in (q.VAR_POSITIONAL, q.VAR_KEYWORD)
        ):
            continue
        if q.default is q.empty:
            problems.append(f"extra `{q.name}` required")
        elif q.kind in POSITIONAL and j < n_positional:
            problems.append(f"extra `{q.name}` before torchlinops' positional parameters")
    return problems


def _verdict(name: str, tvalue, jvalue, tsig, jsig) -> tuple[str, bool]:
    if jvalue is None:
        return "missing", False
    if isinstance(tvalue, types.ModuleType):
        missing = sorted(n for n in _own_names(tvalue) if not hasattr(jvalue, n))
        if missing:
            return "missing names: " + ", ".join(missing), False
        return "same", True
    if isinstance(tvalue, (bool, int, str)) and not isinstance(tvalue, type):
        if type(jvalue) is not type(tvalue) or jvalue != tvalue:
            return f"value {jvalue!r}, torchlinops {tvalue!r}", False
        return "same", True
    if tsig is None:
        return "same", True
    if jsig is None:
        return "not callable with a signature", False
    problems = binding_problems(tsig, jsig)
    if problems:
        return "differs: " + "; ".join(problems), False
    notes = []
    ignored = sorted(set(tsig.parameters) & TORCH_ONLY)
    if ignored:
        notes.append("torch-only params ignored: " + ", ".join(ignored))
    extras = [
        name
        for name, p in jsig.parameters.items()
        if name not in tsig.parameters
        and name != "self"
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if extras:
        notes.append("extra keyword params: " + ", ".join(extras))
    return ("; ".join(notes) or "same"), True


def _kind(value) -> str:
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if isinstance(value, bool):
        return "flag"
    if callable(value):
        return "method" if "." in getattr(value, "__qualname__", "") else "function"
    return "constant"


def rows() -> list[Row]:
    """Every public torchlinops object with both signatures and its verdict."""
    out = []
    for paths, tvalue in enumerate_torchlinops().values():
        name = paths[0].removeprefix("torchlinops.")
        jvalues = [_resolve(path) for path in paths]
        jvalue = None if any(v is None for v in jvalues) else jvalues[0]
        missing_at = [p for p, v in zip(paths, jvalues, strict=True) if v is None]
        kind = _kind(tvalue)
        callable_ = kind in ("class", "function", "method")
        tsig = signature(tvalue) if callable_ else None
        jsig = signature(jvalue) if callable_ and jvalue is not None else None
        if name in SIGNATURE_OF and jvalue is not None:
            jsig = signature(SIGNATURE_OF[name]())
        status, ok = _verdict(name, tvalue, jvalue, tsig, jsig)
        if missing_at and len(missing_at) < len(paths):
            status = "missing at " + ", ".join(missing_at)
        if name in DELIBERATE:
            status, ok = "deliberate: " + DELIBERATE[name], True
        out.append(Row(name, tuple(paths), kind, show(tsig), show(jsig), status, ok))
    return sorted(out, key=lambda r: r.name.lower())


ROWS = rows()


@pytest.mark.parametrize("row", [case("names:" + r.name, r) for r in ROWS])
def test_name_binds(row: Row):
    """The torchlinops name exists at each of its paths and a torchlinops call binds."""
    assert row.ok, f"{row.name}: {row.status}\n  torch: {row.torch_sig}\n  jax:   {row.jax_sig}"


def test_enumeration_covers_the_documented_api():
    """The rule finds what the docs name (a rule that silently finds nothing fails here)."""
    names = {path for r in ROWS for path in r.paths}
    for path in (
        "torchlinops.linops.Dense",
        "torchlinops.NUFFT",
        "torchlinops.alg.conjugate_gradients",
        "torchlinops.alg.svd",
        "torchlinops.functional.grid",
        "torchlinops.functional.mask2idx",
        "torchlinops.functional.fold",
        "torchlinops.nameddim.NamedDimension",
        "torchlinops.utils.is_adjoint",
        "torchlinops.config.using",
        "torchlinops.config.reduce_identity_in_normal",
        "torchlinops.linops.split",
        "torchlinops.Sampling.from_mask",
    ):
        assert path in names, path
    assert not any(p.endswith((".torch", ".copy", ".logger", ".nn")) for p in names)


def test_binding_rule_detects_differences():
    """The comparison fails on the differences the issue lists (a rule that can fail)."""

    def torch_fft(ndim, batch_shape=None, grid_shapes=None, norm="ortho", centered=False): ...

    def moved(ndim, centered=False, batch_shape=None, grid_shapes=None, norm="ortho"): ...

    def extra_kw(
        ndim, batch_shape=None, grid_shapes=None, norm="ortho", centered=False, *, b=1
    ): ...

    def renamed(linop, specs, device=None): ...

    def torch_batch(linop, batch_specs, default_device=None): ...

    def torch_nufft(*args, **kwargs): ...

    def keyword_nufft(locs, grid_size, **options): ...

    sig = inspect.signature
    assert binding_problems(sig(torch_fft), sig(moved))
    assert not binding_problems(sig(torch_fft), sig(extra_kw))
    assert binding_problems(sig(torch_batch), sig(renamed))
    assert binding_problems(sig(torch_nufft), sig(keyword_nufft))
    assert not binding_problems(sig(torch_fft), sig(torch_fft))


MARK_BEGIN = "<!-- BEGIN signature table (generated by scripts/migration_table.py) -->"
MARK_END = "<!-- END signature table -->"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "migration.md"


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|") + "`" if text != "–" else "–"


def render_table() -> str:
    """The migration guide's generated section: the table and the deliberate differences."""
    ok = sum(r.ok for r in ROWS)
    lines = [
        MARK_BEGIN,
        "",
        f"{len(ROWS)} public torchlinops {tl.__version__} names; {ok} bind in jaxlinops "
        "(same name at the same module path, same parameter names in the same positions).",
        "",
        "| torchlinops | kind | torchlinops parameters | jaxlinops parameters | status |",
        "|---|---|---|---|---|",
    ]
    for r in ROWS:
        also = "".join(f"<br>also `{p.removeprefix('torchlinops.')}`" for p in r.paths[1:])
        status = r.status if r.ok else "**" + r.status + "**"
        lines.append(
            f"| `{r.name}`{also} | {r.kind} | {_cell(r.torch_sig)} | {_cell(r.jax_sig)} "
            f"| {status.replace('|', '/')} |"
        )
    lines += ["", MARK_END]
    return "\n".join(lines)


def updated_guide(text: str) -> str:
    """`text` with the generated section replaced (appended when the markers are absent)."""
    table = render_table()
    if MARK_BEGIN in text:
        head, rest = text.split(MARK_BEGIN, 1)
        return head + table + rest.split(MARK_END, 1)[1]
    return text.rstrip("\n") + "\n\n## Signature table\n\n" + table + "\n"


def test_migration_table_is_current():
    """docs/migration.md holds the table these rows generate (`scripts/migration_table.py`)."""
    text = GUIDE.read_text()
    assert MARK_BEGIN in text and MARK_END in text, "run `python scripts/migration_table.py`"
    assert updated_guide(text) == text, "stale table: run `python scripts/migration_table.py`"
