"""Compatibility only: the old module name, for bench/hier_study.py and bench/table_bench.py.

Moved to colltune.core.args (byte_size) and colltune.core.units (human_size). Nothing in
the package imports this module (tests/python/test_imports.py); remove it once those scripts
import the new name."""

from .core.args import byte_size as _size
from .core.units import human_size

__all__ = ["_size", "human_size"]
