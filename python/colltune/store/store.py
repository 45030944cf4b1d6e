"""The results store: one SQLite file holding every run and its benchmark results.

A run is recorded the moment it starts (status 'running') and each benchmark
document is added in its own transaction, so a run cut short keeps everything
measured before the cut. Runs whose process died without finishing are marked
'incomplete' the next time any process opens the store. docs/STORE.md has the
user-facing description of the schema.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import secrets
import socket
import sqlite3
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from .. import __version__
from ..core.files import Terminated, sigterm_as_interrupt
from ..core.machine import boot_id, boot_time, fingerprint, process_alive, process_start_time

SCHEMA_VERSION = 2
# PRAGMA application_id marks the file as ours ("CoLT"); a SQLite file without it is foreign.
APPLICATION_ID = 0x436F4C54
BENCH_SCHEMA = "colltune-bench/1"
RUN_EXPORT_SCHEMA = "colltune-run/1"
STATUSES = ("running", "complete", "failed", "interrupted", "incomplete")

_SQLITE_MAGIC = b"SQLite format 3\x00"
_BENCH_COLUMNS = ("op", "ranks", "datatype", "binding", "iterations", "warmup", "root", "command")
_RESULT_COLUMNS = ("algorithm", "segsize", "size", "count", "iterations",
                   "avg_us", "min_us", "max_us", "median_us")
_META_KEYS = ("mpi", "ranks", "binding", "machine")
_JSON_RUN_COLUMNS = ("argv", "mpi", "machine")

_SCHEMA = (
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        verb TEXT NOT NULL,
        argv TEXT NOT NULL,
        status TEXT NOT NULL
            CHECK (status IN ('running', 'complete', 'failed', 'interrupted', 'incomplete')),
        reason TEXT,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        boot_id TEXT,
        started_at REAL NOT NULL,
        finished_at REAL,
        colltune_version TEXT NOT NULL,
        git_revision TEXT,
        mpi TEXT,
        ranks INTEGER,
        binding TEXT,
        machine TEXT NOT NULL)""",
    "CREATE INDEX runs_status ON runs (status)",
    """CREATE TABLE benches (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        recorded_at REAL NOT NULL,
        op TEXT NOT NULL,
        ranks INTEGER,
        datatype TEXT,
        mpi TEXT,
        binding TEXT,
        iterations INTEGER,
        warmup INTEGER,
        root INTEGER,
        command TEXT,
        extra TEXT NOT NULL DEFAULT '{}',
        UNIQUE (run_id, seq))""",
    """CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        bench_id INTEGER NOT NULL REFERENCES benches (id) ON DELETE CASCADE,
        algorithm TEXT NOT NULL,
        segsize INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL,
        count INTEGER,
        iterations INTEGER,
        avg_us REAL,
        min_us REAL,
        max_us REAL,
        median_us REAL,
        check_result TEXT,
        samples BLOB NOT NULL,
        extra TEXT NOT NULL DEFAULT '{}')""",
    "CREATE INDEX results_bench ON results (bench_id)",
)


class StoreError(Exception):
    """The store cannot be used: missing, corrupt, foreign or too new a file, or a bad request."""


ADVICE = ("check it with `colltune store check`, keep a copy with `colltune store backup`, "
          "then move it aside (a new store is made in its place) or set COLLTUNE_DB")
# A store this small is checked page by page (PRAGMA quick_check) each time it opens.
QUICK_CHECK_MAX_BYTES = 64 << 20
# How long a write waits for another process that holds the store's write lock.
LOCK_TIMEOUT_S = 10.0


class RunNotFound(StoreError):
    """No run with the requested id."""


