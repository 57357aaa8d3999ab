# Setup: install jaxlinops unless it is already importable (then this cell does nothing).
# Sources, the first that installs wins: a local wheel ($JAXLINOPS_WHEEL, or else the newest
# dist/*.whl here or one directory up), the package index ("jaxlinops[notebooks]"), the git
# repository. A Colab GPU runtime also gets the CUDA extra for its driver (cuda12/cuda13).
# (The source of this cell is notebooks/install_cell.py; tests/test_install_cell.py tests it.)
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

GIT_URL = "git+https://github.com/jaxlinops/jaxlinops"


def cuda_extra(run=subprocess.run):
    """The jaxlinops extra for this machine's NVIDIA driver: "cuda13" when `nvidia-smi`
    reports CUDA >= 13, "cuda12" for an older driver, None without a GPU."""
    if shutil.which("nvidia-smi") is None:
        return None
    report = run(["nvidia-smi"], capture_output=True, text=True, check=False).stdout
    version = re.search(r"CUDA Version:\s*(\d+)", report or "")
    return None if version is None else "cuda13" if int(version[1]) >= 13 else "cuda12"


def install_sources(extras, wheel=None, folders=(Path("dist"), Path("../dist"))):
    """(where from, pip requirement) pairs, in the order to try: the wheel `wheel` alone when
    given (an explicit choice), else the newest local dist/*.whl, the index, the git URL."""
    spec = f"[{','.join(extras)}]"
    if wheel:
        return [(f"the local wheel {wheel} ($JAXLINOPS_WHEEL)", f"{Path(wheel).resolve()}{spec}")]
    wheels = [w for folder in folders for w in folder.glob("jaxlinops-*.whl")]
    newest = sorted(wheels, key=lambda w: w.stat().st_mtime)[-1:]
    return [(f"the local wheel {w}", f"{w.resolve()}{spec}") for w in newest] + [
        ("the package index", f"jaxlinops{spec}"),
        (f"the git repository {GIT_URL}", f"jaxlinops{spec} @ {GIT_URL}"),
    ]


def ensure_jaxlinops(run=subprocess.run, environ=os.environ, modules=sys.modules):
    """Install jaxlinops unless it is importable; return where it came from."""
    if importlib.util.find_spec("jaxlinops") is not None:
        print("jaxlinops is already importable: nothing to install.")
        return "already installed"
    on_colab = "google.colab" in modules or "COLAB_RELEASE_TAG" in environ
    cuda = cuda_extra(run) if on_colab else None
    extras = ["notebooks"] + ([cuda] if cuda else [])
    for where, requirement in install_sources(extras, environ.get("JAXLINOPS_WHEEL")):
        print(f"Installing {requirement!r} from {where} ...")
        pip = [sys.executable, "-m", "pip", "install", "-q", requirement]
        result = run(pip, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            importlib.invalidate_caches()
            print(f"Installed jaxlinops from {where}.")
            if "jax" in modules:
                print("jax was imported before this install: restart the kernel/runtime.")
            return where
        print(f"  failed (pip exit code {result.returncode}):\n{result.stderr[-2000:]}")
    raise RuntimeError(
        "Could not install jaxlinops from any source (pip's errors are above). What to do: "
        "check the network connection; or build a wheel in a checkout "
        "(`python -m build --wheel`), upload it and set JAXLINOPS_WHEEL to its path; or, in "
        "a checkout, `pip install -e '.[notebooks]'` and restart the kernel."
    )


if __name__ == "__main__":  # true in a notebook cell
    ensure_jaxlinops()
