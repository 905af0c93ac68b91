"""The playground in Chromium, with both chat prefixes: log in, create a project, chat through `useChat` on the UI
message stream channel with the fake LLM's scenario buttons, see the tool calls as they run, pin, rename and delete
sessions, read their statistics, and get the conversation back after a reload."""

from __future__ import annotations

import os
import shutil

import pytest
from playwright.sync_api import expect

from fake_llm.scripts import ScriptLibrary
from gns3_copilot_generated.constants import CHANNEL_PATHS
from tests.reference_server.conftest import REPO_ROOT

from .conftest import PREFIXES, SCRIPTS

pytestmark = pytest.mark.slow  # a real browser: left out of `python3 tasks.py test --quick`

UI_PATH = CHANNEL_PATHS["ui"]  # the channel the playground chats on, under the chat prefix
SCREENSHOT = REPO_ROOT / ".cache" / "playground" / "screenshot.png"
README_SCREENSHOT = REPO_ROOT / "docs" / "playground.png"  # rewritten with UPDATE_SCREENSHOTS=1
STATISTICS = ("message_count", "llm_calls_count", "input_tokens", "output_tokens", "total_tokens")

by_prefix = pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))


@by_prefix
def test_a_conversation_streams_is_pinned_and_comes_back_after_a_reload(open_playground, prefix: str):
    playground = open_playground(prefix)
    page = playground.page
    playground.open()
    playground.log_in()
    project_id = playground.create_project()

    # A: one tool round trip, on the UI message stream channel under the server's prefix.
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith(UI_PATH)) as answered:
        playground.send("What is in my lab?", scenario="tool-round-trip")
    stream = answered.value
    assert stream.url == playground.base_url + prefix.format(project_id=project_id) + UI_PATH
    assert stream.status == 200 and stream.headers["x-vercel-ai-ui-message-stream"] == "v1"
    user, answer = page.get_by_test_id("message-user"), page.get_by_test_id("message-assistant")
    expect(user.locator(".text")).to_have_text("What is in my lab? [[fake-llm:tool-round-trip]]")
    expect(user.locator(".marker")).to_have_text("[[fake-llm:tool-round-trip]]")
    tool = answer.get_by_test_id("tool-call")
    expect(tool).to_have_attribute("data-state", "output-available")
    expect(tool.locator(".tool-name")).to_have_text("get_topology")
    expect(tool.locator(".tool-input")).to_contain_text('"detail": "summary"')
    expect(tool.locator(".tool-output")).to_have_text("4 nodes (R1, R2, SW1, PC1) and 3 links")
    expect(answer.locator(".text")).to_have_text("The topology has two routers.")
    playground.wait_for_turn_end()
    # A second turn of A: the scenario button sends what was typed, with its tag.
    playground.send("And the links?", scenario="plain")
    expect(answer.nth(1).locator(".text")).to_have_text("The lab looks healthy.")
    playground.wait_for_turn_end()
    expect(playground.session("Topology overview")).to_be_visible()
    first_id = playground.session("Topology overview").get_attribute("data-session-id")

    # B: a new chat, two parallel calls; the newest session is listed first.
    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_test_id("message-user")).to_have_count(0)
    playground.send("Compare the routing tables", scenario="parallel-tools")
    expect(page.get_by_test_id("tool-call")).to_have_count(2)
    answers = page.get_by_test_id("message-assistant").locator(".text")
    expect(answers).to_have_text(["Checking both routers.", "Both routers know 10.0.0.0/24."])
    playground.wait_for_turn_end()
    titles = page.get_by_test_id("session-title")
    expect(titles).to_have_text(["Routing tables of R1 and R2", "Topology overview"])
    # Sessions that share a title are told apart by when each was last used.
    expect(page.get_by_test_id("session-time")).to_have_count(2)
    expect(page.get_by_test_id("session-time").first).to_contain_text("used at ")

    # Back to A (loaded from the server), pinned: listed first, marked pinned.
    playground.session("Topology overview").get_by_role("button", name="Topology overview").click()
    expect(page.get_by_test_id("message-user")).to_have_count(2)
    playground.session("Topology overview").get_by_role("button", name="Pin", exact=True).click()
    expect(titles).to_have_text(["Topology overview", "Routing tables of R1 and R2"])
    pinned = playground.session("Topology overview")
    expect(pinned.get_by_role("button", name="Unpin")).to_have_attribute("aria-pressed", "true")
    expect(pinned.get_by_text("Pinned", exact=True)).to_be_visible()

    # Its statistics, as the server counts them.
    sessions = playground.sessions(project_id)
    assert sessions[first_id]["pinned"] is True and sessions[first_id]["message_count"] == 6
    expect(page.get_by_test_id("statistics-title")).to_have_text("Topology overview")
    for name in STATISTICS:
        expect(playground.statistic(name)).to_have_text(str(sessions[first_id][name]))
    expect(pinned).to_contain_text(f"{sessions[first_id]['message_count']} messages")

    # A reload: still logged in, A open again, from GET {prefix}/ui/{id}/messages.
    with page.expect_response(lambda r: r.url.endswith(f"{UI_PATH}/{first_id}/messages")) as restored:
        page.reload()
    assert restored.value.status == 200
    expect(page.get_by_test_id("message-user").locator(".text")).to_have_text(
        ["What is in my lab? [[fake-llm:tool-round-trip]]", "And the links? [[fake-llm:plain]]"]
    )
    restored_tool = page.get_by_test_id("tool-call")
    expect(restored_tool).to_have_attribute("data-state", "output-available")
    expect(restored_tool.locator(".tool-name")).to_have_text("get_topology")
    expect(page.get_by_test_id("message-assistant").locator(".text")).to_have_text(
        ["The topology has two routers.", "The lab looks healthy."]
    )
    expect(titles).to_have_text(["Topology overview", "Routing tables of R1 and R2"])
    expect(playground.session("Topology overview")).to_have_class("session current pinned")
    expect(playground.statistic("total_tokens")).to_have_text(str(sessions[first_id]["total_tokens"]))

    if prefix == PREFIXES["default"]:
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOT)
        if os.environ.get("UPDATE_SCREENSHOTS") == "1":
            shutil.copyfile(SCREENSHOT, README_SCREENSHOT)


