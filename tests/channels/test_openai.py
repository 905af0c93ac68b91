"""The OpenAI channel (OPENAI-001..007): first its pure parts (the translators of contract events into chunks and
Response events, the request readers, the response ids, the error body), judged against the `openai` package's
own models and the official schemas; then the real `openai` Python client over a socket against one live server:
streamed and non-streamed chat completions, Responses, the model list, and every refusal as the client's own
exception."""

from __future__ import annotations

import json
import time
import uuid
from types import SimpleNamespace
from typing import Any

import openai
import pytest
from jsonschema import Draft202012Validator
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

import gns3_copilot_spec as spec
from conformance.harness.machine_load import stretched
from conformance.rules.official import errors
from gns3_copilot_generated.constants import (
    CHANNEL_PATHS,
    OPENAI_ERROR_TYPES,
    OPENAI_MODEL_ID,
    OPENAI_SERVER_ERROR_TYPE,
    SESSION_ID_MAX_LENGTH,
)
from reference_server.channels.openai_chat import CHAT_MEMBERS, ChatCompletionStream, chat_request, completion_object
from reference_server.channels.openai_common import render_openai_error
from reference_server.channels.openai_members import CHAT_REFUSED, RESPONSE_REFUSED
from reference_server.channels.openai_responses import (
    RESPONSE_MEMBERS,
    ResponseBuilder,
    ResponseEventStream,
    previous_response,
    response_id,
    responses_request,
)
from reference_server.errors import ApiError
from reference_server.settings import Settings
from reference_server.turns.core import TurnRequest
from tests.conftest import ROOT
from tests.reference_server.conftest import in_process_lab

from .conftest import LiveLab, content_of

MODEL = OPENAI_MODEL_ID


def client_for(live: LiveLab, token: str | None = None) -> openai.OpenAI:
    # max_retries=0: a refusal is judged as it came, never re-sent (the client retries 409 and 5xx by default)
    return openai.OpenAI(base_url=live.url(CHANNEL_PATHS["openai"]), api_key=token or live.token, max_retries=0)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def tokens(live: LiveLab, session_id: str) -> tuple[int, int]:
    session = live.sessions().get(session_id)
    return (session["input_tokens"], session["output_tokens"]) if session else (0, 0)


# --- the pure parts: translators, request readers, response ids, error body --------------------------------------

SESSION = "sess-1"
STREAM_EVENTS = TypeAdapter(ResponseStreamEvent)
ERROR_BODY = Draft202012Validator(json.loads((ROOT / "spec/channels/openai-error.json").read_text(encoding="utf-8")))


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "session_id": SESSION, **fields}


TOOL_EVENTS = [
    event("tool_call", tool_name="get_topology", tool_call_id="c1", tool_input={}),
    event("tool_start", tool_name="get_topology", tool_call_id="c1", tool_input={}),
    event("tool_end", tool_name="get_topology", tool_call_id="c1", tool_output="R1, R2"),
]


def frames(text: str) -> list[str]:
    """SSE frames, each without its blank line; the text must end on a frame boundary."""
    assert text.endswith("\n\n"), text
    return text[:-2].split("\n\n")


def chat_frames(include_usage: bool, batches: list[list[dict[str, Any]]]) -> list[str]:
    stream = ChatCompletionStream("chatcmpl-1", 1767225600, include_usage, lambda: (120, 30))
    return frames(stream.opening() + "".join(stream.feed(batch) for batch in batches))


def chunks_of(frame_list: list[str]) -> list[dict[str, Any]]:
    return [json.loads(frame[6:]) for frame in frame_list if frame.startswith("data: {")]


def valid_chunk(chunk: dict[str, Any]) -> bool:
    ChatCompletionChunk.model_validate(chunk)  # the openai package's own model (raises when invalid)
    return errors("openai_chat_completion_chunk", chunk) == []