def default_path() -> Path:
    """$COLLTUNE_DB, else $XDG_DATA_HOME/colltune/colltune.db (~/.local/share by default)."""
    if os.environ.get("COLLTUNE_DB"):
        return Path(os.environ["COLLTUNE_DB"]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "colltune" / "colltune.db"


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (Ctrl-C included)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        # A signal can land just after BEGIN or just before COMMIT: roll back what is open.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class Store:
    """An open results store. Use `Store.open()`; close it, or use it as a context manager."""

    def __init__(self, path: Path, conn: sqlite3.Connection):
        self.path = path
        self._conn = conn

    @classmethod
    def open(cls, path: str | os.PathLike | None = None, *, create: bool = True) -> Store:
        """Open (and with `create`, create) the store; mark runs whose process died.

        `create` means the caller will record runs: a read-only file is refused then; the
        reading verbs (create=False) open it read-only. A damaged or foreign file is refused
        (StoreError, one line with the path and the advice) and never written into."""
        db = Path(path).expanduser() if path is not None else default_path()
        _check_file(db, create)
        readonly = db.exists() and not _writable(db)
        if readonly and create:
            raise StoreError(f"{db}: the store is read-only (mode {db.stat().st_mode & 0o777:o}): "
                             "cannot record runs in it; make it writable (chmod u+w), set "
                             "COLLTUNE_DB to another file, or pass --no-record")
        timeout = float(os.environ.get("COLLTUNE_DB_TIMEOUT") or LOCK_TIMEOUT_S)
        try:
            if readonly:
                conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True,
                                       timeout=timeout, isolation_level=None)
            else:
                conn = sqlite3.connect(db, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{db}: cannot open: {exc}") from exc
        conn.row_factory = sqlite3.Row
        store = cls(db, conn)
        try:
            _prepare(conn, db, readonly)
            _quick_check(conn, db)
            if not readonly:
                store._mark_dead_runs()
        except sqlite3.OperationalError as exc:
            conn.close()
            raise _store_error(db, exc) from exc
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{db}: damaged, cannot use it as a colltune store ({exc}); "
                             f"{ADVICE}") from exc
        except BaseException:
            conn.close()
            raise
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def _tx(self):
        try:
            with _transaction(self._conn) as c:
                yield c
        except sqlite3.OperationalError as exc:
            raise _store_error(self.path, exc) from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: damaged, nothing more is written into it ({exc}); "
                             f"{ADVICE}") from exc

    # -- writing -------------------------------------------------------------------

    def begin_run(self, verb: str, argv: list[str], *, mpi: dict | None = None,
                  ranks: int | None = None, binding: str | None = None,
                  machine: dict | None = None) -> RunHandle:
        """Record a run as 'running' now and return the handle that fills and finishes it."""
        record = {
            "verb": verb, "argv": _dumps(list(argv)), "status": "running",
            "pid": os.getpid(), "host": socket.gethostname(), "boot_id": boot_id(),
            "started_at": time.time(), "colltune_version": __version__,
            "git_revision": _source_revision(), "mpi": _json_or_none(mpi), "ranks": ranks,
            "binding": binding,
            "machine": _dumps(fingerprint() if machine is None else machine),
        }
        columns = ", ".join(record)
        marks = ", ".join("?" * len(record))
        with self._tx() as c:
            cur = c.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})",
                            tuple(record.values()))
        return RunHandle(self, cur.lastrowid)

    def resumable_run(self, verb: str, argv: list[str]) -> int | None:
        """The newest run of the same command line that did not complete (interrupted,
        failed or incomplete), to be resumed as the same run; None if there is none."""
        row = self._conn.execute(
            "SELECT id, status FROM runs WHERE verb = ? AND argv = ? AND host = ? "
            "ORDER BY id DESC LIMIT 1", (verb, _dumps(list(argv)), socket.gethostname()),
        ).fetchone()
        if row is None or row["status"] not in ("interrupted", "failed", "incomplete"):
            return None
        return row["id"]

    def resume_run(self, run_id: int) -> RunHandle:
        """Make a run that stopped 'running' again, in this process: it goes on where it
        stopped and keeps its id, start time and benches."""
        with self._tx() as c:
            old = c.execute("SELECT status, reason FROM runs WHERE id = ?", (run_id,)).fetchone()
            if old is None:
                raise RunNotFound(f"no run {run_id} in {self.path}")
            c.execute("UPDATE runs SET status = 'running', pid = ?, boot_id = ?, "
                      "finished_at = NULL, reason = ? WHERE id = ?",
                      (os.getpid(), boot_id(), f"resumed after: {old['status']}"
                       + (f" ({old['reason']})" if old["reason"] else ""), run_id))
        return RunHandle(self, run_id)

    def _mark_dead_runs(self) -> None:
        """Runs left 'running' by a process that died (SIGKILL, crash, reboot) -> 'incomplete'.
        The reason keeps the run's last progress note: where it stopped."""
        rows = self._conn.execute(
            "SELECT id, pid, boot_id, started_at, reason FROM runs "
            "WHERE status = 'running' AND host = ?", (socket.gethostname(),)).fetchall()
        dead = [(reason + (f"; stopped at: {row['reason']}" if row["reason"] else ""),
                 row["id"]) for row in rows if (reason := _death_reason(row))]
        if dead:
            with self._tx() as c:
                c.executemany("UPDATE runs SET status = 'incomplete', reason = ? "
                              "WHERE id = ? AND status = 'running'", dead)

    # -- reading -------------------------------------------------------------------

    def runs(self, *, verb: str | None = None, status: str | None = None,
             mpi: str | None = None, text: str | None = None,
             limit: int | None = None) -> list[dict]:
        """Run summaries, newest first. `mpi` and `text` match substrings, ignoring case."""
        where, params = [], []
        if verb:
            where.append("r.verb = ?")
            params.append(verb)
        if status:
            where.append("r.status = ?")
            params.append(status)
        if mpi:
            where.append("(coalesce(json_extract(r.mpi, '$.implementation'), '') || ' ' || "
                         "coalesce(json_extract(r.mpi, '$.version'), '')) LIKE ? ESCAPE '\\'")
            params.append(_like(mpi))
        if text:
            where.append("(r.verb || ' ' || r.argv || ' ' || r.host || ' ' || "
                         "coalesce(r.mpi, '') || ' ' || coalesce(r.reason, '') || ' ' || "
                         "coalesce(r.git_revision, '')) LIKE ? ESCAPE '\\'")
            params.append(_like(text))
        sql = _RUN_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY r.id DESC"
        if limit:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [_run_dict(row) for row in self._conn.execute(sql, params)]

    def run(self, run_id: int, *, samples: bool = True) -> dict:
        """One run: its summary plus 'benches', each a bench document with raw samples."""
        row = self._conn.execute(_RUN_SELECT + " WHERE r.id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id} in {self.path}")
        run = _run_dict(row)
        run["benches"] = [self._bench(b, samples) for b in self._conn.execute(
            "SELECT * FROM benches WHERE run_id = ? ORDER BY seq", (run_id,))]
        return run

    def latest_run_id(self, status: str = "complete") -> int | None:
        """The newest run with this status that has benchmark results."""
        row = self._conn.execute(
            "SELECT max(r.id) FROM runs r WHERE r.status = ? AND "
            "EXISTS (SELECT 1 FROM benches b WHERE b.run_id = r.id)", (status,)).fetchone()
        return row[0]

    def verbs(self) -> list[str]:
        """The distinct verbs of the recorded runs."""
        return [r[0] for r in self._conn.execute("SELECT DISTINCT verb FROM runs ORDER BY verb")]

    def _bench(self, row: sqlite3.Row, samples: bool) -> dict:
        doc = {"schema": BENCH_SCHEMA, **json.loads(row["extra"]),
               **{k: row[k] for k in _BENCH_COLUMNS},
               "mpi": _json_or_none_load(row["mpi"]),
               "seq": row["seq"], "recorded_at": row["recorded_at"]}
        doc["results"] = [_result_dict(r, samples) for r in self._conn.execute(
            "SELECT * FROM results WHERE bench_id = ? ORDER BY id", (row["id"],))]
        return doc


