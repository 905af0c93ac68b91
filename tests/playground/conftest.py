"""The playground in a real browser: the distribution's Chromium (never a browser download) driven by Playwright,
against live reference servers on 127.0.0.1, one per chat prefix, started when a test first needs it."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.reference_server.conftest import ServerProcess, start_server_process
from tools import build_playground

PREFIXES = {"default": "/v3/projects/{project_id}/chat", "copilot": "/v3/copilot/projects/{project_id}/chat"}
SCRIPTS = Path(__file__).resolve().parent / "scripts"  # the tests' own fake-LLM scripts, besides the built-in ones
CHROMIUM_NAMES = ("chromium", "chromium-browser")
# The machine's closed network refuses Chromium's background connections (updates, sync, field trials): without
# these flags it keeps trying them.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
]
VIEWPORT = {"width": 1280, "height": 800}
TOKEN_KEY = "gns3-copilot-playground.token"  # playground/src/App.tsx

expect.set_options(timeout=10_000)


def chromium_executable() -> str:
    """The distribution's Chromium; a failure (not a skip) when it is missing: the project's set-up installs it."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    pytest.fail(
        "Chromium is not installed: the playground's browser tests drive the distribution's package (never a browser "
        "download). Install it (Debian: `apt-get install chromium`; `python3 tasks.py test` does it as root), then "
        "run the tests again.",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def built_playground() -> Path:
    if not build_playground.is_fresh():
        pytest.fail(
            "playground/dist/ is missing or older than playground/'s sources: run `python3 tools/build_playground.py` "
            "(`python3 tasks.py test` does)",
            pytrace=False,
        )
    return build_playground.DIST


@pytest.fixture(scope="module")
def browser(built_playground: Path) -> Iterator[Browser]:
    executable = chromium_executable()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str, bool], ServerProcess]]:
    """(prefix, with the tests' own scripts) -> a live reference server, started on first use, stopped by pid."""
    started: dict[tuple[str, bool], ServerProcess] = {}

    def server(prefix: str, test_scripts: bool) -> ServerProcess:
        if (prefix, test_scripts) not in started:
            data_dir = tmp_path_factory.mktemp("playground") / "data"
            arguments = ["--heartbeat-interval", "0.2", "--chat-prefix", prefix]
            if test_scripts:
                arguments += ["--fake-llm-scripts", str(SCRIPTS)]
            started[prefix, test_scripts] = start_server_process(data_dir, *arguments)
        return started[prefix, test_scripts]

    try:
        yield server
    finally:
        for process in started.values():
            process.stop()


@dataclass
class Playground:
    """One browser page on the playground of one server, with what the tests do there and see there."""

    page: Page
    base_url: str
    prefix: str
    requests: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # uncaught exceptions and console errors of the page

    def open(self) -> None:
        self.page.goto(f"{self.base_url}/playground")

    def log_in(self, username: str = "admin", password: str = "admin") -> None:
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()
        expect(self.page.get_by_role("button", name="Log out")).to_be_visible()

    def create_project(self) -> str:
        self.page.get_by_label("New project name").fill(f"playground-{uuid.uuid4().hex[:8]}")
        self.page.get_by_role("button", name="Create project").click()
        expect(self.page.get_by_label("Message")).to_be_visible()
        return self.page.get_by_label("Project", exact=True).input_value()

    def scenario(self, name: str) -> Locator:
        return self.page.get_by_role("group", name="Fake LLM scenarios").get_by_role("button", name=name, exact=True)

    def send(self, text: str, scenario: str | None = None) -> None:
        """Type `text`, then send it with a scenario's button, or with Enter."""
        self.page.get_by_label("Message").fill(text)
        if scenario is None:
            self.page.get_by_label("Message").press("Enter")
        else:
            self.scenario(scenario).click()

    def wait_for_turn_end(self) -> None:
        """After the turn's answer was seen: its stream has ended (Send is back where Stop was)."""
        expect(self.page.get_by_role("button", name="Stop")).to_have_count(0)
        expect(self.page.get_by_role("button", name="Send")).to_be_visible()

    def session(self, title: str) -> Locator:
        return self.page.get_by_test_id("session").filter(
            has=self.page.get_by_test_id("session-title").get_by_text(title, exact=True)
        )

    def statistic(self, name: str) -> Locator:
        return self.page.get_by_test_id("statistics").locator(f"[data-stat={name}]")

    def api(self) -> httpx.Client:
        """An API client with the page's own token (as the page keeps it across reloads)."""
        token = self.page.evaluate(f"localStorage.getItem({TOKEN_KEY!r})")
        assert token, "the page keeps no token"
        return httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=10)

    def sessions(self, project_id: str) -> dict[str, dict[str, Any]]:
        with self.api() as client:
            response = client.get(self.prefix.format(project_id=project_id) + "/sessions")
        assert response.status_code == 200, response.text
        return {session["thread_id"]: session for session in response.json()}

    def foreign_requests(self) -> list[str]:
        return [url for url in self.requests if not url.startswith((self.base_url + "/", "data:"))]


@pytest.fixture
def open_playground(
    browser: Browser, servers: Callable[[str, bool], ServerProcess]
) -> Iterator[Callable[..., Playground]]:
    """(prefix, test_scripts=False) -> a new browser context's page (1280x800) on that prefix's server, which plays
    the tests' own scripts too when asked; afterwards, the page must have asked nothing of any other host and had
    no error."""
    made: list[tuple[Any, Playground]] = []

    def make(prefix: str, *, test_scripts: bool = False) -> Playground:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        playground = Playground(page, servers(prefix, test_scripts).base_url, prefix)
        page.on("request", lambda request: playground.requests.append(request.url))
        page.on("pageerror", lambda error: playground.problems.append(f"uncaught: {error}"))
        page.on(
            "console",
            lambda message: message.type == "error" and playground.problems.append(f"console: {message.text}"),
        )
        made.append((context, playground))
        return playground

    yield make
    for context, playground in made:
        context.close()
        assert playground.foreign_requests() == [], "the page asked another host: nothing may come from elsewhere"
        assert playground.problems == [], "the page had errors"