@pytest.mark.covers("OPENAI-002", "CHANNEL-007", "CHANNEL-008", "CHANNEL-006")
@pytest.mark.covers("OPENAI-PROTO-002", "OPENAI-PROTO-003", "OPENAI-PROTO-004")
@pytest.mark.parametrize("include_usage", [True, False])
def test_the_chat_translator_sends_text_heartbeats_finish_usage_and_done(include_usage: bool):
    sent = chat_frames(
        include_usage,
        [
            [event("content", content="The topology ")],
            [event("heartbeat")],
            TOOL_EVENTS,
            [event("content", content="has two routers.")],
            [event("done")],
        ],
    )
    assert sent[2] == ": heartbeat" and sent[-1] == "data: [DONE]"
    chunks = chunks_of(sent)
    assert all(valid_chunk(chunk) for chunk in chunks)
    assert len({(c["id"], c["object"], c["created"], c["model"]) for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "The topology "},
        {"content": "has two routers."},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]] == [None, None, None, "stop"]
    assert "get_topology" not in "".join(sent)  # the server's tools are never handed to the client
    if include_usage:
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {
            "prompt_tokens": 120,
            "completion_tokens": 30,
            "total_tokens": 150,
        }
        assert all("usage" in c and c["usage"] is None for c in chunks[:-1])
    else:
        assert all("usage" not in c for c in chunks) and len(chunks) == 4


@pytest.mark.covers("OPENAI-004", "CHANNEL-010")
def test_an_in_stream_error_is_an_error_frame_then_done_without_a_finish_chunk():
    sent = chat_frames(
        True,
        [
            [event("content", content="Partial")],
            [event("error", error="LLM unreachable", code="llm_error"), event("done")],
            [event("heartbeat")],
        ],
    )
    assert sent[-1] == "data: [DONE]" and sent.count("data: [DONE]") == 1  # nothing after [DONE], not even the done
    body = json.loads(sent[-2][6:])
    assert body == {
        "error": {"message": "LLM unreachable", "type": OPENAI_SERVER_ERROR_TYPE, "param": None, "code": "llm_error"}
    }
    assert list(ERROR_BODY.iter_errors(body)) == []
    chunks = [c for c in chunks_of(sent) if "error" not in c]
    assert all(valid_chunk(c) for c in chunks) and all(c["choices"][0]["finish_reason"] is None for c in chunks)


@pytest.mark.covers("OPENAI-003", "CHANNEL-008", "OPENAI-PROTO-005")
def test_the_non_streamed_completion_is_a_valid_chat_completion():
    body = completion_object("chatcmpl-1", 1767225600, "The lab looks healthy.", (50, 8))
    ChatCompletion.model_validate(body)
    assert errors("openai_chat_completion", body) == []
    assert body["choices"][0]["message"]["content"] == "The lab looks healthy." and body["usage"]["total_tokens"] == 58


