"""One name per idea across the CLI (issue 39): the canonical option of each idea on every verb
that has the idea, the older spellings still accepted (hidden), `--db` wherever the store is
read or written, output paths checked before anything runs, `tune` never replacing a table
silently, and the README's account of `make run` and `colltune algorithms` kept to the code.

Parsing only, apart from the output-path checks (the CLI as a subprocess that must return
before measuring anything) and `colltune algorithms`: no MPI job is started."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from colltune import cli
from colltune.core.args import resolve_args
from colltune.core.colls import COLLS
from colltune.run import STAGES
from colltune.store.store import Store

ROOT = Path(__file__).resolve().parents[2]

# Each idea: its canonical option strings, and the older ones kept as hidden aliases.
IDEAS = {
    "ranks": (("-n", "--ranks"), ("--nproc", "--max-ranks")),
    "sizes": (("--sizes",), ("--min", "--max", "--size", "--bytes", "--max-size")),
    "operations": (("--ops",), ("--op",)),
    "algorithms": (("--algs",), ("--alg",)),
    "table": (("--table",), ()),
    "output": (("-o", "--output"), ()),
    "store": (("--db",), ()),
}


def verbs(parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()):
    """(path, parser) of every verb and sub-verb (`store backup`, `testbed up`, ...)."""
    parser = parser or cli.build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from verbs(sub, (*path, name))


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


def hidden(action: argparse.Action) -> bool:
    return action.help == argparse.SUPPRESS


@pytest.mark.parametrize("idea", IDEAS)
def test_every_verb_with_the_idea_has_its_one_name(idea):
    canonical, old = IDEAS[idea]
    seen = []
    for path, parser in verbs():
        opts = options(parser)
        if not set(opts) & {*canonical, *old}:
            continue
        seen.append(" ".join(path))
        for name in canonical:
            assert name in opts, f"colltune {' '.join(path)}: no {name} ({idea})"
            assert not hidden(opts[name]), f"colltune {' '.join(path)}: {name} hidden"
        for name in old:
            if name in opts:  # an older spelling: accepted, not advertised
                assert hidden(opts[name]), f"colltune {' '.join(path)}: {name} still shown"
    assert seen, idea


# Where each verb needs the store: --db there (the walk above only sees verbs that already
# have an option of the idea, so the list of the store's readers and writers is explicit).
STORE_VERBS = ["bench", "run", "probe", "p2p", "validate-model", "overlap", "tune", "verify",
               "monitor", "suite", "cholesky", "runs", "export", "report", "serve",
               "store check", "store backup", "app"]


def test_every_verb_that_reads_or_writes_the_store_has_db():
    parsers = {" ".join(path): parser for path, parser in verbs()}
    missing = [v for v in STORE_VERBS if "--db" not in options(parsers[v])]
    assert not missing, missing


def test_json_is_a_flag_everywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parser = cli.build_parser()
    having = [path for path, sub in verbs() if "--json" in options(sub)]
    assert {("algorithms",), ("bench",), ("predict",), ("runs",)} <= set(having)
    needed = {("cholesky",): ["--nb", "8"], ("testbed", "up"): ["--hosts", "2"]}
    for path in having:
        args = parser.parse_args([*path, *needed.get(path, []), "--json"])
        assert args.json is True, path


def parse(argv: list[str]) -> dict:
    args = cli.build_parser().parse_args(argv)
    resolve_args(args)
    out = vars(args)
    out.pop("table_arg", None)
    return out


# (older spelling, canonical spelling): the same arguments once parsed.
ALIASES = [
    (["bench", "--op", "bcast", "--min", "64", "--max", "1K", "--json", "x.json"],
     ["bench", "--ops", "bcast", "--sizes", "64-1K", "-o", "x.json"]),
    (["run", "--ranks", "3", "--min", "8", "--max", "4K"], ["run", "-n", "3", "--sizes", "8-4K"]),
    (["algorithms", "--op", "bcast"], ["algorithms", "--ops", "bcast"]),
    (["predict", "--op", "bcast", "--alg", "binomial", "--size", "1K", "--ranks", "4"],
     ["predict", "--ops", "bcast", "--algs", "binomial", "--sizes", "1K", "-n", "4"]),
    (["splittree", "--nproc", "8", "--n", "5"], ["splittree", "-n", "8", "--app-ranks", "5"]),
    (["overlap", "--nproc", "4", "--ns", "2-3", "--bytes", "1M", "--alg", "chain"],
     ["overlap", "-n", "4", "--app-ranks", "2-3", "--sizes", "1M", "--algs", "chain"]),
    (["tune", "--ranks", "2-4", "--ops", "bcast"], ["tune", "-n", "2-4", "--ops", "bcast"]),
    (["tune-nbc", "t.json", "--ranks", "4"], ["tune-nbc", "--table", "t.json", "-n", "4"]),
    (["verify", "t.json"], ["verify", "--table", "t.json"]),
    (["export-rules", "t.json", "--format", "mpich"],
     ["export-rules", "--table", "t.json", "--format", "mpich"]),
    (["suite", "--max-ranks", "4", "--size", "64"], ["suite", "-n", "4", "--sizes", "64"]),
    (["p2p", "--max-size", "64K"], ["p2p", "--sizes", "64K"]),
    (["p2p", "--max-size", "64K"], ["p2p", "--sizes", "1-64K"]),
    (["cholesky", "--n", "64", "--nb", "16", "--ranks", "2"],
     ["cholesky", "--order", "64", "--nb", "16", "-n", "2"]),
    (["testbed", "mpiexec", "-n", "2"], ["testbed", "mpiexec", "--ranks", "2"]),
]


@pytest.mark.parametrize(("old", "new"), ALIASES, ids=[" ".join(a[0]) for a in ALIASES])
def test_older_names_still_work(old, new, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse(old) == parse(new)


def test_older_names_with_another_destination(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = parse(["validate-model", "--ranks", "4,8", "--size", "64K"])
    assert old["ranks"] == "4,8" and old["size"] == 64 << 10
    new = parse(["validate-model", "-n", "4,8", "--sizes", "64K,1M"])
    assert new["ranks"] == "4,8" and new["sizes"] == "64K,1M"
    backup_old = parse(["store", "backup", "b.db"])
    backup_new = parse(["store", "backup", "-o", "b.db"])
    assert backup_old["dest"] == backup_new["output"] == "b.db"
    # --sizes sweeps where --min/--max did: 4M is 4 MiB
    args = parse(["bench", "--ops", "bcast", "--sizes", "8-4MB"])
    assert (args["min"], args["max"]) == (8, 4 << 20)
    assert parse(["bench", "--ops", "bcast", "--sizes", "64K"])["max"] == 64 << 10


def run_cli(argv, cwd, env, timeout=30):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


BAD = "/nonexistent-colltune-dir/out.json"
# Every verb that writes a file, its output in a folder that does not exist; the rest of each
# command would measure (minutes), so a prompt return shows that nothing ran.
WRITERS = [
    ["bench", "--ops", "bcast", "-n", "2", "-o", BAD],
    ["bench", "--ops", "bcast", "-n", "2", "--json", BAD],
    ["run", "-n", "2", "-o", BAD],
    ["export-rules", "--table", "TABLE", "--format", "mpich", "-o", BAD],
    ["probe", "--quick", "-o", BAD],
    ["probe", "--quick", "--xml", BAD],
    ["p2p", "--quick", "-o", BAD],
    ["validate-model", "-n", "2", "-o", BAD],
    ["overlap", "-n", "3", "-o", BAD],
    ["tune", "--strategy", "exhaustive", "--ops", "bcast", "-n", "2", "--sizes", "8", "-o", BAD],
    ["tune-nbc", "--table", "TABLE", "-o", BAD],
    ["verify", "--table", "TABLE", "-o", BAD],
    ["monitor", "-o", BAD, "--", "true"],
    ["suite", "--quick", "-o", BAD],
    ["export", "1", "-o", BAD],
    ["report", "-o", BAD],
    ["store", "backup", "-o", BAD],
    ["store", "backup", BAD],
]


# Runs every command line given (a JSON list) through the CLI in one process, one after the
# other, and prints [status, stdout, stderr] of each: one interpreter start for all of them.
DRIVER = """
import contextlib, io, json, sys
from colltune import cli
out = []
for argv in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            rc = cli.main(argv)
        except SystemExit as x:
            rc = x.code
    out.append([rc, o.getvalue(), e.getvalue()])
