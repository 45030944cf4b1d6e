"""The results store on real SQLite files: recording, crashes, migration, refusals, verbs."""

from __future__ import annotations

import csv
import io
import json
import os
import selectors
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from colltune.core.machine import fingerprint
from colltune.store import cli as store_cli
from colltune.store.store import SCHEMA_VERSION, Store, StoreError, default_path

# A benchmark that never ends on its own: it records one bench document after another.
WORKER = r"""
import json, sys, time
from colltune.store.store import Store

docs = [json.load(open(p)) for p in sys.argv[2:]]
store = Store.open(sys.argv[1])
with store.begin_run("bench", ["colltune", "bench", "--op", "bcast,allreduce"]) as run:
    for i in range(1_000_000):
        run.add_bench(docs[i % len(docs)])
        print("added", i + 1, flush=True)
        time.sleep(0.05)
"""


def integrity(path) -> str:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def raw_run(path, run_id) -> dict:
    """A run's row read with plain sqlite3, bypassing the store's recovery on open."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    row = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    conn.close()
    return dict(row)


def strip_volatile(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in ("seq", "recorded_at")}


def test_runs_are_recorded_and_read_back_with_samples(tmp_path, docs, record, machine):
    with Store.open(tmp_path / "c.db") as store:
        run_id = record(store, [docs["bcast_mpich"], docs["allreduce_mpich"]],
                        argv=["colltune", "bench", "-n", "16"], binding="core")
        run = store.run(run_id)
    assert run["status"] == "complete" and run["reason"] is None
    assert run["pid"] == os.getpid() and run["host"] == socket.gethostname()
    assert run["argv"] == ["colltune", "bench", "-n", "16"]
    assert run["machine"] == machine and run["binding"] == "core"
    assert run["mpi"]["implementation"] == "MPICH" and run["ranks"] == 16  # taken from benches
    assert run["duration_s"] >= 0 and run["ops"] == ["allreduce", "bcast"]
    assert run["colltune_version"]
    assert [b["op"] for b in run["benches"]] == ["bcast", "allreduce"]
    for stored, original in zip(run["benches"], [docs["bcast_mpich"], docs["allreduce_mpich"]],
                                strict=True):
        assert strip_volatile(stored) == original


def test_unknown_fields_survive_the_round_trip(tmp_path, docs, record):
    doc = docs["bcast_mpich"]
    doc["hostfile"] = "nodes.txt"
    doc["results"][0]["radix"] = 4
    with Store.open(tmp_path / "c.db") as store:
        run = store.run(record(store, [doc]))
    assert run["benches"][0]["hostfile"] == "nodes.txt"
    assert run["benches"][0]["results"][0]["radix"] == 4


def test_runs_are_listed_newest_first_and_filtered(filled_db, record, docs):
    with Store.open(filled_db) as store:
        failed = record(store, [], argv=["colltune", "run", "special-42"], status="failed")
        assert [r["id"] for r in store.runs()] == [failed, 2, 1]
        assert [r["id"] for r in store.runs(limit=2)] == [failed, 2]
        assert [r["id"] for r in store.runs(status="failed")] == [failed]
        assert [r["id"] for r in store.runs(mpi="open mpi")] == [2]
        assert [r["id"] for r in store.runs(mpi="mpich 4.2")] == [1]
        assert [r["id"] for r in store.runs(text="special-42")] == [failed]
        accented = record(store, [], argv=["colltune", "bench", "--note", "Grüße"])
        assert [r["id"] for r in store.runs(text="grüße")] == [accented]
        assert [r["id"] for r in store.runs(text="%")] == []  # a LIKE wildcard is literal
        assert store.runs(verb="bench", status="complete", mpi="MPICH")[0]["id"] == 1
        assert store.verbs() == ["bench"]
        assert store.latest_run_id() == 2  # the newest complete run with results


def test_context_manager_records_how_the_run_ended(tmp_path):
    with Store.open(tmp_path / "c.db") as store:
        with store.begin_run("bench", ["colltune", "bench"]) as ok:
            pass
        with pytest.raises(RuntimeError), store.begin_run("bench", []) as boom:
            raise RuntimeError("mpiexec exited with status 3")
        with pytest.raises(KeyboardInterrupt), store.begin_run("bench", []) as stopped:
            raise KeyboardInterrupt
        with store.begin_run("bench", []) as told:
            told.finish("failed", "2 results failed their check")
        runs = {r["id"]: r for r in store.runs()}
    assert runs[ok.id]["status"] == "complete"
    assert runs[boom.id]["status"] == "failed"
    assert runs[boom.id]["reason"] == "RuntimeError: mpiexec exited with status 3"
    assert runs[stopped.id]["status"] == "interrupted"
    assert (runs[told.id]["status"], runs[told.id]["reason"]) == (
        "failed", "2 results failed their check")
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler put back


def test_set_meta_and_finished_runs(tmp_path):
    with Store.open(tmp_path / "c.db") as store:
        run = store.begin_run("run", ["colltune", "run"])
        run.set_meta(mpi={"implementation": "Open MPI", "version": "5.0.6"}, ranks=64,
                     binding="socket")
        with pytest.raises(TypeError):
            run.set_meta(colour="blue")
        run.finish()
        with pytest.raises(StoreError, match="already finished"):
            run.add_bench({})
        stored = store.run(run.id)
    assert stored["mpi"]["version"] == "5.0.6"
    assert (stored["ranks"], stored["binding"]) == (64, "socket")


def test_a_bad_bench_document_is_stored_not_at_all(tmp_path, docs):
    bad = docs["bcast_mpich"]
    bad["results"][-1]["samples_us"] = [1.0, "not a number"]
    with Store.open(tmp_path / "c.db") as store:
        run = store.begin_run("bench", [])
        with pytest.raises(ValueError):
            run.add_bench(bad)
        with pytest.raises(ValueError, match="colltune-bench/1"):
            run.add_bench({"schema": "osu/7", "results": []})
        run.add_bench(docs["allreduce_mpich"])
        run.finish()
        benches = store.run(run.id)["benches"]
    # The failed insert was rolled back whole: the only bench is the good one, number 1.
    assert [(b["op"], b["seq"]) for b in benches] == [("allreduce", 1)]


@pytest.fixture
def worker(tmp_path, child_env):
    """Starts WORKER on a store and returns (process, run id) once two benches are in."""
    fixtures = Path(__file__).parent / "fixtures"
    procs = []

    def start(db) -> tuple[subprocess.Popen, int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(fixtures / "bcast_mpich_16.json"),
             str(fixtures / "allreduce_mpich_16.json")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        procs.append(proc)
        ready = selectors.DefaultSelector()
        ready.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + 120
        line = ""
        while line.strip() != "added 2":
            assert ready.select(timeout=deadline - time.monotonic()), "worker too slow"
            line = proc.stdout.readline()
            assert line, f"worker died: {proc.stderr.read()}"
        with Store.open(db) as store:
            return proc, store.runs(limit=1)[0]["id"]

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_sigkill_leaves_an_incomplete_run_with_its_samples(tmp_path, docs, record, worker):
    db = tmp_path / "c.db"
    with Store.open(db) as store:
        earlier = store.run(record(store, [docs["bcast_openmpi"]]))
    proc, run_id = worker(db)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)

    assert integrity(db) == "ok"
    assert raw_run(db, run_id)["status"] == "running"  # nobody could say otherwise yet
    with Store.open(db) as store:
        killed = store.run(run_id)
        assert store.run(earlier["id"]) == earlier
    assert killed["status"] == "incomplete"
    assert f"process {proc.pid} ended" in killed["reason"]
    assert len(killed["benches"]) >= 2
    expected = [docs["bcast_mpich"], docs["allreduce_mpich"]]
    for i, bench in enumerate(killed["benches"]):
        assert strip_volatile(bench) == expected[i % 2]  # every stored bench is whole


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_and_sigterm_end_the_run_as_interrupted(tmp_path, docs, record, worker, signum):
    db = tmp_path / "c.db"
    with Store.open(db) as store:
        earlier = store.run(record(store, [docs["bcast_openmpi"]]))
    proc, run_id = worker(db)
    proc.send_signal(signum)
    assert proc.wait(timeout=60) != 0

    assert integrity(db) == "ok"
    row = raw_run(db, run_id)  # written by the worker itself, not by recovery
    assert row["status"] == "interrupted" and row["finished_at"] is not None
    assert ("SIGTERM" if signum == signal.SIGTERM else "SIGINT") in row["reason"]
    with Store.open(db) as store:
        run = store.run(run_id)
        assert store.run(earlier["id"]) == earlier
    assert run["status"] == "interrupted" and len(run["benches"]) >= 2
    assert all(len(b["results"]) == len(docs["bcast_mpich"]["results"])
               for b in run["benches"][::2])


# Schema version 1, as the first colltune wrote it: no runs.boot_id.
V1_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, verb TEXT NOT NULL, argv TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN
        ('running', 'complete', 'failed', 'interrupted', 'incomplete')),
    reason TEXT, pid INTEGER NOT NULL, host TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL, colltune_version TEXT NOT NULL, git_revision TEXT, mpi TEXT,
    ranks INTEGER, binding TEXT, machine TEXT NOT NULL);
CREATE INDEX runs_status ON runs (status);
CREATE TABLE benches (id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    recorded_at REAL NOT NULL, op TEXT NOT NULL, ranks INTEGER, datatype TEXT, mpi TEXT,
    binding TEXT, iterations INTEGER, warmup INTEGER, root INTEGER, command TEXT,
    extra TEXT NOT NULL DEFAULT '{}', UNIQUE (run_id, seq));
CREATE TABLE results (id INTEGER PRIMARY KEY,
    bench_id INTEGER NOT NULL REFERENCES benches (id) ON DELETE CASCADE,
    algorithm TEXT NOT NULL, segsize INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL,
    count INTEGER, iterations INTEGER, avg_us REAL, min_us REAL, max_us REAL, median_us REAL,
    check_result TEXT, samples BLOB NOT NULL, extra TEXT NOT NULL DEFAULT '{}');
CREATE INDEX results_bench ON results (bench_id);
PRAGMA application_id = 1131367508;
PRAGMA user_version = 1;
"""


