"""The store's verbs: `runs`, `export` and `store` (`report` and `serve`: report.cli).

`register(subparsers)` adds them to the `colltune` command; `main()` runs them on
their own (`python -m colltune.store.cli VERB ...`), without the rest of colltune.
"""

from __future__ import annotations

import functools
import json
import sys
import unicodedata

from ..core.args import (
    Parser,
    UsageError,
    add_db,
    add_output,
    count_int,
    report_usage,
    resolve_args,
    writes,
)
from ..core.files import write_atomic
from .store import (
    STATUSES,
    Store,
    StoreError,
    backup,
    default_path,
    integrity_problems,
    run_to_csv,
    run_to_json,
)


def register(sub) -> None:
    _register_runs(sub)
    _register_export(sub)
    _register_store(sub)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="colltune", description="The results store's verbs.")
    register(parser.add_subparsers(dest="verb", metavar="VERB", required=True))
    args = parser.parse_args(argv)
    try:
        resolve_args(args)
    except UsageError as e:
        return report_usage(f"colltune {args.verb}", e)
    return int(args.func(args) or 0)


def _register_runs(sub) -> None:
    p = sub.add_parser("runs", help="list recorded runs",
                       description="List recorded runs, newest first.")
    p.add_argument("--verb", help="only runs of this verb (bench, run, ...)")
    p.add_argument("--status", choices=STATUSES, help="only runs with this status")
    p.add_argument("--limit", type=count_int, default=20, metavar="N",
                   help="at most N runs (default 20; 0 for all)")
    p.add_argument("--json", action="store_true", help="print the runs as a JSON list")
    add_db(p)
    p.set_defaults(func=cmd_runs)


def _register_export(sub) -> None:
    p = sub.add_parser("export", help="export one run's results as CSV or JSON",
                       description="Export a run: CSV with one row per result (aggregates) or, "
                                   "with --samples, one row per raw sample; or the whole run "
                                   "(metadata, results and samples) as JSON.")
    p.add_argument("run", type=int, metavar="RUN", help="the run id (see `colltune runs`)")
    p.add_argument("--format", choices=("csv", "json"),
                   help="default: json if FILE ends in .json, else csv")
    p.add_argument("--samples", action="store_true",
                   help="CSV: one row per raw sample instead of one per result")
    add_output(p, "write here (default: standard output)")
    add_db(p)
    p.set_defaults(func=cmd_export)


def _register_store(sub) -> None:
    p = sub.add_parser("store", help="check or back up the results store",
                       description="Look after the store: `check` reads every page and names "
                                   "what is damaged; `backup` copies it with SQLite's online "
                                   "backup API (safe while runs are being recorded).")
    verbs = p.add_subparsers(dest="store_verb", metavar="ACTION", required=True)
    c = verbs.add_parser("check", help="check the store's integrity (exit 1 if damaged)")
    add_db(c)
    c.set_defaults(func=cmd_store_check)
    b = verbs.add_parser("backup", help="copy the store to a new file")
    add_output(b, "the copy to write (must not exist)")
    b.add_argument("dest", nargs="?", metavar="FILE", default=None,
                   help="the same as -o FILE (the older spelling)")
    writes(b, "dest")
    add_db(b)
    b.set_defaults(func=cmd_store_backup)


def cmd_store_check(args) -> int:
    db = args.db or default_path()
    problems = integrity_problems(db)
    if problems:
        for line in problems:
            print(f"colltune store check: {line}", file=sys.stderr)
        return 1
    with Store.open(db, create=False) as store:
        n = len(store.runs())
    print(f"{db}: ok ({n} runs)")
    return 0


def cmd_store_backup(args) -> int:
    db = args.db or default_path()
    if args.dest and args.output and args.dest != args.output:
        print(f"colltune store backup: two copies given: {args.dest} and -o {args.output}; "
              "give one", file=sys.stderr)
        return 2
    args.dest = args.output or args.dest
    if not args.dest:
        print("colltune store backup: the copy to write is needed: -o FILE", file=sys.stderr)
        return 2
    try:
        n, salvaged = backup(db, args.dest)
    except (StoreError, OSError) as exc:
        print(f"colltune store backup: {exc}", file=sys.stderr)
        return 1
    if salvaged:
        print(f"wrote {args.dest}: {n} runs salvaged from the damaged {db} (runs on damaged "
              "pages are lost)")
    else:
        print(f"wrote {args.dest}: a copy of {db} ({n} runs)")
    return 0


def reports_errors(handler):
    """A store or file problem is the user's to fix: one line, exit status 1."""

    @functools.wraps(handler)
    def wrapper(args) -> int:
        try:
            return handler(args)
        except (StoreError, OSError) as exc:
            print(f"colltune: {exc}", file=sys.stderr)
            return 1

    return wrapper


def open_db(args) -> Store:
    return Store.open(args.db, create=False)


@reports_errors
def cmd_runs(args) -> int:
    with open_db(args) as store:
        runs = store.runs(verb=args.verb, status=args.status, limit=args.limit or None)
    if args.json:
        print(json.dumps(runs, indent=1))
    elif runs:
        print(_runs_table(runs))
    else:
        print("no runs match", file=sys.stderr)
    return 0


def _runs_table(runs: list[dict]) -> str:
    from ..render.html import fmt_duration, fmt_time, mpi_label

    headers = ("ID", "VERB", "STATUS", "START", "DURATION", "MPI", "RANKS", "HOST")
    rows = [(r["id"], r["verb"], r["status"], fmt_time(r["started_at"]),
             fmt_duration(r["duration_s"]), mpi_label(r.get("mpi")),
             "" if r.get("ranks") is None else r["ranks"], r["host"]) for r in runs]
    rows = [tuple(_printable(str(v)) for v in row) for row in rows]
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
                     for row in [headers, *rows])


def _printable(text: str) -> str:
    # A stored value must not drive the terminal (escape sequences, carriage returns).
    return "".join("?" if unicodedata.category(ch) == "Cc" else ch for ch in text)


@reports_errors
def cmd_export(args) -> int:
    with open_db(args) as store:
        run = store.run(args.run)
    fmt = args.format or ("json" if (args.output or "").endswith(".json") else "csv")
    text = run_to_json(run) if fmt == "json" else run_to_csv(run, samples=args.samples)
    if args.output and args.output != "-":
        write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
