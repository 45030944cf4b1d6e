"""Compatibility only: the old module name, for bench/table_bench.py and bench/shm_study.py.

Moved to colltune.core.mpi. Nothing in the package imports this module
(tests/python/test_imports.py); remove it once those scripts import the new name."""

from .core.mpi import MPIBuild

__all__ = ["MPIBuild"]
