"""What a channel request carries is bounded (issue 34, CHANNEL-011): a 1.9 MB system message or Responses
`instructions` was added to every generation's system prompt, and a 1.9 MB AG-UI `runId` came back twice in a
3.8 MB answer. Each is now refused 422 before any turn; at its bound it is served."""

from __future__ import annotations

import uuid

import pytest

from gns3_copilot_generated.constants import (
    AG_UI_RUN_ID_MAX_LENGTH,
    CHANNEL_INSTRUCTIONS_MAX_LENGTH,
    CHANNEL_MESSAGES_MAX_ITEMS,
)

pytestmark = pytest.mark.anyio

HUGE = 1_900_000  # characters: under the body limit of 2 MiB (INPUT-010), so that only the new bound refuses it
TURN = "hello [[fake-llm:plain]]"


def _user(text: str = TURN) -> dict:
    return {"role": "user", "content": text}


async def _post(lab, suffix: str, body: dict):
    return await lab.client.post(f"{lab.prefix()}{suffix}", json=body, headers=lab.headers)


def _refused(response) -> None:
    assert response.status_code == 422, response.text[:300]
    assert "text/event-stream" not in response.headers.get("content-type", "")


@pytest.mark.covers("CHANNEL-011")
async def test_a_huge_system_message_is_refused(lab):
    body = {"model": "gns3-copilot", "messages": [{"role": "system", "content": "s" * HUGE}, _user()]}
    _refused(await _post(lab, "/openai/v1/chat/completions", body))


@pytest.mark.covers("CHANNEL-011")
async def test_huge_responses_instructions_are_refused(lab):
    body = {"model": "gns3-copilot", "input": TURN, "instructions": "i" * HUGE}
    _refused(await _post(lab, "/openai/v1/responses", body))


@pytest.mark.covers("CHANNEL-011")
async def test_instructions_are_counted_together(lab):
    half = CHANNEL_INSTRUCTIONS_MAX_LENGTH // 2 + 1
    system = [{"role": "system", "content": "s" * half}, {"role": "developer", "content": "d" * half}]
    body = {"model": "gns3-copilot", "messages": [*system, _user()]}
    _refused(await _post(lab, "/openai/v1/chat/completions", body))


@pytest.mark.covers("CHANNEL-011")
async def test_instructions_at_their_bound_are_served(lab):
    body = {"model": "gns3-copilot", "input": TURN, "instructions": "i" * CHANNEL_INSTRUCTIONS_MAX_LENGTH}
    answer = await _post(lab, "/openai/v1/responses", body)
    assert answer.status_code == 200, answer.text[:300]


@pytest.mark.covers("CHANNEL-011")
async def test_a_huge_ag_ui_run_id_is_refused_and_not_echoed(lab):
    body = {
        "threadId": str(uuid.uuid4()),
        "runId": "r" * HUGE,
        "messages": [{"id": "m1", **_user()}],
        "tools": [],
        "context": [],
    }
    answer = await _post(lab, "/ag-ui", body)
    _refused(answer)
    assert len(answer.content) < 10_000
    at_bound = {**body, "threadId": str(uuid.uuid4()), "runId": "r" * AG_UI_RUN_ID_MAX_LENGTH}
    served = await _post(lab, "/ag-ui", at_bound)
    assert served.status_code == 200 and "RUN_FINISHED" in served.text, served.text[:300]


@pytest.mark.covers("CHANNEL-011")
async def test_a_message_array_over_its_bound_is_refused_on_every_channel(lab):
    padding = [{"role": "system", "content": "x"}] * CHANNEL_MESSAGES_MAX_ITEMS
    ui_padding = [{"id": f"p{i}", "role": "system", "parts": [{"type": "text", "text": "x"}]} for i in range(1000)]
    ui_user = {"id": "u", "role": "user", "parts": [{"type": "text", "text": TURN}]}
    bodies = {
        "/openai/v1/chat/completions": {"model": "gns3-copilot", "messages": [*padding, _user()]},
        "/openai/v1/responses": {"model": "gns3-copilot", "input": [*padding, _user()]},
        "/ui": {"id": str(uuid.uuid4()), "messages": [*ui_padding, ui_user], "trigger": "submit-message"},
        "/ag-ui": {
            "threadId": str(uuid.uuid4()),
            "runId": "run",
            "messages": [{"id": f"p{i}", "role": "developer", "content": "x"} for i in range(1000)]
            + [{"id": "u", **_user()}],
        },
    }
    for suffix, body in bodies.items():
        _refused(await _post(lab, suffix, body))