@by_prefix
def test_sessions_are_renamed_and_deleted_from_the_list(open_playground, prefix: str):
    playground = open_playground(prefix)
    page = playground.page
    playground.open()
    playground.log_in()
    project_id = playground.create_project()
    playground.send("How is the lab?", scenario="plain")
    expect(page.get_by_test_id("message-assistant").locator(".text")).to_have_text("The lab looks healthy.")
    playground.wait_for_turn_end()
    page.get_by_role("button", name="New chat").click()
    playground.send("Hello")  # Enter, no tag: the fake LLM's default script
    expect(page.get_by_test_id("message-assistant").locator(".text")).to_have_text("Hello from fake LLM.")
    playground.wait_for_turn_end()
    expect(page.get_by_test_id("session-title")).to_have_text(["Fake Title Here", "Lab health check"])

    # Rename: the list and the server both have the new title.
    health = playground.session("Lab health check")
    session_id = health.get_attribute("data-session-id")
    health.get_by_role("button", name="Rename").click()
    page.get_by_label("New title").fill("Renamed in the playground")
    page.get_by_label("New title").press("Enter")
    expect(playground.session("Renamed in the playground")).to_be_visible()
    assert playground.sessions(project_id)[session_id]["title"] == "Renamed in the playground"

    # Delete the open session: asked once more, then gone from the list and the server; a new chat opens.
    greeting = playground.session("Fake Title Here")
    deleted_id = greeting.get_attribute("data-session-id")
    greeting.get_by_role("button", name="Delete").click()
    greeting.get_by_role("button", name="Confirm delete").click()
    expect(page.get_by_test_id("session-title")).to_have_text(["Renamed in the playground"])
    assert set(playground.sessions(project_id)) == {session_id} and deleted_id != session_id
    expect(page.get_by_test_id("message-user")).to_have_count(0)
    expect(page.get_by_role("heading", name="New conversation")).to_be_visible()


def test_a_tool_call_shows_running_then_done_and_every_scenario_has_its_button(open_playground):
    playground = open_playground(PREFIXES["default"], test_scripts=True)
    page = playground.page
    playground.open()
    playground.log_in()
    playground.create_project()

    # The buttons are the server's catalogue: the built-in scripts and those of --fake-llm-scripts.
    expected = ScriptLibrary.from_folders([SCRIPTS]).names()
    buttons = page.get_by_role("group", name="Fake LLM scenarios").get_by_role("button")
    expect(buttons).to_have_text(expected)

    playground.send("Wait a little", scenario="slow-tool")
    tool = page.get_by_test_id("tool-call")
    expect(tool).to_have_attribute("data-state", "input-available")  # the server is running it (2 s)
    expect(tool.locator(".badge")).to_have_text("running")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(tool).to_have_attribute("data-state", "output-available")
    expect(tool.locator(".badge")).to_have_text("done")
    expect(page.get_by_test_id("message-assistant").locator(".text")).to_have_text("Waited two seconds.")
    playground.wait_for_turn_end()


def test_stop_asks_the_server_to_abort_the_running_turn(open_playground):
    playground = open_playground(PREFIXES["default"])
    page = playground.page
    playground.open()
    playground.log_in()
    project_id = playground.create_project()
    with page.expect_response(lambda r: r.url.endswith(UI_PATH)):  # its stream has begun: the server runs the turn
        playground.send("Anything?", scenario="slow")  # 3 s before its answer
    expect(page.get_by_text("Waiting for the copilot…")).to_be_visible()
    with page.expect_response(lambda r: r.url.endswith("/abort")) as aborted:
        page.get_by_role("button", name="Stop").click()
    assert aborted.value.status == 200 and aborted.value.json()["aborted"] is True
    playground.wait_for_turn_end()
    expect(page.get_by_test_id("message-assistant")).to_contain_text("No answer")
    expect(page.get_by_test_id("message-assistant").get_by_test_id("stopped")).to_have_text("Stopped")
    (session,) = playground.sessions(project_id).values()
    expect(playground.statistic("message_count")).to_have_text(str(session["message_count"]))
    expect(playground.statistic("llm_calls_count")).to_have_text(str(session["llm_calls_count"]))


def test_a_wrong_password_is_refused_on_the_page(open_playground):
    playground = open_playground(PREFIXES["default"])
    playground.open()
    playground.page.get_by_label("Username").fill("admin")
    playground.page.get_by_label("Password").fill("not-the-password")
    playground.page.get_by_role("button", name="Log in").click()
    expect(playground.page.get_by_role("alert")).not_to_be_empty()
    expect(playground.page.get_by_role("button", name="Log out")).to_have_count(0)
    playground.problems.clear()  # the browser logs the refused request (401) as a console error
