"""Stage 7, the results store (SQLite): runs, benches and results, and its verbs (`runs`,
`export`, `store`)."""


# Compatibility only: `from colltune.store import write_atomic` in bench/hier_study.py and
# bench/table_bench.py; nothing in the package imports it (tests/python/test_imports.py).
# Remove once they import colltune.core.files.


def __getattr__(name: str):
    if name == "write_atomic":
        from ..core.files import write_atomic

        return write_atomic
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
