"""The dashboard as a person sees it: a real server process and headless Chromium.

Needs Playwright's Python package and Debian's /usr/bin/chromium (Playwright's own
browser download is not used). Skipped without them, except under CI, where a
missing browser is a setup bug and fails.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from colltune.store.store import Store

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# Reports are drawn on the fly; a loaded CI machine can take seconds per page.
PAGE_TIMEOUT_MS = 180_000


def _require_browser():
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "the playwright Python package"
    if not os.access(CHROMIUM, os.X_OK):
        missing = CHROMIUM
    if missing and os.environ.get("CI"):
        pytest.fail(f"{missing} is not installed; the setup must install it")
    if missing:
        pytest.skip(f"{missing} is not installed")
    return sync_playwright


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory, fixture_doc, record, record_evil, child_env):
    """A dashboard process over a store with runs 1 (MPICH), 2 (Open MPI) and 3 (markup)."""
    tmp = tmp_path_factory.mktemp("dashboard")
    db = tmp / "colltune.db"
    with Store.open(db) as store:
        record(store, [fixture_doc("bcast_mpich_16.json"), fixture_doc("allreduce_mpich_16.json")],
               argv=["colltune", "bench", "--op", "bcast,allreduce"])
        record(store, [fixture_doc("bcast_openmpi_16.json")],
               argv=["colltune", "bench", "--op", "bcast"])
        record_evil(store, fixture_doc("bcast_mpich_16.json"))
    log = (tmp / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "colltune.cli", "serve", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE, stderr=log, text=True, env=child_env())
    try:
        url = _announced_url(proc)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C must stop it cleanly
        status = proc.wait(timeout=30)
        log.close()
    assert status == 0, (tmp / "server.log").read_text()
    assert "stopped" in (tmp / "server.log").read_text()


def _announced_url(proc: subprocess.Popen) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    if not selector.select(timeout=120):
        proc.kill()
        pytest.fail("the dashboard did not start within 120 s")
    line = proc.stdout.readline()
    assert line.startswith("colltune dashboard on http://127.0.0.1:"), line
    return line.split()[3]


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _require_browser()
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A fresh page that records any dialog (an alert would mean injected script ran)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    dialogs = []

    def on_dialog(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    yield page
    context.close()
    assert dialogs == []


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def _check_plots_drawn(page, count: int) -> None:
    plots = page.locator("figure svg")
    assert plots.count() == count
    for i in range(count):
        plot = plots.nth(i)
        plot.scroll_into_view_if_needed()
        box = plot.bounding_box()
        assert box["width"] > 300 and box["height"] > 150
        assert plot.locator("path").count() > 10


def test_runs_are_listed_and_filtered(dashboard, page):
    page.goto(dashboard)
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 3
    assert "Open MPI 4.1.4" in rows.nth(1).inner_text()
    assert "MPICH 4.2.0" in rows.nth(2).inner_text()
    page.fill("input[name=mpi]", "open mpi")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"mpi=open\+mpi"))
    assert rows.count() == 1 and "Open MPI" in rows.first.inner_text()
    page.fill("input[name=q]", "no such run")
    page.click("form.filters button[type=submit]")
    assert page.locator("#no-runs").is_visible()


def test_a_report_opens_with_its_plots_drawn(dashboard, page, tmp_path):
    page.goto(dashboard)
    page.click("a.report[href='/run/1']")
    page.wait_for_url("**/run/1")
    assert page.title() == "colltune report: run 1"
    # The answer first (issue 39): the summary section before the runs and the figures.
    assert page.locator("main > section").first.get_attribute("id") == "summary"
    _check_plots_drawn(page, 6)  # bcast and allreduce: latency, ratio, heatmap
    assert page.locator("section#environment").inner_text().count("MPICH") >= 2
    page.click("summary:has-text('Table behind figure 1')")
    assert page.locator("figure#fig-1 + details table").is_visible()
    assert _screenshot(page, tmp_path, "report-run-1.png").stat().st_size > 10_000


def test_two_runs_are_compared(dashboard, page, tmp_path):
    page.goto(dashboard)
    page.check("input[name=run][value='1']")
    page.check("input[name=run][value='2']")
    page.click("#compare")
    page.wait_for_url(re.compile(r"/compare\?"))
    _check_plots_drawn(page, 6)  # bcast of both runs overlaid, allreduce of run 1
    latency_plot = page.locator("figure#fig-1 svg")
    assert "run 1 MPICH 4.2.0" in latency_plot.inner_html()
    assert "run 2 Open MPI 4.1.4" in latency_plot.inner_html()
    comparison = page.locator("h3:has-text('Run 2 (B) against run 1 (A)')")
    assert comparison.count() == 1
    assert page.locator("td .faster, td .slower").count() > 0
    _screenshot(page, tmp_path, "compare-1-2.png")

    page.goto(dashboard + "compare?run=1")
    assert "tick exactly two runs" in page.inner_text("body")


def test_stored_markup_shows_as_text(dashboard, page, evil, tmp_path):
    for path in ("", "run/3", "compare?run=3&run=1"):
        page.goto(dashboard + path)
        assert evil in page.inner_text("body"), path
        injected = page.evaluate(
            "document.querySelectorAll('script, b, img, iframe, object').length")
        assert injected == 0, path
    assert page.locator("figure#fig-1 svg text", has_text=evil).count() > 0  # the legend
    _screenshot(page, tmp_path, "markup.png")


def test_only_loopback_names_and_known_pages_are_served(dashboard):
    def status(path: str, host: str | None = None) -> int:
        request = urllib.request.Request(dashboard + path)
        if host:
            request.add_header("Host", host)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as err:
            return err.code

    assert status("", host="attacker.example") == 403
    assert status("", host="localhost:8050") == 200
    assert status("nothing/here") == 404
    assert status("run/999") == 404
    assert status("?limit=lots") == 400
    assert status("run/2.json") == 200


def test_csv_download_has_every_result(dashboard, fixture_doc):
    with urllib.request.urlopen(dashboard + "run/2.csv", timeout=60) as response:
        lines = response.read().decode().splitlines()
        assert "attachment" in response.headers["Content-Disposition"]
    assert len(lines) == 1 + len(fixture_doc("bcast_openmpi_16.json")["results"])


def test_the_report_opens_with_its_answer(page, tmp_path, record):
    """Issue 39, must-show 3: the report of a recorded bench on a loaded machine opens with
    the summary block (first section, above every figure, in the first screen), which
    carries the speed-up legend, the load warning and intervals; and the page writes
    ratios one way only (no latency/native, colltune/native or tuned/native left)."""
    import json

    from colltune.report.report import write_report

    doc = json.loads((Path(__file__).parent / "fixtures" / "bench_loaded_2core.json")
                     .read_text())
    with Store.open(tmp_path / "ct.db") as store:
        run_id = record(store, [doc], argv=["colltune", "bench", "--op", "bcast"])
        out = write_report(store, [run_id], str(tmp_path / "report.html"))
    page.goto(Path(out).as_uri())
    assert page.locator("main > section").first.get_attribute("id") == "summary"
    summary = page.locator("section#summary")
    top = summary.bounding_box()["y"]
    assert top < 900  # in the first screen, under the title
    figures = page.locator("figure")
    assert figures.count() >= 2
    assert all(figures.nth(i).bounding_box()["y"] > top for i in range(figures.count()))
    text = summary.inner_text()
    assert "speed-up = native time / colltune time" in text
    assert "exceeds its 2 cores" in text and "no difference within noise" in text
    assert re.search(r"256 KiB: binomial \d\.\d+ \[\d\.\d+, \d\.\d+\]", text), text
    body = page.inner_text("body")
    for other in ("latency / best native", "ratio B/A", "ct/native", "tuned / native",
                  "ratio to the best native", "ratio to best native"):
        assert other not in body, other
    assert "speed-up" in page.locator("figure svg").nth(1).inner_html()
    page.screenshot(path=str(tmp_path / "report-summary.png"))
    print(f"screenshot: {tmp_path / 'report-summary.png'}")