class RunHandle:
    """A run being recorded. As a context manager it finishes the run however the block ends."""

    def __init__(self, store: Store, run_id: int):
        self.store = store
        self.id = run_id
        self._finished = False
        self._signals = contextlib.ExitStack()

    def add_bench(self, bench: dict) -> None:
        """Store one benchmark document: aggregates and raw samples in one transaction."""
        self._check_unfinished()
        _check_bench(bench)
        with self.store._tx() as c:
            seq = c.execute("SELECT coalesce(max(seq), 0) + 1 FROM benches WHERE run_id = ?",
                            (self.id,)).fetchone()[0]
            bench_id = _insert_bench(c, self.id, seq, bench)
            c.executemany(
                f"INSERT INTO results (bench_id, {', '.join(_RESULT_COLUMNS)}, check_result, "
                f"samples, extra) VALUES ({', '.join('?' * (len(_RESULT_COLUMNS) + 4))})",
                [_result_row(bench_id, r) for r in bench["results"]])
            # The run takes the MPI, ranks and binding of its benches unless it was told them.
            c.execute("UPDATE runs SET mpi = coalesce(mpi, ?), ranks = coalesce(ranks, ?), "
                      "binding = coalesce(binding, ?) WHERE id = ?",
                      (_json_or_none(bench.get("mpi")), bench.get("ranks"),
                       bench.get("binding"), self.id))

    def open_bench(self, header: dict) -> BenchWriter:
        """Start a benchmark document whose results arrive one by one (a bench streamed as
        each size finishes): the header now, `add_results` as they come, each in its own
        transaction, so a kill of anything keeps every result already added."""
        self._check_unfinished()
        _check_bench({**header, "results": []})
        with self.store._tx() as c:
            seq = c.execute("SELECT coalesce(max(seq), 0) + 1 FROM benches WHERE run_id = ?",
                            (self.id,)).fetchone()[0]
            bench_id = _insert_bench(c, self.id, seq, header)
            c.execute("UPDATE runs SET mpi = coalesce(mpi, ?), ranks = coalesce(ranks, ?), "
                      "binding = coalesce(binding, ?) WHERE id = ?",
                      (_json_or_none(header.get("mpi")), header.get("ranks"),
                       header.get("binding"), self.id))
        return BenchWriter(self, bench_id)

    def set_meta(self, **kw) -> None:
        """Set run metadata learned after the start: mpi, ranks, binding, machine."""
        unknown = set(kw) - set(_META_KEYS)
        if unknown:
            raise TypeError(f"set_meta: unknown field(s) {', '.join(sorted(unknown))}")
        self._check_unfinished()
        values = {k: _json_or_none(v) if k in ("mpi", "machine") else v for k, v in kw.items()}
        if values:
            assignments = ", ".join(f"{k} = ?" for k in values)
            with self.store._tx() as c:
                c.execute(f"UPDATE runs SET {assignments} WHERE id = ?",
                          (*values.values(), self.id))

    def progress(self, note: str) -> None:
        """Note how far a running run has got (its reason while it runs): a run killed
        meanwhile is marked 'incomplete' with this note, so its record says where it stopped."""
        self._check_unfinished()
        with self.store._tx() as c:
            c.execute("UPDATE runs SET reason = ? WHERE id = ? AND status = 'running'",
                      (note, self.id))

    def finish(self, status: str = "complete", reason: str | None = None) -> None:
        """End the run: 'complete', 'failed', 'interrupted' or 'incomplete', with a reason."""
        if status not in STATUSES[1:]:
            raise ValueError(f"finish: status must be one of {', '.join(STATUSES[1:])}")
        self._check_unfinished()
        with self.store._tx() as c:
            c.execute("UPDATE runs SET status = ?, reason = ?, finished_at = ? WHERE id = ?",
                      (status, reason, time.time(), self.id))
        self._finished = True

    def _check_unfinished(self) -> None:
        if self._finished:
            raise StoreError(f"run {self.id} is already finished")

    def __enter__(self) -> RunHandle:
        # SIGTERM (kill, a batch scheduler) must end the run as 'interrupted', like Ctrl-C.
        self._signals.enter_context(sigterm_as_interrupt())
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        try:
            if not self._finished:  # unless the block said how the run ended
                self.finish(*_ending(exc_type, exc))
        finally:
            self._signals.close()
        return False


