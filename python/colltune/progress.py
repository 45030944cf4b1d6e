"""Compatibility only: the old module name, for bench/table_bench.py.

Moved to colltune.core.progress. Nothing in the package imports this module
(tests/python/test_imports.py); remove it once those scripts import the new name."""

from .core.progress import ProgressBar

__all__ = ["ProgressBar"]
