"""A small read-only web dashboard over the results store (`colltune serve`).

Pages: the runs list with filters (/), a run's report (/run/ID, drawn on the fly),
two runs compared (/compare?run=A&run=B), and downloads (/run/ID.json, /run/ID.csv).
Each request opens the store anew, so runs recorded meanwhile show up. Nothing is
ever written but what opening the store does (marking dead runs 'incomplete').
"""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..core.files import sigterm_as_interrupt
from ..store.store import STATUSES, RunNotFound, Store, StoreError, run_to_csv, run_to_json
from .report import (
    CSS,
    Markup,
    command_line,
    esc,
    fmt_duration,
    fmt_time,
    mpi_label,
    render_report,
    status_badge,
    table,
)

# No script may run and nothing may load from elsewhere, whatever a stored value holds.
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'")
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}
_NAV = "<nav class='dash'><a href='/'>&larr; all runs</a></nav>"
_DASH_CSS = """
nav.dash { margin: 1em 0 -0.5em; } form.filters { display: flex; flex-wrap: wrap; gap: .6em;
align-items: end; margin: 1em 0; } form.filters label { display: flex; flex-direction: column;
font-size: .9em; } .error { color: #c01c28; } td code { white-space: pre-wrap; }
"""


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status


class DashboardServer(ThreadingHTTPServer):
    # Request threads must not keep the process alive after Ctrl-C.
    daemon_threads = True

    def __init__(self, db_path: str | Path, host: str = "127.0.0.1", port: int = 8050):
        self.db_path = Path(db_path)
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.loopback = _is_loopback(host)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(db_path: str | Path, host: str = "127.0.0.1", port: int = 8050) -> int:
    """Serve until Ctrl-C or SIGTERM; returns the exit status."""
    if not Path(db_path).exists():  # a typo in --db: said once, nothing served
        raise StoreError(f"{db_path}: no colltune store here (nothing recorded yet)")
    try:
        Store.open(db_path, create=False).close()
    except StoreError as exc:  # damaged or locked: every page says so, until it is fixed
        print(f"colltune: {exc}", file=sys.stderr)
    server = DashboardServer(db_path, host, port)
    print(f"colltune dashboard on {server.url} (store {server.db_path}); Ctrl-C to stop",
          flush=True)
    if not server.loopback:
        print("colltune: listening beyond this machine: whoever reaches it can read the store",
              file=sys.stderr)
    try:
        with sigterm_as_interrupt():
            server.serve_forever()
    except KeyboardInterrupt:
        print("colltune dashboard stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "colltune-dashboard"

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def _respond(self, send_body: bool) -> None:
        headers = {}
        try:
            self._check_host()
            content_type, body, headers = self._route()
            status = HTTPStatus.OK
        except HttpError as exc:
            status, content_type, body = exc.status, "text/html", _error_page(exc.status, exc)
        except RunNotFound as exc:
            status, content_type = HTTPStatus.NOT_FOUND, "text/html"
            body = _error_page(status, exc)
        except StoreError as exc:
            # The store, not the dashboard, is at fault (damaged, foreign, locked): the same
            # line as the command line's, as a page.
            status, content_type = HTTPStatus.SERVICE_UNAVAILABLE, "text/html"
            body = _error_page(status, exc, "The store cannot be read")
        except Exception:
            traceback.print_exc()
            status, content_type = HTTPStatus.INTERNAL_SERVER_ERROR, "text/html"
            body = _error_page(status, "internal error (details on the server's terminal)")
        self._send(status, content_type, body.encode(), headers, send_body)

    def _check_host(self) -> None:
        # DNS rebinding: a web page could point its own name at 127.0.0.1 and read the
        # store through the browser. A loopback server answers loopback names only.
        if not self.server.loopback:
            return
        host = (self.headers.get("Host") or "").lower()
        name = host[1:host.find("]")] if host.startswith("[") else host.split(":")[0]
        if name and not _is_loopback(name):
            raise HttpError(HTTPStatus.FORBIDDEN, f"unexpected Host header {host!r}")

    def _route(self) -> tuple[str, str, dict]:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        for pattern, page in _ROUTES:
            match = pattern.fullmatch(url.path)
            if match:
                with Store.open(self.server.db_path, create=False) as store:
                    return page(store, query, *match.groups())
        raise HttpError(HTTPStatus.NOT_FOUND, f"no page {url.path}")

    def _send(self, status: HTTPStatus, content_type: str, body: bytes, headers: dict,
              send_body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)


# -- pages ---------------------------------------------------------------------------------------


def _runs_page(store: Store, query: dict) -> tuple[str, str, dict]:
    filters = {k: (query.get(k) or [""])[0].strip() for k in ("verb", "status", "mpi", "q")}
    limit = _int_param(query, "limit", 200)
    runs = store.runs(verb=filters["verb"] or None, status=filters["status"] or None,
                      mpi=filters["mpi"] or None, text=filters["q"] or None, limit=limit or None)
    body = (f"<h1>colltune runs</h1><p class='meta'>Store <code>{esc(store.path)}</code></p>"
            f"{_filter_form(store, filters, limit)}{_runs_form(runs)}")
    return "text/html", _page("colltune runs", body), {}


def _filter_form(store: Store, filters: dict, limit: int) -> str:
    def select(name: str, options: list[str]) -> str:
        items = "".join(f"<option value='{esc(o)}'{' selected' if o == filters[name] else ''}>"
                        f"{esc(o or 'any')}</option>" for o in ["", *options])
        return f"<label>{name}<select name='{name}'>{items}</select></label>"

    def text(name: str, label: str) -> str:
        return (f"<label>{label}<input type='search' name='{name}' "
                f"value='{esc(filters[name])}'></label>")

    return (f"<form class='filters' method='get' action='/'>"
            f"{select('verb', store.verbs())}{select('status', list(STATUSES))}"
            f"{text('mpi', 'MPI')}{text('q', 'text')}"
            f"<label>limit<input type='number' name='limit' min='0' value='{limit}'></label>"
            f"<button type='submit'>Filter</button><a href='/'>clear</a></form>")


def _runs_form(runs: list[dict]) -> str:
    if not runs:
        return "<p id='no-runs'>No runs match.</p>"
    headers = ["", "run", "verb", "status", "started", "duration", "MPI", "ranks", "host",
               "operations", "command", "downloads"]
    rows = [_run_row(r) for r in runs]
    return (f"<form method='get' action='/compare'><p>{len(runs)} run(s). Tick two and "
            f"<button type='submit' id='compare'>compare</button> them.</p>"
            f"<div id='runs'>{table(headers, rows)}</div></form>")


def _run_row(run: dict) -> list:
    rid = int(run["id"])
    pick = f"<input type='checkbox' name='run' value='{rid}' aria-label='select run {rid}'>"
    return [Markup(pick),
            Markup(f"<a class='report' href='/run/{rid}'>{rid}</a>"), run["verb"],
            status_badge(run),
            fmt_time(run["started_at"]), fmt_duration(run["duration_s"]),
            mpi_label(run.get("mpi")), run.get("ranks"), run["host"], ", ".join(run["ops"]),
            Markup(f"<code>{esc(command_line(run))}</code>"),
            Markup(f"<a href='/run/{rid}.json'>JSON</a> <a href='/run/{rid}.csv'>CSV</a>")]


def _run_report(store: Store, query: dict, run_id: str) -> tuple[str, str, dict]:
    return "text/html", render_report(store, [int(run_id)], nav=_NAV), {}


def _compare(store: Store, query: dict) -> tuple[str, str, dict]:
    picked = list(dict.fromkeys(query.get("run", []) + query.get("a", []) + query.get("b", [])))
    if len(picked) != 2 or not all(p.isdigit() for p in picked):
        raise HttpError(HTTPStatus.BAD_REQUEST, "tick exactly two runs to compare")
    # The earlier run is A and the later B, whichever order the ticks arrived in.
    return "text/html", render_report(store, sorted(int(p) for p in picked), nav=_NAV), {}


def _run_json(store: Store, query: dict, run_id: str) -> tuple[str, str, dict]:
    return "application/json", run_to_json(store.run(int(run_id))), {}


def _run_csv(store: Store, query: dict, run_id: str) -> tuple[str, str, dict]:
    samples = query.get("samples", ["0"])[0] not in ("", "0")
    name = f"colltune-run-{int(run_id)}{'-samples' if samples else ''}.csv"
    return ("text/csv", run_to_csv(store.run(int(run_id)), samples=samples),
            {"Content-Disposition": f'attachment; filename="{name}"'})


_ROUTES = [
    (re.compile(r"/"), _runs_page),
    (re.compile(r"/run/(\d+)"), _run_report),
    (re.compile(r"/run/(\d+)\.json"), _run_json),
    (re.compile(r"/run/(\d+)\.csv"), _run_csv),
    (re.compile(r"/compare"), _compare),
]


def _int_param(query: dict, name: str, default: int) -> int:
    value = (query.get(name) or [""])[0]
    if not value:
        return default
    if not value.isdigit():
        raise HttpError(HTTPStatus.BAD_REQUEST, f"{name} must be a whole number")
    return int(value)


def _error_page(status: HTTPStatus, message, title: str | None = None) -> str:
    heading = title or f"{status.value} {status.phrase}"
    return _page(heading, f"{_NAV}<h1>{esc(heading)}</h1><p class='error'>{esc(message)}</p>")


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(title)}</title><style>{CSS}{_DASH_CSS}</style></head>"
            f"<body>{body}</body></html>")
