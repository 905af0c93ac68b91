"""The OpenAI channel with the real `openai` Python client over a socket (OPENAI-001..007): streamed and
non-streamed chat completions, Responses, the model list, and every refusal as the client's own exception."""

from __future__ import annotations

import uuid
from typing import Any

import openai
import pytest

from reference_server.settings import Settings
from tests.reference_server.conftest import in_process_lab

from .conftest import LiveLab, content_of
from .official_schemas import errors

MODEL = "gns3-copilot"


def client_for(live: LiveLab, token: str | None = None) -> openai.OpenAI:
    # max_retries=0: a refusal is judged as it came, never re-sent (the client retries 409 and 5xx by default)
    return openai.OpenAI(base_url=live.url("/openai/v1"), api_key=token or live.token, max_retries=0)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def tokens(live: LiveLab, session_id: str) -> tuple[int, int]:
    session = live.sessions().get(session_id)
    return (session["input_tokens"], session["output_tokens"]) if session else (0, 0)


@pytest.mark.covers("OPENAI-001", "OPENAI-002", "CHANNEL-008", "CHANNEL-002")
def test_a_streamed_completion_assembled_by_the_client_equals_the_gns3_content(live: LiveLab):
    script = "Which routers? [[fake-llm:tool-round-trip]]"
    expected = content_of(live.stream(script))  # the GNS3 channel, same script
    client = client_for(live)
    with client.chat.completions.stream(
        model=MODEL, messages=ask(script), stream_options={"include_usage": True}
    ) as stream:
        chunks = list(stream)
        completion = stream.get_final_completion()  # the client's own stream state assembled it
    session_id = stream._response.headers["x-copilot-session-id"]
    assert completion.choices[0].message.content == expected == "The topology has two routers."
    assert completion.choices[0].finish_reason == "stop" and not completion.choices[0].message.tool_calls
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == tokens(live, session_id)
    raw = [c.chunk.model_dump(mode="json", exclude_unset=True) for c in chunks if c.type == "chunk"]
    assert all(errors("openai_chat_completion_chunk", chunk) == [] for chunk in raw)
    assert len({(chunk["id"], chunk["created"], chunk["model"]) for chunk in raw}) == 1
    assert raw[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert raw[-1]["choices"] == [] and all(chunk["usage"] is None for chunk in raw[:-1])


@pytest.mark.covers("OPENAI-003", "CHANNEL-008", "OPENAI-001")
def test_a_non_streamed_completion_continues_a_session(live: LiveLab):
    client = client_for(live)
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=ask("Hi [[fake-llm:plain]]"))
    session_id = first.headers["x-copilot-session-id"]
    before = tokens(live, session_id)
    # A system message is instructions for this turn; the earlier messages are the client's copy (CHANNEL-004).
    history = [
        {"role": "system", "content": "Be brief."},
        *ask("Hi [[fake-llm:plain]]"),
        {"role": "assistant", "content": "x"},
    ]
    completion = client.chat.completions.create(
        model=MODEL, messages=[*history, *ask("Again [[fake-llm:plain]]")], metadata={"session_id": session_id}
    )
    assert errors("openai_chat_completion", completion.model_dump(mode="json", exclude_unset=True)) == []
    assert completion.choices[0].message.content == "The lab looks healthy."
    after = tokens(live, session_id)
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        after[0] - before[0],
        after[1] - before[1],
    )
    assert [m["content"] for m in live.history(session_id) if m["role"] == "user"] == [
        "Hi [[fake-llm:plain]]",
        "Again [[fake-llm:plain]]",
    ]


