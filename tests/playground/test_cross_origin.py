"""The playground served from another origin (as Vite's development server serves a chat UI), talking to a
reference server named by `?server=`: its `useChat` turn streams when the server names that origin
(`--cors-origin`), and the page says what to do when it does not (the browser refuses it every answer)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.reference_server.conftest import start_server_process

from .conftest import VIEWPORT, Playground

pytestmark = pytest.mark.slow  # a real browser: left out of `python3 tasks.py test --quick`


@pytest.fixture(scope="module")
def other_origin(built_playground: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A plain static server of the built page on its own port of 127.0.0.1: another origin than the API's."""
    root = tmp_path_factory.mktemp("elsewhere")
    (root / "playground").symlink_to(built_playground, target_is_directory=True)
    handler = functools.partial(QuietFiles, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def _page_elsewhere(browser: Browser, origin: str, api: str) -> Playground:
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.goto(f"{origin}/playground/index.html?server={api}")
    return Playground(page, api, "/v3/projects/{project_id}/chat")


def test_a_page_on_a_named_origin_chats_through_use_chat(browser, other_origin, tmp_path):
    server = start_server_process(tmp_path / "data", "--heartbeat-interval", "0.2", "--cors-origin", other_origin)
    try:
        playground = _page_elsewhere(browser, other_origin, server.base_url)
        asked: list[str] = []
        playground.page.on("request", lambda request: asked.append(request.url))
        playground.log_in()
        playground.create_project()
        with playground.page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/ui")) as sent:
            playground.send("Is the lab healthy?", scenario="plain")
        assert sent.value.url.startswith(server.base_url) and sent.value.status == 200
        answer = playground.page.get_by_test_id("message-assistant")
        expect(answer.locator(".text")).to_have_text("The lab looks healthy.")
        playground.wait_for_turn_end()
        assert {url.split("/", 3)[2] for url in asked} == {server.base_url.split("/", 3)[2]}  # every call to the API
    finally:
        server.stop()


def test_a_page_on_an_origin_the_server_does_not_name_says_what_to_do(browser, other_origin, tmp_path):
    server = start_server_process(tmp_path / "data")  # no --cors-origin
    try:
        page = _page_elsewhere(browser, other_origin, server.base_url).page
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text(f"Cannot read {server.base_url}/playground/config.json")
        expect(alert).to_contain_text(f"needs the server started with --cors-origin {other_origin}")
    finally:
        server.stop()
