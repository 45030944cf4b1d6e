"""Bad input, as a new user types it (issue 25): every case ends with exit status 2 and one
line naming the argument and what it allows, before anything is launched or recorded: the
store holds no new run and no output file appears. The commands run in this process
(colltune.cli.main), so the whole file takes seconds."""

from __future__ import annotations

import json

import pytest
from colltune import cli
from colltune.core.units import parse_size
from colltune.store.store import Store

# (argv, words the one line must contain: the argument and the allowed values)
CASES = [
    # bench: counts, ranges, relations
    (["bench", "--op", "bcast", "-n", "0"], ["-n/--ranks", ">= 1"]),
    (["bench", "--op", "bcast", "-n", "-3"], ["-n/--ranks", ">= 1"]),
    (["bench", "--op", "bcast", "-n", "two"], ["-n/--ranks", "not an integer"]),
    (["bench", "--op", "bcast", "-n", "2", "--min", "4K", "--max", "1K"],
     ["--min 4 KiB", "--max 1 KiB", "--min <= --max"]),
    (["bench", "--op", "gather", "-n", "2", "--root", "2"], ["--root 2", "0 to 1"]),
    (["bench", "--op", "bcast", "-n", "2", "--root", "-1"], ["--root", ">= 0"]),
    (["bench", "--op", "bcast", "-n", "2", "--iters", "-5"], ["--iters", ">= 0"]),
    (["bench", "--op", "bcast", "-n", "2", "--warmup", "-1"], ["--warmup", ">= 0"]),
    (["bench", "--op", "bcast", "-n", "2", "--algs", ",,"], ["--algs", "empty", "binomial"]),
    (["bench", "--op", "bcast", "-n", "2", "--algs", "binomial,nope"],
     ["--algs", "unknown bcast algorithm 'nope'", "allowed: all,", "native"]),
    (["bench", "--op", "alltoallw", "-n", "2"], ["--op", "invalid choice", "bcast"]),
    (["bench", "--op", "bcast", "-n", "2", "--radix", "1"], ["--radix 1", "2 and more"]),
    # sizes: one parser, one set of units
    (["bench", "--op", "bcast", "-n", "2", "--max", "4X"], ["--max", "not a size", "K/KiB"]),
    (["bench", "--op", "bcast", "-n", "2", "--max=-4K"], ["--max", "not a size"]),
    (["bench", "--op", "bcast", "-n", "2", "--segsize", "0"], ["--segsize", "out of range"]),
    # no limit on message sizes: refused with the memory it would need (or --force)
    (["bench", "--op", "alltoall", "-n", "64", "--max", "1G"],
     ["--max 1 GiB on 64 ranks", "per rank", "free", "--force"]),
    (["bench", "--op", "bcast", "-n", "2", "--max", "5G", "--force"],
     ["--max 5 GiB", "2 GiB"]),
    (["run", "-n", "2", "--min", "1M", "--max", "64K"], ["--min", "--max"]),
    (["run", "-n", "0"], ["-n/--ranks", ">= 1"]),
    # the dashboard's port
    (["serve", "--port", "99999"], ["--port", "0 to 65535"]),
    (["serve", "--port", "-1"], ["--port", "0 to 65535"]),
    (["runs", "--limit", "-2"], ["--limit", ">= 0"]),
    # tune
    (["tune", "--ops", "bcast", "--ranks", "0"], ["--ranks", ">= 1"]),
    (["tune", "--ops", "bcast", "--ranks", "4-2"], ["--ranks", "A <= B"]),
    (["tune", "--ops", "bcast", "--ranks", "2,,4"], ["--ranks", "empty"]),
    (["tune", "--ops", "bcast,,reduce", "--ranks", "2"], ["--ops", "empty", "bcast"]),
    (["tune", "--ops", "bcast,alltoallw", "--ranks", "2"],
     ["--ops", "unknown operation 'alltoallw'", "alltoall"]),
    (["tune", "--ops", "bcast", "--ranks", "2", "--sizes", "4M-8"], ["--sizes", "MIN <= MAX"]),
    (["tune", "--ops", "bcast", "--ranks", "2", "--sizes", "8-4Q"], ["--sizes", "not a size"]),
    (["tune", "--ops", "bcast", "--ranks", "2", "--iters", "0"], ["--iters", ">= 1"]),
    (["tune", "--ops", "alltoall", "--ranks", "64", "--sizes", "1G", "--strategy",
      "exhaustive"], ["tuning alltoall up to 1 GiB on 64 ranks", "--force"]),
]


