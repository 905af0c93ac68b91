"""Stream shapes (spec/fake-llm/README.md): each built-in script that uses one streams, over HTTP and
in-process, the text, calls, finish reason and usage its script gives, cut as its shape says."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from fake_llm.chat_model import FakeScriptedChatModel
from fake_llm.errors import ScriptFileError
from fake_llm.openai_server import create_app
from fake_llm.playback import EmptyDelta, Finish, ToolCallBatch, ToolCallDelta, UsageReport, pieces
from fake_llm.scripts import ScriptLibrary, Step, parse_script
from fake_llm.selection import tag_for
from tests.fake_llm.capture import TOOLS, http_completion, http_stream, steps_of

LIBRARY = ScriptLibrary.from_folders()
SHAPED = [
    "tool-whole",
    "tools-one-chunk",
    "tools-interleaved",
    "text-then-tool",
    "no-usage",
    "usage-in-finish",
    "empty-deltas",
    "finish-length",
    "finish-content-filter",
]
CASES = [(name, step) for name in SHAPED for step in steps_of(LIBRARY, name)]


def case_id(case: tuple[str, int | None]) -> str:
    return f"{case[0]}/{'title' if case[1] is None else case[1]}"


def step_of(name: str, step: int | None) -> Step:
    script = LIBRARY.get(name)
    return script.title if step is None else script.steps[step]


def expected(step: Step) -> tuple:
    """What a client must assemble: text, calls, finish reason, usage (None when the shape sends none)."""
    usage = (step.usage.input_tokens, step.usage.output_tokens, step.usage.total_tokens)
    calls = [(c.id, c.name, c.arguments_json) for c in step.tool_calls]
    return step.text, calls, step.finish_reason, usage if step.reports_usage else None


def frames(text: str) -> list[dict[str, Any]]:
    events = [block.removeprefix("data: ") for block in text.split("\n\n") if block]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def messages_for(name: str, step: int | None) -> list[Any]:
    return [HumanMessage(tag_for(name, "shape")), *[AIMessage(f"answer {i}") for i in range(step or 0)]]


def test_every_shaped_script_is_built_in_and_uses_a_shape_or_text_then_a_call():
    for name in SHAPED:
        steps = LIBRARY.get(name).steps
        assert any(s.stream != Step(usage=s.usage).stream or (s.text and s.tool_calls) for s in steps), name


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_http_stream_is_valid_and_the_openai_client_assembles_the_script(case, monkeypatch):
    name, index = case
    step = step_of(name, index)
    chunks = [ChatCompletionChunk.model_validate(frame) for frame in frames(http_stream(LIBRARY, *case, monkeypatch))]
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(chunk)
    snapshot = state.current_completion_snapshot
    message = snapshot.choices[0].message
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    usage = snapshot.usage and (
        snapshot.usage.prompt_tokens,
        snapshot.usage.completion_tokens,
        snapshot.usage.total_tokens,
    )
    assembled = (message.content or "", calls, snapshot.choices[0].finish_reason, usage)
    assert assembled == expected(step)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_http_chunks_are_cut_as_the_shape_says(case, monkeypatch):
    step = step_of(*case)
    shape = step.stream
    body = frames(http_stream(LIBRARY, *case, monkeypatch))
    choices = [frame["choices"][0] for frame in body if frame["choices"]]
    tool_deltas = [c["delta"]["tool_calls"] for c in choices if "tool_calls" in c["delta"]]
    finishes = [c for c in choices if c["finish_reason"] is not None]
    assert [f["finish_reason"] for f in finishes] == [step.finish_reason]
    with_usage = [frame for frame in body if frame["usage"] is not None]
    if shape.usage == "final_chunk":
        assert body[-1]["choices"] == [] and with_usage == [body[-1]]
    elif shape.usage == "in_finish_chunk":
        assert with_usage == [body[-1]] and body[-1]["choices"][0]["finish_reason"] == step.finish_reason
    else:
        assert with_usage == [] and all(frame["choices"] for frame in body)
    empties = [c for c in choices if c["delta"] == {} and c["finish_reason"] is None]
    deltas = len(step.text_chunks) + len(tool_deltas)
    assert len(empties) == (deltas if shape.empty_deltas else 0)
    if not step.tool_calls:
        assert tool_deltas == []
    elif shape.tool_calls == "whole":
        assert [
            [(d["index"], d["id"], d["function"]["name"], d["function"]["arguments"]) for d in t] for t in tool_deltas
        ] == [[(i, c.id, c.name, c.arguments_json)] for i, c in enumerate(step.tool_calls)]
    elif shape.tool_calls == "one_chunk":
        assert len(tool_deltas) == 1 and [d["id"] for d in tool_deltas[0]] == [c.id for c in step.tool_calls]
        assert [d["function"]["arguments"] for d in tool_deltas[0]] == [c.arguments_json for c in step.tool_calls]
    else:
        assert all(len(t) == 1 for t in tool_deltas)
        order = [t[0]["index"] for t in tool_deltas]
        heads = [t[0]["index"] for t in tool_deltas if "id" in t[0]]
        if shape.tool_calls == "interleaved":
            assert order[: len(step.tool_calls)] == heads == list(range(len(step.tool_calls)))
            assert order[len(heads) : len(heads) + 2 * len(step.tool_calls)] == list(range(len(step.tool_calls))) * 2
        else:
            assert order == sorted(order)  # one call after another


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_in_process_model_assembles_the_script(case):
    name, index = case
    step = step_of(name, index)
    model = FakeScriptedChatModel() if index is None else FakeScriptedChatModel().bind_tools(TOOLS)
    message = model.invoke(messages_for(name, index))
    calls = [
        (c["id"], c["name"], json.dumps(c["args"], separators=(",", ":"), sort_keys=True)) for c in message.tool_calls
    ]
    u = message.usage_metadata
    usage = u and (u["input_tokens"], u["output_tokens"], u["total_tokens"])
    assert (message.content, calls, message.response_metadata["finish_reason"], usage) == expected(step)


def test_one_chunk_is_one_in_process_chunk_with_every_call():
    model = FakeScriptedChatModel().bind_tools(TOOLS)
    chunks = [c for c in model.stream(messages_for("tools-one-chunk", 0)) if c.tool_call_chunks]
    assert len(chunks) == 1
    assert [(t["index"], t["id"]) for t in chunks[0].tool_call_chunks] == [(0, "call_one_1"), (1, "call_one_2")]


def test_interleaved_and_empty_deltas_in_process_follow_the_playback():
    model = FakeScriptedChatModel().bind_tools(TOOLS)
    streamed = list(model.stream(messages_for("tools-interleaved", 0)))
    played = [p for p in pieces(LIBRARY.get("tools-interleaved").steps[0]) if isinstance(p, ToolCallDelta)]
    assert [(t["index"], t["id"], t["args"]) for c in streamed for t in c.tool_call_chunks] == [
        (p.index, p.id, p.arguments) for p in played
    ]
    empty = list(model.stream(messages_for("empty-deltas", 0)))
    blank = [c for c in empty if c.content == "" and not c.tool_call_chunks and not c.usage_metadata]
    assert len(blank) == len([p for p in pieces(LIBRARY.get("empty-deltas").steps[0]) if isinstance(p, EmptyDelta)])


def test_the_playback_interleaves_heads_then_one_fragment_of_each_call_in_turn():
    step = LIBRARY.get("tools-interleaved").steps[0]
    calls = [p for p in pieces(step) if isinstance(p, ToolCallDelta)]
    assert [(c.index, c.id) for c in calls[:2]] == [(0, "call_int_1"), (1, "call_int_2")]
    fragments = [c.index for c in calls[2:]]
    first, second = (len(c.fragments()) for c in step.tool_calls)
    assert fragments[: 2 * min(first, second)] == [0, 1] * min(first, second)
    for index, call in enumerate(step.tool_calls):
        assert "".join(c.arguments for c in calls if c.index == index) == call.arguments_json
    one = pieces(LIBRARY.get("tools-one-chunk").steps[0])
    assert [type(p) for p in one] == [ToolCallBatch, Finish, UsageReport]


@pytest.fixture(scope="module")
def http_client():
    with TestClient(create_app(LIBRARY)) as client:
        yield client


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_chat_openai_over_http_and_the_in_process_model_assemble_the_same_message(case, http_client):
    name, index = case
    remote_model = ChatOpenAI(
        base_url="http://testserver/v1",
        api_key="sk-test",
        model="fake-model",
        streaming=True,
        max_retries=0,
        http_client=http_client,
    )
    local_model = FakeScriptedChatModel()
    if index is not None:
        remote_model, local_model = remote_model.bind_tools(TOOLS), local_model.bind_tools(TOOLS)
    messages = messages_for(name, index)
    local, remote = local_model.invoke(messages), remote_model.invoke(messages)

    def assembled(m: AIMessage) -> tuple:
        u = m.usage_metadata  # ChatOpenAI adds token details; the counts are what the script gives
        usage = u and (u["input_tokens"], u["output_tokens"], u["total_tokens"])
        return m.content, m.tool_calls, usage, m.response_metadata["finish_reason"]

    assert assembled(local) == assembled(remote)
    assert (assembled(local)[2] is None) == (step_of(name, index).stream.usage == "absent")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_non_streamed_answer_follows_only_finish_reason_and_absent_usage(case):
    step = step_of(*case)
    completion = http_completion(LIBRARY, *case)
    ChatCompletion.model_validate(completion)
    message = completion["choices"][0]["message"]
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", [])]
    usage = completion.get("usage") and tuple(
        completion["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")
    )
    assert (message["content"] or "", calls, completion["choices"][0]["finish_reason"], usage) == expected(step)


def test_the_openai_client_reads_a_shaped_stream_over_http(http_client):
    client = openai.OpenAI(base_url="http://testserver/v1", api_key="sk-test", max_retries=0, http_client=http_client)
    state = ChatCompletionStreamState()
    for chunk in client.chat.completions.create(
        model="fake-model",
        stream=True,
        tools=TOOLS,
        messages=[{"role": "user", "content": tag_for("tools-one-chunk", "c")}],
    ):
        state.handle_chunk(chunk)
    final = state.get_final_completion()
    assert [c.id for c in final.choices[0].message.tool_calls] == ["call_one_1", "call_one_2"]
    assert final.usage.total_tokens == 190


def shaped(stream: Any) -> dict[str, Any]:
    usage = {"input_tokens": 1, "output_tokens": 1}
    return {
        "name": "bad-shape",
        "steps": [{"text_chunks": ["a"], "usage": usage, "stream": stream}],
        "title": {"text_chunks": ["T"], "usage": usage},
    }


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (
            {"tool_calls": "split"},
            "step 0 (stream/tool_calls): 'split' is not one of ['fragments', 'whole', 'one_chunk', 'interleaved']",
        ),
        ({"usage": "none"}, "step 0 (stream/usage): 'none' is not one of ['final_chunk', 'in_finish_chunk', 'absent']"),
        (
            {"finish_reason": "done"},
            "step 0 (stream/finish_reason): 'done' is not one of "
            "['stop', 'length', 'tool_calls', 'content_filter', 'function_call']",
        ),
        ({"empty_deltas": "yes"}, "step 0 (stream/empty_deltas): 'yes' is not of type 'boolean'"),
        ({"chunks": 2}, "step 0 (stream): Additional properties are not allowed ('chunks' was unexpected)"),
        ("whole", "step 0 (stream): 'whole' is not of type 'object'"),
    ],
)
def test_the_schema_refuses_a_bad_shape_naming_the_step_and_the_member(stream, message):
    with pytest.raises(ScriptFileError) as error:
        parse_script(shaped(stream), source="test")
    assert message in str(error.value)


def test_an_empty_shape_is_the_default_stream(monkeypatch):
    library = ScriptLibrary()
    library.add(parse_script(shaped({})))
    plain = parse_script(shaped({}))
    assert plain.steps[0].stream == Step(usage=plain.steps[0].usage).stream
    text = http_stream(library, "bad-shape", 0, monkeypatch)
    assert frames(text)[-1]["choices"] == [] and frames(text)[-1]["usage"]["total_tokens"] == 2


def test_scripts_export_writes_every_built_in_script_the_shaped_ones_included(tmp_path):
    from click.testing import CliRunner

    from fake_llm.cli import main

    result = CliRunner().invoke(main, ["scripts", "export", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    exported = ScriptLibrary.from_folders([tmp_path / "out"], builtin=False)
    assert exported.names() == LIBRARY.names() and set(SHAPED) <= set(exported.names())
    assert result.output.strip() == f"wrote {len(LIBRARY.names())} scripts to {tmp_path / 'out'}"
    assert exported.get("tools-one-chunk").steps[0].stream.tool_calls == "one_chunk"
