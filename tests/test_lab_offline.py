"""JupyterLab stays offline: a chapter renders, no news prompt, nothing requested from outside.

The environment's lab settings (jupyter/overrides.json, installed by ``make env`` into
.venv/share/jupyter/lab/settings/) and server settings (jupyter/jupyter_lab_config.json)
turn off Jupyter's news, its update check and the extension manager. Here JupyterLab
is started from this environment on a free local port (with user settings, workspaces
and runtime files in a temporary folder, so a developer's own ~/.jupyter plays no
part), a chapter is opened in headless Chromium (tools/browser.py), and the page must
show the chapter with its formulas typeset by MathJax, no news prompt, and no request
but to the local server, and none that makes the server fetch news, updates or
extensions for it. A control run with the settings and the news feed switched back
on must show the prompt, so the check is not vacuous.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import browser  # tools/browser.py

ROOT = Path(__file__).resolve().parents[1]
PREFIX = Path(sys.prefix)
OVERRIDES = PREFIX / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
SERVER_CONFIG = PREFIX / "etc" / "jupyter" / "jupyter_lab_config.json"
CHAPTER = "03_sinusoidal.ipynb"  # its first cell holds formulas
#: Server endpoints that make JupyterLab's server reach the network for the page.
CALLS_OUT = ("/lab/api/news", "/lab/api/update", "/lab/api/extensions")
NEWS_PROMPT = "official Jupyter news"

# Waits for the chapter's first cells and their formulas, then long enough for the news
# prompt, which JupyterLab shows shortly after it starts; reports what a reader sees.
PROBE = r"""
(async () => {
  const wait = ms => new Promise(resolve => setTimeout(resolve, ms));
  const started = Date.now();
  const seen = () => ({
    markdown: document.querySelectorAll(".jp-Notebook .jp-RenderedMarkdown").length,
    formulas: document.querySelectorAll(".jp-Notebook .jp-RenderedMarkdown mjx-container").length,
  });
  while (Date.now() - started < 90000 && !(seen().markdown && seen().formulas)) await wait(250);
  await wait(8000);
  const verbatim = "script, style, code, pre, mjx-container, .jp-InputArea-editor, .cm-editor";
  const raw = [...document.querySelectorAll(".jp-Notebook .jp-RenderedMarkdown")]
    .flatMap(cell => [...cell.querySelectorAll("p, li, td, h1, h2")])
    .filter(node => !node.closest(verbatim))
    .map(node => node.innerText)
    .filter(text => /\$[^$\s][^$]*\$|\\\(|\\\[/.test(text))
    .map(text => text.slice(0, 100));
  return {
    ...seen(),
    title: (document.querySelector(".jp-Notebook .jp-RenderedMarkdown h1") || {}).innerText,
    texErrors: document.querySelectorAll(".jp-Notebook mjx-merror").length,
    raw,
    body: document.body.innerText,
    toasts: [...document.querySelectorAll(".Toastify__toast")].map(t => t.innerText),
  };
})()
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_lab(tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str, Path]:
    """JupyterLab from this environment on a free port; returns (process, base url, log)."""
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
    }
    log = tmp / "lab.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={ROOT / 'notebooks'}",
                *(["--allow-root"] if os.geteuid() == 0 else []),  # CI runs as root
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                break
        except OSError as error:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"JupyterLab did not start:\n{log.read_text()[-3000:]}"
                ) from error
            time.sleep(0.5)
    return process, f"{base}/lab/tree/{CHAPTER}?token={token}", log


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def open_chapter(
    chrome: browser.Chromium, tmp: Path, *extra: str
) -> tuple[browser.PageVisit, str, str]:
    process, url, log = start_lab(tmp, *extra)
    try:
        visit = chrome.visit(url, PROBE)
    finally:
        stop(process)
    return visit, url.split("/lab/")[0], log.read_text(errors="replace")


@pytest.fixture(scope="module")
def chrome() -> Iterator[browser.Chromium]:
    with browser.Chromium(browser.require_for_tests(), height=1600, timeout=150) as chromium:
        yield chromium


def test_the_environment_ships_the_offline_settings():
    for installed, committed in (
        (OVERRIDES, ROOT / "jupyter" / "overrides.json"),
        (SERVER_CONFIG, ROOT / "jupyter" / "jupyter_lab_config.json"),
    ):
        assert installed.is_file(), f"{installed} is missing: run `make env`"
        assert json.loads(installed.read_text()) == json.loads(committed.read_text()), (
            f"{installed} differs from {committed}: run `make env`"
        )
    settings = json.loads(OVERRIDES.read_text())["@jupyterlab/apputils-extension:notification"]
    assert settings == {"fetchNews": "false", "checkForUpdates": False}


def test_a_chapter_renders_in_jupyterlab_with_no_prompt_and_no_request_leaving(chrome, tmp_path):
    visit, base, log = open_chapter(chrome, tmp_path)
    seen = visit.result
    print({k: v for k, v in seen.items() if k != "body"}, len(visit.requests), "requests")
    assert seen["markdown"] and seen["formulas"], (
        f"the chapter did not render with typeset formulas: {seen}\n{log[-2000:]}"
    )
    assert seen["title"].startswith("3 · The sinusoidal encoding"), seen["title"]
    assert not seen["texErrors"] and not seen["raw"], seen
    assert NEWS_PROMPT not in seen["body"] and not seen["toasts"], seen["toasts"]
    leaving = visit.remote_requests(allowed_prefixes=(base + "/",))
    assert not leaving, f"requests leaving the machine: {leaving}"
    calls_out = [url for url in visit.requests if any(path in url for path in CALLS_OUT)]
    assert not calls_out, f"requests that make the server call out: {calls_out}"


def test_the_check_sees_the_news_prompt_when_the_settings_are_off(chrome, tmp_path):
    """Control: JupyterLab's own defaults (no overrides, the news feed on) ask the question."""
    empty = tmp_path / "no-overrides"
    empty.mkdir()
    visit, _, log = open_chapter(
        chrome,
        tmp_path,
        f"--LabApp.app_settings_dir={empty}",
        "--LabApp.news_url=https://jupyterlab.github.io/assets/feed.xml",
    )
    assert NEWS_PROMPT in visit.result["body"], (
        f"no news prompt with the defaults: the check would not see one\n{log[-2000:]}"
    )
