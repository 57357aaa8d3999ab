"""Operator factories for the contract tests; importing this package registers them all."""

from . import core  # noqa: F401
