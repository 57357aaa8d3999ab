"""Rewrite the signature table in docs/migration.md from `tests/test_torchlinops_names.py`.

Run `python scripts/migration_table.py` with torchlinops installed; the test
`test_migration_table_is_current` fails until the committed table matches.
"""

import importlib.util
import sys
from pathlib import Path

import jax

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    """Load the test module (as pytest would, with `tests/` on the path) and rewrite."""
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, str(ROOT / "tests"))
    spec = importlib.util.spec_from_file_location(
        "test_torchlinops_names", ROOT / "tests" / "test_torchlinops_names.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    text = module.GUIDE.read_text()
    module.GUIDE.write_text(module.updated_guide(text))
    ok = sum(r.ok for r in module.ROWS)
    print(f"{module.GUIDE}: {ok} of {len(module.ROWS)} torchlinops names bind")


if __name__ == "__main__":
    main()
