"""The results explorer in a real browser (Debian's Chromium, driven by Playwright): the page
loads from disk and from `python -m http.server` without a console error or a request that
leaves the folder, a filter changes the rows, a column sorts, a transcript opens beside its
grid, the truth shows only when asked for, and a screenshot is not blank. `make test-slow`
installs Chromium and Playwright first (`make browser`)."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from pipeline.evaluation.explorer import build_view
from tests.helpers_release import compose_config

pytestmark = pytest.mark.slow
HOSTILE = '<img src="https://example.invalid/x.png" onerror="alert(1)"><script>alert(2)</script>'
CHROMIUM = os.environ.get("GRIDBENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def view(small_release, tmp_path_factory) -> Path:
    from gridbench.commands.evaluate import evaluate

    root = tmp_path_factory.mktemp("browser") / "runs"
    for agent in ("search", "greedy_local", "budget_aware"):
        overrides = [f"release={small_release}", f"agent={agent}", f"output_root={root}", "workers=1"]
        assert evaluate(compose_config(overrides, "evaluate", "apps")) == 0
    # outside text that would run or load something if it were written as markup
    run = root / small_release.name / "search"
    path = sorted((run / "transcripts").glob("*.json.gz"))[0]
    record = json.loads(gzip.decompress(path.read_bytes()))
    record["transcript"][0]["result"]["message"] = HOSTILE
    path.write_bytes(gzip.compress(json.dumps(record).encode(), mtime=0))
    out = root.parent / "view"
    build_view([root / small_release.name], out, {small_release.name: small_release})
    return out


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test-slow` installs it (make browser: apt-get install chromium)"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is missing: `make test-slow` installs it (make browser)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def open_page(browser, url: str):
    """A page at ``url`` that records console errors and every request that leaves it."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    base = url.rsplit("/", 1)[0]
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append(f"request: {r.url}"))
    page.goto(url)
    page.wait_for_selector("#episodes tbody tr")
    return page, problems


def screenshot_is_not_blank(path: Path) -> None:
    import matplotlib.image

    pixels = matplotlib.image.imread(path)
    assert pixels.shape[0] > 500 and pixels.shape[1] > 1000
    assert pixels[..., :3].std() > 0.05  # not one flat colour
    assert (pixels[..., :3].mean(axis=2) < 0.5).mean() > 0.01  # text and cells are drawn


def test_the_explorer_works_from_disk(browser, view, tmp_path):
    page, problems = open_page(browser, (view / "index.html").as_uri())
    assert "scored episodes" in page.inner_text("#subtitle")
    assert page.locator("table.heat").count() == 3 and page.locator("table.diagnostics").count() == 1
    tasks = page.locator("#tasks tbody tr")
    every = tasks.count()
    page.select_option("#task-filter-domain", "toy")
    assert 0 < tasks.count() < every
    page.click("#tasks thead th[data-key='run:greedy_local']")
    tasks.first.click()  # lists the task's episodes, one per run
    assert page.locator("#episodes tbody tr").count() == 3
    page.fill("#filter-text", "")
    page.dispatch_event("#filter-text", "input")
    total = page.locator("#episodes tbody tr").count()
    page.select_option("#filter-run", "search")
    assert 0 < page.locator("#episodes tbody tr").count() < total
    page.select_option("#filter-domain", "toy")
    rows = page.locator("#episodes tbody tr")
    assert rows.count() == 4 and "4 of" in page.inner_text("#count")
    page.fill("#filter-text", "no-such-task")
    assert rows.count() == 0
    page.fill("#filter-text", "")
    page.click("#episodes thead th[data-key='steps']")
    page.click("#episodes thead th[data-key='steps']")  # descending
    steps = [
        int(page.inner_text(f"#episodes tbody tr:nth-child({k}) td:nth-child(10)")) for k in (1, 2, 3, 4)
    ]
    assert steps == sorted(steps, reverse=True)
    rows.first.click()
    page.wait_for_selector("#transcript .event")
    assert page.locator("#transcript .event").count() > 3
    assert page.locator("table.board td.hidden").count() > 0
    assert page.locator("table.board td.right").count() == 0  # the truth is hidden
    page.locator("#transcript .event").nth(0).click()  # the grid after the first call
    page.click("#reveal")
    page.wait_for_selector("table.board td.right, table.board td.wrong")
    page.locator("#step").fill(page.locator("#step").get_attribute("max"))
    page.dispatch_event("#step", "input")
    assert page.locator("table.board td.wrong").count() == 0  # search solves it
    shots = Path(os.environ.get("GRIDBENCH_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    page.locator("#episode").scroll_into_view_if_needed()
    page.screenshot(path=shots / "explorer-episode.png")
    screenshot_is_not_blank(shots / "explorer-episode.png")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=shots / "explorer-top.png")
    screenshot_is_not_blank(shots / "explorer-top.png")
    assert problems == []


def test_outside_text_is_shown_as_text(browser, view):
    page, problems = open_page(browser, (view / "index.html").as_uri())
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.select_option("#filter-run", "search")
    for k in range(page.locator("#episodes tbody tr").count()):
        page.locator("#episodes tbody tr").nth(k).click()
        page.wait_for_selector("#transcript .event")
        if HOSTILE in page.inner_text("#transcript"):
            break
    assert HOSTILE in page.inner_text("#transcript")
    assert page.locator("#episode img, #episode script").count() == 0
    assert dialogs == [] and problems == []


def test_the_explorer_works_behind_a_static_server(browser, view, tmp_path):
    served = tmp_path / "served"
    shutil.copytree(view, served)
    handler = functools.partial(QuietHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        page, problems = open_page(browser, url)
        page.select_option("#filter-run", "greedy_local")
        page.select_option("#filter-success", "false")
        failed = page.locator("#episodes tbody tr")
        if failed.count():
            failed.first.click()
            page.wait_for_selector("#transcript .event")
            page.click("#reveal")
            page.wait_for_selector("table.board td.wrong")  # what greedy placed wrong shows
        key = (
            page.locator("#episodes tbody tr").first.get_attribute("data-episode") if failed.count() else None
        )
        if key:  # a link to an episode opens it
            link, more = open_page(browser, f"{url}#episode={key}")
            link.wait_for_selector("#transcript .event")
            problems += more
        assert problems == []
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """The static server of the docs, without its request log."""

    def log_message(self, *args) -> None:
        pass