def make_v1_store(path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    run = ("INSERT INTO runs (verb, argv, status, pid, host, started_at, finished_at, "
           "colltune_version, mpi, ranks, machine) VALUES (?, ?, ?, ?, ?, ?, ?, '0.0.1', ?, 16, "
           "'{\"hostname\": \"old\"}')")
    mpi = json.dumps({"implementation": "MPICH", "version": "4.1.2"})
    conn.execute(run, ("bench", '["colltune", "bench"]', "complete", 4242, "old", 1.7e9,
                       1.7e9 + 60, mpi))
    # Recorded as running by this very (live) process, but long before this host booted.
    conn.execute(run, ("bench", "[]", "running", os.getpid(), socket.gethostname(), 1000.0,
                       None, mpi))
    conn.execute("INSERT INTO benches (run_id, seq, recorded_at, op, ranks) "
                 "VALUES (1, 1, 1.7e9, 'bcast', 16)")
    conn.execute("INSERT INTO results (bench_id, algorithm, size, median_us, check_result, "
                 "samples) VALUES (1, 'binomial', 8, 1.5, 'ok', ?)",
                 (struct.pack("<2d", 1.5, 1.6),))
    conn.commit()
    conn.close()


def test_a_version_1_store_is_migrated(tmp_path):
    db = tmp_path / "old.db"
    make_v1_store(db)
    with Store.open(db) as store:
        old = store.run(1)
        stale = store.run(2)
    assert old["status"] == "complete" and old["mpi"]["version"] == "4.1.2"
    assert old["benches"][0]["results"][0]["samples_us"] == [1.5, 1.6]
    assert stale["status"] == "incomplete" and "rebooted" in stale["reason"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
        assert "boot_id" in columns
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Store.open(db) as store:  # and the migrated file is now an ordinary store
        run = store.begin_run("bench", [])
        run.finish()
        assert store.run(run.id)["boot_id"]


def test_a_corrupt_file_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "random.db"
    db.write_bytes(os.urandom(8192))
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database") as err:
        Store.open(db)
    assert str(db) in str(err.value)
    assert db.read_bytes() == before


def test_a_damaged_sqlite_file_is_refused(tmp_path):
    db = tmp_path / "damaged.db"
    db.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    with pytest.raises(StoreError, match=str(db)):
        Store.open(db)


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "photos.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
        conn.execute("INSERT INTO photos (path) VALUES ('cat.jpg')")
    before = db.read_bytes()
    with pytest.raises(StoreError, match="without the colltune marker") as err:
        Store.open(db)
    assert str(db) in str(err.value) and "photos" in str(err.value)
    assert db.read_bytes() == before


def test_a_store_from_a_newer_colltune_is_refused(tmp_path):
    db = tmp_path / "new.db"
    Store.open(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer colltune"):
        Store.open(db)


def test_missing_store_is_created_only_when_asked(tmp_path):
    db = tmp_path / "a" / "b" / "c.db"
    with pytest.raises(StoreError, match="no colltune store"):
        Store.open(db, create=False)
    assert not db.exists()
    Store.open(db).close()
    assert db.exists()
    Store.open(db, create=False).close()


def test_default_location(tmp_path, monkeypatch):
    monkeypatch.delenv("COLLTUNE_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_path() == tmp_path / "home" / ".local/share/colltune/colltune.db"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert default_path() == tmp_path / "home" / ".local/share/colltune/colltune.db"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with Store.open() as store:
        assert store.path == tmp_path / "data" / "colltune" / "colltune.db"
    assert store.path.exists()
    monkeypatch.setenv("COLLTUNE_DB", str(tmp_path / "env.db"))
    assert default_path() == tmp_path / "env.db"


def test_fingerprint_describes_this_host():
    fp = fingerprint()
    assert fp["hostname"] == socket.gethostname()
    assert fp["logical_cores"] == os.cpu_count()
    assert fp["os"] and fp["kernel"]
    if sys.platform == "linux":
        assert fp["memory_total_bytes"] > 0
        assert all({"level", "type", "size", "shared_cpu_list"} <= set(c) for c in fp["caches"])
    json.dumps(fp)


def test_runs_verb(filled_db, capsys):
    assert store_cli.main(["runs", "--db", str(filled_db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "VERB", "STATUS", "START", "DURATION", "MPI", "RANKS",
                                "HOST"]
    assert lines[1].split()[:3] == ["2", "bench", "complete"] and "Open MPI 4.1.4" in lines[1]
    assert lines[2].split()[:3] == ["1", "bench", "complete"] and "MPICH 4.2.0" in lines[2]
    assert store_cli.main(["runs", "--db", str(filled_db), "--json", "--limit", "1"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [2]


def test_runs_verb_keeps_control_characters_off_the_terminal(tmp_path, record, capsys):
    db = tmp_path / "c.db"
    with Store.open(db) as store:
        record(store, [], machine={"hostname": "x"})
        store._conn.execute("UPDATE runs SET host = 'evil\x1b[2J\rhost'")
    store_cli.main(["runs", "--db", str(db)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "evil?[2J?host" in out


def test_verbs_report_store_problems_in_one_line(tmp_path, capsys):
    missing = tmp_path / "none.db"
    assert store_cli.main(["runs", "--db", str(missing)]) == 1
    assert store_cli.main(["export", "7", "--db", str(missing)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("colltune: ") for line in err)
    Store.open(missing).close()
    assert store_cli.main(["export", "7", "--db", str(missing)]) == 1
    assert "no run 7" in capsys.readouterr().err


def test_export_csv_one_row_per_result_or_per_sample(filled_db, docs, tmp_path, capsys):
    out = tmp_path / "run1.csv"
    assert store_cli.main(["export", "1", "--db", str(filled_db), "-o", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    expected = docs["bcast_mpich"]["results"] + docs["allreduce_mpich"]["results"]
    assert len(rows) == len(expected)
    assert rows[0]["op"] == "bcast" and rows[0]["mpi_implementation"] == "MPICH"
    assert float(rows[0]["median_us"]) == expected[0]["median_us"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    assert store_cli.main(["export", "2", "--db", str(filled_db), "--samples"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    samples = [s for r in docs["bcast_openmpi"]["results"] for s in r["samples_us"]]
    assert [float(r["sample_us"]) for r in rows] == samples
    assert rows[0]["iteration"] == "0" and rows[0]["algorithm"] == "native"


def test_export_names_the_file_it_could_not_write(filled_db, tmp_path, capsys):
    """Checked before anything is read (issue 39): exit 2 and one line."""
    target = tmp_path / "no" / "such" / "run.csv"
    assert store_cli.main(["export", "1", "--db", str(filled_db), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {target}: no such directory" in err and err.count("\n") == 1, err


def test_export_json_is_the_whole_run(filled_db, docs, tmp_path):
    out = tmp_path / "run2.json"  # the format follows the file name
    assert store_cli.main(["export", "2", "--db", str(filled_db), "-o", str(out)]) == 0
    run = json.loads(out.read_text())
    assert run["schema"] == "colltune-run/1" and run["id"] == 2
    assert run["machine"]["hostname"] and run["argv"][:2] == ["colltune", "bench"]
    assert strip_volatile(run["benches"][0]) == docs["bcast_openmpi"]
