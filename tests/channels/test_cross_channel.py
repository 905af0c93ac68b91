"""One core behind every channel: a session crosses channels, statistics do not depend on the channel, the busy
lock and every refusal hold on each channel, in each protocol's own error shape (CHANNEL-002, -003, -005)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tools.channel_requests import CHANNELS, gns3

from .conftest import LiveLab


def error_code(channel: str, response: httpx.Response) -> str:
    """The contract's code, read from the channel's own error shape (OPENAI-004, CHANNEL-005)."""
    body = response.json()
    return body["error"]["code"] if channel.startswith("openai") else body["code"]


def run_turn(live: LiveLab, channel: str, session_id: str, message: str, token: str | None = None) -> httpx.Response:
    path, body = (CHANNELS.get(channel) or gns3)(session_id, message)
    headers = {"Authorization": f"Bearer {token or live.token}"}
    return live.client.post(live.url(path), json=body, headers=headers)


def stats(session: dict[str, Any]) -> tuple[int, int, int, int]:
    return (session["message_count"], session["llm_calls_count"], session["input_tokens"], session["output_tokens"])


@pytest.mark.covers("CHANNEL-002")
def test_one_session_crosses_every_channel(live: LiveLab):
    session_id = f"cross-{uuid.uuid4().hex[:8]}"
    order = ["gns3", *CHANNELS]
    for number, channel in enumerate(order):
        response = run_turn(live, channel, session_id, f"turn {number} on {channel} [[fake-llm:plain]]")
        assert response.status_code == 200, (channel, response.text)
        assert response.headers.get("x-copilot-session-id", session_id) == session_id
    history = live.history(session_id)
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users == [f"turn {n} on {c} [[fake-llm:plain]]" for n, c in enumerate(order)]
    session = live.session(session_id)
    assert session["message_count"] == len(history)
    assert session["llm_calls_count"] >= len(order)  # one generation per turn, the title's too if it counts


@pytest.mark.covers("CHANNEL-003", "CHANNEL-002")
def test_statistics_do_not_depend_on_the_channel(live: LiveLab):
    seen = {}
    for channel in ["gns3", *CHANNELS]:
        session_id = f"stats-{channel}-{uuid.uuid4().hex[:6]}"
        response = run_turn(live, channel, session_id, "the topology? [[fake-llm:tool-round-trip]]")
        assert response.status_code == 200, (channel, response.text)
        seen[channel] = stats(live.session(session_id))
    assert len(set(seen.values())) == 1, seen
    assert seen["gns3"][0] == 4  # user, assistant with the call, tool result, answer


@pytest.mark.covers("CHANNEL-005", "CONCURRENCY-001", "CHANNEL-002")
def test_a_busy_session_is_refused_on_every_channel_before_any_stream(live: LiveLab):
    session_id = f"busy-{uuid.uuid4().hex[:8]}"
    path, body = gns3(session_id, "wait [[fake-llm:slow]]")
    with live.client.stream("POST", live.url(path), json=body, headers=live.headers) as running:
        assert running.status_code == 200
        for channel in CHANNELS:
            refused = run_turn(live, channel, session_id, "me too [[fake-llm:plain]]")
            assert refused.status_code == 409, (channel, refused.text)
            assert refused.headers["content-type"].startswith("application/json"), channel
            assert error_code(channel, refused) == "session_busy", channel
        events = [json.loads(line[6:]) for line in running.iter_lines() if line.startswith("data: ")]
    assert events[-1]["type"] == "done"
    assert live.session(session_id)["message_count"] == len(live.history(session_id)) == 2


@pytest.mark.covers("CHANNEL-005", "ISOLATION-002", "PROJECT-002")
def test_refusals_have_each_channels_shape_and_the_contracts_codes(live: LiveLab):
    owner_session = f"owned-{uuid.uuid4().hex[:8]}"
    assert run_turn(live, "gns3", owner_session, "mine [[fake-llm:plain]]").status_code == 200
    before = live.history(owner_session)
    other = live.users.get("mallory") or live.add_user("mallory")
    closed = live.new_project(opened=False)
    for channel, build in CHANNELS.items():
        # another user's session: not found, and nothing of it changes (ISOLATION-002)
        refused = run_turn(live, channel, owner_session, "let me in [[fake-llm:plain]]", token=other)
        assert (refused.status_code, error_code(channel, refused)) == (404, "session_not_found"), (
            channel,
            refused.text,
        )
        # a project that is not opened (PROJECT-002), and one that does not exist (PROJECT-001)
        path, body = build(f"s-{uuid.uuid4().hex[:8]}", "hello [[fake-llm:plain]]")
        for project_id, expected in (
            (closed, (403, "project_not_opened")),
            (str(uuid.uuid4()), (404, "project_not_found")),
        ):
            answer = live.client.post(live.url(path, project_id), json=body, headers=live.headers)
            assert (answer.status_code, error_code(channel, answer)) == expected, (channel, answer.text)
        # no token at all
        anonymous = live.client.post(live.url(path), json=body)
        assert (anonymous.status_code, error_code(channel, anonymous)) == (401, "unauthorized"), channel
    assert live.history(owner_session) == before