print(json.dumps(out))
"""


def test_a_bad_output_path_ends_every_writer_before_it_runs(tmp_path):
    table = tmp_path / "t.json"
    table.write_text("{}")
    db = tmp_path / "ct.db"
    env = {**os.environ, "COLLTUNE_DB": str(db), "PYTHONPATH": str(ROOT / "python")}
    argvs = [[str(table) if a == "TABLE" else a for a in argv] for argv in WRITERS]
    # Any of them measuring would take minutes: the timeout is the proof that none did.
    p = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argvs)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    failures = []
    for argv, (rc, out, err) in zip(argvs, json.loads(p.stdout), strict=True):
        lines = [ln for ln in err.splitlines() if ln.strip()]
        verb = "store backup" if argv[0] == "store" else argv[0]
        want = f"colltune {verb}: cannot write {BAD}: no such directory"
        if rc != 2 or lines != [want] or out:
            failures.append((argv, rc, out[-300:], err[-500:]))
    assert not failures, "\n".join(map(str, failures))
    # bench, the example of the issue, as a command of its own too
    q = run_cli(WRITERS[0], tmp_path, env)
    assert q.returncode == 2 and q.stderr == f"colltune bench: cannot write {BAD}: no such " \
                                              "directory\n" and not q.stdout
    if db.exists():  # nothing recorded, not even an "incomplete" run
        with Store.open(db) as store:
            assert store.runs() == []
    assert sorted(p.name for p in tmp_path.iterdir()) in (["t.json"], ["ct.db", "t.json"])


@pytest.mark.parametrize(("where", "why"), [
    ("missing/x.json", "no such directory"),
    (".", "it is a directory"),
    ("file/x.json", "is not a directory"),
])
def test_output_path_reasons(tmp_path, capsys, where, why):
    (tmp_path / "file").write_text("")
    path = tmp_path / where
    assert cli.main(["report", "-o", str(path), "--db", str(tmp_path / "ct.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"colltune report: cannot write {path}: ") and why in err, err


def test_db_is_the_store_every_verb_uses(tmp_path):
    """bench opens the store before measuring: --db naming a file that is not a store is
    refused with its path, as COLLTUNE_DB would be."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"),
           "COLLTUNE_DB": str(tmp_path / "other.db")}
    for argv in (["bench", "--ops", "bcast", "-n", "2", "--db", str(notes)],
                 ["runs", "--db", str(notes)]):
        p = run_cli(argv, tmp_path, env)
        assert p.returncode == 1 and str(notes) in p.stderr, (argv, p.stderr)
        assert "not an SQLite database" in p.stderr
    assert notes.read_text() == "not a database\n" * 100
    assert not (tmp_path / "other.db").exists()


