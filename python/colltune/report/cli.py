"""The report's verbs: `report` (a self-contained HTML file of runs) and `serve` (the
read-only dashboard over the store)."""

from __future__ import annotations

from ..core.args import add_db, add_output, port_type
from ..store.cli import open_db, reports_errors
from ..store.store import StoreError, default_path


def register(sub) -> None:
    _register_report(sub)
    _register_serve(sub)


def _register_report(sub) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report of runs",
                       description="Write one self-contained HTML file (plots, tables, machine "
                                   "and MPI, reproduction commands) for the given runs.")
    p.add_argument("runs", type=int, nargs="*", metavar="RUN",
                   help="run ids (default: the latest complete run with results)")
    add_output(p, "the HTML file to write (default: report.html)", default="report.html")
    add_db(p)
    p.set_defaults(func=cmd_report)


def _register_serve(sub) -> None:
    p = sub.add_parser("serve", help="browse the store in a read-only web dashboard",
                       description="Serve a read-only web dashboard over the store: list and "
                                   "filter runs, open their reports, compare two runs.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port_type, default=8050,
                   help="port, 1 to 65535 (default 8050; 0: any free)")
    add_db(p)
    p.set_defaults(func=cmd_serve)


@reports_errors
def cmd_report(args) -> int:
    # Imported here so that other colltune verbs do not pay for loading matplotlib.
    from .report import write_report

    with open_db(args) as store:
        run_ids = args.runs or [store.latest_run_id()]
        if run_ids == [None]:
            raise StoreError(f"{store.path}: no complete run with results yet; "
                             "name the runs to report (see `colltune runs`)")
        path = write_report(store, run_ids, args.output)
    print(f"wrote {path}")
    return 0


@reports_errors
def cmd_serve(args) -> int:
    from .dashboard import serve

    return serve(args.db or default_path(), host=args.host, port=args.port)
