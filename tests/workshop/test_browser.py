"""The workshop as a learner sees it: JupyterLab in a real browser (Debian's headless Chromium, driven by
Playwright), a few notebooks run end to end with Run > Run All Cells, exercises not written yet, and what shows
on the screen checked: every plot an image, the unsolved exercises' one-line hints and no other error, no stderr
box, no Java stack, and Spark's start and a planned crash as plain lines.

Nothing is installed at test time: ``make setup`` installs Debian's ``chromium`` and the ``browser`` extra
(Playwright for Python), whose own browser download (``playwright install``) is never used. Screenshots of every
screen of each notebook are kept in ``tests/artifacts/browser/`` (ignored by git); the test prints where, and
how long each notebook took.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ministream.workshop.build import course_sources
from ministream.workshop.exercises import exercises_of
from ministream.workshop.notebooks.cells import KERNELSPEC

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.spark]

REPOSITORY = Path(__file__).resolve().parents[2]
ARTIFACTS = REPOSITORY / "tests" / "artifacts" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # runs as root in CI
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
KERNEL_DISPLAY = KERNELSPEC["display_name"]
"""The kernel every notebook asks for, "Python (ministream)": JupyterLab starts it without asking."""
NOTEBOOKS = ["00-start-here.ipynb", "02-tumbling-window.ipynb", "04-session-window.ipynb", "15-checkpoints.ipynb"]
"""The notebooks opened: the start, one with plots and Spark, one with a progress bar (a fuzz run), and the one
whose Spark queries crash on purpose."""

EXPECTED_LINES = {
    "02-tumbling-window.ipynb": ["starting Spark (about 10 s)"],
    "15-checkpoints.ipynb": [
        "starting Spark (about 10 s)",
        "Spark's query stopped in batch 3 as planned: foreachBatch raised after 1 of 3 rows",
        "Spark's query stopped in batch 1 as planned: foreachBatch raised after 0 of 3 rows",
    ],
}
"""Lines each notebook shows as plain output: Spark starting in a fresh kernel, the planned crash in one line."""

PLOTS = {"02-tumbling-window.ipynb": 2, "04-session-window.ipynb": 1, "15-checkpoints.ipynb": 1}
"""The plots each notebook draws (PNG images), at least."""

BARS = {"04-session-window.ipynb": 1}
"""The progress bars (tqdm's widget) each notebook shows."""

RUN_TIMEOUT = 900
"""Seconds a notebook may take to run all its cells (about a minute and a half on a busy 2-core machine)."""

JAVA_STACK = re.compile(r"^\s*at [\w$.]+\([\w$.]*(?::\d+)?\)|Py4JJavaError|Exception in thread", re.M)

SETTINGS = {
    # every cell stays in the page (JupyterLab 4 otherwise renders only the cells near the screen)
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # no news or update pop-up over the notebook (and no network call for them)
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(url: str, method: str = "GET"):
    with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as answer:
        body = answer.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """JupyterLab on a copy of the notebooks, as ``make notebooks`` starts it, on a free port with a token;
    yields its address and the token."""
    jupyter = Path(sys.executable).with_name("jupyter")
    if not CHROMIUM.exists():
        pytest.fail(f"the browser test needs Debian's chromium at {CHROMIUM}: run `make setup` (it installs it)")
    home = tmp_path_factory.mktemp("jupyterlab")
    folder = home / "notebooks"
    folder.mkdir()
    for name in NOTEBOOKS:
        shutil.copy(REPOSITORY / "notebooks" / name, folder / name)
    for path, values in SETTINGS.items():
        (home / "settings" / path).parent.mkdir(parents=True, exist_ok=True)
        (home / "settings" / path).write_text(json.dumps(values))
    port, token = free_port(), "ministream-browser-test"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "PYTHONUNBUFFERED": "1"}
    log = (home / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.token={token}",
            "--allow-root",
            f"--ServerApp.root_dir={folder}",
            f"--LabApp.user_settings_dir={home / 'settings'}",
            f"--LabApp.workspaces_dir={home / 'workspaces'}",
        ],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                api(f"{base}/api/status?token={token}")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(home / 'jupyterlab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, Debian's, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def screenshots(page, folder: Path) -> list[Path]:
    """Screenshots of the whole notebook, one screen at a time from the top: what a learner scrolls through."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    page.mouse.move(640, 888)  # over the status bar: no cell shows its hover shading in the pictures
    scroller = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"
    height = page.eval_on_selector(scroller, "element => element.scrollHeight")
    screen = page.eval_on_selector(scroller, "element => element.clientHeight")
    paths = []
    for index, top in enumerate(range(0, max(height, 1), max(screen - 40, 100))):
        page.eval_on_selector(scroller, f"element => element.scrollTo(0, {top})")
        page.wait_for_timeout(200)
        paths.append(folder / f"screen-{index:02d}.png")
        page.screenshot(path=str(paths[-1]))
    return paths


def what_shows(page) -> dict:
    """What the notebook on screen shows, read from the page: per code cell, its prompt and its outputs (kind
    and text), and the images drawn."""
    return page.evaluate(
        """() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const cells = [...panel.querySelectorAll('.jp-CodeCell')].map(cell => ({
            prompt: cell.querySelector('.jp-InputArea-prompt')?.innerText.trim() ?? '',
            outputs: [...cell.querySelectorAll('.jp-OutputArea-output')].map(output => ({
                mime: output.dataset.mimeType ?? '',
                text: output.innerText,
                images: [...output.querySelectorAll('img')].map(img => ({
                    src: img.getAttribute('src')?.slice(0, 22) ?? '', width: img.naturalWidth,
                    height: img.naturalHeight})),
                bars: output.querySelectorAll('.widget-hprogress').length,
            })),
        }));
        return {cells};
    }"""
    )


def run_all(page, base: str, token: str, name: str) -> float:
    """Open a notebook, wait for its kernel, click Run > Run All Cells and wait until every code cell has run;
    returns the seconds the run took."""
    # a workspace of its own, so that JupyterLab does not reopen the notebooks run before (each would start a
    # kernel again, and a dialog about one of them can keep the menu from opening)
    page.goto(f"{base}/lab/workspaces/{name.removesuffix('.ipynb')}/tree/{name}?token={token}&reset")
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=120_000)
    # the status bar says the notebook's own kernel is up: Run All before that would ask which kernel to start
    page.wait_for_selector(f".jp-StatusBar-TextItem:text-is('{KERNEL_DISPLAY} | Idle')", timeout=120_000)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    start = time.monotonic()
    page.wait_for_function(
        """() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.innerText);
        const busy = panel.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status !== 'idle';
        return prompts.length > 0 && !busy && prompts.every(p => /\\[\\d+\\]/.test(p));
    }""",
        timeout=RUN_TIMEOUT * 1000,
        polling=1000,
    )
    return time.monotonic() - start


def shut_down_kernels(base: str, token: str) -> None:
    """Stop every kernel the run started (each notebook has its own, with its own Spark)."""
    for kernel in api(f"{base}/api/kernels?token={token}"):
        api(f"{base}/api/kernels/{kernel['id']}?token={token}", method="DELETE")


def test_notebooks_run_all_in_a_browser(jupyterlab, browser):
    """In JupyterLab in Chromium, Run All Cells runs each notebook to its end in a fresh kernel, and the screen
    shows every plot as an image, the unsolved exercises' one-line hints and no other error, no stderr box and
    no Java stack, a fuzz run's progress bar; Spark's start and each planned crash are one plain line each."""
    base, token = jupyterlab
    hints = {source.name: len(exercises_of(source.lessons)) for source in course_sources()}
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    report, problems = [], []
    for name in NOTEBOOKS:
        seconds = run_all(page, base, token, name)
        shown = what_shows(page)
        shots = screenshots(page, ARTIFACTS / name.removesuffix(".ipynb"))
        shut_down_kernels(base, token)
        outputs = [output for cell in shown["cells"] for output in cell["outputs"]]
        images = [image for output in outputs for image in output["images"]]
        pngs = [image for image in images if image["src"].startswith("data:image/png")]
        diagrams = [image for image in images if image["src"].startswith("data:image/svg")]
        errors = [output["text"] for output in outputs if output["mime"] == "application/vnd.jupyter.stderr"]
        one_line_hints = [text for text in errors if text.startswith("✗ ") and "not written yet" in text]
        one_line_hints = [text for text in one_line_hints if len(text.strip().splitlines()) == 1]
        text = "\n".join(output["text"] for output in outputs)
        report.append(
            f"{name}: {len(shown['cells'])} code cells run in {seconds:.0f} s, {len(pngs)} plots and "
            f"{len(diagrams)} diagrams, {sum(o['bars'] for o in outputs)} progress bars shown, {len(errors)} error outputs "
            f"({len(one_line_hints)} exercise hints), {len(shots)} screenshots in {shots[0].parent}"
        )
        problems += [f"{name}: an image is not drawn: {image}" for image in images if image["width"] < 50]
        problems += [f"{name}: error or stderr box: {text[:300]!r}" for text in errors if text not in one_line_hints]
        if len(pngs) < PLOTS.get(name, 0):
            problems.append(f"{name}: {len(pngs)} plots shown, {PLOTS[name]} drawn")
        bars = sum(output["bars"] for output in outputs)
        if bars != BARS.get(name, 0):
            problems.append(f"{name}: {bars} progress bars shown, {BARS.get(name, 0)} expected")
        if len(one_line_hints) != hints[name]:
            problems.append(f"{name}: {len(one_line_hints)} exercise hints shown, {hints[name]} exercises")
        if JAVA_STACK.search(text):
            problems.append(f"{name}: a Java stack trace: {JAVA_STACK.search(text).group(0)!r}")
        problems += [f"{name}: not shown: {line!r}" for line in EXPECTED_LINES.get(name, []) if line not in text]
    print("\n" + "\n".join(report))
    assert problems == []
    assert [line.split(":")[0] for line in report] == NOTEBOOKS