def table_doc(build: str = "mpich", **extra) -> dict:
    from colltune.tune.tune import machine_id

    return {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0",
            "created_at": "2024-01-01T00:00:00", "strategy": "exhaustive",
            "machine": machine_id(), "mpi": {"build": build, "implementation": "MPICH",
                                             "version": "4"},
            "entries": [{"op": "bcast", "ranks": 2, "size_bytes": 8, "algorithm": "binomial",
                         "segsize": 0, "time_us": 1.0, "native_us": 2.0, "evaluations": 1}],
            **extra}


def test_which_tables_tune_would_replace(tmp_path):
    from colltune.tune.tune import replaced_table

    path = tmp_path / "t.json"
    points = [("bcast", 2, 8), ("bcast", 2, 16)]
    assert replaced_table(str(path), points, "exhaustive", "mpich") is None  # no file
    path.write_text(json.dumps(table_doc()))
    assert replaced_table(str(path), points, "exhaustive", "mpich") is None  # resumed
    assert "outside this grid (bcast)" in replaced_table(str(path), [("reduce", 2, 8)],
                                                         "exhaustive", "mpich")
    assert "another strategy or MPI" in replaced_table(str(path), points, "smgd", "mpich")
    assert "another strategy or MPI" in replaced_table(str(path), points, "exhaustive",
                                                       "openmpi")
    path.write_text(json.dumps(table_doc(verified={"verified_at": "2024"})))
    assert "colltune verify" in replaced_table(str(path), points, "exhaustive", "mpich")
    path.write_text("my notes")
    assert "not a colltune table" in replaced_table(str(path), points, "exhaustive", "mpich")