def response_frames(batches: list[list[dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    channel_turn = SimpleNamespace(session_id="lab:1.a-b", user_message_id=str(uuid.uuid4()))
    wanted = TurnRequest(session_id=None, message="x", temperature=0.5, instructions="Be brief.")
    stream = ResponseEventStream(ResponseBuilder(channel_turn, wanted), lambda: (120, 30))
    out = []
    for frame in frames(stream.opening() + "".join(stream.feed(batch) for batch in batches)):
        if frame == ": heartbeat":
            out.append(("heartbeat", {}))
            continue
        kind_line, data_line = frame.split("\n")
        assert kind_line.startswith("event: ") and data_line.startswith("data: ")
        payload = json.loads(data_line[6:])
        assert kind_line[7:] == payload["type"]  # the `event:` line names the event's type
        STREAM_EVENTS.validate_python(payload)  # the openai package's own union of stream events
        assert errors("openai_response_stream_event", payload) == [], payload["type"]
        out.append((payload["type"], payload))
    return out


@pytest.mark.covers("OPENAI-006", "OPENAI-005", "CHANNEL-007", "CHANNEL-008", "CHANNEL-006")
@pytest.mark.covers("OPENAI-PROTO-008", "OPENAI-PROTO-009")
def test_the_responses_translator_sends_the_lifecycle_with_sequence_numbers():
    sent = response_frames(
        [
            [event("content", content="Two ")],
            [event("heartbeat")],
            TOOL_EVENTS,
            [event("content", content="routers.")],
            [event("done")],
        ]
    )
    kinds = [kind for kind, _ in sent]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "heartbeat",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    payloads = [payload for kind, payload in sent if kind != "heartbeat"]
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    completed = payloads[-1]["response"]
    Response.model_validate(completed)
    assert errors("openai_response", completed) == []
    assert completed["output"][0]["content"][0]["text"] == "Two routers." == payloads[-4]["text"]
    assert completed["usage"]["input_tokens"] == 120 and completed["usage"]["total_tokens"] == 150
    assert completed["metadata"] == {"session_id": "lab:1.a-b"}
    assert previous_response(completed["id"]).session_id == "lab:1.a-b"
    assert len({p["response"]["id"] for p in payloads if "response" in p}) == 1


@pytest.mark.covers("OPENAI-006", "CHANNEL-010")
def test_a_failed_response_ends_with_response_failed_and_its_message():
    sent = response_frames(
        [[event("content", content="Part")], [event("error", error="LLM unreachable", code="llm_error"), event("done")]]
    )
    assert [kind for kind, _ in sent][-2:] == ["response.output_text.delta", "response.failed"]
    failed = sent[-1][1]["response"]
    assert failed["status"] == "failed" and failed["error"]["message"] == "LLM unreachable"


@pytest.mark.covers("OPENAI-005")
@pytest.mark.parametrize(
    "session_id", ["a", "0b0c2a5e-4a8e-4e55-9f0e-6a3f61f3d7a1", "lab:1.x_y-z", "Z" * SESSION_ID_MAX_LENGTH]
)
def test_a_response_id_names_its_session_and_turn(session_id: str):
    turn = str(uuid.uuid4())
    made = response_id(session_id, turn)
    assert made.startswith("resp_") and made.replace("_", "").isalnum()  # safe in any URL or header
    decoded = previous_response(made)
    assert (decoded.session_id, decoded.user_message_id) == (session_id, turn)


TURN_HEX = "0123456789abcdef0123456789abcdef"  # fixed: parameter values are test ids, which must not change


@pytest.mark.covers("OPENAI-005")
@pytest.mark.parametrize(
    "given",
    [
        "resp_nope",
        f"resp_{'zz'}_{TURN_HEX}",
        f"resp_{b'bad id!'.hex()}_{TURN_HEX}",  # decodes to a session id SESSION-003 refuses
        f"resp_{'ff'}_{TURN_HEX}",  # not text
        f"resp_{('a' * (SESSION_ID_MAX_LENGTH + 1)).encode().hex()}_{TURN_HEX}",
        f"resp_{b'a'.hex()}_{TURN_HEX.upper()}",
        f"chatcmpl-{TURN_HEX}",
        42,
        "",
    ],
)
def test_anything_but_a_response_id_is_previous_response_not_found(given: Any):
    with pytest.raises(ApiError) as refused:
        previous_response(given)
    assert (refused.value.status, refused.value.code) == (404, "previous_response_not_found")
    assert render_openai_error(refused.value)["error"]["param"] == "previous_response_id"


def user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


CHAT = {"model": MODEL, "messages": [user("hi")]}


def refusal(read, body: Any) -> tuple[int, str, str | None]:
    with pytest.raises(ApiError) as refused:
        read(body)
    error = render_openai_error(refused.value)["error"]
    return refused.value.status, error["code"], error["param"]


@pytest.mark.covers("OPENAI-001", "CHANNEL-004", "CHANNEL-006", "OPENAI-004")
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({**CHAT, "model": "gpt-4o"}, (404, "model_not_found", "model")),
        ({"messages": [user("hi")]}, (422, "validation_error", "model")),
        ({**CHAT, "response_format": {"type": "json_object"}}, (422, "unsupported_field", "response_format")),
        ({**CHAT, "max_tokens": 0}, (422, "validation_error", "max_tokens")),  # accepted, but a positive integer
        ({**CHAT, "max_completion_tokens": "64"}, (422, "validation_error", "max_completion_tokens")),
        ({**CHAT, "n": 2}, (422, "unsupported_field", "n")),
        ({**CHAT, "logprobs": True}, (422, "unsupported_field", "logprobs")),
        ({**CHAT, "top_logprobs": 2}, (422, "unsupported_field", "top_logprobs")),
        ({**CHAT, "modalities": ["text", "audio"]}, (422, "unsupported_field", "modalities")),
        ({**CHAT, "web_search_options": {}}, (422, "unsupported_field", "web_search_options")),
        ({**CHAT, "moderation": {"model": "omni-moderation-latest"}}, (422, "unsupported_field", "moderation")),
        ({**CHAT, "function_call": {"name": "f"}}, (422, "unsupported_field", "function_call")),
        ({**CHAT, "stream_options": {"include_mood": True}}, (422, "unsupported_field", "stream_options.include_mood")),
        ({**CHAT, "top_p": "high"}, (422, "validation_error", "top_p")),  # accepted, as the API types it
        ({**CHAT, "stop": 3}, (422, "validation_error", "stop")),
        ({**CHAT, "seed": 1.5}, (422, "validation_error", "seed")),
        ({**CHAT, "parallel_tool_calls": None}, (422, "validation_error", "parallel_tool_calls")),
        (
            {**CHAT, "tools": [{"type": "function", "function": {"name": "f"}}]},
            (422, "client_tools_not_supported", "tools"),
        ),
        ({**CHAT, "functions": [{"name": "f"}]}, (422, "client_tools_not_supported", "functions")),
        ({**CHAT, "tool_choice": "required"}, (422, "unsupported_field", "tool_choice")),
        ({**CHAT, "messages": []}, (422, "validation_error", "messages")),
        ({**CHAT, "messages": [{"role": "assistant", "content": "x"}]}, (422, "validation_error", "messages")),
        ({**CHAT, "messages": [user("hi"), {"role": "system", "content": "x"}]}, (422, "validation_error", "messages")),
        (
            {**CHAT, "messages": [user([{"type": "image_url", "image_url": {"url": "x"}}])]},
            (422, "validation_error", "messages[0].content[0]"),
        ),
        ({**CHAT, "messages": [user(None)]}, (422, "validation_error", "messages[0].content")),
        ({**CHAT, "messages": [{"role": "robot", "content": "x"}]}, (422, "validation_error", "messages[0]")),
        ({**CHAT, "metadata": {"session_id": 7}}, (422, "validation_error", "metadata")),
        ({**CHAT, "temperature": "hot"}, (422, "validation_error", "temperature")),
        ({**CHAT, "stream": "yes"}, (422, "validation_error", "stream")),
        ({**CHAT, "stream_options": {"include_usage": 1}}, (422, "validation_error", "stream_options.include_usage")),
        ([CHAT], (422, "validation_error", "body")),
    ],
)
def test_a_chat_request_is_refused_by_name(body: Any, expected: tuple[int, str, str | None]):
    assert refusal(chat_request, body) == expected


# Every member the API defines that OPENAI-001 serves whatever its value (besides those the turn reads), and the
# served values of the others: each a value the API's request schema takes.
STANDARD_CHAT_MEMBERS = {
    "top_p": 0.9, "seed": 7, "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"50256": -100},
    "reasoning_effort": "low", "verbosity": "low", "prediction": {"type": "content", "content": "R1 has"},
    "max_completion_tokens": 64, "max_tokens": 64, "stop": ["\n\nUser:"],
    "safety_identifier": "user-hash", "prompt_cache_key": "lab-1", "prompt_cache_options": {"mode": "implicit"},
    "prompt_cache_retention": "24h", "service_tier": "flex", "store": True, "parallel_tool_calls": False,
    "logprobs": False, "response_format": {"type": "text"}, "modalities": ["text"], "function_call": "auto",
}  # fmt: skip
STANDARD_RESPONSE_MEMBERS = {
    "top_p": 0.9, "reasoning": {"effort": "low", "summary": "auto"}, "max_tool_calls": 2, "truncation": "auto",
    "parallel_tool_calls": True, "safety_identifier": "user-hash", "prompt_cache_key": "lab-1",
    "prompt_cache_retention": "in_memory", "service_tier": "auto", "stream_options": {"include_obfuscation": False},
    "image": {"context_compression": "auto"}, "background": False, "include": ["reasoning.encrypted_content"],
    "text": {"format": {"type": "text"}, "verbosity": "low"}, "prompt_cache_options": {"ttl": "30m", "prewarm": False},
}  # fmt: skip
CALL = {"name": "get_topology", "arguments": "{}"}  # a call as the API's schema has it (ChatCompletionMessageToolCall)


@pytest.mark.covers("OPENAI-001", "CHANNEL-004")
def test_a_chat_request_becomes_a_turn_request():
    body = {
        **CHAT,
        "messages": [
            {"role": "system", "content": "Be brief."},
            user("earlier"),
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": CALL}]},
            {"role": "tool", "content": "out", "tool_call_id": "c"},
            {"role": "developer", "content": [{"type": "text", "text": "In French."}]},
            user([{"type": "text", "text": "Show "}, {"type": "text", "text": "R1"}]),
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "metadata": {"session_id": "s-1", "tag": "x"},
        "user": "alice",
        "tools": [],
        "tool_choice": "auto",
        "n": 1,
        "frequency_penalty": None,  # null members are no request at all
    }
    wanted, options = chat_request(body)
    assert wanted == TurnRequest(
        session_id="s-1",
        message="Show R1",
        temperature=0.0,
        instructions="Be brief.\n\nIn French.",
        carries_history=True,
        message_loc=("body", "messages", 5, "content"),
        session_loc=("body", "metadata", "session_id"),
    )
    assert (options.stream, options.include_usage) == (True, True)
    # Every other member OPENAI-001 serves: the same turn (the hints are not passed on, temperature alone is).
    hinted = {**body, **STANDARD_CHAT_MEMBERS, "stream_options": {"include_usage": True, "include_obfuscation": False}}
    assert chat_request(hinted) == (wanted, options)
    only, options = chat_request(CHAT)
    assert (only.session_id, only.carries_history, only.instructions, options.stream) == (None, False, None, False)


RESPONSES = {"model": MODEL, "input": "hi"}
A_RESPONSE = response_id("s-1", str(uuid.uuid4()))


@pytest.mark.covers("OPENAI-005", "CHANNEL-004", "CHANNEL-006")
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({**RESPONSES, "model": "gpt-4o"}, (404, "model_not_found", "model")),
        ({**RESPONSES, "background": True}, (422, "unsupported_field", "background")),
        ({**RESPONSES, "conversation": "conv_1"}, (422, "unsupported_field", "conversation")),
        ({**RESPONSES, "prompt": {"id": "pmpt_1"}}, (422, "unsupported_field", "prompt")),
        ({**RESPONSES, "top_logprobs": 2}, (422, "unsupported_field", "top_logprobs")),
        ({**RESPONSES, "include": ["message.output_text.logprobs"]}, (422, "unsupported_field", "include")),
        ({**RESPONSES, "text": {"format": {"type": "json_object"}}}, (422, "unsupported_field", "text.format")),
        (
            {**RESPONSES, "prompt_cache_options": {"prewarm": True}},
            (422, "unsupported_field", "prompt_cache_options.prewarm"),
        ),
        ({**RESPONSES, "truncation": "sometimes"}, (422, "validation_error", "truncation")),
        ({**RESPONSES, "store": "yes"}, (422, "validation_error", "store")),
        ({**RESPONSES, "tools": [{"type": "web_search"}]}, (422, "client_tools_not_supported", "tools")),
        ({**RESPONSES, "input": 3}, (422, "validation_error", "input")),
        ({**RESPONSES, "input": [{"role": "assistant", "content": "x"}]}, (422, "validation_error", "input")),
        (
            {**RESPONSES, "input": [{"type": "function_call_output", "role": "user", "call_id": "c", "output": "x"}]},
            (422, "unsupported_field", "input[0].type"),
        ),
        (
            {**RESPONSES, "input": [user([{"type": "input_image", "image_url": "x"}])]},
            (422, "validation_error", "input[0].content[0]"),
        ),
        ({**RESPONSES, "instructions": 1}, (422, "validation_error", "instructions")),
        ({**RESPONSES, "previous_response_id": "resp_x"}, (404, "previous_response_not_found", "previous_response_id")),
        (
            {**RESPONSES, "previous_response_id": A_RESPONSE, "metadata": {"session_id": "s-2"}},
            (422, "validation_error", "metadata"),
        ),
    ],
)
def test_a_responses_request_is_refused_by_name(body: Any, expected: tuple[int, str, str | None]):
    assert refusal(responses_request, body) == expected


