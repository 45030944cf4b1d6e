"""Compatibility only: the old module name, for bench/table_bench.py.

Moved to colltune.tune.table. Nothing in the package imports this module
(tests/python/test_imports.py); remove it once those scripts import the new name."""

from .tune.table import TableFileError, load, lookup

__all__ = ["TableFileError", "load", "lookup"]
