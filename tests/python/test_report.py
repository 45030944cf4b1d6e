"""The HTML report, from fixture runs in a real store."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser

import pytest
from colltune import cli
from colltune.report.report import render_report, write_report
from colltune.store.store import Store

# What the report may reference from outside itself: nothing (data: URIs are inline).
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?!#|data:)[a-z]+:|url\(\s*["']?https?:|"""
                      r"""@import|<link\b|<script\b""", re.IGNORECASE)


class Page(HTMLParser):
    """The tags and the text of an HTML document, as a browser's parser sees them."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


@pytest.fixture(scope="module")
def one_run_report(tmp_path_factory, fixture_doc, record):
    """Run 1's report, drawn once for the tests that only read it."""
    tmp = tmp_path_factory.mktemp("report")
    with Store.open(tmp / "c.db") as store:
        run_id = record(store, [fixture_doc("bcast_mpich_16.json"),
                                fixture_doc("allreduce_mpich_16.json")],
                        argv=["colltune", "bench", "--op", "bcast,allreduce", "-n", "16"])
        out = tmp / "report.html"
        assert write_report(store, [run_id], str(out)) == str(out)
    return out


def test_report_has_plots_tables_and_provenance(one_run_report, machine, docs):
    text = one_run_report.read_text()
    page = Page(text)
    assert page.tags.count("svg") == 6  # bcast and allreduce: latency, ratio, heatmap
    assert page.tags.count("path") > 100
    assert page.tags.count("figure") == 6 and page.tags.count("table") >= 8
    assert "Figure 6." in page.all_text
    for fact in (machine["hostname"], machine["cpu_model"], "32768K", "Debian GNU/Linux 12",
                 "MPICH", "4.2.0", "MPICH Device:       ch4:ofi", "core"):
        assert fact in page.all_text, fact
    # How to reproduce each figure: the colltune command, the benchmark it ran, the report.
    assert page.all_text.count("Reproduce figure") == 6
    assert "colltune bench --op bcast,allreduce -n 16" in page.all_text
    assert docs["bcast_mpich"]["command"] in page.all_text
    assert docs["allreduce_mpich"]["command"] in page.all_text
    assert "colltune report 1 -o report.html" in page.all_text


def test_report_is_self_contained(one_run_report):
    text = one_run_report.read_text()
    assert EXTERNAL.search(text) is None
    assert "<style>" in text and text.rstrip().endswith("</html>")
    assert not [p for p in one_run_report.parent.iterdir() if p.name.startswith(".")]


def test_report_tables_hold_the_plotted_numbers(one_run_report, docs):
    text = Page(one_run_report.read_text()).all_text
    native_4mib = next(r for r in docs["bcast_mpich"]["results"]
                       if r["algorithm"] == "native" and r["size"] == 4 * 2**20)
    assert f"{native_4mib['median_us']:.0f}" in text
    assert "4 MiB" in text and "8 B" in text
    assert "pipeline seg 16 KiB" in text and "pipeline seg 64 KiB" in text


def test_two_runs_are_compared_where_both_measured(filled_db):
    with Store.open(filled_db) as store:
        text = Page(render_report(store, [1, 2])).all_text
    # Only bcast was measured by both runs.
    assert text.count("Run 2 (B) against run 1 (A)") == 1
    assert "native · run 1 MPICH 4.2.0" in text and "native · run 2 Open MPI 4.1.4" in text
    assert "best native, run 1 (µs)" in text


def test_stored_markup_is_escaped_everywhere(tmp_path, docs, record_evil, evil):
    with Store.open(tmp_path / "c.db") as store:
        run_id = record_evil(store, docs["bcast_mpich"])
        store.begin_run("bench", [evil]).finish("failed", evil)
        text = render_report(store, [run_id, run_id + 1])
    page = Page(text)
    assert not {"script", "b", "img"} & set(page.tags)
    assert evil in page.all_text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert f"host{evil}" in page.all_text and f"Evil{evil} 6.6" in page.all_text
    # Plot labels are plain text: no mathtext, no legend entry hidden for a leading "_".
    latency_svg = re.search(r"<svg.*?</svg>", text, re.DOTALL).group(0)
    assert "$a^b$" in latency_svg and "_hidden" in latency_svg
    assert "&lt;script&gt;" in latency_svg


def test_sections_follow_what_the_runs_hold(tmp_path, docs, record):
    no_native = copy.deepcopy(docs["allreduce_mpich"])
    no_native["results"] = [r for r in no_native["results"] if r["algorithm"] != "native"]
    no_native["results"][0]["check"] = "FAILED"  # as ct_bench writes it
    no_native["results"][1]["check"] = "not checked"  # not a failure
    with Store.open(tmp_path / "c.db") as store:
        text = render_report(store, [record(store, [no_native])])
        empty = render_report(store, [record(store, [])])
    page = Page(text)
    assert page.tags.count("svg") == 1  # latency only: nothing to take a ratio to
    assert "No native measurement" in page.all_text
    assert "1 result(s) failed the correctness check" in page.all_text
    assert "against run" not in page.all_text
    empty_page = Page(empty)
    assert "svg" not in empty_page.tags and "recorded no benchmark results" in empty_page.all_text


def test_report_verb_defaults_to_the_latest_complete_run_with_results(filled_db, tmp_path,
                                                                     record, docs, capsys):
    with Store.open(filled_db) as store:
        record(store, [])  # complete, but nothing to show
        record(store, [docs["bcast_mpich"]], status="failed")
    out = tmp_path / "latest.html"
    assert cli.main(["report", "--db", str(filled_db), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert "colltune report: run 2</title>" in out.read_text()


def test_report_verb_without_any_complete_run(tmp_path, capsys):
    db = tmp_path / "c.db"
    Store.open(db).close()
    assert cli.main(["report", "--db", str(db), "-o", str(tmp_path / "r.html")]) == 1
    assert "no complete run with results" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_the_colltune_command_has_the_store_verbs():
    parser = cli.build_parser()
    for verb in ("runs", "export", "report", "serve"):
        assert parser.parse_args([verb, "1"] if verb == "export" else [verb]).func