@pytest.mark.covers("OPENAI-005", "CHANNEL-004")
def test_a_responses_request_becomes_a_turn_request():
    body = {
        **RESPONSES,
        "instructions": "Be brief.",
        "input": [{"role": "developer", "content": "In French."}, user([{"type": "input_text", "text": "Show R1"}])],
        "previous_response_id": A_RESPONSE,
        "metadata": {"session_id": "s-1"},
        "store": False,
        "stream": True,
        "user": "alice",
    }
    wanted, stream, previous = responses_request(body)
    assert (wanted.session_id, wanted.message, wanted.instructions) == ("s-1", "Show R1", "Be brief.\n\nIn French.")
    assert wanted.must_exist and not wanted.carries_history and stream and previous.session_id == "s-1"
    # Every other member OPENAI-005 serves, `store: true` among them: the same turn.
    assert responses_request({**body, **STANDARD_RESPONSE_MEMBERS, "store": True}) == (wanted, stream, previous)
    fresh, stream, previous = responses_request(RESPONSES)
    assert (fresh.session_id, fresh.must_exist, stream, previous) == (None, False, False, None)


@pytest.mark.covers("OPENAI-001", "OPENAI-005")
@pytest.mark.parametrize(
    ("params", "served", "refused"),
    [
        ("openai_chat_completion_create_params_non_streaming", CHAT_MEMBERS, CHAT_REFUSED),
        ("openai_response_create_params_non_streaming", RESPONSE_MEMBERS, RESPONSE_REFUSED),
    ],
)
def test_every_member_the_api_defines_is_decided(params: str, served: set[str], refused: set[str]):
    """Each member of the official request schema is served (with all or some of its values) or refused: a member a
    new `openai` release adds is decided, not refused unread as an unknown one."""
    defined = set(json.loads((spec.OFFICIAL_DIR / f"{params}.json").read_text())["properties"])
    assert served & refused == set()
    assert sorted(defined - served - refused) == [] and sorted((served | refused) - defined) == []


