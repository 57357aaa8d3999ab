"""The version of jaxlinops: the one place it is written (pyproject.toml reads it, through
hatch's dynamic version, for the wheel's and sdist's metadata)."""

__version__ = "0.1.0"
