"""The OpenAI channel as the OpenAI API itself defines it (OPENAI-PROTO-001, -006, -007): the request members and
values the API defines for a one-choice text answer are served, not refused, through the real `openai` client over
a socket; and every refusal's body is an `ErrorObject` of the `openai` package, raised as the exception of its
status."""

from __future__ import annotations

import uuid

import openai
import pytest
from openai.types.shared import ErrorObject

from gns3_copilot_generated.constants import OPENAI_MODEL_ID

from .conftest import LiveLab
from .test_openai import client_for

SCRIPT = "[[fake-llm:plain]]"
INSTRUCTED = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": "Answer in one line."},
    {"role": "user", "content": f"Which routers? {SCRIPT}"},
]


@pytest.mark.covers("OPENAI-PROTO-001", "OPENAI-001")
@pytest.mark.parametrize("stream", [False, True])
def test_the_standard_chat_members_are_served(live: LiveLab, stream: bool):
    client = client_for(live)
    session_id = f"proto-chat-{uuid.uuid4().hex[:8]}"
    created = client.chat.completions.create(
        model=OPENAI_MODEL_ID,
        messages=INSTRUCTED,
        temperature=0,
        n=1,
        max_completion_tokens=256,
        max_tokens=256,
        metadata={"session_id": session_id},
        stream=stream,
        **({"stream_options": {"include_usage": True}} if stream else {}),
    )
    if stream:
        chunks = list(created)
        assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        text = created.choices[0].message.content
    assert text  # served: the turn's text, no refusal
    assert session_id in live.sessions()


@pytest.mark.covers("OPENAI-PROTO-007", "OPENAI-005")
def test_the_standard_response_members_are_served(live: LiveLab):
    client = client_for(live)
    response = client.responses.create(
        model=OPENAI_MODEL_ID,
        input=INSTRUCTED,
        instructions="Name them.",
        temperature=0,
        max_output_tokens=256,
        metadata={"purpose": "protocol test"},
    )
    assert response.status == "completed" and response.output_text


@pytest.mark.covers("OPENAI-PROTO-006", "OPENAI-004")
def test_every_refusal_is_an_error_object_raised_as_its_status(live: LiveLab):
    client = client_for(live)
    cases = [
        (lambda: client_for(live, "not-a-token").models.list(), openai.AuthenticationError),
        (lambda: client.chat.completions.create(model="no-such-model", messages=INSTRUCTED), openai.NotFoundError),
        (lambda: client.chat.completions.create(model=OPENAI_MODEL_ID, messages=[]), openai.UnprocessableEntityError),
        (
            lambda: client.responses.create(model=OPENAI_MODEL_ID, input=SCRIPT, previous_response_id="x"),
            openai.NotFoundError,
        ),
    ]
    for call, exception in cases:
        with pytest.raises(exception) as caught:
            call()
        body = caught.value.response.json()
        assert set(body) == {"error"}, body
        ErrorObject.model_validate(body["error"])  # the openai package's own model of the error object
        assert 400 <= caught.value.status_code < 600