@pytest.mark.covers("OPENAI-004")
def test_the_error_type_follows_the_status():
    types = {**OPENAI_ERROR_TYPES, **dict.fromkeys((500, 502, 503), OPENAI_SERVER_ERROR_TYPE)}
    for status, kind in types.items():
        body = render_openai_error(ApiError(status, "some_code", "what happened"))
        assert body == {"error": {"message": "what happened", "type": kind, "param": None, "code": "some_code"}}
        assert list(ERROR_BODY.iter_errors(body)) == []


# --- the real openai client against a live server ----------------------------------------------------------------


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


@pytest.mark.covers("OPENAI-007", "OPENAI-PROTO-010")
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
            OPENAI_ERROR_TYPES[401],
        ),
        (
            lambda: chat(model="gpt-4o", messages=ask("x")),
            openai.NotFoundError,
            "model_not_found",
            OPENAI_ERROR_TYPES[404],
        ),
        (
            lambda: other.chat.completions.create(model=MODEL, messages=ask("x"), metadata={"session_id": owned}),
            openai.NotFoundError,
            "session_not_found",
            OPENAI_ERROR_TYPES[404],
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), tools=[{"type": "function", "function": {"name": "f"}}]),
            openai.UnprocessableEntityError,
            "client_tools_not_supported",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), response_format={"type": "json_object"}),
            openai.UnprocessableEntityError,
            "unsupported_field",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: chat(model=MODEL, messages=[*ask("a"), {"role": "assistant", "content": "b"}, *ask("c")]),
            openai.UnprocessableEntityError,
            "unknown_conversation",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: chat(model=MODEL, messages=[{"role": "assistant", "content": "b"}]),
            openai.UnprocessableEntityError,
            "validation_error",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: chat(model=MODEL, messages=ask(""), temperature=1),
            openai.UnprocessableEntityError,
            "validation_error",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: chat(model=MODEL, messages=ask("x"), temperature=2.5),
            openai.UnprocessableEntityError,
            "validation_error",
            OPENAI_ERROR_TYPES[422],
        ),
        (
            lambda: client.responses.create(model=MODEL, input="x", previous_response_id="resp_nope"),
            openai.NotFoundError,
            "previous_response_not_found",
            OPENAI_ERROR_TYPES[404],
        ),
        (
            lambda: client.responses.create(model=MODEL, input="x", background=True),
            openai.UnprocessableEntityError,
            "unsupported_field",
            OPENAI_ERROR_TYPES[422],
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
        "POST", live.url(CHANNEL_PATHS["openai"] + "/chat/completions"), json=body, headers=live.headers
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
    # The client's default retries (5xx twice): the answer says not to re-send the turn, which ran and is kept.
    retrying = openai.OpenAI(base_url=live.url(CHANNEL_PATHS["openai"]), api_key=live.token)
    session_id = f"openai-failed-{uuid.uuid4().hex[:8]}"
    failed = refused(
        lambda: retrying.chat.completions.create(
            model=MODEL, messages=ask("[[fake-llm:llm-error]]"), metadata={"session_id": session_id}
        )
    )
    assert isinstance(failed, openai.InternalServerError) and failed.status_code == 502 and failed.code == "llm_error"
    assert failed.response.headers["x-copilot-session-id"] == session_id
    history = live.history(session_id)
    assert [m["content"] for m in history if m["role"] == "user"] == ["[[fake-llm:llm-error]]"]  # one turn, once
    assert live.session(session_id)["message_count"] == len(history)  # kept and counted
    with client.responses.stream(model=MODEL, input="[[fake-llm:llm-error]]") as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] == "response.failed"


