"""A damaged, foreign, read-only or locked store (issue 25): each gives one clear line with
the path, nothing is written into the file, the dashboard answers with a page (not a 500),
`colltune store check` names the problem and `colltune store backup` makes a copy that opens
(or says why it cannot)."""

from __future__ import annotations

import hashlib
import http.client
import os
import sqlite3
import threading

import pytest
from colltune import cli
from colltune.report.dashboard import DashboardServer
from colltune.store.store import Store, StoreError


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def big_store(tmp_path, docs, record) -> os.PathLike:
    """A store of several dozen pages, checkpointed into the main file (no -wal left)."""
    path = tmp_path / "colltune.db"
    with Store.open(path) as store:
        for _ in range(6):
            record(store, [docs["bcast_mpich"], docs["allreduce_mpich"]])
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()
    return path


def truncate(path) -> None:
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)


def zero_page(path) -> None:
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    middle = (len(data) // page // 2) * page
    data[middle:middle + page] = bytes(page)
    path.write_bytes(bytes(data))


def text_file(path) -> None:
    path.write_text("these are my notes\n" * 500)


DAMAGE = {"truncated": (truncate, "truncated"), "zero page": (zero_page, "damaged"),
          "text file": (text_file, "not an SQLite database")}


def run_cli(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as e:
        return e.code


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def get(server: DashboardServer, path: str = "/") -> tuple[int, str]:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read().decode()
    conn.close()
    return resp.status, body


@pytest.fixture()
def dashboard():
    servers = []

    def start(path) -> DashboardServer:
        server = DashboardServer(path, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_store_is_said_in_one_line_and_never_written(
        kind, tmp_path, docs, record, capsys, monkeypatch, dashboard):
    path = big_store(tmp_path, docs, record)
    damage, words = DAMAGE[kind]
    damage(path)
    before = digest(path)
    monkeypatch.setenv("COLLTUNE_DB", str(path))
    # A reading verb and a recording one (refused before it launches anything).
    for argv in (["runs"], ["bench", "--op", "barrier", "-n", "1", "--iters", "1"]):
        assert run_cli(argv) == 1
        line = one_line(capsys.readouterr().err)
        assert str(path) in line and words in line and "colltune store check" in line, line
    with pytest.raises(StoreError, match=words):
        Store.open(path)
    assert digest(path) == before and not (tmp_path / "colltune.db-wal").exists()
    # The dashboard answers every page with the same message.
    status, body = get(dashboard(path))
    assert status == 503 and words in body and "Traceback" not in body
    # store check names the problem.
    assert run_cli(["store", "check", "--db", str(path)]) == 1
    err = capsys.readouterr().err
    assert words.split()[0] in err or "malformed" in err or "corrupt" in err, err
    # store backup: a copy that opens, or one line saying why there is none.
    copy = tmp_path / "copy.db"
    status = run_cli(["store", "backup", str(copy), "--db", str(path)])
    out, err = capsys.readouterr()
    if status == 0:
        with Store.open(copy, create=False) as store:
            store.runs()
    else:
        assert status == 1 and str(path) in one_line(err) and not copy.exists()
    assert digest(path) == before


def test_a_read_only_store_is_read_but_not_written(tmp_path, docs, record, capsys, monkeypatch,
                                                   dashboard):
    path = big_store(tmp_path, docs, record)
    path.chmod(0o444)
    before = digest(path)
    monkeypatch.setenv("COLLTUNE_DB", str(path))
    assert run_cli(["runs"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 6
    assert run_cli(["bench", "--op", "barrier", "-n", "1", "--iters", "1"]) == 1
    line = one_line(capsys.readouterr().err)
    assert str(path) in line and "read-only" in line and "--no-record" in line
    status, body = get(dashboard(path))
    assert status == 200 and "colltune runs" in body
    assert run_cli(["store", "check", "--db", str(path)]) == 0
    assert "ok (6 runs)" in capsys.readouterr().out
    copy = tmp_path / "copy.db"
    assert run_cli(["store", "backup", str(copy), "--db", str(path)]) == 0
    with Store.open(copy, create=False) as store:
        assert len(store.runs()) == 6
    assert digest(path) == before


def test_a_store_locked_by_another_writer(tmp_path, docs, record, capsys, monkeypatch,
                                          dashboard):
    path = big_store(tmp_path, docs, record)
    monkeypatch.setenv("COLLTUNE_DB", str(path))
    monkeypatch.setenv("COLLTUNE_DB_TIMEOUT", "0.3")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    try:
        assert run_cli(["bench", "--op", "barrier", "-n", "1", "--iters", "1"]) == 1
        line = one_line(capsys.readouterr().err)
        assert str(path) in line and "locked by another process" in line
        # Readers are not blocked: the list, the dashboard, the check and the backup work.
        assert run_cli(["runs"]) == 0
        capsys.readouterr()
        status, body = get(dashboard(path))
        assert status == 200 and "colltune runs" in body
        assert run_cli(["store", "check", "--db", str(path)]) == 0
        copy = tmp_path / "copy.db"
        assert run_cli(["store", "backup", str(copy), "--db", str(path)]) == 0
        with Store.open(copy, create=False) as store:
            assert len(store.runs()) == 6
    finally:
        other.execute("ROLLBACK")
        other.close()
    with Store.open(path) as store:
        assert len(store.runs()) == 6  # nothing half-written


def test_backup_refuses_to_overwrite(tmp_path, docs, record, capsys):
    path = big_store(tmp_path, docs, record)
    copy = tmp_path / "copy.db"
    copy.write_text("keep me")
    assert run_cli(["store", "backup", str(copy), "--db", str(path)]) == 1
    assert "exists already" in one_line(capsys.readouterr().err)
    assert copy.read_text() == "keep me"
