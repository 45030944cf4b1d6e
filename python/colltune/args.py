"""Compatibility only: the old module name, for bench/shm_study.py.

Moved to colltune.core.args. Nothing in the package imports this module
(tests/python/test_imports.py); remove it once those scripts import the new name."""

from .core.units import parse_size

__all__ = ["parse_size"]