@pytest.mark.covers("OPENAI-001", "OPENAI-005", "INPUT-005")
@pytest.mark.anyio
async def test_instructions_and_temperature_reach_the_llm_for_that_turn_only(tmp_path):
    async with in_process_lab(Settings(data_dir=tmp_path / "data")) as lab:
        log = lab.app.state.services.fake_llm_log
        url = lab.prefix() + CHANNEL_PATHS["openai"]
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


@pytest.mark.covers("CHANNEL-009", "OPENAI-002")
def test_a_client_that_closes_its_stream_stops_the_turn_which_is_kept(live: LiveLab):
    session_id = f"openai-gone-{uuid.uuid4().hex[:8]}"
    client = client_for(live)
    stream = client.chat.completions.create(
        model=MODEL, messages=ask("wait [[fake-llm:slow]]"), stream=True, metadata={"session_id": session_id}
    )
    assert next(iter(stream)).choices[0].delta.role == "assistant"
    stream.close()  # the real client going away: its connection closes
    closed, waited = time.monotonic(), stretched(10)  # a wait of the test's, longer on a busy machine
    while True:
        try:
            client.chat.completions.create(
                model=MODEL, messages=ask("still there? [[fake-llm:plain]]"), metadata={"session_id": session_id}
            )
            break
        except openai.ConflictError:
            assert time.monotonic() - closed < waited, "the turn still holds the session after its client left"
            time.sleep(0.05)
    history = live.history(session_id)
    users = [m["content"] for m in history if m["role"] == "user"]
    assert users == ["wait [[fake-llm:slow]]", "still there? [[fake-llm:plain]]"]  # the stopped turn is kept
    # The script answers after 3 s: a turn that was not stopped would have streamed its answer into the history
    # (on the order of events, not on a duration, so that a busy machine changes nothing).
    assert not any("all links are up" in (m.get("content") or "") for m in history), history
    assert live.session(session_id)["message_count"] == len(live.history(session_id))