class BenchWriter:
    """One benchmark document of a run, written as its results arrive (RunHandle.open_bench)."""

    def __init__(self, run: RunHandle, bench_id: int):
        self.run = run
        self.id = bench_id
        self.count = 0

    def add_results(self, results: list[dict]) -> None:
        if not results:
            return
        _check_bench({"schema": BENCH_SCHEMA, "op": "-", "results": results})
        with self.run.store._tx() as c:
            c.executemany(
                f"INSERT INTO results (bench_id, {', '.join(_RESULT_COLUMNS)}, check_result, "
                f"samples, extra) VALUES ({', '.join('?' * (len(_RESULT_COLUMNS) + 4))})",
                [_result_row(self.id, r) for r in results])
        self.count += len(results)

    def update(self, **fields) -> None:
        """Fields learned at the end (complete, command, stdout, ...), into the document."""
        with self.run.store._tx() as c:
            row = c.execute("SELECT extra FROM benches WHERE id = ?", (self.id,)).fetchone()
            extra = {**json.loads(row["extra"]), **{k: v for k, v in fields.items()
                                                     if k not in _BENCH_COLUMNS and k != "mpi"}}
            c.execute("UPDATE benches SET extra = ? WHERE id = ?", (_dumps(extra), self.id))
            if "mpi" in fields:
                c.execute("UPDATE benches SET mpi = ? WHERE id = ?",
                          (_json_or_none(fields["mpi"]), self.id))
            for key in set(fields) & set(_BENCH_COLUMNS):
                c.execute(f"UPDATE benches SET {key} = ? WHERE id = ?", (fields[key], self.id))