@pytest.mark.covers("OPENAI-005", "OPENAI-006", "CHANNEL-008")
def test_responses_stream_and_previous_response_id_continues_the_session(live: LiveLab):
    client = client_for(live)
    with client.responses.stream(model=MODEL, input="Which routers? [[fake-llm:tool-round-trip]]") as stream:
        events = list(stream)
        first = stream.get_final_response()
    assert first.output_text == "The topology has two routers."
    session_id = first.metadata["session_id"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert (first.usage.input_tokens, first.usage.output_tokens) == tokens(live, session_id)
    second = client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        instructions="Be brief.",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "And now? [[fake-llm:plain]]"}]}],
    )
    assert errors("openai_response", second.model_dump(mode="json", exclude_unset=True)) == []
    assert second.output_text == "The lab looks healthy." and second.metadata["session_id"] == session_id
    assert second.id != first.id
    assert live.session(session_id)["message_count"] == len(live.history(session_id)) == 6


@pytest.mark.covers("OPENAI-007")
def test_the_model_list(live: LiveLab):
    models = client_for(live).models.list()
    assert [m.id for m in models] == [MODEL]
    assert errors("openai_model", models.data[0].model_dump(mode="json")) == []
    with pytest.raises(openai.AuthenticationError):
        client_for(live, token="not-a-token").models.list()


def refused(call) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        call()
    body = caught.value.body
    assert isinstance(body, dict) and set(body) == {"message", "type", "param", "code"}, body  # OPENAI-004
    assert caught.value.response.headers["content-type"].startswith("application/json")
    return caught.value


@pytest.mark.covers("OPENAI-004", "CHANNEL-005", "CHANNEL-006", "CHANNEL-004", "OPENAI-001", "OPENAI-005")
def test_every_refusal_is_the_clients_own_exception_with_the_contracts_code(live: LiveLab):
    client = client_for(live)
    other = client_for(live, live.users.get("olivia") or live.add_user("olivia"))
    owned = f"openai-owned-{uuid.uuid4().hex[:6]}"
    live.stream("mine [[fake-llm:plain]]", owned)
    chat = client.chat.completions.create
    cases = [
        (
            lambda: client_for(live, "bad").chat.completions.create(model=MODEL, messages=ask("x")),
            openai.AuthenticationError,
            "unauthorized",
            "authentication_error",
        ),
        (lambda: chat(model="gpt-4o", messages=ask("x")), openai.NotFoundError, "model_not_found", "not_found_error"),
        (
            lambda: other.chat.completions.create(model=MODEL, messages=ask("x"), metadata={"session_id": owned}),
            openai.NotFoundError,
            "session_not_found",
            "not_found_error",
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), tools=[{"type": "function", "function": {"name": "f"}}]),
            openai.UnprocessableEntityError,
            "client_tools_not_supported",
            "invalid_request_error",
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), response_format={"type": "json_object"}),
            openai.UnprocessableEntityError,
            "unsupported_field",
            "invalid_request_error",
        ),
        (
            lambda: chat(model=MODEL, messages=[*ask("a"), {"role": "assistant", "content": "b"}, *ask("c")]),
            openai.UnprocessableEntityError,
            "unknown_conversation",
            "invalid_request_error",
        ),
        (
            lambda: chat(model=MODEL, messages=[{"role": "assistant", "content": "b"}]),
            openai.UnprocessableEntityError,
            "validation_error",
            "invalid_request_error",
        ),
        (
            lambda: chat(model=MODEL, messages=ask(""), temperature=1),
            openai.UnprocessableEntityError,
            "validation_error",
            "invalid_request_error",
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), temperature=2.5),
            openai.UnprocessableEntityError,
            "validation_error",
            "invalid_request_error",
        ),
        (
            lambda: client.responses.create(model=MODEL, input="x", previous_response_id="resp_nope"),
            openai.NotFoundError,
            "previous_response_not_found",
            "not_found_error",
        ),
        (
            lambda: client.responses.create(model=MODEL, input="x", store=True),
            openai.UnprocessableEntityError,
            "unsupported_field",
            "invalid_request_error",
        ),
    ]
    before = live.sessions()
    for call, exception, code, kind in cases:
        error = refused(call)
        assert isinstance(error, exception) and (error.code, error.type) == (code, kind), (code, error.body)
    assert live.sessions().keys() == before.keys()  # nothing was started by a refusal
    assert live.history(owned)[0]["content"] == "mine [[fake-llm:plain]]" and len(live.history(owned)) == 2