def test_tune_refuses_a_verified_table_without_force(tmp_path):
    from colltune.core.mpi import MPIBuild

    table = tmp_path / "colltune-table.json"
    text = json.dumps(table_doc(MPIBuild.select().name, verified={"verified_at": "2024"}))
    table.write_text(text)
    db = tmp_path / "ct.db"
    env = {**os.environ, "COLLTUNE_DB": str(db), "PYTHONPATH": str(ROOT / "python")}
    p = run_cli(["tune", "--strategy", "exhaustive", "--ops", "bcast", "-n", "2", "--sizes",
                 "8"], tmp_path, env)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert lines[0].startswith("colltune tune: colltune-table.json exists and is a table "
                               "checked by `colltune verify`")
    assert "--force" in lines[0]
    assert table.read_text() == text and not db.exists()


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_readme_lists_make_runs_stages():
    text = " ".join(readme().split())
    m = re.search(r"Its (\d+) stages are labelled `\[k/(\d+)\] name:`; in order: (.*?)\. ", text)
    assert m, "README: the sentence listing make run's stages is gone"
    assert int(m.group(1)) == int(m.group(2)) == len(STAGES)
    assert re.findall(r"`([^`]+)`", m.group(3)) == STAGES


def test_readme_lists_the_operations():
    text = " ".join(readme().split())
    m = re.search(r"`bench --ops` takes one of the (\w+) operations: (.*?)\. ", text)
    assert m
    assert tuple(re.findall(r"`([^`]+)`", m.group(2))) == COLLS
    assert m.group(1) == {8: "eight", 16: "sixteen"}.get(len(COLLS))


def test_algorithms_columns_never_run_together(capsys):
    from colltune.core.mpi import MPIBuild

    reg = MPIBuild.select().registry()
    assert cli.main(["algorithms"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    starts = [header.index(h) for h in ("collective", "algorithm", "properties", "summary")]
    assert len(rows) == len(reg)
    for line, a in zip(rows, reg, strict=True):
        cells = [line[s:e].strip() for s, e in zip(starts, [*starts[1:], None], strict=True)]
        assert cells[:2] == [a["coll"], a["name"]] and cells[3] == a["summary"], line
        for s in starts[1:]:
            assert line[s - 2:s] == "  ", line  # two spaces before every column
        if a["default_segsize"]:
            assert cells[2].endswith("B"), line  # "segment 64 KiB", whole, in its column


def test_bench_json_prints_the_document_on_stdout(tmp_path):
    """--json, a flag: stdout is the JSON document alone (a barrier: no sizes, quick)."""
    env = {**os.environ, "COLLTUNE_DB": str(tmp_path / "ct.db"),
           "PYTHONPATH": str(ROOT / "python"), "COLLTUNE_PROGRESS_INTERVAL": "0"}
    p = run_cli(["bench", "--ops", "barrier", "-n", "2", "--iters", "2", "--algs",
                 "native,ring", "--json"], tmp_path, env, timeout=120)
    assert p.returncode == 0, p.stderr[-1000:]
    doc = json.loads(p.stdout)
    assert doc["op"] == "barrier" and {r["algorithm"] for r in doc["results"]} == {"native",
                                                                                 "ring"}
    assert "recorded as run" in p.stderr


@pytest.mark.parametrize(("script", "tag"), [("scripts/setup.sh", "setup"),
                                             ("scripts/test.sh", "test"),
                                             ("scripts/build-matrix.sh", "matrix"),
                                             ("scripts/check-sanitize.sh", "sanitize"),
                                             ("scripts/test-wheel.sh", "test-wheel")])
def test_scripts_say_plain_text_off_a_terminal(script, tag):
    """The scripts' `say` (setup, test and the ones test.sh runs), its stderr a pipe (a CI
    log, `> log 2>&1`): no escape codes. (Only the definition runs: the scripts themselves
    build and test for minutes.)"""
    text = (ROOT / script).read_text()
    m = re.search(r"^if \[ -t 2 \]; then\n.*?^fi\n", text, re.S | re.M)
    assert m, f"{script}: say is no longer chosen by whether stderr is a terminal"
    p = subprocess.run(["bash", "-c", m.group(0) + "say hello"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0 and p.stderr == f"[{tag}] hello\n", p.stderr