def _ending(exc_type, exc) -> tuple[str, str | None]:
    """The status and reason of a run whose block ended with this exception (or none)."""
    if exc_type is None:
        return "complete", None
    if issubclass(exc_type, Terminated):
        return "interrupted", "terminated by SIGTERM"
    if issubclass(exc_type, KeyboardInterrupt):
        return "interrupted", "interrupted by SIGINT (Ctrl-C)"
    return "failed", f"{exc_type.__name__}: {exc}"


# -- opening -----------------------------------------------------------------------


def _check_file(db: Path, create: bool) -> None:
    """Refuse what SQLite would misread or silently turn into a new database."""
    if db.is_dir():
        raise StoreError(f"{db}: is a directory, not a colltune store")
    if not db.exists():
        if not create:
            raise StoreError(f"{db}: no colltune store here (nothing recorded yet)")
        try:
            db.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{db}: cannot create its folder: {exc.strerror}") from exc
        return
    try:
        with db.open("rb") as f:
            head = f.read(100)
    except OSError as exc:
        raise StoreError(f"{db}: cannot read: {exc.strerror}") from exc
    if head and head[:len(_SQLITE_MAGIC)] != _SQLITE_MAGIC:
        raise StoreError(f"{db}: not a colltune store: not an SQLite database "
                         f"(corrupt, or some other kind of file); {ADVICE}")
    pages = _truncated(db, head)
    if pages:
        raise StoreError(f"{db}: damaged: truncated, {pages[0]} of its {pages[1]} pages are "
                         f"there; {ADVICE}")


def _truncated(db: Path, head: bytes) -> tuple[int, int] | None:
    """(pages present, pages the header says) when the file is shorter than its header says."""
    if len(head) < 100:
        return None
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    expected = int.from_bytes(head[28:32], "big")
    # The header's page count is valid only when its "version-valid-for" matches.
    if not page_size or head[92:96] != head[24:28]:
        return None
    present = db.stat().st_size // page_size
    return (present, expected) if present < expected else None


def _writable(db: Path) -> bool:
    """Whether the store file may be written: by permission and, since root passes every
    permission check, by its mode (a file with no write bit was made read-only on purpose)."""
    try:
        mode = db.stat().st_mode
    except OSError:
        return True
    return bool(mode & 0o222) and os.access(db, os.W_OK)


def _store_error(db: Path, exc: sqlite3.OperationalError) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreError(f"{db}: locked by another process writing into it (waited "
                          f"{float(os.environ.get('COLLTUNE_DB_TIMEOUT') or LOCK_TIMEOUT_S):g} "
                          "s); wait for it to finish (`fuser` names it) and try again")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{db}: cannot write into the store ({text}); make it and its "
                          "folder writable, or set COLLTUNE_DB to another file")
    return StoreError(f"{db}: cannot use the store ({text}); {ADVICE}")


def _quick_check(conn: sqlite3.Connection, db: Path) -> None:
    """PRAGMA quick_check when it is cheap (a small file): damage found on open, not halfway
    through a run. A larger store is checked on demand (`colltune store check`)."""
    try:
        size = db.stat().st_size
    except OSError:
        return
    if size > QUICK_CHECK_MAX_BYTES:
        return
    rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
    if rows != ["ok"]:
        raise StoreError(f"{db}: damaged ({'; '.join(rows[:3])}); {ADVICE}")


