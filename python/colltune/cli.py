"""The `colltune` command: one verb per capability.

Each verb lives with its stage (docs/ARCHITECTURE.md): the stage's module exposes
`register(subparsers)` to add its parser(s) with `set_defaults(func=handler)`; a handler
takes the parsed arguments and returns the process exit status. This module only
dispatches.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, run
from .app import app
from .bench import bench
from .core import testbed
from .core.args import Parser, UsageError, report_usage, resolve_args
from .core.files import Terminated, sigterm_as_interrupt
from .dyn import cholesky
from .model import model, splittree, validate
from .monitor import monitor
from .nbc import overlap, tune_nbc
from .p2p import p2p
from .probe import probe
from .report import cli as report_cli
from .report import suite
from .store import cli as store_cli
from .store.store import StoreError
from .tune import export, tune, verify


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="colltune",
        description="MPI collectives measured, modelled, tuned and monitored.",
    )
    parser.add_argument("--version", action="version", version=f"colltune {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    bench.register(sub)
    run.register(sub)
    export.register(sub)
    probe.register(sub)
    p2p.register(sub)
    model.register(sub)
    splittree.register(sub)
    validate.register(sub)
    overlap.register(sub)
    tune.register(sub)
    tune_nbc.register(sub)
    verify.register(sub)
    monitor.register(sub)
    suite.register(sub)
    store_cli.register(sub)
    report_cli.register(sub)
    cholesky.register(sub)
    app.register(sub)
    testbed.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Into a file or a pipe (`make run > log 2>&1`), stdout's lines keep their place among
    # stderr's (progress, warnings) instead of arriving in blocks.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # --db FILE on any verb: the store every part of the verb opens (Store.open's default,
    # and the children it launches) is that file, as with COLLTUNE_DB=FILE; restored after,
    # for callers that run several commands in one process (the tests).
    saved_db = os.environ.get("COLLTUNE_DB")
    try:
        # Arguments that can be known wrong (an output path that cannot be written, no
        # table) end the command here, before anything is launched or recorded.
        resolve_args(args)
        if getattr(args, "db", None):
            os.environ["COLLTUNE_DB"] = str(args.db)
        # SIGTERM (a batch system's time limit) unwinds like Ctrl-C: runs end as
        # 'interrupted' with what they had measured.
        with sigterm_as_interrupt():
            return int(args.func(args) or 0)
    except BrokenPipeError:  # `colltune algorithms | head`: the reader has what it wanted
        # Python would print the same error again on flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except UsageError as e:  # a bad argument found before anything ran or was recorded
        verb = " ".join(filter(None, (args.verb, getattr(args, "store_verb", None))))
        return report_usage(f"colltune {verb}", e)
    except StoreError as e:  # a damaged, foreign or locked store: said once, never written
        print(f"colltune {args.verb}: {e}", file=sys.stderr)
        return 1
    except Terminated:
        print("\ncolltune: terminated (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("\ncolltune: interrupted", file=sys.stderr)
        return 130
    finally:
        if saved_db is None:
            os.environ.pop("COLLTUNE_DB", None)
        else:
            os.environ["COLLTUNE_DB"] = saved_db


if __name__ == "__main__":
    sys.exit(main())
