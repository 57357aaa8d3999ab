"""Run torchlinops 0.8.3's own test suite on jaxlinops and print what passes.

    python conformance/run.py [--mode jax|torch|torchlinops] [--sdist FILE] [--keep DIR]
                              [--min-passed N] [-- PYTEST ARGS]

The suite is the `tests/` folder of torchlinops' sdist, fetched from the package index at
run time (`pip download --no-deps --no-binary :all: torch-named-linops==0.8.3`) and never
stored in this repository. Each file is translated (`translate`) and run by pytest with
`conformance/plugin.py`:

- `jax`: `torchlinops` -> `jaxlinops` wherever the name appears, and `torch` -> the
  `torch_jax` module (torch's own functions, with JAX arrays for tensors); the private
  modules `torchlinops.nameddim._nameddim` (`_namedshape`, `_shapes`, `_matching`) are
  `jaxlinops.nameddim`;
- `torch`: `torchlinops` -> `interop.torchlinops` (torch tensors throughout);
- `torchlinops`: no translation, torchlinops itself (the reference count).

No torchlinops call, argument or assertion is changed. Tests in `differences.DELIBERATE`
(and `KNOWN_GAPS`, failures an open issue will fix) are expected failures (an unexpected
pass fails the stage); tests in `differences.OUT_OF_SCOPE` are not run. Prints the counts
per file, `N passed, M failed`, and the deliberate differences; exits non-zero on an
unexpected pass or when fewer than `--min-passed` tests pass.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

from differences import DELIBERATE, KNOWN_GAPS

HERE = Path(__file__).resolve().parent
SPEC = "torch-named-linops==0.8.3"

_TORCH_IMPORTS = (
    (r"^(\s*)import torch\s*$", r"\1import torch_jax as torch"),
    (r"^(\s*)import torch\.(\w+) as (\w+)\s*$", r"\1import torch_jax.\2 as \3"),
    (r"^(\s*)from torch(\.\w+)? import ", r"\1from torch_jax\2 import "),
)
# torchlinops' private modules of `nameddim`, imported by its tests, are its public module
# here: jaxlinops lays out its private modules differently.
_PRIVATE = (
    (r"\btorchlinops\.nameddim\._(nameddim|namedshape|shapes|matching)\b", "torchlinops.nameddim"),
)
REWRITES = {
    "jax": (*_PRIVATE, (r"\btorchlinops\b", "jaxlinops"), *_TORCH_IMPORTS),
    "torch": (*_PRIVATE, (r"\btorchlinops\b", "interop.torchlinops")),
    "torchlinops": (),
}

CONFTEST = {
    "jax": """import jax
import torch_jax

jax.config.update("jax_enable_x64", True)
torch_jax.install_tensor_methods()
""",
    "torch": """import jax

jax.config.update("jax_enable_x64", True)
""",
    "torchlinops": "",
}
MARKERS = """[pytest]
markers =
    slow: slow
    big: big
    gpu: gpu
    benchmark: benchmark
"""


def translate(source: str, mode: str) -> str:
    """`source` with its imports pointed at the library under test (see the module doc)."""
    for pattern, replacement in REWRITES[mode]:
        source = re.sub(pattern, replacement, source, flags=re.MULTILINE)
    return source


def fetch_sdist(into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*cmd, SPEC, "-d", str(into)], check=True)
    return next(into.glob("torch_named_linops-*.tar.gz"))


def extract_tests(sdist: Path, mode: str, work: Path) -> None:
    """The sdist's `tests/*.py`, translated, in `work/tests`, with a conftest for `mode`."""
    tests = work / "tests"
    shutil.rmtree(work, ignore_errors=True)
    tests.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) == 3 and parts[1] == "tests" and parts[2].endswith(".py"):
                source = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
                (tests / parts[2]).write_text(translate(source, mode))
    (work / "conftest.py").write_text(CONFTEST[mode])
    (work / "pytest.ini").write_text(MARKERS)