def integrity_problems(db: str | os.PathLike) -> list[str]:
    """`colltune store check`: everything wrong with a store file, read-only, without
    refusing as Store.open does (empty list: a sound colltune store)."""
    db = Path(db)
    if not db.is_file():
        return [f"{db}: no such file"]
    with db.open("rb") as f:
        head = f.read(100)
    if not head:
        return [f"{db}: empty file"]
    if head[:len(_SQLITE_MAGIC)] != _SQLITE_MAGIC:
        return [f"{db}: not an SQLite database (some other kind of file)"]
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return [f"{db}: cannot open: {exc}"]
    try:
        app_id, version, tables = _header(conn)
        problems = []
        if app_id != APPLICATION_ID:
            problems.append(f"{db}: an SQLite database without the colltune marker "
                            f"(application_id {app_id:#x})")
        elif version > SCHEMA_VERSION:
            problems.append(f"{db}: schema version {version} is newer than this colltune's")
        pages = _truncated(db, head)
        if pages:
            problems.append(f"{db}: truncated: {pages[0]} of its {pages[1]} pages are there")
        problems += [f"{db}: {r[0]}" for r in conn.execute("PRAGMA integrity_check(20)")
                     if r[0] != "ok"]
        return problems
    except sqlite3.DatabaseError as exc:
        return [f"{db}: {exc}"]
    finally:
        conn.close()


def backup(db: str | os.PathLike, dest: str | os.PathLike) -> tuple[int, bool]:
    """`colltune store backup`: a copy of the store at `dest` made with SQLite's online backup
    API (consistent while another process writes), checked to open. A damaged store's pages
    would carry the damage along: then the copy is a new store holding every run, bench and
    result that can still be read. Returns (runs in the copy, salvaged). StoreError when
    there is nothing to copy or `dest` exists."""
    db, dest = Path(db), Path(dest)
    if dest.exists():
        raise StoreError(f"{dest}: exists already; name a new file for the backup")
    problems = integrity_problems(db)
    if problems and any(w in problems[0] for w in ("not an SQLite", "no such file",
                                                   "empty file", "without the colltune")):
        raise StoreError(f"cannot back up {problems[0]}")
    tmp = dest.with_name(f".{dest.name}.{secrets.token_hex(4)}.tmp")
    try:
        src = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            if problems:
                _salvage(src, tmp)
            else:
                out = sqlite3.connect(tmp)
                try:
                    src.backup(out)
                finally:
                    out.close()
        finally:
            src.close()
        with Store.open(tmp, create=False) as copy:
            n = len(copy.runs())
        os.replace(tmp, dest)
    except (sqlite3.DatabaseError, StoreError) as exc:
        raise StoreError(f"cannot back up {db}: {exc}") from exc
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return n, bool(problems)


def _salvage(src: sqlite3.Connection, dest: Path) -> None:
    """Copy into a new store at `dest` every run whose row, benches and results can be read;
    a run that meets a damaged page is left out whole (never half a run)."""
    src.row_factory = sqlite3.Row

    def rows(sql: str, *params) -> list[sqlite3.Row]:
        out = []
        try:
            for row in src.execute(sql, params):
                out.append(row)
        except sqlite3.DatabaseError:
            pass  # what came before the damaged page is kept
        return out

    with Store.open(dest) as store:
        conn = store._conn
        for run in rows("SELECT * FROM runs ORDER BY id"):
            try:
                benches = list(src.execute("SELECT * FROM benches WHERE run_id = ?",
                                           (run["id"],)))
                results = [r for b in benches for r in src.execute(
                    "SELECT * FROM results WHERE bench_id = ?", (b["id"],))]
            except sqlite3.DatabaseError:
                continue
            with _transaction(conn):
                for table, items in (("runs", [run]), ("benches", benches),
                                     ("results", results)):
                    for item in items:
                        keys = item.keys()
                        conn.execute(f"INSERT INTO {table} ({', '.join(keys)}) "
                                     f"VALUES ({', '.join('?' * len(keys))})", tuple(item))


