"""Compatibility only: the old module name, for bench/hier_study.py.

Moved to colltune.tune.search. Nothing in the package imports this module
(tests/python/test_imports.py); remove it once those scripts import the new name."""

from .tune.search import grid_sizes

__all__ = ["grid_sizes"]