def run(mode: str, work: Path, workers: int, pytest_args: list[str]) -> dict[str, str]:
    report = work / "report.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(work), os.environ.get("PYTHONPATH", "")]),
        "CONFORMANCE_MODE": mode,
        "CONFORMANCE_REPORT": str(report),
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "plugin", "-p", "no:cacheprovider"]
    cmd += ["-m", "not slow and not benchmark and not gpu", "--rootdir", str(work)]
    cmd += ["-n", str(workers)] if workers > 1 else []
    paths = [] if any(a.startswith("tests/") for a in pytest_args) else ["tests"]
    subprocess.run([*cmd, *paths, *pytest_args], cwd=work, env=env, check=False)
    return json.loads(report.read_text())


def reference_ids(sdist: Path, mode: str, work: Path) -> list[str]:
    """The ids of the tests torchlinops' suite collects, with the deselections of `mode`:
    the tests counted. One missing from a translated run (its file failed to import)
    counts as an error; one the translated run adds (a test of jaxlinops' own base test
    class) is not counted."""
    extract_tests(sdist, "torchlinops", work)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(work)]),
        "CONFORMANCE_MODE": mode,
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "--co", "-p", "plugin", "-p", "no:cacheprovider"]
    cmd += ["-m", "not slow and not benchmark and not gpu", "--rootdir", str(work), "tests"]
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    return [line.removeprefix("tests/") for line in out.stdout.splitlines() if "::" in line]


def summarise(outcomes: dict[str, str], mode: str) -> tuple[int, int, int]:
    per_file: dict[str, Counter] = {}
    for nodeid, outcome in outcomes.items():
        per_file.setdefault(nodeid.split("::")[0], Counter())[outcome] += 1
    kinds = ("passed", "failed", "error", "xfailed", "xpassed", "skipped")
    print(f"\nconformance ({mode} mode): torchlinops 0.8.3's tests/")
    print(f"| file | {' | '.join(kinds)} |\n|---|{'---|' * len(kinds)}")
    total: Counter = Counter()
    for name in sorted(per_file):
        total += per_file[name]
        print(f"| {name} | {' | '.join(str(per_file[name][k]) for k in kinds)} |")
    print(f"| all | {' | '.join(str(total[k]) for k in kinds)} |")
    counted = sum(total[k] for k in kinds if k != "skipped")
    failed = total["failed"] + total["error"] + total["xfailed"] + total["xpassed"]
    share = 100 * total["passed"] / max(counted, 1)
    print(
        f"\n{total['passed']} passed, {failed} failed ({total['xfailed']} of them deliberate)"
        f" of {counted} counted: {share:.1f} %"
    )
    for title, table in (("deliberate differences", DELIBERATE), ("known gaps", KNOWN_GAPS)):
        listed = [(k, r) for k, (modes, r) in table.items() if mode in modes]
        if listed:
            print(f"\n{title}:")
            for key, reason in listed:
                print(f"- {key}: {reason}")
    return total["passed"], failed, total["xpassed"]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mode", choices=sorted(REWRITES), default="jax")
    parser.add_argument("--sdist", type=Path, help="torchlinops' sdist (else downloaded)")
    parser.add_argument("--keep", type=Path, help="translate and run in this folder, kept")
    parser.add_argument("--min-passed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp) / "suite"
        sdist = args.sdist or fetch_sdist(Path(tmp))
        extract_tests(sdist, args.mode, work)
        outcomes = run(args.mode, work, args.workers, args.pytest_args)
        if not args.pytest_args:  # the whole suite: what did not even import is an error
            counted = reference_ids(sdist, args.mode, Path(tmp) / "reference")
            outcomes = {nodeid: outcomes.get(nodeid, "error") for nodeid in counted}
        passed, _, xpassed = summarise(outcomes, args.mode)
    if xpassed:
        print(
            f"conformance: error: {xpassed} deliberate difference(s) passed; update "
            "conformance/differences.py",
            file=sys.stderr,
        )
    if passed < args.min_passed:
        print(
            f"conformance: error: {passed} passed, fewer than --min-passed {args.min_passed}",
            file=sys.stderr,
        )
    return 1 if xpassed or passed < args.min_passed else 0


if __name__ == "__main__":
    sys.exit(main())
