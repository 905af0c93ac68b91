"""The playground's layout in Chromium at a wide screen (1280 px: the sessions beside the conversation) and at a
phone's width (420 px: the sessions folded above it), with the conversation given most of the screen at both; the
screenshots docs/playground-420.png and docs/playground-1280.png (rewritten with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import shutil
from itertools import cycle, islice

import pytest
from playwright.sync_api import Locator, Page, expect

from fake_llm.selection import tag_for
from tests.reference_server.conftest import REPO_ROOT

from .conftest import PREFIXES, VIEWPORT, Playground

pytestmark = pytest.mark.slow  # a real browser: left out of `python3 tasks.py test --quick`

PHONE = {"width": 420, "height": 800}
SHOTS = REPO_ROOT / ".cache" / "playground"
MANY = 12  # sessions: more than the unfolded list shows at a phone's height
TITLED_SCRIPTS = ("tool-round-trip", "parallel-tools", "empty-deltas", "finish-length", "tools-interleaved", "default")
LONG_TITLE = "A long title about the routing tables of every router in the lab"


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, f"{locator} is not shown"
    return found


def assert_the_conversation_has_most_of_the_screen(page: Page) -> None:
    """The messages take at least half the viewport's height, the page itself does not scroll, and the latest answer
    is in view: all of it inside the messages' box, which is inside the viewport."""
    height = page.viewport_size["height"]
    assert page.evaluate("document.scrollingElement.scrollHeight") <= height, "the page scrolls"
    messages = box(page.get_by_test_id("messages"))
    assert messages["height"] >= height / 2, f"the conversation is {messages['height']} px high of {height}"
    assert messages["y"] >= 0 and messages["y"] + messages["height"] <= height + 1, messages
    latest = box(page.get_by_test_id("message-assistant").last)
    assert messages["y"] <= latest["y"] and latest["y"] + latest["height"] <= messages["y"] + messages["height"] + 1


def add_sessions(playground: Playground, project_id: str, count: int) -> None:
    """`count` more sessions of one turn each, made through the API with the page's token; titled by the fake LLM's
    scripts in turn, so that the screenshots show a list as people have them."""
    with playground.api() as client:
        for script in islice(cycle(TITLED_SCRIPTS), count):
            body = {"message": f"Hi {tag_for(script)}"}
            response = client.post(playground.prefix.format(project_id=project_id) + "/stream", json=body)
            assert response.status_code == 200, response.text


def screenshot(page: Page, name: str) -> None:
    # Clicking a scenario scrolled its row (sideways at a phone's width) to the button: back to how it first shows.
    page.get_by_role("group", name="Fake LLM scenarios").evaluate("row => row.scrollTo(0, 0)")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / name)
    if os.environ.get("UPDATE_SCREENSHOTS") == "1":
        shutil.copyfile(SHOTS / name, REPO_ROOT / "docs" / name)


def test_at_a_phone_s_width_the_conversation_has_the_room_and_at_a_wide_one_the_sessions_are_beside_it(
    open_playground,
):
    playground = open_playground(PREFIXES["default"])
    page = playground.page
    page.set_viewport_size(PHONE)
    playground.open()
    playground.log_in()
    project_id = playground.create_project()
    playground.send("What is in my lab?", scenario="plain")
    expect(page.get_by_test_id("message-assistant").locator(".text")).to_have_text("The lab looks healthy.")
    playground.wait_for_turn_end()
    sessions, chat = page.get_by_role("complementary", name="Sessions"), page.get_by_role("main")
    toggle = sessions.get_by_role("button", name="Sessions")

    # 420 px: the conversation has the room; the sessions are folded into one bar above it.
    assert_the_conversation_has_most_of_the_screen(page)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_test_id("session")).to_be_hidden()
    expect(sessions.get_by_role("button", name="New chat")).to_be_visible()

    # Unfolded: above the conversation, nothing wider than the screen, the Pinned badge one line high beside a long
    # title.
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    session = page.get_by_test_id("session").first
    session.get_by_role("button", name="Rename").click()
    page.get_by_label("New title").fill(LONG_TITLE)
    page.get_by_role("button", name="Save").click()
    session = playground.session(LONG_TITLE)
    add_sessions(playground, project_id, MANY)  # listed when the pin below refreshes the list
    session.get_by_role("button", name="Pin", exact=True).click()
    expect(page.get_by_test_id("session")).to_have_count(MANY + 1)
    # However many sessions, the unfolded list takes at most 45% of the height and scrolls on its own.
    assert box(sessions)["height"] <= 0.45 * PHONE["height"] + 1, box(sessions)
    assert sessions.locator(".session-list").evaluate("list => list.scrollHeight > list.clientHeight")
    badge = session.get_by_text("Pinned", exact=True)
    expect(badge).to_be_visible()
    assert box(badge)["height"] <= 22, box(badge)  # one line of its 18 px line height
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert box(sessions)["y"] + box(sessions)["height"] <= box(chat)["y"] + 1
    # Opening a session folds the list again: the conversation is what the user came for.
    session.get_by_role("button", name=LONG_TITLE).click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_test_id("statistics-title")).to_have_text(LONG_TITLE)
    assert_the_conversation_has_most_of_the_screen(page)
    screenshot(page, "playground-420.png")

    # 1280 px: the sessions listed in a 300 px column beside the conversation, both the full height under the top
    # bar; no bar to unfold them.
    page.set_viewport_size(VIEWPORT)
    expect(toggle).to_be_hidden()
    expect(playground.session(LONG_TITLE)).to_be_visible()
    side, main = box(sessions), box(chat)
    assert side["width"] == pytest.approx(300, abs=1) and side["x"] + side["width"] <= main["x"] + 1
    assert side["y"] == pytest.approx(main["y"], abs=1) and side["height"] == pytest.approx(main["height"], abs=1)
    assert_the_conversation_has_most_of_the_screen(page)
    screenshot(page, "playground-1280.png")