@pytest.mark.covers("CHANNEL-005", "CONCURRENCY-001", "CHANNEL-007", "CHANNEL-009")
def test_busy_heartbeat_and_abort(live: LiveLab):
    session_id = f"openai-busy-{uuid.uuid4().hex[:6]}"
    body = {
        "model": MODEL,
        "messages": ask("wait [[fake-llm:slow]]"),
        "stream": True,
        "metadata": {"session_id": session_id},
    }
    with live.client.stream(
        "POST", live.url("/openai/v1/chat/completions"), json=body, headers=live.headers
    ) as running:
        assert running.status_code == 200
        lines = running.iter_lines()
        assert next(lines).startswith("data: ")  # the role chunk
        busy = refused(
            lambda: client_for(live).chat.completions.create(
                model=MODEL, messages=ask("x"), metadata={"session_id": session_id}
            )
        )
        assert isinstance(busy, openai.ConflictError) and busy.code == "session_busy"
        assert next(line for line in lines if line) == ": heartbeat"  # a comment while the LLM waits (0.2 s here)
        aborted = live.client.post(live.url(f"/sessions/{session_id}/abort"), headers=live.headers)
        assert aborted.json()["aborted"] is True
        rest = [line for line in lines if line.startswith("data: ")]
    assert rest[-1] == "data: [DONE]" and '"finish_reason":"stop"' in rest[-2]
    assert live.session(session_id)["message_count"] == len(live.history(session_id))


@pytest.mark.covers("CHANNEL-010", "OPENAI-004", "OPENAI-003", "OPENAI-006")
def test_llm_errors_in_stream_and_after_the_fact(live: LiveLab):
    client = client_for(live)
    with pytest.raises(openai.APIError) as raised:
        for _ in client.chat.completions.create(
            model=MODEL, messages=ask("[[fake-llm:mid-stream-error]]"), stream=True
        ):
            pass
    assert raised.value.code == "llm_error"
    failed = refused(lambda: client.chat.completions.create(model=MODEL, messages=ask("[[fake-llm:llm-error]]")))
    assert isinstance(failed, openai.InternalServerError) and failed.status_code == 502 and failed.code == "llm_error"
    session_id = failed.response.headers["x-copilot-session-id"]
    assert live.session(session_id)["message_count"] == len(live.history(session_id))  # kept and counted
    with client.responses.stream(model=MODEL, input="[[fake-llm:llm-error]]") as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] == "response.failed"


@pytest.mark.covers("OPENAI-001", "OPENAI-005", "INPUT-005")
@pytest.mark.anyio
async def test_instructions_and_temperature_reach_the_llm_for_that_turn_only(tmp_path):
    async with in_process_lab(Settings(data_dir=tmp_path / "data")) as lab:
        log = lab.app.state.services.fake_llm_log
        url = f"{lab.prefix()}/openai/v1"
        chat = {"model": MODEL, "temperature": 0.3, "metadata": {"session_id": "instructed"}}
        chat["messages"] = [
            {"role": "developer", "content": "Answer in French."},
            *ask("[[fake-llm:plain:instructed]]"),
        ]
        answer = await lab.client.post(f"{url}/chat/completions", json=chat, headers=lab.headers)
        assert answer.status_code == 200, answer.text
        responses = {
            "model": MODEL,
            "input": "[[fake-llm:plain:plain-after]]",
            "metadata": {"session_id": "instructed"},
        }
        answer = await lab.client.post(f"{url}/responses", json=responses, headers=lab.headers)
        assert answer.status_code == 200, answer.text
        first = next(r for r in log.records(run="instructed") if r.step == 0)
        later = next(r for r in log.records(run="plain-after") if r.step == 0)
        assert first.messages[0]["role"] == "system" and first.messages[0]["content"].endswith("Answer in French.")
        assert first.temperature == 0.3
        assert "Answer in French." not in later.messages[0]["content"] and later.temperature != 0.3
        assert [m["role"] for m in later.messages].count("system") == 1  # never stored in the conversation
