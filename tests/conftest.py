"""Test configuration: 8 simulated CPU devices, 64-bit types, strict promotion, and
compiled programs built for a short test run.

This runs at import time, before any JAX computation, as JAX requires.
`JAXLINOPS_TEST_CPU_DEVICES=1` simulates one device instead: what the tests meet on a
one-GPU machine (`scripts/gpu_check.sh`), where `jax.devices()` is that GPU alone.

Compiling dominates the suite's time (its problems are small), so by default:

- XLA's backend compiles at LLVM's `-O0` (`--xla_backend_optimization_level=0`): the same
  HLO programs, the same fusion and memory plans, code generated without LLVM's
  optimisations (about 1.3x faster to compile; running is slower, but these problems are
  tiny). The numerically sensitive tests run again with XLA's defaults for other CPUs
  (`scripts/test.sh --other-cpus`), and the GPU check with XLA's defaults.
- with jax 0.10, XLA's CPU backend generates its kernels with its older emitters
  (`--xla_cpu_use_fusion_emitters=false`, a flag jax 0.11 removed): they compile a small
  program about twice as fast (most of the suite's ~22,000 programs are small), which
  takes the suite from about 18.5 to 11.5-16 minutes on 2 cores (the machine's speed
  varies). The newer emitters, which users get, still run in the stages with XLA's
  defaults (`--other-cpus`) and on Python 3.12 (jax 0.12). `NEEDS_FUSION_EMITTERS` lists
  the tests that the older emitters cannot compile; they run in a child pytest without
  the flag.
- compiled programs persist in `.cache/jax` at the repository root (JAX's persistent
  compilation cache), shared by the pytest workers, the notebooks and the scripts the
  tests start, and by the next run (a rerun of the whole suite takes half the time).

- the in-memory caches are emptied (`jax.clear_caches()`) after the test during which
  the `LOWERINGS_PER_CLEAR`-th program since the last emptying was lowered. Each program
  a process holds makes the next compile slower: with jax 0.10 every cached program keeps
  its own MLIR context alive, and MLIR's per-thread caches grow with the live contexts
  (800 small eager programs took 14.5 s in a fresh process, 25 s once 1,600 were held;
  emptied, 15 s again). With a cold cache on 2 workers `test_contract.py` took 133-143 s
  instead of 167-172 s, though it compiled 7,400 programs instead of 5,500 (the
  persistent cache answers the repeats), and the whole suite 661 s instead of 754 s.

`JAXLINOPS_TEST_XLA_DEFAULTS=1` keeps XLA's defaults, no cache and the in-memory caches
(the GPU check): what a user runs.
These settings reach the subprocesses the tests start through the environment.
"""

import functools
import os
import subprocess
import sys
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]
# programs lowered since JAX's in-memory caches were last emptied (counted only with the
# persistent cache, which answers the programs needed again)
LOWERINGS_PER_CLEAR = 300
_lowered_since_clear = [0]


def _count_lowerings(event: str, duration: float, **kwargs) -> None:
    del duration, kwargs
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _lowered_since_clear[0] += 1


# the XLA_FLAGS the suite was started with (pytest-xdist's workers inherit the ones set here)
USER_XLA_FLAGS = os.environ.setdefault(
    "JAXLINOPS_TEST_USER_XLA_FLAGS", os.environ.get("XLA_FLAGS", "")
)
OLDER_EMITTERS = (
    os.environ.get("JAXLINOPS_TEST_XLA_DEFAULTS") != "1"
    and os.environ.get("JAXLINOPS_TEST_OLDER_EMITTERS") != "0"
    and jax.__version_info__ < (0, 11)
    and "fusion_emitters" not in USER_XLA_FLAGS
)
if os.environ.get("JAXLINOPS_TEST_XLA_DEFAULTS") != "1":
    flags = (
        f"--xla_cpu_use_fusion_emitters=false {USER_XLA_FLAGS}"
        if OLDER_EMITTERS
        else USER_XLA_FLAGS
    )
    os.environ["XLA_FLAGS"] = f"--xla_backend_optimization_level=0 {flags}".strip()
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(ROOT / ".cache" / "jax"))
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    # jax read its environment when it was imported (perhaps by a plugin, before this file)
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.monitoring.register_event_duration_secs_listener(_count_lowerings)
jax.config.update("jax_num_cpu_devices", int(os.environ.get("JAXLINOPS_TEST_CPU_DEVICES", "8")))
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
jax.config.update("jax_numpy_dtype_promotion", "strict")

import helpers  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "devices(n): needs n devices; skipped with fewer (a one-GPU machine)"
    )


# Files whose tests run whole scripts, notebooks or a browser in subprocesses (tens of
# seconds each): they start first, so that they overlap with the many short tests instead
# of keeping one worker busy after the other has finished.
SLOW_FIRST = ("test_benchmarks.py", "test_notebooks.py", "test_site.py", "test_gpu_check.py")


# Tests whose programs jaxlib 0.10's older CPU emitters cannot compile (XLA aborts the
# process): an all-reduce of a complex constant, which a `Zero` operator's partial sums
# across devices are.
NEEDS_FUSION_EMITTERS = {"tests/test_contract.py::test_batched_along_every_dim[zero]"}


def in_child(nodeid: str) -> None:
    """Run the test `nodeid` in a child pytest with XLA's newer emitters."""
    env = {**os.environ, "XLA_FLAGS": USER_XLA_FLAGS, "JAXLINOPS_TEST_OLDER_EMITTERS": "0"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", nodeid]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{nodeid} in a child pytest:\n{done.stdout[-3000:]}"


def pytest_collection_modifyitems(config, items):
    """Tests marked `devices(n)` skip where JAX has fewer than `n` devices; the files of
    `SLOW_FIRST` run first (the order of the others is kept); with the older emitters, the
    tests of `NEEDS_FUSION_EMITTERS` run in a child pytest."""
    items.sort(key=lambda item: Path(str(item.fspath)).name not in SLOW_FIRST)
    have = len(jax.devices())
    for item in items:
        if OLDER_EMITTERS and item.nodeid in NEEDS_FUSION_EMITTERS:
            item.runtest = functools.partial(in_child, item.nodeid)
        mark = item.get_closest_marker("devices")
        if mark is not None and have < mark.args[0]:
            item.add_marker(pytest.mark.skip(reason=f"needs {mark.args[0]} devices, {have} here"))


def pytest_runtest_teardown(item, nextitem):
    """Empty JAX's in-memory caches once `LOWERINGS_PER_CLEAR` programs were lowered since
    the last time (see the module's docstring); never during a test."""
    del item, nextitem
    if _lowered_since_clear[0] >= LOWERINGS_PER_CLEAR:
        _lowered_since_clear[0] = 0
        jax.clear_caches()


@pytest.fixture
def getkey():
    """A fresh PRNG key each call, from a fixed seed per test."""
    return helpers.KeyGen(0)


@pytest.fixture
def on_cpu():
    """JAX arrays made without a device go to the CPU, also on a GPU machine: operators
    built from numpy arrays live where the torch tests' CPU tensors are."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield
