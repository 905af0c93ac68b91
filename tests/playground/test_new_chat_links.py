"""A chat that has no turn yet is not on the server (UI-001 creates the session with its first turn): reloading the
page before the first message, or opening a link that names such a chat, shows a new conversation without asking
the server for messages it does not have, so the browser logs no failed request."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, Response, expect

from .conftest import PREFIXES, Playground

pytestmark = pytest.mark.slow  # a real browser: left out of `python3 tasks.py test --quick`


def refusals(page: Page) -> list[str]:
    """Every answer of 400 or more that the page gets from now on, as it arrives."""
    refused: list[str] = []

    def seen(response: Response) -> None:
        if response.status >= 400:
            refused.append(f"{response.status} {response.request.method} {response.url}")

    page.on("response", seen)
    return refused


def place(page: Page) -> dict[str, str]:
    """The page's `#project=...&session=...` (playground/src/location.ts)."""
    return {key: values[0] for key, values in parse_qs(urlsplit(page.url).fragment).items()}


def chat_once(playground: Playground, text: str) -> None:
    """A turn in the open conversation, to its end: whatever the page asked before it has been answered by then."""
    expect(playground.page.get_by_role("heading", name="New conversation")).to_be_visible()
    expect(playground.page.get_by_test_id("message-user")).to_have_count(0)
    playground.send(text, scenario="plain")
    expect(playground.page.get_by_test_id("message-assistant").locator(".text")).to_have_text("The lab looks healthy.")
    playground.wait_for_turn_end()


def test_a_new_chat_reloaded_before_its_first_message_or_opened_from_a_link_asks_for_nothing_missing(
    open_playground,
):
    playground = open_playground(PREFIXES["default"])
    page = playground.page
    refused = refusals(page)
    playground.open()
    playground.log_in()
    project_id = playground.create_project()

    # The reported case: a new chat, the page reloaded before anything was sent.
    page.reload()
    chat_once(playground, "After a reload")
    (first,) = playground.sessions(project_id)
    expect(playground.session("Lab health check")).to_have_attribute("data-session-id", first)
    assert place(page) == {"project": project_id, "session": first}  # a link to the conversation, once it exists

    # A link naming a chat that never had a turn (copied from a new chat's page): opened in a fresh page load.
    page.goto("about:blank")
    page.goto(f"{playground.base_url}/playground#project={project_id}&session=never-sent-{uuid.uuid4().hex}")
    expect(playground.session("Lab health check")).to_be_visible()  # the listing came: the page knows its sessions
    chat_once(playground, "From a link")

    assert refused == [], "the page asked for something the server does not have"
    assert playground.problems == [], "the browser logged errors"
