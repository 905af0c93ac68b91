"""The official schemas of spec/channels/official/: up to date with the packages, valid JSON Schemas, and
discriminating (hand-made valid samples pass, broken ones fail), so the channel tests can lean on them."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from conformance.rules.official import NAMES, errors, schema, validator
from tests.conftest import ROOT
from tests.readme import readme_command

EXPECTED = {
    "ai_ui_message_chunk": "npm ai 6.0.325",
    "ai_ui_messages": "npm ai 6.0.325",
    "ag_ui_event": "npm @ag-ui/core 1.0.0",
    "ag_ui_run_agent_input": "npm @ag-ui/core 1.0.0",
    "openai_chat_completion_chunk": "PyPI openai 3.57.0",
    "openai_chat_completion": "PyPI openai 3.57.0",
    "openai_chat_completion_create_params_streaming": "PyPI openai 3.57.0",
    "openai_chat_completion_create_params_non_streaming": "PyPI openai 3.57.0",
    "openai_response_stream_event": "PyPI openai 3.57.0",
    "openai_response": "PyPI openai 3.57.0",
    "openai_response_create_params_streaming": "PyPI openai 3.57.0",
    "openai_response_create_params_non_streaming": "PyPI openai 3.57.0",
    "openai_model": "PyPI openai 3.57.0",
    "openai_error_object": "PyPI openai 3.57.0",
}


def test_the_committed_schemas_equal_a_fresh_derivation() -> None:
    """The README's command, as written: one python process, which runs one node process."""
    result = subprocess.run(
        readme_command("python3 tools/derive_channel_schemas.py --check"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def test_every_expected_schema_is_there_and_names_its_source() -> None:
    assert set(NAMES) == set(EXPECTED)
    for name, source in EXPECTED.items():
        assert schema(name)["$comment"].startswith(source), name


def test_the_files_are_deterministically_formatted() -> None:
    for name in NAMES:
        text = (ROOT / "spec" / "channels" / "official" / f"{name}.json").read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n", name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_schema_is_a_valid_json_schema_of_its_draft(name: str) -> None:
    document = schema(name)
    expected_draft = (
        "http://json-schema.org/draft-07/schema#"
        if name.startswith("ai_")
        else "https://json-schema.org/draft/2020-12/schema"
    )
    assert document["$schema"] == expected_draft
    checker = validator(name)  # check_schema() against the draft's metaschema, then compiled
    assert type(checker).META_SCHEMA["$schema"].rstrip("#") == expected_draft.rstrip("#")
    checker.is_valid({})  # every $ref resolves inside the document


def test_the_zod_only_features_are_marked_where_they_are_lost() -> None:
    """`z.custom` (the `data-*` chunk type of ai, AG-UI's metadata) and `.refine` (AG-UI's non-null rawEvent)
    cannot be written in JSON Schema; the derivation leaves them unconstrained and says so."""
    data_branch = [b for b in schema("ai_ui_message_chunk")["anyOf"] if "data" in b.get("properties", {})]
    assert len(data_branch) == 1
    assert "zod custom" in data_branch[0]["properties"]["type"]["$comment"]
    assert "Type must start with" in data_branch[0]["properties"]["type"]["$comment"]
    event_text = json.dumps(schema("ag_ui_event"))
    assert "zod custom" in event_text and "zod .refine()" in event_text
    for name in NAMES:
        text = json.dumps(schema(name))
        assert '"transform"' not in text and "pipe" not in text.lower(), name


UI_VALID = [
    {"type": "start"},
    {"type": "start", "messageId": "m1", "messageMetadata": {"k": 1}},
    {"type": "start-step"},
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "hi"},
    {"type": "text-end", "id": "t"},
    {"type": "reasoning-start", "id": "r"},
    {"type": "reasoning-delta", "id": "r", "delta": "hmm"},
    {"type": "reasoning-end", "id": "r"},
    {"type": "tool-input-start", "toolCallId": "c", "toolName": "search", "providerExecuted": True},
    {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"q"'},
    {"type": "tool-input-available", "toolCallId": "c", "toolName": "search", "input": {"q": 1}},
    {"type": "tool-input-available", "toolCallId": "c", "toolName": "search", "input": None},
    {"type": "tool-output-available", "toolCallId": "c", "output": {"r": 2}, "providerExecuted": True},
    {"type": "tool-output-error", "toolCallId": "c", "errorText": "nope"},
    {"type": "source-url", "sourceId": "s", "url": "https://example.org", "title": "x"},
    {"type": "file", "url": "https://example.org/a.png", "mediaType": "image/png"},
    {"type": "data-topology", "data": {"nodes": 3}, "id": "d1", "transient": True},
    {"type": "error", "errorText": "boom"},
    {"type": "finish-step"},
    {"type": "finish"},
    {"type": "finish", "finishReason": "stop", "messageMetadata": {"usage": 1}},
    {"type": "abort"},
    {"type": "message-metadata", "messageMetadata": {"k": 2}},
    {"type": "start", "an-unknown-key": 1},  # z.looseObject: unknown keys pass in 6.0.325 (not in 6.0.230-)
]
UI_INVALID = {
    "text-delta without id": {"type": "text-delta", "delta": "x"},
    "messageId null on start": {"type": "start", "messageId": None},
    "unknown chunk type": {"type": "bogus-chunk"},
    "finishReason unknown (v5 only)": {"type": "finish", "finishReason": "unknown"},
    "tool-input-available without input": {"type": "tool-input-available", "toolCallId": "c", "toolName": "s"},
    "tool-output-available without output": {"type": "tool-output-available", "toolCallId": "c"},
    "data chunk without data": {"type": "data-topology"},
    "error without errorText": {"type": "error"},
    "text-delta with a number delta": {"type": "text-delta", "id": "t", "delta": 1},
    "providerExecuted null": {"type": "tool-input-start", "toolCallId": "c", "toolName": "s", "providerExecuted": None},
}

UI_MESSAGES_VALID = [
    [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    [
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {
            "id": "a1",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "text", "text": "ok", "state": "done"},
                {
                    "type": "tool-search",
                    "toolCallId": "c",
                    "state": "output-available",
                    "input": {"q": 1},
                    "output": {"r": 2},
                    "providerExecuted": True,
                },
            ],
        },
    ],
]
UI_MESSAGES_INVALID = {
    "role tool": [{"id": "x", "role": "tool", "parts": [{"type": "text", "text": "hi"}]}],
    "no parts": [{"id": "x", "role": "user"}],
    "text part without text": [{"id": "x", "role": "user", "parts": [{"type": "text"}]}],
    "not a list": {"id": "x", "role": "user", "parts": []},
}

RS = {"type": "RUN_STARTED", "threadId": "th", "runId": "r"}
AG_VALID = [
    RS,
    {"type": "STEP_STARTED", "stepName": "agent"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "search", "parentMessageId": "m"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": "ok"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 2}]},
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": "hi"}]},
    {"type": "STEP_FINISHED", "stepName": "agent"},
    {"type": "RUN_FINISHED", "threadId": "th", "runId": "r"},
    {"type": "RUN_ERROR", "message": "boom", "code": "x"},
]
AG_INVALID = {
    "TEXT_MESSAGE_CONTENT without delta": {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"},
    "RUN_STARTED without runId": {"type": "RUN_STARTED", "threadId": "th"},
    "unknown event type": {"type": "BOGUS"},
    "TOOL_CALL_START without toolCallName": {"type": "TOOL_CALL_START", "toolCallId": "c"},
    "RUN_ERROR without message": {"type": "RUN_ERROR", "code": "x"},
    "lower-case type": {"type": "run_started", "threadId": "th", "runId": "r"},
    "role tool on TEXT_MESSAGE_START": {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "tool"},
}
RUN_INPUT_VALID = [
    {"threadId": "th", "runId": "r", "messages": []},
    {
        "threadId": "th",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"projectId": "p"},
    },
]
RUN_INPUT_INVALID = {
    "no runId": {"threadId": "th", "messages": []},
    "no messages": {"threadId": "th", "runId": "r"},
    "message with an unknown role": {"threadId": "th", "runId": "r", "messages": [{"id": "u", "role": "x"}]},
}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "copilot"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return {**body, **extra}


CHUNK_VALID = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "hi"}),
    chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "search", "arguments": ""}}
            ]
        }
    ),
    chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q"'}}]}),
    chunk({}, "tool_calls"),
    {**chunk(), "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}},
]
CHUNK_INVALID = {
    "no choices": {k: v for k, v in chunk({"content": "x"}).items() if k != "choices"},
    "wrong object": chunk({"content": "x"}, object="chat.completion"),
    "tool delta without index": chunk({"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}),
    "unknown finish_reason": chunk({}, "done"),
    "no id": {k: v for k, v in chunk().items() if k != "id"},
}
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "copilot",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop", "logprobs": None}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "copilot",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        }
    ],
    "parallel_tool_calls": False,
    "tool_choice": "auto",
    "tools": [],
}
STREAM_EVENTS_VALID = [
    {"type": "response.created", "sequence_number": 0, "response": {**RESPONSE, "status": "in_progress", "output": []}},
    {
        "type": "response.output_text.delta",
        "sequence_number": 1,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "hi",
        "logprobs": [],
    },
    {"type": "response.completed", "sequence_number": 2, "response": RESPONSE},
    {"type": "response.failed", "sequence_number": 2, "response": {**RESPONSE, "status": "failed"}},
    {"type": "error", "sequence_number": 3, "message": "boom", "code": "server_error", "param": None},
]
STREAM_EVENTS_INVALID = {
    "unknown type": {"type": "response.bogus", "sequence_number": 1},
    "text delta without sequence_number": {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "hi",
        "logprobs": [],
    },
    "completed without response": {"type": "response.completed", "sequence_number": 2},
}
CASES: list[tuple[str, Any, bool]] = [
    *[("ai_ui_message_chunk", sample, True) for sample in UI_VALID],
    *[("ai_ui_message_chunk", sample, False) for sample in UI_INVALID.values()],
    *[("ai_ui_messages", sample, True) for sample in UI_MESSAGES_VALID],
    *[("ai_ui_messages", sample, False) for sample in UI_MESSAGES_INVALID.values()],
    *[("ag_ui_event", sample, True) for sample in AG_VALID],
    *[("ag_ui_event", sample, False) for sample in AG_INVALID.values()],
    *[("ag_ui_run_agent_input", sample, True) for sample in RUN_INPUT_VALID],
    *[("ag_ui_run_agent_input", sample, False) for sample in RUN_INPUT_INVALID.values()],
    *[("openai_chat_completion_chunk", sample, True) for sample in CHUNK_VALID],
    *[("openai_chat_completion_chunk", sample, False) for sample in CHUNK_INVALID.values()],
    ("openai_chat_completion", COMPLETION, True),
    ("openai_chat_completion", {**COMPLETION, "object": "chat.completion.chunk"}, False),
    ("openai_chat_completion", {k: v for k, v in COMPLETION.items() if k != "choices"}, False),
    ("openai_response", RESPONSE, True),
    ("openai_response", {k: v for k, v in RESPONSE.items() if k != "output"}, False),
    ("openai_response", {**RESPONSE, "status": "done"}, False),
    *[("openai_response_stream_event", sample, True) for sample in STREAM_EVENTS_VALID],
    *[("openai_response_stream_event", sample, False) for sample in STREAM_EVENTS_INVALID.values()],
    ("openai_model", {"id": "copilot", "object": "model", "created": 1, "owned_by": "gns3"}, True),
    ("openai_model", {"id": "copilot", "object": "model", "created": 1}, False),
    ("openai_model", {"id": "copilot", "object": "models", "created": 1, "owned_by": "gns3"}, False),
    *[
        (f"openai_chat_completion_create_params_{kind}", body, valid)
        for kind, body, valid in [
            ("streaming", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}, True),
            (
                "streaming",
                {
                    "model": "m",
                    "messages": [{"role": "user", "content": "hi"}],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                True,
            ),
            ("streaming", {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}, False),
            ("streaming", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, False),
            ("non_streaming", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, True),
            ("non_streaming", {"model": "m", "messages": [{"role": "robot", "content": "hi"}]}, False),
            ("non_streaming", {"messages": [{"role": "user", "content": "hi"}]}, False),
        ]
    ],
    ("openai_response_create_params_streaming", {"model": "m", "input": "hi", "stream": True}, True),
    ("openai_response_create_params_streaming", {"model": "m", "input": "hi"}, False),
    ("openai_response_create_params_non_streaming", {"model": "m", "input": "hi"}, True),
    ("openai_response_create_params_non_streaming", {"model": "m", "input": 3}, False),
]


@pytest.mark.parametrize(
    ("name", "instance", "valid"),
    CASES,
    ids=[f"{name}-{'valid' if valid else 'invalid'}-{i}" for i, (name, _, valid) in enumerate(CASES)],
)
def test_samples(name: str, instance: Any, valid: bool) -> None:
    found = errors(name, instance)
    if valid:
        assert found == [], found
    else:
        assert found, f"{name} accepted {instance}"
        assert all(isinstance(line, str) and line.startswith("/") for line in found)


def test_the_readme_lists_every_schema() -> None:
    readme = (ROOT / "spec" / "channels" / "official" / "README.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"`{name}.json`" in readme, name