@pytest.fixture()
def store_env(tmp_path, monkeypatch):
    db = tmp_path / "ct.db"
    monkeypatch.setenv("COLLTUNE_DB", str(db))
    monkeypatch.chdir(tmp_path)
    return db


def run_cli(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as e:  # argparse's own errors
        return e.code


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def no_new_run(db) -> None:
    if db.exists():
        with Store.open(db) as store:
            assert store.runs() == []


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_argument_is_one_line_and_status_2(argv, words, store_env, tmp_path, capsys):
    status = run_cli(argv)
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    line = one_line(err)
    assert line.startswith("colltune"), line
    for w in words:
        assert w in line, (w, line)
    assert "Traceback" not in out + err
    no_new_run(store_env)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["ct.db"])  # no table, no json


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), ("8B", 8), ("64K", 64 << 10), ("64k", 64 << 10), ("64KiB", 64 << 10),
    ("4M", 4 << 20), ("4MiB", 4 << 20), ("4mib", 4 << 20), ("1G", 1 << 30), ("1GiB", 1 << 30),
    ("32KB", 32 << 10)])
def test_one_size_parser(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "K", "4X", "-4K", "4.5M", "4 M B", "0x10", "1T"])
def test_size_parser_refuses(text):
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_help_states_every_default(capsys):
    assert run_cli(["bench", "--help"]) == 0
    text = capsys.readouterr().out.split("options:", 1)[1]
    for option, default in (("--sizes", "8-4M"), ("--warmup", "0"), ("--root", "0")):
        part = text.split(option, 1)[1].split("\n  -", 1)[0]
        assert "default" in part and default in part, (option, part)


def table_doc(**entry) -> dict:
    from colltune.tune.tune import machine_id

    return {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0",
            "created_at": "2024-01-01T00:00:00", "strategy": "exhaustive",
            "machine": machine_id(), "mpi": {"build": "mpich", "implementation": "MPICH",
                                             "version": "4"},
            "entries": [{"op": "bcast", "ranks": 2, "size_bytes": 8, "algorithm": "binomial",
                         "segsize": 0, "time_us": 1.0, "native_us": 2.0, "evaluations": 1,
                         **entry}]}


def test_export_rules_refuses_an_unknown_algorithm(tmp_path, store_env, capsys):
    table = tmp_path / "t.json"
    table.write_text(json.dumps(table_doc(algorithm="warp_drive")))
    assert run_cli(["export-rules", "--table", str(table), "--format", "mpich",
                    "-o", str(tmp_path / "x.json")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "entries[0].algorithm: unknown bcast algorithm 'warp_drive'" in line
    assert "binomial" in line and not (tmp_path / "x.json").exists()


def test_export_rules_refuses_deeply_nested_json(tmp_path, store_env, capsys):
    table = tmp_path / "t.json"
    table.write_text("[" * 100000 + "]" * 100000)
    assert run_cli(["export-rules", "--table", str(table), "--format", "ompi"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "nested too deeply" in line and str(table) in line


def test_tune_checks_the_store_before_tuning(tmp_path, monkeypatch, capsys):
    db = tmp_path / "notes.txt"
    db.write_text("my notes, not a database\n" * 100)
    monkeypatch.setenv("COLLTUNE_DB", str(db))
    monkeypatch.chdir(tmp_path)
    status = run_cli(["tune", "--strategy", "exhaustive", "--ops", "barrier", "--ranks", "2",
                      "-o", str(tmp_path / "t.json")])
    line = one_line(capsys.readouterr().err)
    assert status == 1 and str(db) in line and "not an SQLite database" in line
    assert not (tmp_path / "t.json").exists()  # refused before anything was tuned
    assert db.read_text() == "my notes, not a database\n" * 100
