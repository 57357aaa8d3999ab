"""The optional dependencies of `jaxlinops.io` (the `io` extra), imported when a reader
or writer runs, so that `import jaxlinops` needs none of them."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, user: str) -> ModuleType:
    """The module `module` (`"h5py"` or `"ismrmrd"`), or an ImportError naming `user`, the
    function that needs it, and the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"jaxlinops.io.{user} needs the `{module}` package: pip install 'jaxlinops[io]'"
        ) from error
