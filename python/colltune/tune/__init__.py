"""Stage 4, the tuner: search strategies, tuning tables (the C drop-in reads them), their export
to Open MPI and MPICH rule files, and the tuning report section."""


# Compatibility only: `from colltune.tune import Server` in bench/table_bench.py;
# nothing in the package imports it (tests/python/test_imports.py). Remove once they import
# colltune.tune.tune.


def __getattr__(name: str):
    if name == "Server":
        from .tune import Server

        return Server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