@pytest.mark.covers("OPENAI-005", "ISOLATION-002", "SESSION-007", "CHANNEL-005")
def test_a_previous_response_of_another_user_or_a_deleted_session_is_not_found(live: LiveLab):
    client = client_for(live)
    session_id = f"openai-prev-{uuid.uuid4().hex[:8]}"
    first = client.responses.create(model=MODEL, input="hi [[fake-llm:plain]]", metadata={"session_id": session_id})
    other = client_for(live, live.users.get("olivia") or live.add_user("olivia"))

    def continue_first(as_client: openai.OpenAI) -> None:
        as_client.responses.create(model=MODEL, input="more [[fake-llm:plain]]", previous_response_id=first.id)

    for attempt in (lambda: continue_first(other), lambda: (delete_session(live, session_id), continue_first(client))):
        error = refused(attempt)
        assert isinstance(error, openai.NotFoundError) and error.code == "previous_response_not_found", error.body
        assert error.param == "previous_response_id"

    # A response whose turn still runs: its session is busy (CONCURRENCY-001), not unknown.
    with client.responses.stream(model=MODEL, input="wait [[fake-llm:slow]]") as running:
        created = next(iter(running))
        assert created.type == "response.created"
        busy = refused(
            lambda: client.responses.create(model=MODEL, input="x", previous_response_id=created.response.id)
        )
        assert isinstance(busy, openai.ConflictError) and busy.code == "session_busy"

    # A new session of the same id (SESSION-007) is not the deleted one: the old response does not continue it.
    client.responses.create(model=MODEL, input="anew [[fake-llm:plain]]", metadata={"session_id": session_id})
    error = refused(lambda: continue_first(client))
    assert isinstance(error, openai.NotFoundError) and error.code == "previous_response_not_found"
    assert [m["content"] for m in live.history(session_id) if m["role"] == "user"] == ["anew [[fake-llm:plain]]"]


def delete_session(live: LiveLab, session_id: str) -> None:
    answer = live.client.delete(live.url(f"/sessions/{session_id}"), headers=live.headers)
    assert answer.status_code == 204, answer.text