def _prepare(conn: sqlite3.Connection, db: Path, readonly: bool = False) -> None:
    """Check our marker and version, create or migrate the schema, set up WAL."""
    app_id, version, tables = _header(conn)
    if readonly:
        if app_id != APPLICATION_ID or version != SCHEMA_VERSION:
            raise StoreError(f"{db}: read-only and not a colltune store of schema version "
                             f"{SCHEMA_VERSION}: cannot read it")
        return
    if app_id == 0 and not tables and version == 0:
        _upgrade(conn)
    elif app_id != APPLICATION_ID:
        listed = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "") or "none"
        raise StoreError(f"{db}: not a colltune store: an SQLite database without the colltune "
                         f"marker (application_id {app_id:#x}; tables: {listed})")
    elif version > SCHEMA_VERSION:
        raise StoreError(f"{db}: written by a newer colltune (schema version {version}; "
                         f"this colltune reads up to {SCHEMA_VERSION})")
    elif version < SCHEMA_VERSION:
        _upgrade(conn)
    # WAL: readers never block the writer, and a crash mid-write leaves the last commit intact.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def _header(conn: sqlite3.Connection) -> tuple[int, int, list[str]]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    return app_id, version, tables


def _upgrade(conn: sqlite3.Connection) -> None:
    """Create the schema in an empty file or migrate an older one, all in one transaction."""
    with _transaction(conn):
        # Another process may have done it while we waited for the write lock: look again.
        app_id, version, tables = _header(conn)
        if app_id == 0 and not tables:
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        else:
            for old in range(version, SCHEMA_VERSION):
                _MIGRATIONS[old](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _migrate_v1_to_v2(conn: sqlite3.Connection) -> None:
    # Version 1 knew only the pid of a run, which a reboot recycles; the boot id tells
    # a run from before a reboot (dead) from one whose pid is alive again by chance.
    conn.execute("ALTER TABLE runs ADD COLUMN boot_id TEXT")


_MIGRATIONS = {1: _migrate_v1_to_v2}


def _death_reason(row: sqlite3.Row) -> str | None:
    """Why a 'running' run of this host has no live process any more, or None if it may."""
    pid = row["pid"]
    current_boot = boot_id()
    if row["boot_id"] and current_boot and row["boot_id"] != current_boot:
        return f"host rebooted since the run started (pid {pid})"
    booted = boot_time()
    if booted is not None and row["started_at"] < booted:
        return f"host rebooted since the run started (pid {pid})"
    if not process_alive(pid):
        return f"process {pid} ended without finishing the run (killed or crashed)"
    started = process_start_time(pid)
    # Generous slack: the run row is written shortly after its process starts.
    if started is not None and started > row["started_at"] + 5:
        return f"process {pid} ended without finishing the run (pid since reused)"
    return None


def _source_revision() -> str | None:
    """The git commit of the source tree colltune runs from ('-dirty' if modified), or None."""
    package = Path(__file__).resolve().parent

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(package), *args], capture_output=True,
                              text=True, timeout=10, check=False)

    try:
        # An installed copy may sit inside some other repository (a venv in a checkout):
        # only a tree that tracks this very file is our source tree.
        if git("ls-files", "--error-unmatch", Path(__file__).name).returncode != 0:
            return None
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return None
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty else "")


# -- rows <-> documents --------------------------------------------------------------

_RUN_SELECT = (
    "SELECT r.*, (SELECT count(*) FROM benches b WHERE b.run_id = r.id) AS bench_count, "
    "(SELECT group_concat(DISTINCT b.op) FROM benches b WHERE b.run_id = r.id) AS ops "
    "FROM runs r")


def _run_dict(row: sqlite3.Row) -> dict:
    run = dict(row)
    for key in _JSON_RUN_COLUMNS:
        run[key] = _json_or_none_load(run[key])
    run["ops"] = sorted(run["ops"].split(",")) if run["ops"] else []
    end = run["finished_at"]
    run["duration_s"] = end - run["started_at"] if end is not None else None
    return run


def _result_dict(row: sqlite3.Row, samples: bool) -> dict:
    result = {**json.loads(row["extra"]), **{k: row[k] for k in _RESULT_COLUMNS},
              "check": row["check_result"]}
    if samples:
        blob = row["samples"]
        result["samples_us"] = list(struct.unpack(f"<{len(blob) // 8}d", blob))
    return result


def _insert_bench(c: sqlite3.Connection, run_id: int, seq: int, bench: dict) -> int:
    known = {"schema", "results", "mpi", *_BENCH_COLUMNS}
    extra = {k: v for k, v in bench.items() if k not in known}
    columns = ("run_id", "seq", "recorded_at", "mpi", "extra", *_BENCH_COLUMNS)
    values = (run_id, seq, time.time(), _json_or_none(bench.get("mpi")), _dumps(extra),
              *(bench.get(k) for k in _BENCH_COLUMNS))
    cur = c.execute(f"INSERT INTO benches ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})", values)
    return cur.lastrowid


def _result_row(bench_id: int, result: dict) -> tuple:
    known = {"check", "samples_us", *_RESULT_COLUMNS}
    extra = {k: v for k, v in result.items() if k not in known}
    samples = [float(s) for s in result.get("samples_us") or ()]
    # Samples are always read whole, so one packed little-endian float64 array per
    # result is far smaller than a row per sample.
    blob = struct.pack(f"<{len(samples)}d", *samples)
    values = {k: result.get(k) for k in _RESULT_COLUMNS}
    values["segsize"] = values["segsize"] or 0
    return (bench_id, *values.values(), result.get("check"), blob, _dumps(extra))


def _check_bench(bench: dict) -> None:
    if not isinstance(bench, dict) or bench.get("schema") != BENCH_SCHEMA:
        found = bench.get("schema") if isinstance(bench, dict) else type(bench).__name__
        raise ValueError(f"not a {BENCH_SCHEMA} document (schema: {found!r})")
    if not isinstance(bench.get("op"), str):
        raise ValueError("bench document without an 'op'")
    if not isinstance(bench.get("results"), list):
        raise ValueError("bench document without a 'results' list")
    for i, result in enumerate(bench["results"]):
        if not isinstance(result, dict):
            raise ValueError(f"bench result {i} is not an object")
        missing = [k for k in ("algorithm", "size") if k not in result]
        if missing:
            raise ValueError(f"bench result {i} lacks {', '.join(missing)}")


def _dumps(value) -> str:
    # Non-ASCII kept as is, so that text search (LIKE) finds it in the stored JSON.
    return json.dumps(value, ensure_ascii=False)


def _json_or_none(value) -> str | None:
    return None if value is None else _dumps(value)


def _json_or_none_load(text: str | None):
    return None if text is None else json.loads(text)


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


# -- export ----------------------------------------------------------------------------

CSV_RESULT_FIELDS = ("run_id", "bench", "op", "ranks", "datatype", "mpi_implementation",
                     "mpi_version", "binding", "algorithm", "segsize", "size", "count",
                     "iterations", "avg_us", "min_us", "max_us", "median_us", "check")
CSV_SAMPLE_FIELDS = ("run_id", "bench", "op", "ranks", "datatype", "mpi_implementation",
                     "mpi_version", "binding", "algorithm", "segsize", "size", "iteration",
                     "sample_us")


def run_to_json(run: dict) -> str:
    """A run (from `Store.run`) as one JSON document: metadata, benches, results, samples."""
    return json.dumps({"schema": RUN_EXPORT_SCHEMA, **run}, indent=1) + "\n"


def run_to_csv(run: dict, *, samples: bool = False) -> str:
    """One row per result (aggregates), or with `samples` one row per raw sample."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_SAMPLE_FIELDS if samples else CSV_RESULT_FIELDS,
                            extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for bench in run["benches"]:
        mpi = bench.get("mpi") or run.get("mpi") or {}
        common = {"run_id": run["id"], "bench": bench["seq"], "op": bench["op"],
                  "ranks": bench["ranks"], "datatype": bench["datatype"],
                  "mpi_implementation": mpi.get("implementation"),
                  "mpi_version": mpi.get("version"), "binding": bench["binding"]}
        for result in bench["results"]:
            row = {**common, **result}
            if not samples:
                writer.writerow(row)
                continue
            for i, value in enumerate(result.get("samples_us", [])):
                writer.writerow({**row, "iteration": i, "sample_us": repr(value)})
    return out.getvalue()
